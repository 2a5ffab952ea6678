#!/usr/bin/env bash
# bench19 call2, on call1's machine: the README's test command on the working tree (the GPU worker's memory reserved
# before its first launch), on empty caches (bench_pytest.py), CPU sampled
set -u
R=$OUT; W=$R/call2; mkdir -p $W
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
sleep 1; t=$(date +%s%N); echo "pytest start $(date +%s.%N)" >> $W/steps.txt
timeout 300 python3 benchmarks/bench_pytest.py --cache /tmp/pc2 --runs readme --out $W/bench-pytest.json > $W/pytest.log 2>&1; rc=$?
echo "pytest end $(date +%s.%N)" >> $W/steps.txt; echo "pytest exit $rc $(ms $t) ms" >> $W/steps.txt
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt bins > $W/cpu-busy.txt 2>&1
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
