#!/usr/bin/env bash
# bench25 call5 (a fresh machine), from the repo root, the session's last code (aabcf34: the command line's process
# keeps the BLAS thread counts, MIN_MODULE_SHARE within the cap): (1) benchmarks/bench_sweep.py, the default sweep
# cold and warm, with threads_sampler.sh listing every helper's threads; (2) the README's test command on empty caches
# and warm (benchmarks/bench_pytest.py); each sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call5; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
bash results/2026-11-27-h100-bench25/threads_sampler.sh > $W/threads.txt 2>&1 & S=$!
t=$(date +%s%N); timeout 120 python3 benchmarks/bench_sweep.py --out-dir $W/run1 --no-naive > $W/run1.txt 2>&1; echo "bench_sweep run1 exit $? $(ms $t) ms" >> $W/steps.txt
kill $S
for f in $W/run1/sweep*.jsonl; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/run1/sweep*.jsonl $W/threads.txt 2>/dev/null; rm -f $W/run1/sweep-warm.jsonl.gz
t=$(date +%s%N); timeout 250 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme,readme-warm > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log 2>/dev/null
tar czf $R/call5.tgz -C $R call5 && rm -rf $W
