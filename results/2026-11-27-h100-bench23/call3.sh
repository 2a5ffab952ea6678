#!/usr/bin/env bash
# bench23 call3: a cold sweep's compile alone (benchmarks/bench_compile.py: the 823 kernels compiled and SASS-checked on
# an empty cache, nothing else running), old (8065717) and new in turn, two rounds: what the fast-compile level saves
# of the compile itself, apart from the sweep's preparation that shares the cores with it
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
cp benchmarks/bench_compile.py abtree/old/benchmarks/  # the same benchmark; each tree's harness (its own parent)
for r in 1 2; do
  for side in old new; do
    tree=.; [ $side = old ] && tree=abtree/old
    echo -n "$side$r " >> $W/table.txt
    (cd $tree && timeout 120 python3 benchmarks/bench_compile.py --out $W/$side$r.json >> $W/table.txt 2> $W/$side$r.err; echo "$side$r exit $?" >> $W/steps.txt)
  done
done
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
