#!/usr/bin/env bash
# bench28 call2 (a fresh machine), from the repo root at the same tree as call1 (issue 15's thirtieth session; no sweep
# code changed since bench27's last calls): the issue's benchmark with the naive baseline side by side (benchmarks/bench_sweep.py --naive-n 64), every sweep
# compared with bench5's pass list. The tree was sent without the bench folders 2026-11-26-h100-bench8..13 and
# 2026-11-27-h100-bench17/18/22..25 (the device tool's 64 MiB); the results README's tables read none of them.
set -u
R=$OUT; W=$R/call2; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; git log -1 --format=%H 2>/dev/null; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
t=$(date +%s%N); timeout 300 python3 benchmarks/bench_sweep.py --out-dir $W/naive --naive-n 64 > $W/naive.txt 2>&1; echo "bench_sweep (naive N=64) exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/naive/sweep*.jsonl 2>/dev/null
for f in $W/naive/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/naive/sweep-warm.jsonl.gz
gzip -f $W/*.log 2>/dev/null
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
