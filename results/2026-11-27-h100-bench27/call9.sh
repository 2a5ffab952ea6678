#!/usr/bin/env bash
# bench27 call9 (a fresh machine), from the repo root at 1550d1d (the review's mends): the README's test command on
# empty caches (benchmarks/bench_pytest.py --runs readme)
set -u
R=$OUT; W=$R/call9; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log 2>/dev/null
tar czf $R/call9.tgz -C $R call9 && rm -rf $W
