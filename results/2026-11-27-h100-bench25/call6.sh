#!/usr/bin/env bash
# bench25 call6 (a fresh machine), from the repo root: the README's test command, new = the working tree (conftest's
# node tables of group seconds made again from call3's and call5's README runs: test_early_compile, 16 s there, weighed
# nothing and went out last) against old = f96300e (abtree/old), in turn (benchmarks/ab_pytest.sh, one round: new cold,
# old cold, then each warm)
set -u
R=$OUT; W=$R/call6; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
t=$(date +%s%N); OUT=$W timeout 560 bash benchmarks/ab_pytest.sh abtree/old . 1 > $W/ab-pytest.log 2>&1; echo "ab_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log $W/ab-pytest/*.log 2>/dev/null
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
