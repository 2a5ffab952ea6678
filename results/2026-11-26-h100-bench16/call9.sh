#!/usr/bin/env bash
# bench16 call9: the GPU worker holding three launches and reading two launch files at once (new = the working tree)
# against one held ahead and read in turn (old = af9b23f): a cold sweep of each (its own caches), then warm sweeps old
# new old new old new on them; a warm sweep of new with its timeline; then the planted fault and hang tests on new
set -u
R=$OUT; W=$R/call9; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
run() { local name=$1 s=$2; shift 2; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c9-$s CUDA_CACHE_PATH=/tmp/nv9-$s "$@" > $W/$name.log 2>&1); rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run old-cold old python3 -m harness sweep --out /tmp/old-cold.jsonl
run new-cold new python3 -m harness sweep --out /tmp/new-cold.jsonl
for i in 1 2 3; do
  run old-warm$i old python3 -m harness sweep --out /tmp/old-warm$i.jsonl
  run new-warm$i new python3 -m harness sweep --out /tmp/new-warm$i.jsonl
done
export T0=$(date +%s.%N); run new-warm-timeline new python3 benchmarks/sweep_timeline.py --timeline $W/new-warm.timeline -- --out /tmp/new-warm4.jsonl
kill $SAMPLER
for f in old-cold new-cold old-warm1 new-warm1 old-warm2 new-warm2 old-warm3 new-warm3 new-warm4; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
rm -rf /tmp/c9-* /tmp/nv9-*
t=$(date +%s%N)
TC_HARNESS_CACHE=/tmp/c9t CUDA_CACHE_PATH=/tmp/nv9t python3 -m pytest -p no:cacheprovider -n 4 -rs tests/test_robustness_gpu.py tests/test_mass_faults.py tests/run/test_worker.py tests/test_pipeline.py > $W/pytest-faults.txt 2>&1
echo "fault tests exit $? $(ms $t) ms; $(tail -1 $W/pytest-faults.txt)" >> $W/steps.txt
gzip -f $W/*.log $W/cpu.txt $W/new-warm.timeline $W/pytest-faults.txt 2>/dev/null
tar czf $R/call9.tgz -C $R call9 && rm -rf $W
