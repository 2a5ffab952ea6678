#!/usr/bin/env bash
# bench21 call1 (issue 15, nineteenth session), from the repo root: new = the working tree (the harness's helper
# processes started by a fork server, harness/run/processes.py; the diagnosis pictures' labels as one collection)
# against old = b738c32 (abtree/old, `git archive`: spawned helpers). The README's test command on empty caches, each
# tree in turn (benchmarks/ab_pytest.sh: new cold, old cold, then old and new warm), then the default sweep cold and
# warm, each tree in turn (benchmarks/ab_sweep.sh, one round), compared with bench5's pass list
set -u
R=$OUT; W=$R/call1; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W bash benchmarks/ab_pytest.sh abtree/old . 1 > $W/ab-pytest.log 2>&1; echo "ab_pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); OUT=$W timeout 200 bash benchmarks/ab_sweep.sh abtree/old . 1 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/ab-pytest/*.txt 2>/dev/null
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
