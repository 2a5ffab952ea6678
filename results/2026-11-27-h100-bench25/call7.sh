#!/usr/bin/env bash
# bench25 call7 (a fresh machine), from the repo root: the README's test command, new = the working tree
# (test_early_compile.py spread: each test its own group, its heavy ones weighed by their own seconds) against
# old = 3350a2a (abtree/old: call6's new), in turn (benchmarks/ab_pytest.sh, one round: new cold, old cold, then each
# warm)
set -u
R=$OUT; W=$R/call7; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
t=$(date +%s%N); OUT=$W timeout 560 bash benchmarks/ab_pytest.sh abtree/old . 1 > $W/ab-pytest.log 2>&1; echo "ab_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log $W/ab-pytest/*.log 2>/dev/null
tar czf $R/call7.tgz -C $R call7 && rm -rf $W
