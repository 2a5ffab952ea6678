#!/usr/bin/env bash
# bench26 call1 (a fresh machine), from the repo root: new = the working tree (the sweep kernel's accumulators moved by
# its asm statement, kernels/wgmma.cu) against old = 6962dc3 (abtree/old, the session's start):
# (1) the README's test command on empty caches and warm (benchmarks/bench_pytest.py), the working tree: every GPU
# test of the new kernels; (2) the default sweep, each tree in turn, three rounds (benchmarks/ab_sweep.sh), every
# sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call1; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme,readme-warm > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); OUT=$W timeout 330 bash benchmarks/ab_sweep.sh abtree/old . 3 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/ab/old*/sweep*.jsonl.gz $W/ab/new[23]/sweep*.jsonl.gz $W/ab/new1/sweep-warm.jsonl.gz
gzip -f $W/*.log 2>/dev/null
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
