#!/usr/bin/env bash
# bench27 call3 (a fresh machine), from the repo root: one GPU worker on the GPU against two
# (TC_HARNESS_GPU_WORKERS, an experiment's switch in harness/run/engine.py), the default sweep cold and warm
# (benchmarks/bench_sweep.py --no-naive), in turn, three rounds; then a timeline of each, cold and warm.
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
python3 -m compileall -q harness benchmarks > /dev/null
for r in 1 2 3; do
  for n in 1 2; do
    TC_HARNESS_GPU_WORKERS=$n timeout 200 python3 benchmarks/bench_sweep.py --out-dir $W/w$n-$r --no-naive > $W/run-w$n-$r.txt 2>&1
    echo "w$n-$r exit $?" >> $W/steps.txt
    gzip -f $W/w$n-$r/sweep*.jsonl
  done
done
for n in 1 2; do
  C=$(mktemp -d)
  for m in cold warm; do
    T0=$(date +%s.%N) TC_HARNESS_GPU_WORKERS=$n TC_HARNESS_CACHE=$C CUDA_CACHE_PATH=$C/nv timeout 120 python3 benchmarks/sweep_timeline.py --timeline $W/tl-w$n-$m.timeline -- --out /tmp/s.jsonl > $W/tl-w$n-$m.log 2>&1
    echo "tl-w$n-$m exit $?" >> $W/steps.txt
  done
  rm -rf $C
done
for f in $W/w2-*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/w1-[23]/sweep*.jsonl.gz $W/w2-[23]/sweep*.jsonl.gz
gzip -f $W/*.timeline $W/*.log
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
