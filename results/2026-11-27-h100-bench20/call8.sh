#!/usr/bin/env bash
# bench20 call8, from the repo root: a pytest process's start with the node's anyio and jaxtyping plugins loaded and
# with them turned off (-p no:anyio -p no:jaxtyping), in turn: collecting one module in one process, five times each,
# and the whole suite under -n auto (--collect-only), three times each
set -u
R=$OUT; W=$R/call8; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
one=tests/test_cli_inputs.py
OFF="-p no:anyio -p no:jaxtyping"
python3 -m pytest --co -q -p no:cacheprovider $one > /dev/null 2>&1  # the page cache warmed
for i in 1 2 3 4 5; do
  t=$(date +%s%N); python3 -m pytest --co -q -p no:cacheprovider $one > /dev/null 2>&1; echo "one module, plugins on: $(ms $t) ms" >> $W/steps.txt
  t=$(date +%s%N); python3 -m pytest --co -q -p no:cacheprovider $OFF $one > /dev/null 2>&1; echo "one module, $OFF: $(ms $t) ms" >> $W/steps.txt
done
for i in 1 2 3; do
  t=$(date +%s%N); python3 -m pytest -n auto --co -q -p no:cacheprovider > /dev/null 2>&1; echo "-n auto --co, plugins on: $(ms $t) ms" >> $W/steps.txt
  t=$(date +%s%N); python3 -m pytest -n auto --co -q -p no:cacheprovider $OFF > /dev/null 2>&1; echo "-n auto --co, $OFF: $(ms $t) ms" >> $W/steps.txt
done
/usr/bin/time -f "plugins on: %e s wall, %U s user, %S s sys" python3 -m pytest -n auto --co -q -p no:cacheprovider > /dev/null 2>> $W/steps.txt
/usr/bin/time -f "$OFF: %e s wall, %U s user, %S s sys" python3 -m pytest -n auto --co -q -p no:cacheprovider $OFF > /dev/null 2>> $W/steps.txt
tar czf $R/call8.tgz -C $R call8 && rm -rf $W
