#!/usr/bin/env bash
# bench24 call2 (a fresh machine), from the repo root: new = the working tree (call1's, and: the sweep command starts
# its helpers in a thread before it checks its input, the engine takes them; the SASS check after a compile takes the
# verdicts the compiling processes made) against old = 865b4f7 (abtree/old). (1) a cold default sweep of new with its
# timeline and vmstat (the machine's first run); (2) the default sweep, each tree in turn, two rounds
# (benchmarks/ab_sweep.sh); (3) the README's test command on empty caches and warm (benchmarks/bench_pytest.py);
# every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call2; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
vmstat -t 1 > $W/vmstat.txt 2>&1 & VM=$!
C=$(mktemp -d)
t=$(date +%s%N); T0=$(date +%s.%N) TC_HARNESS_CACHE=$C CUDA_CACHE_PATH=$C/nv timeout 120 python3 benchmarks/sweep_timeline.py --timeline $W/new-cold.timeline -- --out /tmp/new-cold.jsonl > $W/new-cold.log 2>&1; echo "timeline exit $? $(ms $t) ms" >> $W/steps.txt
kill $VM; rm -rf $C
echo "new-cold: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/new-cold.jsonl 2>&1 | tail -1)" >> $W/compare.txt
t=$(date +%s%N); OUT=$W timeout 330 bash benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
t=$(date +%s%N); timeout 140 python3 benchmarks/bench_pytest.py --out $W/bench-pytest.json --runs readme,readme-warm > $W/bench-pytest.log 2>&1; echo "bench_pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log $W/new-cold.timeline* $W/vmstat.txt 2>/dev/null
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
