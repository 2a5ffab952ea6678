#!/usr/bin/env bash
# bench16 call1: nvdisasm -c -ndf for the SASS check (new = the working tree, committed locally as named in check.txt)
# against the session's start (old = 3ca8c9c) on an H100 node: cold sweeps old new new old, each with its own empty
# caches (each removed after its run but the last of each tree), then warm sweeps new old new on those last caches; the
# machine's CPU sampled throughout; every sweep compared with bench5's
set -u
R=$OUT; W=$R/call1; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; python3 -c "from harness.run import compile as C; print('nvdisasm', C.nvdisasm_path())"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
n=0
for s in old new new old; do
  n=$((n+1)); sleep 2; C="TC_HARNESS_CACHE=/tmp/c1-$s$n CUDA_CACHE_PATH=/tmp/nv1-$s$n"
  t=$(date +%s%N); echo "$s$n start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && env $C python3 -m harness sweep --out /tmp/$s$n-cold.jsonl > $W/$s$n-cold.log 2>&1); rc=$?
  echo "$s$n end $(date +%s.%N)" >> $W/steps.txt
  echo "$s$n cold exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s$n-cold.log)" >> $W/steps.txt
  tail -1 /tmp/$s$n-cold.jsonl > $W/$s$n-cold.summary.json
  [ $n -le 2 ] && rm -rf /tmp/c1-$s$n /tmp/nv1-$s$n
done
i=0
for w in new3 old4 new3; do
  i=$((i+1)); s=${w%[0-9]}; sleep 1; t=$(date +%s%N); echo "$s-warm$i start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c1-$w CUDA_CACHE_PATH=/tmp/nv1-$w python3 -m harness sweep --out /tmp/$s-warm$i.jsonl > $W/$s-warm$i.log 2>&1); rc=$?
  echo "$s-warm$i end $(date +%s.%N)" >> $W/steps.txt
  echo "$s warm$i exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s-warm$i.log)" >> $W/steps.txt
done
kill $SAMPLER
for f in old1-cold new2-cold new3-cold old4-cold new-warm1 old-warm2 new-warm3; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
cp /tmp/new2-cold.jsonl $W/new-sweep-cold.jsonl
rm -rf /tmp/c1-* /tmp/nv1-*
gzip -f $W/*.log $W/*.jsonl $W/cpu.txt
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
