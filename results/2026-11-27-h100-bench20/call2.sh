#!/usr/bin/env bash
# bench20 call2, from the repo root: what a pytest process spends before its first test on an H100 node (the README
# run's 16 workers each took 1.7-2.3 CPU-seconds before their session began and 1.9-3.1 s collecting; the first test
# began 7.9 s after the run did: call1/bench-pytest-readme.timeline.gz)
set -u
R=$OUT; W=$R/call2; mkdir -p $W
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
one=tests/test_cli_inputs.py
NOPLUG="-p no:jaxtyping -p no:anyio -p no:mock -p no:cov -p no:timeout -p no:hypothesispytest"
for i in 1 2 3; do
  t=$(date +%s%N); python3 -m pytest --co -q -p no:cacheprovider $one > /dev/null 2>&1; echo "one-module collect, default plugins: $(ms $t) ms" >> $W/steps.txt
  t=$(date +%s%N); python3 -m pytest --co -q -p no:cacheprovider $NOPLUG $one > /dev/null 2>&1; echo "one-module collect, $NOPLUG: $(ms $t) ms" >> $W/steps.txt
  t=$(date +%s%N); python3 -c "import pytest" 2>&1; echo "import pytest: $(ms $t) ms" >> $W/steps.txt
done
python3 -X importtime -m pytest --co -q -p no:cacheprovider $one 2> $W/importtime.txt > /dev/null
for i in 1 2 3; do
  t=$(date +%s%N); python3 -m pytest --co -q -p no:cacheprovider > /dev/null 2>&1; echo "full collect, one process: $(ms $t) ms" >> $W/steps.txt
  t=$(date +%s%N); python3 -m pytest -n auto --co -q -p no:cacheprovider > /dev/null 2>&1; echo "full collect, -n auto: $(ms $t) ms" >> $W/steps.txt
done
python3 -m cProfile -o /tmp/co.prof -m pytest --co -q -p no:cacheprovider > /dev/null 2>&1
python3 -c "import pstats; pstats.Stats('/tmp/co.prof').sort_stats('cumulative').print_stats(60)" > $W/collect-profile.txt 2>&1
sort -t'|' -k2 -n $W/importtime.txt | tail -60 > $W/importtime-top.txt; gzip -f $W/importtime.txt
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
