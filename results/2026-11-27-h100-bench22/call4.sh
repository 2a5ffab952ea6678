#!/usr/bin/env bash
# bench22 call4, call3's node (still held): the default sweep of the working tree, cold and warm, each tree in turn,
# one round (benchmarks/ab_sweep.sh: old = 4140a18), compared with bench5's pass list
set -u
R=$OUT; W=$R/call4; mkdir -p $W
{ nvidia-smi -L; nproc; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
t=$(date +%s%N); OUT=$W timeout 200 bash benchmarks/ab_sweep.sh abtree/old . 1 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log 2>/dev/null
tar czf $R/call4.tgz -C $R call4 && rm -rf $W
