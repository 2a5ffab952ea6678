#!/usr/bin/env bash
# bench22 call2, the same machine as call1 (still held), the same trees: the default sweep, each tree in turn, two
# rounds (benchmarks/ab_sweep.sh: old cold and warm, new cold and warm, twice), compared with bench5's pass list; then
# the README's test command again, each tree in turn (benchmarks/ab_pytest.sh, one round: new cold, old cold, old
# warm, new warm; none of them the machine's first run now)
set -u
R=$OUT; W=$R/call2; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
t=$(date +%s%N); OUT=$W timeout 300 bash benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
t=$(date +%s%N); OUT=$W timeout 250 bash benchmarks/ab_pytest.sh abtree/old . 1 > $W/ab-pytest.log 2>&1; echo "ab_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log $W/ab-pytest/*.txt 2>/dev/null
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
