#!/usr/bin/env bash
# bench24 call4 (a fresh machine), from the repo root: new = the working tree (call3's code; test_early_compile's helpers
# test made small: in call3 it took 118 s of the README's test command) against old = 865b4f7 (abtree/old). (1) the
# README's test command on empty caches and warm (benchmarks/bench_pytest.py); (2) the default sweep, each tree in
# turn, two rounds (benchmarks/ab_sweep.sh); (3) an experiment, no code of the tree: new's default sweep twice more
# with glibc's malloc told to keep freed memory (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_ in
# the environment of every process), to see what the preparation's page faults cost (the system time of the engine's
# run was 13-21% of the CPU in call2's vmstat); every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call4; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); timeout 250 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme,readme-warm > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); OUT=$W timeout 300 bash benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for r in 1 2; do
  MALLOC_MMAP_THRESHOLD_=2147483647 MALLOC_TRIM_THRESHOLD_=4294967295 MALLOC_TOP_PAD_=268435456 timeout 100 python3 benchmarks/bench_sweep.py --out-dir $W/malloc$r --no-naive > $W/malloc$r.log 2>&1; echo "malloc$r exit $?" >> $W/steps.txt
  gzip -f $W/malloc$r/sweep*.jsonl 2>/dev/null
done
for f in $W/ab/*/sweep*.jsonl.gz $W/malloc*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log 2>/dev/null
tar czf $R/call4.tgz -C $R call4 && rm -rf $W
