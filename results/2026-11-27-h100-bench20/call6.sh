#!/usr/bin/env bash
# bench20 call6, from the repo root: a warm default sweep's GPU worker, its three threads timed (the launches, the
# reading thread's stage of each launch file, the writer thread's save_outputs of each outputs' file:
# benchmarks/timed_backend.py), twice after a cold sweep on the same caches; and the timeline's test on this GPU
set -u
R=$OUT; W=$R/call6; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks tests > /dev/null
export TC_HARNESS_CACHE=/tmp/c6 CUDA_CACHE_PATH=/tmp/nv6
t=$(date +%s%N); python3 -m harness sweep --out /tmp/cold.jsonl > $W/cold.log 2>&1; echo "cold exit $? $(ms $t) ms" >> $W/steps.txt
for i in 1 2; do
  export T0=$(date +%s.%N); python3 benchmarks/sweep_timeline.py --timeline $W/warm$i.timeline -- --out /tmp/warm$i.jsonl > $W/warm$i.log 2>&1
  echo "warm$i exit $? $(grep -ao 'in [0-9.]*s; results' $W/warm$i.log)" >> $W/steps.txt; tail -1 /tmp/warm$i.jsonl > $W/warm$i.summary.json
done
python3 -m pytest -q -p no:cacheprovider tests/test_benchmarks.py -k sweep_timeline > $W/test.log 2>&1; echo "test exit $?" >> $W/steps.txt
gzip -f $W/*.log $W/*.timeline
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
