#!/usr/bin/env bash
# call1: OLD (abtree/old: 6700b87, the session's start) against NEW (this tree: each variant's wgmma and commit guarded
# in one asm block, C and D moved as vectors): one cold sweep each (own empty caches, the harness's and NVIDIA's compute
# cache), OLD first, after a warm-up of the libraries; three rounds of warm sweeps in turn; then the README's test command
# on NEW (cold: its own default caches, empty on a fresh machine); every sweep compared with bench5's
set -u
R=$OUT; W=$R/call1; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; git log --oneline -1; git status --short | grep -v '^??' ; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
t=$(date +%s%N); python3 -m harness --help > /dev/null 2>&1; python3 -c "import cupy, numpy, ml_dtypes; from cuda.bindings import nvrtc" ; echo "warm-up $(ms $t) ms" >> $W/steps.txt
for s in old new; do
  t=$(date +%s%N); (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c-$s CUDA_CACHE_PATH=/tmp/nv-$s python3 -m harness sweep --out /tmp/$s-cold.jsonl > $W/$s-cold.log 2>&1); echo "$s cold exit $? $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s-cold.log)" >> $W/steps.txt
done
for r in 1 2 3; do
  for s in old new; do
    t=$(date +%s%N); (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c-$s CUDA_CACHE_PATH=/tmp/nv-$s python3 -m harness sweep --out /tmp/$s-warm$r.jsonl > $W/$s-warm$r.log 2>&1); rc=$?
    echo "$s warm$r exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s-warm$r.log)" >> $W/steps.txt
  done
done
s=$(date +%s%N); timeout 200 python3 -m pytest -n auto > $W/pytest.txt 2>&1; rc=$?
echo "README test command (cold: its own default caches) exit $rc $(ms $s) ms" >> $W/steps.txt
tail -1 $W/pytest.txt >> $W/steps.txt
for f in old-cold new-cold old-warm3 new-warm3; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
for f in old-cold new-cold new-warm3; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; done
cp /tmp/new-cold.jsonl $W/new-sweep-cold.jsonl
gzip -f $W/*.log $W/*.jsonl $W/pytest.txt
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
