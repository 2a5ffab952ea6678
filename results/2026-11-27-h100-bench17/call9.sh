#!/usr/bin/env bash
# bench17 call9: the session's code (e669f32 and after) with the whole tree: the README's test command (its own empty
# caches); then a cold sweep, two warm sweeps, and a warm sweep whose GPU worker samples its own threads' stacks every
# 1 ms (sampled_backend.py, sampled_sweep.py), to see what the worker does between launches
set -u
R=$OUT; W=$R/call9; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness > /dev/null
t=$(date +%s%N)
TC_HARNESS_CACHE=/tmp/pc9 CUDA_CACHE_PATH=/tmp/pnv9 timeout 200 python3 -m pytest -n auto --durations=20 > $W/pytest.txt 2>&1; rc=$?
echo "README test command (its own empty caches) exit $rc $(ms $t) ms; $(tail -1 $W/pytest.txt)" >> $W/steps.txt
run() { local name=$1; shift; sleep 1; t=$(date +%s%N)
  TC_HARNESS_CACHE=/tmp/c9 CUDA_CACHE_PATH=/tmp/nv9 "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run cold python3 -m harness sweep --out /tmp/cold.jsonl
run warm1 python3 -m harness sweep --out /tmp/warm1.jsonl
run warm2 python3 -m harness sweep --out /tmp/warm2.jsonl
SAMPLED_BACKEND_OUT=$W/worker-stacks.json run warm-sampled python3 abtree/sampled_sweep.py --out /tmp/warm3.jsonl
for f in cold warm1 warm2 warm3; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/pytest.txt 2>/dev/null
tar czf $R/call9.tgz -C $R call9 && rm -rf $W
