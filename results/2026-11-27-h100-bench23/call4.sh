#!/usr/bin/env bash
# bench23 call4, call3's machine (held), as run (one command line, here folded): the compile alone
# (benchmarks/bench_compile.py) new, old (abtree/old lacked the script: refused), new; then a cold sweep of new with
# its timeline and vmstat, with NVIDIA's compute cache (CUDA_CACHE_PATH) empty for it
mkdir -p $OUT/c4
for s in new old new; do tree=.; [ $s = old ] && tree=abtree/old; (cd $tree && python3 benchmarks/bench_compile.py) >> $OUT/c4/compile.txt 2>&1; done
vmstat -t 1 > $OUT/c4/vmstat.txt & VM=$!
export TC_HARNESS_CACHE=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d)
export T0=$(date +%s.%N)
timeout 120 python3 benchmarks/sweep_timeline.py --timeline $OUT/c4/new-cold.timeline -- --out /tmp/nc.jsonl > $OUT/c4/new-cold.log 2>&1
kill $VM
python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/nc.jsonl | tail -1   # printed: no regression
echo T0 $T0   # printed: T0 1795779913.708133443
gzip $OUT/c4/*.timeline*
