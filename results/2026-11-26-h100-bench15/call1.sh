#!/usr/bin/env bash
# bench15 call1: three trees, cold sweeps in turn old mod feed feed mod old, each with its own empty caches (the
# harness's and CUDA_CACHE_PATH) and its timeline; one warm sweep each; the machine's CPU sampled every 0.1 s
# throughout (cpu.txt, with each run's start and end in steps.txt as epoch seconds); every sweep compared with bench5's.
# old = 0ea5d50 (the session's start), mod = 76a253e (one compile module a worker, up to 48 kernels), feed = mod and
# the engine preparing at idle priority while the kernels compile (the working tree)
set -u
R=$OUT; W=$R/call1; mkdir -p $W
for t in old mod; do ln -sfn ../../results abtree/$t/results; done
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|Thread|Core|Socket|MHz"; free -g | head -2; df -h /dev/shm | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([feed]=. [old]=abtree/old [mod]=abtree/mod)
for s in feed old mod; do python3 -m compileall -q ${TREE[$s]}/harness ${TREE[$s]}/benchmarks > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
t=$(date +%s%N); python3 -m harness --help > /dev/null 2>&1; python3 -c "import cupy, numpy, ml_dtypes; from cuda.bindings import nvrtc" ; echo "warm-up $(ms $t) ms" >> $W/steps.txt
n=0
for s in old mod feed feed mod old; do
  n=$((n+1)); C="TC_HARNESS_CACHE=/tmp/c-$s$n CUDA_CACHE_PATH=/tmp/nv-$s$n"
  sleep 2
  t=$(date +%s%N); echo "$s$n start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && env $C T0=$(date +%s.%N) python3 benchmarks/sweep_timeline.py --timeline $W/$s$n-cold.timeline -- --out /tmp/$s$n-cold.jsonl > $W/$s$n-cold.log 2>&1); rc=$?
  echo "$s$n end $(date +%s.%N)" >> $W/steps.txt
  echo "$s$n cold exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s$n-cold.log)" >> $W/steps.txt
  tail -1 /tmp/$s$n-cold.jsonl > $W/$s$n-cold.summary.json
done
for s in old mod feed; do
  m=$(case $s in old) echo 1;; mod) echo 2;; feed) echo 3;; esac)
  sleep 1
  t=$(date +%s%N); echo "$s-warm start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c-$s$m CUDA_CACHE_PATH=/tmp/nv-$s$m python3 -m harness sweep --out /tmp/$s-warm.jsonl > $W/$s-warm.log 2>&1); rc=$?
  echo "$s-warm end $(date +%s.%N)" >> $W/steps.txt
  echo "$s warm exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s-warm.log)" >> $W/steps.txt
done
kill $SAMPLER
for f in old1-cold mod2-cold feed3-cold feed4-cold mod5-cold old6-cold old-warm mod-warm feed-warm; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
cp /tmp/feed3-cold.jsonl $W/feed-sweep-cold.jsonl
gzip -f $W/*.log $W/*.jsonl $W/*.timeline $W/cpu.txt
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
