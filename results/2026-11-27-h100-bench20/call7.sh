#!/usr/bin/env bash
# bench20 call7, from the repo root: new = the working tree (the GPU worker's reading thread reads a launch file of
# 1 MiB or more in 1 MiB pieces, four threads at once: launch.parallel_read; the change: call7/parallel-read.patch)
# against old = e0407b8 (abtree/old, `git archive`): a cold default sweep of each on its own caches, then warm sweeps
# old new in turn six times, then a warm sweep of each with its timeline (benchmarks/sweep_timeline.py: the worker's
# stage, write and launch lines)
set -u
R=$OUT; W=$R/call7; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
ln -sfn ../../results abtree/old/results
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness ${TREE[$s]}/benchmarks > /dev/null; done
run() { local name=$1 s=$2; shift 2; t=$(date +%s%N)
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c7-$s CUDA_CACHE_PATH=/tmp/nv7-$s "$@" > $W/$name.log 2>&1); rc=$?
  echo "$name exit $rc $(ms $t) ms; $(grep -ao 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run new-cold new python3 -m harness sweep --out /tmp/new-cold.jsonl
run old-cold old python3 -m harness sweep --out /tmp/old-cold.jsonl
for i in 1 2 3 4 5 6; do
  run old-warm$i old python3 -m harness sweep --out /tmp/old-warm$i.jsonl
  run new-warm$i new python3 -m harness sweep --out /tmp/new-warm$i.jsonl
done
for s in old new; do
  export T0=$(date +%s.%N); run $s-warm-tl $s python3 benchmarks/sweep_timeline.py --timeline $W/$s-warm.timeline -- --out /tmp/$s-warm7.jsonl
done
for f in new-cold old-cold old-warm1 new-warm1 old-warm2 new-warm2 old-warm3 new-warm3 old-warm4 new-warm4 old-warm5 new-warm5 old-warm6 new-warm6 old-warm7 new-warm7; do
  tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/*.timeline 2>/dev/null
tar czf $R/call7.tgz -C $R call7 && rm -rf $W
