#!/usr/bin/env bash
# call6: NEW (5abee4b, one write_atomically for the cache files): the README's test command with --durations=60 (the machine's first run, its default caches
# empty), then the sweep cold (its own empty caches) and warm three times; each sweep compared with bench5's
set -u
R=$OUT; W=$R/call6; mkdir -p $W
{ nvidia-smi -L; nproc; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
s=$(date +%s%N); timeout 200 python3 -m pytest -n auto --durations=60 > $W/pytest.txt 2>&1; rc=$?
echo "README test command with --durations=60 (cold, the machine's first run) exit $rc $(ms $s) ms" >> $W/steps.txt; tail -1 $W/pytest.txt >> $W/steps.txt
C="TC_HARNESS_CACHE=/tmp/c4 CUDA_CACHE_PATH=/tmp/nv4"
t=$(date +%s%N); env $C python3 -m harness sweep --out /tmp/cold.jsonl > $W/cold.log 2>&1; echo "sweep cold exit $? $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/cold.log)" >> $W/steps.txt
for r in 1 2 3; do
  t=$(date +%s%N); env $C python3 -m harness sweep --out /tmp/warm$r.jsonl > $W/warm$r.log 2>&1; echo "sweep warm$r exit $? $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/warm$r.log)" >> $W/steps.txt
done
for f in cold warm3; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; tail -1 /tmp/$f.jsonl > $W/$f.summary.json; done
gzip -f $W/*.log $W/pytest.txt
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
