#!/usr/bin/env bash
# bench19 call1: new = the working tree (the GPU worker's stagings and GPU memory reserved before its first launch,
# launch.reserve_for_launches) against old = 98de7ff: a cold default sweep of each (its own caches), then warm sweeps
# old new five times over, then a warm sweep of each with its timeline; then the dense family alone (the workload the
# issue's numbers were of: `sweep --family wgmma`), new, cold on empty caches and warm three times; CPU sampled
set -u
R=$OUT; W=$R/call1; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
ln -sfn ../../results abtree/old/results
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness ${TREE[$s]}/benchmarks > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
run() { local name=$1 s=$2 cache=$3; shift 3; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c1-$cache CUDA_CACHE_PATH=/tmp/nv1-$cache "$@" > $W/$name.log 2>&1); rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -ao 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run new-cold new new python3 -m harness sweep --out /tmp/new-cold.jsonl
run old-cold old old python3 -m harness sweep --out /tmp/old-cold.jsonl
for i in 1 2 3 4 5; do
  run old-warm$i old old python3 -m harness sweep --out /tmp/old-warm$i.jsonl
  run new-warm$i new new python3 -m harness sweep --out /tmp/new-warm$i.jsonl
done
for s in old new; do
  sleep 1; export T0=$(date +%s.%N); run $s-warm-tl $s $s python3 benchmarks/sweep_timeline.py --timeline $W/$s-warm.timeline -- --out /tmp/$s-warm6.jsonl
done
run dense-cold new dense python3 -m harness sweep --family wgmma --out /tmp/dense-cold.jsonl
for i in 1 2 3; do run dense-warm$i new dense python3 -m harness sweep --family wgmma --out /tmp/dense-warm$i.jsonl; done
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt bins > $W/cpu-busy.txt 2>&1
for f in new-cold old-cold old-warm1 new-warm1 old-warm2 new-warm2 old-warm3 new-warm3 old-warm4 new-warm4 old-warm5 new-warm5 old-warm6 new-warm6; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
for f in dense-cold dense-warm1 dense-warm2 dense-warm3; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; done
gzip -f $W/*.log $W/cpu.txt $W/*.timeline 2>/dev/null
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
