#!/usr/bin/env bash
# bench17 call3: when the GPU worker started ahead (sweep.py worker_ahead) is ready: a cold sweep of the working tree
# (its caches), then three warm sweeps with their timelines (benchmarks/sweep_timeline.py; timed_backend.py now notes
# when the worker began importing its backend and when its device was ready)
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness > /dev/null
run() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  TC_HARNESS_CACHE=/tmp/c3 CUDA_CACHE_PATH=/tmp/nv3 "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run cold python3 -m harness sweep --out /tmp/cold.jsonl
for i in 1 2 3; do
  export T0=$(date +%s.%N); run warm$i python3 benchmarks/sweep_timeline.py --timeline $W/warm$i.timeline -- --out /tmp/warm$i.jsonl
done
for f in cold warm1 warm2 warm3; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/*.timeline 2>/dev/null
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
