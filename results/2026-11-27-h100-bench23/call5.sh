#!/usr/bin/env bash
# bench23 call5, the same machine (held), as run: a cold default sweep of new (empty harness and compute caches) with
# every process's CPU time sampled twice a second (ps), to see which processes spend the compile phase's CPU. The
# analysis printed after it is in check.txt (call5)
mkdir -p $OUT/c5
export TC_HARNESS_CACHE=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d)
(for i in $(seq 1 40); do echo "=== $(date +%s.%N)"; ps -eo pid,ppid,cputimes,etimes,args --sort=-cputimes | head -80 | cut -c1-220; sleep 0.5; done > $OUT/c5/ps.txt) & P=$!
S=$(date +%s.%N); python3 -m harness sweep --out /tmp/c5.jsonl > $OUT/c5/sweep.log 2>&1; E=$(date +%s.%N); kill $P
echo "start $S end $E"   # printed: start 1795779957.915570872 end 1795779976.504915907
