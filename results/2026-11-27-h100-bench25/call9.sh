#!/usr/bin/env bash
# bench25 call9 (a fresh machine), from the repo root: the README's test command, new = the working tree
# (test_nvrtc's RS pipeline test a group of its own, its two compiles side by side) against old = e0a2506
# (abtree/old), in turn (benchmarks/ab_pytest.sh, one round: new cold, old cold, then each warm)
set -u
R=$OUT; W=$R/call9; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
t=$(date +%s%N); OUT=$W timeout 560 bash benchmarks/ab_pytest.sh abtree/old . 1 > $W/ab-pytest.log 2>&1; echo "ab_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log $W/ab-pytest/*.log 2>/dev/null
tar czf $R/call9.tgz -C $R call9 && rm -rf $W
