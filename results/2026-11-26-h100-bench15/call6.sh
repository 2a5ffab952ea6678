#!/usr/bin/env bash
# bench15 call6: the README's test command, old (0ea5d50) then new (5a7d05d) on one H100 node, each with its own empty
# caches (the first the machine's first run); the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call6; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness abtree/old/harness > /dev/null
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
for s in old new; do
  tree=.; [ $s = old ] && tree=abtree/old
  sleep 2; t=$(date +%s%N); echo "pytest-$s start $(date +%s.%N)" >> $W/steps.txt
  (cd $tree && TC_HARNESS_CACHE=/tmp/pc-$s CUDA_CACHE_PATH=/tmp/pnv-$s timeout 200 python3 -m pytest -n auto --durations=30 > $W/pytest-$s.txt 2>&1); rc=$?
  echo "pytest-$s end $(date +%s.%N)" >> $W/steps.txt
  echo "README test command $s (its own empty caches) exit $rc $(ms $t) ms; $(tail -1 $W/pytest-$s.txt)" >> $W/steps.txt
  rm -rf /tmp/pc-$s /tmp/pnv-$s
done
kill $SAMPLER
gzip -f $W/cpu.txt $W/pytest-*.txt
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
