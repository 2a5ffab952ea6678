#!/usr/bin/env bash
# bench23 call10 (a fresh machine): the engine's look-ahead bounded by the launches waiting in the spool (new = the
# working tree: kept launches do not count, so a disk that stops keeping brings the bound back) against fbbd7d3 (old:
# bounded unless every launch would be kept, decided once): the default sweep, each tree in turn, one round
# (benchmarks/ab_sweep.sh), each compared with bench5's pass list
set -u
R=$OUT; W=$R/call10; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W timeout 160 bash benchmarks/ab_sweep.sh abtree/old . 1 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log 2>/dev/null
tar czf $R/call10.tgz -C $R call10 && rm -rf $W
