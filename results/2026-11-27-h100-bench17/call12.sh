#!/usr/bin/env bash
# bench17 call12: the session's last code (74c73dc), the whole tree: the README's test command (its own empty caches),
# then a cold sweep and three warm sweeps from the command line
set -u
R=$OUT; W=$R/call12; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness > /dev/null
t=$(date +%s%N)
TC_HARNESS_CACHE=/tmp/pc12 CUDA_CACHE_PATH=/tmp/pnv12 timeout 200 python3 -m pytest -n auto --durations=20 > $W/pytest.txt 2>&1; rc=$?
echo "README test command (its own empty caches) exit $rc $(ms $t) ms; $(tail -1 $W/pytest.txt)" >> $W/steps.txt
run() { local name=$1; shift; sleep 1; t=$(date +%s%N)
  TC_HARNESS_CACHE=/tmp/c12 CUDA_CACHE_PATH=/tmp/nv12 "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run cold python3 -m harness sweep --out /tmp/cold.jsonl
for i in 1 2 3; do run warm$i python3 -m harness sweep --out /tmp/warm$i.jsonl; done
for f in cold warm1 warm2 warm3; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/pytest.txt 2>/dev/null
tar czf $R/call12.tgz -C $R call12 && rm -rf $W
