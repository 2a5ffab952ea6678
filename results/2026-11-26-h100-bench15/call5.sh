#!/usr/bin/env bash
# bench15 call5: the session's last code (new = 5a7d05d) against its start (old = 0ea5d50) on an H100 node: the README's
# test command on new (the machine's first run, its own empty caches), then cold sweeps old new new old, each with its
# own empty caches (each removed after its run but the last of each tree, so that the disk keeps room to keep launches),
# then warm sweeps new old new on those last caches; the machine's CPU sampled throughout; every sweep compared with bench5's
set -u
R=$OUT; W=$R/call5; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
t=$(date +%s%N); echo "pytest-new start $(date +%s.%N)" >> $W/steps.txt
TC_HARNESS_CACHE=/tmp/pc-new CUDA_CACHE_PATH=/tmp/pnv-new timeout 200 python3 -m pytest -n auto --durations=30 > $W/pytest-new.txt 2>&1; rc=$?
echo "pytest-new end $(date +%s.%N)" >> $W/steps.txt
echo "README test command new (its own empty caches) exit $rc $(ms $t) ms; $(tail -1 $W/pytest-new.txt)" >> $W/steps.txt
rm -rf /tmp/pc-new /tmp/pnv-new
n=0
for s in old new new old; do
  n=$((n+1)); sleep 2; C="TC_HARNESS_CACHE=/tmp/c5-$s$n CUDA_CACHE_PATH=/tmp/nv5-$s$n"
  t=$(date +%s%N); echo "$s$n start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && env $C python3 -m harness sweep --out /tmp/$s$n-cold.jsonl > $W/$s$n-cold.log 2>&1); rc=$?
  echo "$s$n end $(date +%s.%N)" >> $W/steps.txt
  echo "$s$n cold exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s$n-cold.log)" >> $W/steps.txt
  tail -1 /tmp/$s$n-cold.jsonl > $W/$s$n-cold.summary.json
  [ $n -le 2 ] && rm -rf /tmp/c5-$s$n /tmp/nv5-$s$n
done
i=0
for w in new3 old4 new3; do
  i=$((i+1)); s=${w%[0-9]}; sleep 1; t=$(date +%s%N); echo "$s-warm$i start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c5-$w CUDA_CACHE_PATH=/tmp/nv5-$w python3 -m harness sweep --out /tmp/$s-warm$i.jsonl > $W/$s-warm$i.log 2>&1); rc=$?
  echo "$s-warm$i end $(date +%s.%N)" >> $W/steps.txt
  echo "$s warm$i exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s-warm$i.log)" >> $W/steps.txt
done
kill $SAMPLER
for f in old1-cold new2-cold new3-cold old4-cold new-warm1 old-warm2 new-warm3; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
cp /tmp/new2-cold.jsonl $W/new-sweep-cold.jsonl
gzip -f $W/*.log $W/*.jsonl $W/cpu.txt $W/pytest-new.txt
tar czf $R/call5.tgz -C $R call5 && rm -rf $W
