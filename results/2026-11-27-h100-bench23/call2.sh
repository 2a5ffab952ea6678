#!/usr/bin/env bash
# bench23 call2, call1's machine (held): (1) a cold default sweep of the new tree with its timeline
# (benchmarks/sweep_timeline.py) and the machine's CPU sampled each second (vmstat), to see what follows the compile;
# (2) `python -m harness compile` of every kernel (823, three archs) on an empty cache, old and new in turn, twice:
# the compile alone, its wall and CPU (bash's time)
set -u
R=$OUT; W=$R/call2; mkdir -p $W
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
vmstat -t 1 > $W/vmstat.txt 2>&1 & VM=$!
export TC_HARNESS_CACHE=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d)
export T0=$(date +%s.%N)
t=$(date +%s%N); timeout 120 python3 benchmarks/sweep_timeline.py --timeline $W/new-cold.timeline -- --out /tmp/new-cold.jsonl > $W/new-cold-timeline.log 2>&1; echo "new cold timeline exit $? $(ms $t) ms (T0 $T0)" >> $W/steps.txt
kill $VM
echo "$(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/new-cold.jsonl 2>&1 | tail -1)" > $W/compare.txt
for r in 1 2; do
  for side in old new; do
    tree=.; [ $side = old ] && tree=abtree/old
    c=$(mktemp -d)
    TIMEFORMAT="$side$r wall %R s user %U s sys %S s"
    { time (cd $tree && TC_HARNESS_CACHE=$c timeout 100 python3 -m harness compile --out /tmp/kf-$side$r > $W/compile-$side$r.log 2>&1; echo "$side$r exit $?" >> $W/steps.txt) ; } 2>> $W/compile-table.txt
    rm -rf $c /tmp/kf-$side$r
  done
done
gzip -f $W/*.log $W/new-cold.timeline* $W/vmstat.txt 2>/dev/null
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
