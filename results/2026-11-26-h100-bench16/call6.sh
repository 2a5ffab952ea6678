#!/usr/bin/env bash
# bench16 call6: the session's last code (a44db59) on an H100 node: a cold sweep (its own empty caches), two warm sweeps,
# then the README's test command (its own empty caches); the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call6; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness > /dev/null
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
run() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
export TC_HARNESS_CACHE=/tmp/c6 CUDA_CACHE_PATH=/tmp/nv6
run cold python3 -m harness sweep --out /tmp/cold.jsonl
run warm1 python3 -m harness sweep --out /tmp/warm1.jsonl
run warm2 python3 -m harness sweep --out /tmp/warm2.jsonl
export TC_HARNESS_CACHE=/tmp/pc6 CUDA_CACHE_PATH=/tmp/pnv6
run pytest timeout 150 python3 -m pytest -n auto --durations=20
kill $SAMPLER
for f in cold warm1 warm2; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
echo "README test command: $(tail -1 $W/pytest.log)" >> $W/steps.txt
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
