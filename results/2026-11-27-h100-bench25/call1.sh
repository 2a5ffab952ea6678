#!/usr/bin/env bash
# bench25 call1 (a fresh machine), from the repo root: new = the working tree (a launch prepared in parts of 16 cases,
# WgmmaFamily.prepare) against old = b404fd5 (abtree/old, the session's start): (1) prep_parallel.py, 16 processes at
# once, each both ways in turn, wgmma and wgmma_sp; (2) the default sweep, each tree in turn, three rounds
# (benchmarks/ab_sweep.sh); every sweep compared with bench5's pass list, the old trees' sweep files then left out
set -u
R=$OUT; W=$R/call1; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
for f in wgmma wgmma_sp; do
  t=$(date +%s%N); timeout 150 python3 results/2026-11-27-h100-bench25/prep_parallel.py $f 16 12 3 > $W/prep-$f.json 2> $W/prep-$f.log
  echo "prep $f exit $? $(ms $t) ms" >> $W/steps.txt
done
t=$(date +%s%N); OUT=$W timeout 330 bash benchmarks/ab_sweep.sh abtree/old . 3 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/ab/old*/sweep*.jsonl.gz $W/ab/new[23]/sweep*.jsonl.gz $W/ab/new1/sweep-warm.jsonl.gz
gzip -f $W/*.log 2>/dev/null
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
