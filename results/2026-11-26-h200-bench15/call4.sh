#!/usr/bin/env bash
# bench15 call4: cold sweeps in four rounds of old mods feed (old = 0ea5d50, the session's start; mods = 5a7d05d, two
# compile modules a worker balanced by the square of the source's length; feed = mods and the engine preparing at idle
# priority while the kernels compile, the working tree), each with its own empty caches; a warm sweep of each; the
# compile measurement of call3 for mods' modules; the machine's CPU sampled throughout; every sweep compared with bench5's
set -u
R=$OUT; W=$R/call4; mkdir -p $W
for t in old mods; do ln -sfn ../../results abtree/$t/results; done
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([feed]=. [old]=abtree/old [mods]=abtree/mods)
for s in feed old mods; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
t=$(date +%s%N); python3 -m harness --help > /dev/null 2>&1; python3 -c "import cupy, numpy, ml_dtypes; from cuda.bindings import nvrtc" ; echo "warm-up $(ms $t) ms" >> $W/steps.txt
(cd abtree/mods && PYTHONPATH=. python3 ../modtimes_node.py 2 32 $W/modtimes-2-32.json >> $W/modtimes.txt 2>&1)
for r in 1 2 3 4; do
  for s in old mods feed; do
    sleep 2; C="TC_HARNESS_CACHE=/tmp/c4-$s$r CUDA_CACHE_PATH=/tmp/nv4-$s$r"
    t=$(date +%s%N); echo "$s$r start $(date +%s.%N)" >> $W/steps.txt
    (cd ${TREE[$s]} && env $C python3 -m harness sweep --out /tmp/$s$r-cold.jsonl > $W/$s$r-cold.log 2>&1); rc=$?
    echo "$s$r end $(date +%s.%N)" >> $W/steps.txt
    echo "$s$r cold exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s$r-cold.log)" >> $W/steps.txt
    tail -1 /tmp/$s$r-cold.jsonl > $W/$s$r-cold.summary.json
  done
done
for s in old mods feed; do
  sleep 1; t=$(date +%s%N); echo "$s-warm start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c4-${s}4 CUDA_CACHE_PATH=/tmp/nv4-${s}4 python3 -m harness sweep --out /tmp/$s-warm.jsonl > $W/$s-warm.log 2>&1); rc=$?
  echo "$s-warm end $(date +%s.%N)" >> $W/steps.txt
  echo "$s warm exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$s-warm.log)" >> $W/steps.txt
done
kill $SAMPLER
for f in old1-cold mods1-cold feed1-cold old4-cold mods4-cold feed4-cold old-warm mods-warm feed-warm; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
cp /tmp/feed1-cold.jsonl $W/feed-sweep-cold.jsonl
gzip -f $W/*.log $W/*.jsonl $W/cpu.txt
tar czf $R/call4.tgz -C $R call4 && rm -rf $W
