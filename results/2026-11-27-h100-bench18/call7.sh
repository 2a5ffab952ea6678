#!/usr/bin/env bash
# bench18 call7: the session's last code (8ef26e1) on one machine: the README's test command on empty caches (the
# machine's first run, bench_pytest.py), then a cold sweep and three warm sweeps from the command line; CPU sampled
set -u
R=$OUT; W=$R/call7; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
step() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -ao 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
step pytest timeout 200 python3 benchmarks/bench_pytest.py --cache /tmp/pc7 --runs readme --out $W/bench-pytest.json
export TC_HARNESS_CACHE=/tmp/c7 CUDA_CACHE_PATH=/tmp/nv7
step cold python3 -m harness sweep --out /tmp/cold.jsonl
for i in 1 2 3; do step warm$i python3 -m harness sweep --out /tmp/warm$i.jsonl; done
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt bins > $W/cpu-busy.txt 2>&1
for f in cold warm1 warm2 warm3; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call7.tgz -C $R call7 && rm -rf $W
