#!/usr/bin/env bash
# bench15 call3 (the machine of call2, warm): (1) call2's compile measurement again, run right (PYTHONPATH=. : call2's
# modtimes_node.py found no harness); (2) cold sweeps new old old new (new = 76a253e, old = 0ea5d50), each with its
# own empty caches; the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call3; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
for r in 1 2; do
  for m in "3 32" "1 48"; do
    set -- $m; echo "mod$1-$2-$r start $(date +%s.%N)" >> $W/steps.txt
    PYTHONPATH=. python3 abtree/modtimes_node.py $1 $2 $W/modtimes-$1-$2-$r.json >> $W/modtimes.txt 2>&1
    echo "mod$1-$2-$r end $(date +%s.%N)" >> $W/steps.txt
  done
done
declare -A TREE=([new]=. [old]=abtree/old)
n=0
for s in new old old new; do
  n=$((n+1)); sleep 2
  t=$(date +%s%N); echo "$s$n start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c3-$s$n CUDA_CACHE_PATH=/tmp/nv3-$s$n python3 -m harness sweep --out /tmp/$s$n-cold.jsonl > $W/$s$n-cold.log 2>&1); rc=$?
  echo "$s$n end $(date +%s.%N)" >> $W/steps.txt
  echo "$s$n cold exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s$n-cold.log)" >> $W/steps.txt
  tail -1 /tmp/$s$n-cold.jsonl > $W/$s$n-cold.summary.json
  echo "$s$n: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$s$n-cold.jsonl 2>&1 | tail -1)" >> $W/compare.txt
done
kill $SAMPLER
gzip -f $W/cpu.txt $W/*.log
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
