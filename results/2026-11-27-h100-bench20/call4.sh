#!/usr/bin/env bash
# bench20 call4, from the repo root: three trees on one H100 node, in turn: old = 061fb47 (abtree/old, `git archive`);
# gil = the working tree (the GPU worker and the sweep's engine hand the GIL over after 0.5 ms); d3 = gil with the
# GPU worker holding three launches, not two, and three input and three output stagings (abtree/d3: DEPTH = 3 in
# harness/run/worker.py, three PinnedStaging() in each tuple of harness/run/launch.py). A cold default sweep of each
# on its own caches, then warm sweeps old gil d3 in turn seven times, then a warm sweep of each with its timeline.
# The changes: call4/gil.patch, call4/d3.patch (neither kept)
set -u
R=$OUT; W=$R/call4; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([gil]=. [old]=abtree/old [d3]=abtree/d3)
for s in old d3; do ln -sfn ../../results abtree/$s/results; done
for s in gil old d3; do python3 -m compileall -q ${TREE[$s]}/harness ${TREE[$s]}/benchmarks > /dev/null; done
run() { local name=$1 s=$2; shift 2; t=$(date +%s%N)
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c4-$s CUDA_CACHE_PATH=/tmp/nv4-$s "$@" > $W/$name.log 2>&1); rc=$?
  echo "$name exit $rc $(ms $t) ms; $(grep -ao 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
for s in gil old d3; do run $s-cold $s python3 -m harness sweep --out /tmp/$s-cold.jsonl; done
for i in 1 2 3 4 5 6 7; do for s in old gil d3; do run $s-warm$i $s python3 -m harness sweep --out /tmp/$s-warm$i.jsonl; done; done
for s in old gil d3; do
  export T0=$(date +%s.%N); run $s-warm-tl $s python3 benchmarks/sweep_timeline.py --timeline $W/$s-warm.timeline -- --out /tmp/$s-warm8.jsonl
done
for s in old gil d3; do for f in cold warm1 warm2 warm3 warm4 warm5 warm6 warm7 warm8; do
  tail -1 /tmp/$s-$f.jsonl > $W/$s-$f.summary.json
  echo "$s-$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$s-$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt
done; done
gzip -f $W/*.log $W/*.timeline 2>/dev/null
tar czf $R/call4.tgz -C $R call4 && rm -rf $W
