#!/usr/bin/env bash
# bench21 call2, from the repo root: the engine now asks for its pool's processes from a thread (the first waits for
# the fork server's imports; call1's warm sweep was 0.23 s slower than old's, its 'compile' phase 0.35 s against
# 0.03 s). The default sweep cold and warm, old (b738c32) and new in turn, two rounds (benchmarks/ab_sweep.sh),
# compared with bench5's pass list; then the README's test command once on empty caches (benchmarks/bench_pytest.py)
set -u
R=$OUT; W=$R/call2; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
t=$(date +%s%N); OUT=$W timeout 330 bash benchmarks/ab_sweep.sh abtree/old . 2 > $W/ab-sweep.log 2>&1; echo "ab_sweep exit $? $(ms $t) ms" >> $W/steps.txt
for f in $W/ab/*/sweep*.jsonl.gz; do echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz $f 2>&1 | tail -1)" >> $W/compare.txt; done
t=$(date +%s%N); timeout 200 python3 benchmarks/bench_pytest.py --cache /tmp/pc21 --runs readme --out $W/bench-pytest.json \
  > $W/pytest.log 2>&1; echo "bench-pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log 2>/dev/null
tar czf $R/call2.tgz -C $R call2 && rm -rf $W
