#!/usr/bin/env bash
# bench25 call8 (a fresh machine), from the repo root: new = the working tree (the session's last code, 80c17ec)
# against old = b404fd5 (abtree/old): the default sweep, each tree in turn, three rounds (benchmarks/ab_sweep.sh),
# with threads_sampler.sh; every sweep compared with bench5's pass list
set -u
R=$OUT; W=$R/call8; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
bash results/2026-11-27-h100-bench25/threads_sampler.sh > $W/threads.txt 2>&1 & S=$!
t=$(date +%s%N); OUT=$W timeout 330 bash benchmarks/ab_sweep.sh abtree/old . 3 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
kill $S
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/ab/old*/sweep*.jsonl.gz $W/ab/new[23]/sweep*.jsonl.gz $W/ab/new1/sweep-warm.jsonl.gz
gzip -f $W/*.log $W/threads.txt 2>/dev/null
tar czf $R/call8.tgz -C $R call8 && rm -rf $W
