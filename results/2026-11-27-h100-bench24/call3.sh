#!/usr/bin/env bash
# bench24 call3 (a fresh machine), from the repo root, the working tree (call2's code, sweep_timeline.py timing the
# start-up's steps): (1) a cold default sweep with its timeline and vmstat, twice (the first the machine's first run);
# (2) the README's test command on empty caches and warm (benchmarks/bench_pytest.py; call2's ran past its 140 s)
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
for r in 1 2; do
  vmstat -t 1 > $W/vmstat$r.txt 2>&1 & VM=$!
  C=$(mktemp -d)
  t=$(date +%s%N); T0=$(date +%s.%N) TC_HARNESS_CACHE=$C CUDA_CACHE_PATH=$C/nv timeout 120 python3 benchmarks/sweep_timeline.py --timeline $W/new-cold$r.timeline -- --out /tmp/new-cold$r.jsonl > $W/new-cold$r.log 2>&1; echo "timeline $r exit $? $(ms $t) ms" >> $W/steps.txt
  kill $VM; rm -rf $C
  echo "new-cold$r: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/new-cold$r.jsonl 2>&1 | tail -1)" >> $W/compare.txt
done
t=$(date +%s%N); timeout 330 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme,readme-warm > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log $W/new-cold*.timeline* $W/vmstat*.txt 2>/dev/null
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
