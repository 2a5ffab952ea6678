#!/usr/bin/env bash
# bench16 call7: cea8a8d (the second reading's mends of the GPU worker's writes behind the next launch) on a GPU: the
# planted fault and hang tests through the real launch backend, then a cold and a warm sweep compared with bench5's
set -u
R=$OUT; W=$R/call7; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness > /dev/null
t=$(date +%s%N)
TC_HARNESS_CACHE=/tmp/c7t CUDA_CACHE_PATH=/tmp/nv7t python3 -m pytest -p no:cacheprovider -n 4 -rs tests/test_robustness_gpu.py tests/test_mass_faults.py tests/run/test_worker.py tests/test_pipeline.py > $W/pytest-faults.txt 2>&1
echo "fault tests exit $? $(ms $t) ms; $(tail -1 $W/pytest-faults.txt)" >> $W/steps.txt
export TC_HARNESS_CACHE=/tmp/c7 CUDA_CACHE_PATH=/tmp/nv7
for r in cold warm; do t=$(date +%s%N); python3 -m harness sweep --out /tmp/$r.jsonl > $W/$r.log 2>&1; echo "$r exit $? $(ms $t) ms; $(grep -o 'in [0-9.]*s; results' $W/$r.log)" >> $W/steps.txt
  tail -1 /tmp/$r.jsonl > $W/$r.summary.json; echo "$r: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$r.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/pytest-faults.txt
tar czf $R/call7.tgz -C $R call7 && rm -rf $W
