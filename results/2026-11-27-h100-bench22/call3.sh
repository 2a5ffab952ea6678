#!/usr/bin/env bash
# bench22 call3 (a fresh node), from the repo root: new = the working tree (plans narrowed with the cache too: a
# filtered sweep on an empty cache builds the cases of the kernels it keeps only), old = 4140a18 (abtree/old).
# Filtered sweeps, cold and warm (bench_sweep.py --no-naive -- ARGS), each tree in turn, two rounds each of two
# selections; then the README's test command on empty caches (bench_pytest.py --runs readme), then warm.
set -u
R=$OUT; W=$R/call3; mkdir -p $W
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; } > $W/env.txt 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
ln -sfn ../../results abtree/old/results
python3 -m compileall -q harness benchmarks tests conftest.py abtree/old > /dev/null
top=$(pwd)
for r in 1 2; do for sel in f16n64 b1; do for side in old new; do
  tree=abtree/old; [ $side = new ] && tree=.
  args="--family wgmma --kind f16 --n 64"; [ $sel = b1 ] && args="--kind b1"
  t=$(date +%s%N); (cd $tree && timeout 120 python3 benchmarks/bench_sweep.py --out-dir $W/filt/$sel-$side$r --no-naive -- $args > $W/filt-$sel-$side$r.log 2>&1); echo "sweep $sel $side$r exit $? $(ms $t) ms" >> $W/steps.txt
  python3 -c "
import json,sys; b=json.load(open('$W/filt/$sel-$side$r/bench.json'))
print('$sel $side$r', *(f\"{k} {b[k]['wall_s']} s (plan {b[k]['summary'].get('timing',{}).get('plan_s')} s, compile {b[k]['summary'].get('compile_s')} s, CPU {b[k]['cpu_s']} core-s, {b[k]['summary'].get('pass')} pass)\" for k in ('cold','warm')))" >> $W/filt-table.txt 2>&1
  rm -f $W/filt/$sel-$side$r/sweep*.jsonl
done; done; done
t=$(date +%s%N); timeout 150 python3 benchmarks/bench_pytest.py --cache /tmp/pc22 --runs readme,readme-warm --out $W/bench-pytest.json > $W/pytest.log 2>&1; echo "bench-pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log 2>/dev/null
tar czf $R/call3.tgz -C $R call3 && rm -rf $W
