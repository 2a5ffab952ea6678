#!/usr/bin/env bash
# bench17 call6: is the sweep command's process CUDA-untouched when it starts the GPU worker ahead on a GPU node (the
# modules site's .pth files import), and is that worker forked: a cold sweep, then two warm timelines (the worker's
# first record says whether it was forked)
set -u
R=$OUT; W=$R/call6; mkdir -p $W
python3 -c "import sys; import harness.cli; from harness.run import gpu; print('cuda_untouched', gpu.cuda_untouched(), sorted(m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupy_backends', 'cuda', 'numba', '_numba_cuda_redirector'))[:30])" > $W/untouched.txt 2>&1
python3 -m compileall -q harness > /dev/null
run() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  TC_HARNESS_CACHE=/tmp/c6 CUDA_CACHE_PATH=/tmp/nv6 "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name exit $rc $(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run cold python3 -m harness sweep --out /tmp/cold.jsonl
for i in 1 2; do export T0=$(date +%s.%N); run warm$i python3 benchmarks/sweep_timeline.py --timeline $W/warm$i.timeline -- --out /tmp/warm$i.jsonl; done
for i in 1 2; do run plain$i python3 -m harness sweep --out /tmp/plain$i.jsonl; done
gzip -f $W/*.log $W/*.timeline 2>/dev/null
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
