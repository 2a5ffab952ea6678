#!/usr/bin/env bash
# bench27 call8 (a fresh machine), from the repo root at 97e22c4: the benchmark as the README gives it, with
# the naive baseline side by side (benchmarks/bench_sweep.py --naive-n 64), as the machine's first sweeps, on another
# node; every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call8; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks > /dev/null
t=$(date +%s%N); timeout 250 python3 benchmarks/bench_sweep.py --out-dir $W/naive --naive-n 64 > $W/naive.txt 2>&1; echo "bench_sweep (naive N=64) exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/naive/sweep*.jsonl 2>/dev/null
for f in $W/naive/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/naive/sweep-warm.jsonl.gz
tar czf $R/call8.tgz -C $R call8 && rm -rf $W
