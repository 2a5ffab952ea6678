#!/usr/bin/env bash
# bench27 call2 (a fresh machine), from the repo root at 92ae751 (+ sweep_timeline.py's --cpu-every): where the cold
# sweep leaves cores idle. Three cold sweeps on fresh caches, each followed by its warm sweep, timed by
# benchmarks/sweep_timeline.py with the machine's busy cores every 0.1 s.
set -u
R=$OUT; W=$R/call2; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
python3 -m compileall -q harness benchmarks > /dev/null
for r in 1 2 3; do
  C=$(mktemp -d)
  for m in cold warm; do
    T0=$(date +%s.%N) TC_HARNESS_CACHE=$C CUDA_CACHE_PATH=$C/nv timeout 120 python3 benchmarks/sweep_timeline.py --cpu-every 0.1 --timeline $W/$m$r.timeline -- --out /tmp/s-$m$r.jsonl > $W/$m$r.log 2>&1
    echo "$m$r exit $?" >> $W/steps.txt
  done
  rm -rf $C
done
gzip -f $W/*.timeline $W/*.log
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
