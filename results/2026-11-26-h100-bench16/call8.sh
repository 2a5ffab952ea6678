#!/usr/bin/env bash
# bench16 call8: what paces a warm sweep on an H100 node (cea8a8d): a cold sweep to fill the caches, a warm sweep, a warm
# sweep under stack_sampler.py (every thread of the sweep's process every 2 ms), a warm sweep with python -X importtime,
# another warm sweep
set -u
R=$OUT; W=$R/call8; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness > /dev/null
export TC_HARNESS_CACHE=/tmp/c8 CUDA_CACHE_PATH=/tmp/nv8
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
step() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
step cold python3 -m harness sweep --out /tmp/cold.jsonl
step warm1 python3 -m harness sweep --out /tmp/warm1.jsonl
step warm-sampled python3 abtree/stack_sampler.py $W/stacks.txt -- sweep --out /tmp/warm2.jsonl
step warm-importtime python3 -X importtime -m harness sweep --out /tmp/warm3.jsonl
step warm4 python3 -m harness sweep --out /tmp/warm4.jsonl
kill $SAMPLER
for f in cold warm1 warm2 warm3 warm4; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call8.tgz -C $R call8 && rm -rf $W
