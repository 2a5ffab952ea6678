#!/usr/bin/env bash
# bench23 call9 (a fresh machine): the sweep's compile started before its engine (new = the working tree) against
# a70be74 (old: engine first; both with the fast-compile level and preparation during the compile): the default
# sweep, each tree in turn, two rounds (benchmarks/ab_sweep.sh), each compared with bench5's pass list
set -u
R=$OUT; W=$R/call9; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W timeout 270 bash benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log 2>/dev/null
tar czf $R/call9.tgz -C $R call9 && rm -rf $W
