#!/usr/bin/env bash
# bench22 call1 (issue 15, twentieth session), from the repo root: new = the working tree (plans narrowed to the
# kernels a selection's kernel-level filters keep, the command line's parser built once, cheaper CPU tests) against
# old = 4140a18 (abtree/old, `git archive`). The README's test command on empty caches, each tree in turn
# (benchmarks/ab_pytest.sh: new cold, old cold, then old and new warm), then one default sweep of the new tree cold
# and warm (benchmarks/bench_sweep.py --no-naive), compared with bench5's pass list
set -u
R=$OUT; W=$R/call1; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W bash benchmarks/ab_pytest.sh abtree/old . 1 > $W/ab-pytest.log 2>&1; echo "ab_pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_sweep.py --out-dir $W/sweep --no-naive > $W/sweep.log 2>&1; echo "bench-sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/sweep/sweep*.jsonl; do echo "$(basename $f): $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/sweep/sweep*.jsonl; gzip -f $W/*.log $W/ab-pytest/*.txt 2>/dev/null
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
