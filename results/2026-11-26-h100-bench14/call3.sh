#!/usr/bin/env bash
# call3: the README's test command on NEW (its default caches empty: the machine's first run), then
# benchmarks/ab_sweep.sh OLD NEW 2 (bench_sweep.py cold and warm, with each run's CPU, the trees in turn); NEW's
# sweeps compared with bench5's
set -u
R=$OUT; W=$R/call3; mkdir -p $W
ln -sfn ../../results abtree/old/results
{ nvidia-smi -L; nproc; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
s=$(date +%s%N); timeout 200 python3 -m pytest -n auto > $W/pytest.txt 2>&1; rc=$?
echo "README test command (cold, the machine's first run) exit $rc $(ms $s) ms" >> $W/steps.txt; tail -1 $W/pytest.txt >> $W/steps.txt
OUT=$W benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-run.txt 2>&1
for f in $W/ab/new1/sweep.jsonl.gz $W/ab/new2/sweep-warm.jsonl.gz $W/ab/old2/sweep.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
rm -f $W/ab/old1/sweep*.jsonl.gz $W/ab/old2/sweep-warm.jsonl.gz $W/ab/new1/sweep-warm.jsonl.gz $W/ab/new2/sweep.jsonl.gz
gzip -f $W/pytest.txt
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
