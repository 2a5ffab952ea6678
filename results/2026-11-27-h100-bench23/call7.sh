#!/usr/bin/env bash
# bench23 call7 (issue 15, twenty-first session; a fresh machine), from the repo root: new = the working tree (the validation kernels
# compiled at NVRTC's --Ofast-compile=min, the sequence family and the timing bench at full optimization, the
# sequence family's SASS check asking for each RS pipeline's wait_group 1; preparation run ahead while the kernels compile,
# in pool processes at nice 10) against old = 8065717 (abtree/old,
# `git archive`). The README's test command on empty caches, each tree in turn (benchmarks/ab_pytest.sh: new cold,
# old cold, then old and new warm), then the default sweep, each tree in turn, two rounds (benchmarks/ab_sweep.sh:
# old cold and warm, new cold and warm, twice), every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call7; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W timeout 290 bash benchmarks/ab_pytest.sh abtree/old . 1 > $W/ab-pytest.log 2>&1; echo "ab_pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); OUT=$W timeout 270 bash benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/ab-pytest/*.txt 2>/dev/null
tar czf $R/call7.tgz -C $R call7 && rm -rf $W
