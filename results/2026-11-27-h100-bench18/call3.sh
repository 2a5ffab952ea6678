#!/usr/bin/env bash
# bench18 call3: the README test command on empty caches, old (fd77e3c) and new (the working tree: plans in parts,
# plan.make with the collector paused) in turn on one machine, OLD NEW OLD NEW, each run on a fresh cache of its own
# (bench_pytest.py --runs readme; its timeline with each test's CPU); the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
declare -A TREE=([new]=. [old]=abtree/old)
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
B=$(pwd)/benchmarks/bench_pytest.py
run() { local name=$1 s=$2; sleep 1; rm -rf /tmp/pc-$name; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && timeout 200 python3 $B --cache /tmp/pc-$name --runs readme --out $W/$name.json > $W/$name.txt 2>&1); rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms" >> $W/steps.txt; }
run old1 old; run new1 new; run old2 old; run new2 new
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt bins > $W/cpu-busy.txt 2>&1
gzip -f $W/cpu.txt 2>/dev/null
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
