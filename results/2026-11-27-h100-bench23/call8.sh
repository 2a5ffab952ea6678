#!/usr/bin/env bash
# bench23 call8 (a fresh machine): the session's last code (new: call7's, with the test of preparation during the
# compile made small and GPU-free, and the compile command's file count) - the README's test command on empty caches
# and warm (benchmarks/bench_pytest.py), then the default sweep, old (8065717) and new in turn, one round
# (benchmarks/ab_sweep.sh), each sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call8; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); timeout 250 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme,readme-warm > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); OUT=$W timeout 150 bash benchmarks/ab_sweep.sh abtree/old . 1 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log 2>/dev/null
tar czf $R/call8.tgz -C $R call8 && rm -rf $W
