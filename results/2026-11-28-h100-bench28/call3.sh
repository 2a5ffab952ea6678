#!/usr/bin/env bash
# bench28 call3 (a fresh machine), from the repo root at the same sweep code as call1 and call2: the default sweep's
# benchmark without the naive baseline (the node's speed), then the dense family alone (the workload the 33 s
# cold and 9.35 s warm were of) with the naive baseline side by side, every sweep compared with bench5's pass list.
# Sent without the same bench folders as call1.
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
t=$(date +%s%N); timeout 120 python3 benchmarks/bench_sweep.py --out-dir $W/default --no-naive > $W/default.txt 2>&1; echo "bench_sweep (default, no naive) exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); timeout 300 python3 benchmarks/bench_sweep.py --out-dir $W/dense --naive-n 64 -- --family wgmma > $W/dense.txt 2>&1; echo "bench_sweep (dense, naive N=64) exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/default/sweep*.jsonl $W/dense/sweep*.jsonl 2>/dev/null
for f in $W/default/sweep.jsonl.gz $W/dense/sweep.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/default/sweep-warm.jsonl.gz $W/dense/sweep-warm.jsonl.gz
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
