#!/usr/bin/env bash
# bench16 call2: the README's test command (python3 -m pytest -n auto), old new new old on one H100 node, each with its
# own empty caches (old = 3ca8c9c, new = the working tree); the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call2; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
n=0
for s in old new new old; do
  n=$((n+1)); sleep 2
  t=$(date +%s%N); echo "pytest-$s$n start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/pc-$s$n CUDA_CACHE_PATH=/tmp/pnv-$s$n timeout 140 python3 -m pytest -n auto --durations=30 > $W/pytest-$s$n.txt 2>&1); rc=$?
  echo "pytest-$s$n end $(date +%s.%N)" >> $W/steps.txt
  echo "README test command $s$n exit $rc $(ms $t) ms; $(tail -1 $W/pytest-$s$n.txt)" >> $W/steps.txt
  rm -rf /tmp/pc-$s$n /tmp/pnv-$s$n
done
kill $SAMPLER
gzip -f $W/pytest-*.txt $W/cpu.txt
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
