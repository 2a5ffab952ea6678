#!/usr/bin/env bash
# bench17 call7: the GPU worker forked ahead by the sweep command, timed: sweep_timeline.py now has the command start it
# with the timed backend (in call6 the sweep started a spawned one of its own): a cold sweep, three warm timelines (the worker's first record says whether it was forked)
set -u
R=$OUT; W=$R/call7; mkdir -p $W
python3 -m compileall -q harness > /dev/null
run() { local name=$1; shift; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  TC_HARNESS_CACHE=/tmp/c7 CUDA_CACHE_PATH=/tmp/nv7 "$@" > $W/$name.log 2>&1; rc=$?
  echo "$name exit $rc $(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -o 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run cold python3 -m harness sweep --out /tmp/cold.jsonl
for i in 1 2 3; do export T0=$(date +%s.%N); run warm$i python3 benchmarks/sweep_timeline.py --timeline $W/warm$i.timeline -- --out /tmp/warm$i.jsonl; done
gzip -f $W/*.log $W/*.timeline 2>/dev/null
tar czf $R/call7.tgz -C $R call7 && rm -rf $W
