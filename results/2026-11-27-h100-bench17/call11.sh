#!/usr/bin/env bash
# bench17 call11: new = the working tree (each launch's module loaded by the GPU worker's reading thread as it reads the
# launch file ahead, launch.preload) against old = 1e113ca: a cold sweep of each, warm sweeps old new four times over, then a warm sweep
# of new whose GPU worker samples its threads' stacks (sampled_backend.py, sampled_sweep.py)
set -u
R=$OUT; W=$R/call11; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; ls -l /dev/nvidiactl; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
run() { local name=$1 s=$2; shift 2; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c11-$s CUDA_CACHE_PATH=/tmp/nv11-$s "$@" > $W/$name.log 2>&1); rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run new-cold new python3 -m harness sweep --out /tmp/new-cold.jsonl
run old-cold old python3 -m harness sweep --out /tmp/old-cold.jsonl
for i in 1 2 3 4; do
  run old-warm$i old python3 -m harness sweep --out /tmp/old-warm$i.jsonl
  run new-warm$i new python3 -m harness sweep --out /tmp/new-warm$i.jsonl
done
SAMPLED_BACKEND_OUT=$W/worker-stacks.json run new-warm-sampled new python3 abtree/sampled_sweep.py --out /tmp/new-warm5.jsonl
kill $SAMPLER
for f in new-cold old-cold old-warm1 new-warm1 old-warm2 new-warm2 old-warm3 new-warm3 old-warm4 new-warm4 new-warm5; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call11.tgz -C $R call11 && rm -rf $W
