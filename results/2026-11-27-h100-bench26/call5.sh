#!/usr/bin/env bash
# bench26 call5 (a fresh machine), from the repo root, the working tree (b26ba48: f50543d's kernels, its tests
# strengthened): the benchmark as the README gives it, benchmarks/bench_sweep.py with the naive baseline side
# by side (N = 64), as the machine's first run; each sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call5; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
t=$(date +%s%N); timeout 400 python3 benchmarks/bench_sweep.py --out-dir $W/run1 --naive-n 64 > $W/run1.txt 2>&1; echo "bench_sweep run1 (naive N=64) exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/run*/sweep*.jsonl; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/run*/sweep*.jsonl 2>/dev/null
rm -f $W/run1/sweep-warm.jsonl.gz
tar czf $R/call5.tgz -C $R call5 && rm -rf $W
