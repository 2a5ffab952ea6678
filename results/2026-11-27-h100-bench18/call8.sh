#!/usr/bin/env bash
# bench18 call8: the session's last code (edc4388, with the second reading's mends): the README's test command on empty
# caches (bench_pytest.py, the machine's first run)
set -u
R=$OUT; W=$R/call8; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
echo "pytest start $(date +%s.%N)" >> $W/steps.txt
timeout 200 python3 benchmarks/bench_pytest.py --cache /tmp/pc8 --runs readme --out $W/bench-pytest.json > $W/pytest.log 2>&1; rc=$?
echo "pytest end $(date +%s.%N)" >> $W/steps.txt; echo "pytest exit $rc" >> $W/steps.txt
kill $SAMPLER; gzip -f $W/cpu.txt $W/pytest.log $W/*-readme.log 2>/dev/null
tar czf $R/call8.tgz -C $R call8 && rm -rf $W
