#!/usr/bin/env bash
# bench17 call8: new = the working tree (the engine finds each kept launch itself, Engine.begin, keyed by the kernel and
# its cases' ids) against old = 04c978c: a cold sweep of each (its own caches), then warm sweeps old new four times
# over; a warm sweep of new with its timeline; the machine's CPU sampled throughout; every sweep compared with bench5's;
# then the README's test command on new (its own empty caches)
set -u
R=$OUT; W=$R/call8; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; ls -l /dev/nvidiactl; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
run() { local name=$1 s=$2; shift 2; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c8-$s CUDA_CACHE_PATH=/tmp/nv8-$s "$@" > $W/$name.log 2>&1); rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run new-cold new python3 -m harness sweep --out /tmp/new-cold.jsonl
run old-cold old python3 -m harness sweep --out /tmp/old-cold.jsonl
for i in 1 2 3 4; do
  run old-warm$i old python3 -m harness sweep --out /tmp/old-warm$i.jsonl
  run new-warm$i new python3 -m harness sweep --out /tmp/new-warm$i.jsonl
done
export T0=$(date +%s.%N); run new-warm-timeline new python3 benchmarks/sweep_timeline.py --timeline $W/new-warm.timeline -- --out /tmp/new-warm5.jsonl
kill $SAMPLER
for f in new-cold old-cold old-warm1 new-warm1 old-warm2 new-warm2 old-warm3 new-warm3 old-warm4 new-warm4 new-warm5; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
rm -rf /tmp/c8-* /tmp/nv8-*
t=$(date +%s%N)
TC_HARNESS_CACHE=/tmp/pc8 CUDA_CACHE_PATH=/tmp/pnv8 timeout 200 python3 -m pytest -n auto --durations=20 > $W/pytest-new.txt 2>&1; rc=$?
echo "README test command new (its own empty caches) exit $rc $(ms $t) ms; $(tail -1 $W/pytest-new.txt)" >> $W/steps.txt
ps -eo pid,ppid,etimes,cmd | grep -i "python" | grep -v grep > $W/processes-after.txt
gzip -f $W/*.log $W/cpu.txt $W/new-warm.timeline $W/pytest-new.txt 2>/dev/null
tar czf $R/call8.tgz -C $R call8 && rm -rf $W
