#!/usr/bin/env bash
# bench27 call5 (a fresh machine), from the repo root: new = the working tree (0c628ab: two GPU workers on the
# sweep's only GPU; the plan after the compile's modules have gone out) against old = 92ae751 (abtree/old): (1) the
# default sweep, each tree in turn, three rounds (benchmarks/ab_sweep.sh); (2) the benchmark as the README
# gives it, with the naive baseline side by side (benchmarks/bench_sweep.py --naive-n 64), the working tree; every
# sweep compared with bench5's pass list.
set -u
R=$OUT; W=$R/call5; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W timeout 330 bash benchmarks/ab_sweep.sh abtree/old . 3 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); timeout 250 python3 benchmarks/bench_sweep.py --out-dir $W/naive --naive-n 64 > $W/naive.txt 2>&1; echo "bench_sweep (naive N=64) exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/naive/sweep*.jsonl 2>/dev/null
for f in $W/ab/*/sweep*.jsonl.gz $W/naive/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/ab/old*/sweep*.jsonl.gz $W/ab/new[23]/sweep*.jsonl.gz $W/ab/new1/sweep-warm.jsonl.gz $W/naive/sweep-warm.jsonl.gz
gzip -f $W/*.log 2>/dev/null
tar czf $R/call5.tgz -C $R call5 && rm -rf $W
