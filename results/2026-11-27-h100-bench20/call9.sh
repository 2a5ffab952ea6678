#!/usr/bin/env bash
# bench20 call9, from the repo root: the README's test command on this session's last code, empty caches
# (benchmarks/bench_pytest.py), twice in a row (the second on the caches the first left)
set -u
R=$OUT; W=$R/call9; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; git log --oneline -1 2>/dev/null; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
t=$(date +%s%N); timeout 300 python3 benchmarks/bench_pytest.py --cache /tmp/pc9 --runs readme --out $W/bench-pytest.json \
  > $W/pytest.log 2>&1; echo "bench-pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); TC_HARNESS_CACHE=/tmp/pc9 timeout 300 python3 -m pytest -n auto -p no:cacheprovider > $W/pytest-again.log 2>&1; echo "pytest again exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log 2>/dev/null
tar czf $R/call9.tgz -C $R call9 && rm -rf $W
