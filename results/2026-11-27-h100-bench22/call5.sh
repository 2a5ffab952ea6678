#!/usr/bin/env bash
# bench22 call5, a fresh node, from the repo root: the session's last code (859606d): the README's test command on
# empty caches, then warm (bench_pytest.py --runs readme,readme-warm)
set -u
R=$OUT; W=$R/call5; mkdir -p $W
{ nvidia-smi -L; nproc; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_pytest.py --runs readme,readme-warm --out $W/bench-pytest.json > $W/pytest.log 2>&1; echo "bench-pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log 2>/dev/null
tar czf $R/call5.tgz -C $R call5 && rm -rf $W
