#!/usr/bin/env bash
# bench24 call5 (a fresh machine), from the repo root: new = the working tree (call4's code) against old = 865b4f7
# (abtree/old): the default sweep, each tree in turn, three rounds (benchmarks/ab_sweep.sh), with vmstat sampling the
# machine each second throughout (call4 had one cold sweep of each tree take 25-28 s and 380-420 core-seconds: is the
# machine busy elsewhere, or the sweep's processes in the kernel?); every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call5; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; free -g; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
vmstat -t 1 > $W/vmstat.txt 2>&1 & VM=$!
t=$(date +%s%N); OUT=$W timeout 420 bash benchmarks/ab_sweep.sh abtree/old . 3 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
kill $VM
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
free -g >> $W/env.txt
gzip -f $W/*.log $W/vmstat.txt 2>/dev/null
tar czf $R/call5.tgz -C $R call5 && rm -rf $W
