#!/usr/bin/env bash
# bench15 call2: (1) where a cold compile's CPU goes on this node: the sweep's 823 kernels in the modules of three a
# worker and up to 32 kernels (before 76a253e) and of one a worker and up to 48 (76a253e), 16 processes at once, each
# module's NVRTC, disassembly and parse CPU (modtimes_node.py, beside this script), in turn twice; (2) the README's test
# command, old (0ea5d50) then new (76a253e), each with its own empty caches; the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call2; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness abtree/old/harness > /dev/null
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
for r in 1 2; do
  for m in "3 32" "1 48"; do
    set -- $m; t=$(date +%s%N); echo "mod$1-$2-$r start $(date +%s.%N)" >> $W/steps.txt
    python3 abtree/modtimes_node.py $1 $2 $W/modtimes-$1-$2-$r.json >> $W/modtimes.txt 2>&1
    echo "mod$1-$2-$r end $(date +%s.%N)" >> $W/steps.txt
  done
done
for s in old new; do
  tree=.; [ $s = old ] && tree=abtree/old
  sleep 2; t=$(date +%s%N); echo "pytest-$s start $(date +%s.%N)" >> $W/steps.txt
  (cd $tree && TC_HARNESS_CACHE=/tmp/pc-$s CUDA_CACHE_PATH=/tmp/pnv-$s timeout 200 python3 -m pytest -n auto --durations=30 > $W/pytest-$s.txt 2>&1); rc=$?
  echo "pytest-$s end $(date +%s.%N)" >> $W/steps.txt
  echo "README test command $s (its own empty caches) exit $rc $(ms $t) ms; $(tail -1 $W/pytest-$s.txt)" >> $W/steps.txt
done
kill $SAMPLER
gzip -f $W/cpu.txt $W/pytest-*.txt
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
