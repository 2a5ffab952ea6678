#!/usr/bin/env bash
# bench21 call3, from the repo root: the session's last code (b3fb1df: the fork server for test sessions, the command
# line spawning as before): the README's test command on empty caches (benchmarks/bench_pytest.py), then one default
# sweep cold and warm (benchmarks/bench_sweep.py --no-naive), compared with bench5's pass list
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_pytest.py --cache /tmp/pc23 --runs readme --out $W/bench-pytest.json \
  > $W/pytest.log 2>&1; echo "bench-pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_sweep.py --out-dir $W/sweep --no-naive > $W/sweep.log 2>&1; echo "bench-sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/sweep/sweep*.jsonl; do echo "$(basename $f): $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/sweep/sweep*.jsonl; gzip -f $W/*.log 2>/dev/null
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
