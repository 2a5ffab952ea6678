#!/usr/bin/env bash
# bench18 call6: a sweep's end, old (2c15542) and new (the working tree: the engine winds down, its GPU worker and pool
# told to stop, before the results file's last fsync, and is joined after it): a cold sweep of each (its own caches),
# then warm sweeps old new five times over; the machine's CPU sampled throughout
set -u
R=$OUT; W=$R/call6; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; df -h /tmp | tail -1; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
declare -A TREE=([new]=. [old]=abtree/old2)
for s in new old; do python3 -m compileall -q ${TREE[$s]}/harness > /dev/null; done
python3 abtree/cpu_sampler.py $W/cpu.txt & SAMPLER=$!
run() { local name=$1 s=$2; shift 2; sleep 1; t=$(date +%s%N); echo "$name start $(date +%s.%N)" >> $W/steps.txt
  (cd ${TREE[$s]} && TC_HARNESS_CACHE=/tmp/c6-$s CUDA_CACHE_PATH=/tmp/nv6-$s "$@" > $W/$name.log 2>&1); rc=$?
  echo "$name end $(date +%s.%N)" >> $W/steps.txt; echo "$name exit $rc $(ms $t) ms; $(grep -ao 'in [0-9.]*s; results' $W/$name.log)" >> $W/steps.txt; }
run new-cold new python3 -m harness sweep --out /tmp/new-cold.jsonl
run old-cold old python3 -m harness sweep --out /tmp/old-cold.jsonl
for i in 1 2 3 4 5; do
  run old-warm$i old python3 -m harness sweep --out /tmp/old-warm$i.jsonl
  run new-warm$i new python3 -m harness sweep --out /tmp/new-warm$i.jsonl
done
kill $SAMPLER
python3 abtree/cpu_busy.py $W/cpu.txt $W/steps.txt > $W/cpu-busy.txt 2>&1
for f in new-cold old-cold old-warm1 new-warm1 old-warm2 new-warm2 old-warm3 new-warm3 old-warm4 new-warm4 old-warm5 new-warm5; do tail -1 /tmp/$f.jsonl > $W/$f.summary.json; echo "$f: $(python3 -m harness compare results/2026-11-26-h100-bench5/sweep.jsonl.gz /tmp/$f.jsonl 2>&1 | tail -1)" >> $W/compare.txt; done
gzip -f $W/*.log $W/cpu.txt 2>/dev/null
tar czf $R/call6.tgz -C $R call6 && rm -rf $W
