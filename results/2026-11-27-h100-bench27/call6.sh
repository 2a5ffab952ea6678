#!/usr/bin/env bash
# bench27 call6 (a fresh machine), from the repo root at cac7053 (two GPU workers on the sweep's only GPU; the plan
# after the compile's modules have gone out): (1) the README's test command on empty caches and warm
# (benchmarks/bench_pytest.py); (2) the benchmark as the README gives it, with the naive baseline side by side
# (benchmarks/bench_sweep.py --naive-n 64), the machine's second and third sweeps; (3) a cold and a warm sweep timed
# by benchmarks/sweep_timeline.py with the machine's busy cores every 0.1 s; every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call6; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme,readme-warm > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); timeout 250 python3 benchmarks/bench_sweep.py --out-dir $W/naive --naive-n 64 > $W/naive.txt 2>&1; echo "bench_sweep (naive N=64) exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/naive/sweep*.jsonl 2>/dev/null
C=$(mktemp -d)
for m in cold warm; do
  t=$(date +%s%N); T0=$(date +%s.%N) TC_HARNESS_CACHE=$C CUDA_CACHE_PATH=$C/nv timeout 120 python3 benchmarks/sweep_timeline.py --cpu-every 0.1 --timeline $W/tl-$m.timeline -- --out $W/tl-$m.jsonl > $W/tl-$m.log 2>&1; echo "timeline $m exit $? $(ms $t) ms" >> $W/steps.txt
  gzip -f $W/tl-$m.jsonl
done
rm -rf $C
for f in $W/naive/sweep*.jsonl.gz $W/tl-*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/naive/sweep-warm.jsonl.gz $W/tl-*.jsonl.gz
gzip -f $W/*.log $W/*.timeline 2>/dev/null
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
