#!/usr/bin/env bash
# bench18 call2: what the README test command's workers wait on before their first test: cold and then warm, each
# worker's collection profiled (pytest_timeline, TC_HARNESS_TIMELINE_PROFILE); CUDA's start-up in 16 processes at once
set -u
R=$OUT; W=$R/call2; mkdir -p $W
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
python3 abtree/cuda_init.py > $W/cuda-init.txt 2>&1
pt() { local name=$1; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  mkdir -p $W/tl-$name
  TC_HARNESS_CACHE=/tmp/pc2 CUDA_CACHE_PATH=/tmp/pc2/nv TC_HARNESS_TIMELINE=$W/tl-$name TC_HARNESS_TIMELINE_PROFILE=1 PYTHONPATH=benchmarks \
    timeout 200 python3 -m pytest -q -p no:cacheprovider -p pytest_timeline --durations=30 -n auto > $W/$name.log 2>&1; rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(tail -1 $W/$name.log)" >> $W/steps.txt; }
pt pytest-cold
pt pytest-warm
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt bins > $W/cpu-busy.txt 2>&1
gzip -f $W/*.log 2>/dev/null
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
