#!/usr/bin/env bash
# bench19 call3 (it ran on an H200 machine, not call1's H100: the H100 had gone back): the benchmark (benchmarks/bench_sweep.py) of the dense family alone, the workload
# the numbers were of, on the working tree: cold on empty caches, warm, and the naive way (one module and one
# launch per case) on its N = 64 cases side by side; then the benchmark again without the naive way; CPU sampled
set -u
R=$OUT; W=$R/call3; mkdir -p $W
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
step() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms" >> $W/steps.txt; }
step bench-dense python3 benchmarks/bench_sweep.py --out-dir $W/dense --naive-n 64 -- --family wgmma
step bench-dense2 python3 benchmarks/bench_sweep.py --out-dir $W/dense2 --no-naive -- --family wgmma
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt > $W/cpu-busy.txt 2>&1
for d in dense dense2; do cp $W/$d/bench.json $W/$d-bench.json; [ -f $W/$d/bench-naive.json ] && cp $W/$d/bench-naive.json $W/$d-bench-naive.json; gzip -c $W/$d/sweep.jsonl > $W/$d-sweep.jsonl.gz; rm -rf $W/$d; done
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
