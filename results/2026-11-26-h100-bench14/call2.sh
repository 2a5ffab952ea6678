#!/usr/bin/env bash
# call2: OLD (abtree/old: 6700b87, the session's start) against NEW (1d23fc2: each variant's block fenced and committed,
# the one wait where the blocks meet; C and D moved as vectors): cold sweeps OLD NEW NEW OLD, each with its own empty
# caches (the harness's and NVIDIA's compute cache), after a warm-up of the libraries; NEW's second cold sweep with its
# timeline; two rounds of warm sweeps in turn; then the README's test command on NEW (its own default caches, empty on a
# fresh machine); every sweep compared with bench5's
set -u
R=$OUT; W=$R/call2; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; git log --oneline -1; git status --short | grep -v '^??' ; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
t=$(date +%s%N); python3 -m harness --help > /dev/null 2>&1; python3 -c "import cupy, numpy, ml_dtypes; from cuda.bindings import nvrtc" ; echo "warm-up $(ms $t) ms" >> $W/steps.txt
n=0
for s in old new new old; do
  n=$((n+1)); C="TC_HARNESS_CACHE=/tmp/c-$s$n CUDA_CACHE_PATH=/tmp/nv-$s$n"
  if [ $n = 3 ]; then
    t=$(date +%s%N); (cd ${TREE[$s]} && env $C T0=$(date +%s.%N) python3 benchmarks/sweep_timeline.py --timeline $W/$s$n-cold.timeline -- --out /tmp/$s$n-cold.jsonl > $W/$s$n-cold.log 2>&1); rc=$?
  else
    t=$(date +%s%N); (cd ${TREE[$s]} && env $C python3 -m harness sweep --out /tmp/$s$n-cold.jsonl > $W/$s$n-cold.log 2>&1); rc=$?
  fi
  echo "$s$n cold exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s$n-cold.log)" >> $W/steps.txt
  tail -1 /tmp/$s$n-cold.jsonl > $W/$s$n-cold.summary.json
done
for r in 1 2; do
  for s in old new; do
    m=1; [ $s = new ] && m=2
    t=$(date +%s%N); (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c-$s$m CUDA_CACHE_PATH=/tmp/nv-$s$m python3 -m harness sweep --out /tmp/$s-warm$r.jsonl > $W/$s-warm$r.log 2>&1); rc=$?
    echo "$s warm$r exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s-warm$r.log)" >> $W/steps.txt
  done
done
s=$(date +%s%N); timeout 200 python3 -m pytest -n auto > $W/pytest.txt 2>&1; rc=$?
echo "README test command (cold: its own default caches) exit $rc $(ms $s) ms" >> $W/steps.txt
tail -1 $W/pytest.txt >> $W/steps.txt
for f in old1-cold new2-cold new3-cold old4-cold old-warm2 new-warm2; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
cp /tmp/new2-cold.jsonl $W/new-sweep-cold.jsonl
gzip -f $W/*.log $W/*.jsonl $W/*.timeline $W/pytest.txt
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
