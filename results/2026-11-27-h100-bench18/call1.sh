#!/usr/bin/env bash
# bench18 call1: where the README test command's CPU goes on an H100 node: the README's test command on empty caches
# (bench_pytest.py, its timeline now with each test's CPU seconds, its children's included), then a cold sweep and a
# warm one from the command line; the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call1; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
step() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -ao 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
step pytest timeout 240 python3 benchmarks/bench_pytest.py --cache /tmp/pc1 --runs readme --out $W/bench-pytest.json
export TC_HARNESS_CACHE=/tmp/c1 CUDA_CACHE_PATH=/tmp/nv1
step cold python3 -m harness sweep --out /tmp/cold.jsonl
step warm python3 -m harness sweep --out /tmp/warm.jsonl
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt bins > $W/cpu-busy.txt 2>&1
for f in cold warm; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
ls results/2026-11-26-h100-bench5/ >> $W/compare.txt
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
