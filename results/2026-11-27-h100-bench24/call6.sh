#!/usr/bin/env bash
# bench24 call6 (a fresh machine), from the repo root: new = the working tree (the session's last code: call4's and the
# sparse family's metadata made once a launch) against old = 865b4f7 (abtree/old): the default sweep, each tree in
# turn, two rounds (benchmarks/ab_sweep.sh), every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call6; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W timeout 240 bash benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log 2>/dev/null
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
