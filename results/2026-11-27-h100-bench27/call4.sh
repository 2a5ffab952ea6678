#!/usr/bin/env bash
# bench27 call4 (a fresh machine), from the repo root: the sweep's own process profiled (cProfile: its main thread,
# where the engine hands out launches and writes records), cold and warm, with two GPU workers on the GPU
# (TC_HARNESS_GPU_WORKERS=2), twice.
set -u
R=$OUT; W=$R/call4; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
python3 -m compileall -q harness benchmarks > /dev/null
for r in 1 2; do
  C=$(mktemp -d)
  for m in cold warm; do
    t=$(date +%s%N)
    TC_HARNESS_GPU_WORKERS=2 TC_HARNESS_CACHE=$C CUDA_CACHE_PATH=$C/nv timeout 120 python3 results/2026-11-27-h100-bench27/profile_main.py $W/$m$r.prof --out /tmp/s.jsonl > $W/$m$r.log 2>&1
    echo "$m$r exit $? $(( ($(date +%s%N) - t) / 1000000 )) ms" >> $W/steps.txt
    python3 -c "import pstats,sys; s=pstats.Stats('$W/$m$r.prof'); s.sort_stats('tottime').print_stats(40); s.sort_stats('cumtime').print_stats(60)" > $W/$m$r-prof.txt 2>&1
  done
  rm -rf $C
done
gzip -f $W/*.log
tar czf $R/call4.tgz -C $R call4 && rm -rf $W
