#!/usr/bin/env bash
# One build-run-collect cycle on a lent GPU machine, run from the repo root there, e.g. through the device tool:
#     benchmarks/device_cycle.sh pytest sweep naive
# Each step runs one benchmark into $OUT/run (bench_pytest's README runs cold and warm, bench_sweep without the naive
# subset, bench_naive, bench_nvrtc, the timing bench); env.txt and vmstat beside them; after every step the whole
# folder is packed into $OUT/bench.tgz, so a step cut off by the call's time limit loses only itself.
set -u
for step in "$@"; do  # every step known before anything runs
  case $step in sweep|naive|nvrtc|pytest|timing) ;; *) echo "device_cycle.sh: unknown step $step (one of sweep naive nvrtc pytest timing)" >&2; exit 2;; esac
done
[ $# -gt 0 ] || { echo "usage: benchmarks/device_cycle.sh STEP... (sweep naive nvrtc pytest timing)" >&2; exit 2; }
: "${OUT:?set OUT to the folder the results go to}"
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
O=$OUT/run; mkdir -p $O
pack() { (cd $OUT && tar czf bench.tgz run); }
{ date -u; env | grep -i -E 'cuda|python|^nv' ; nproc; lscpu | head -20; nvidia-smi; python3 -c "import cupy, numpy; print(cupy.__version__, numpy.__version__)"; } > $O/env.txt 2>&1
vmstat 1 > $O/vmstat.txt 2>&1 & VM=$!
for step in "$@"; do
  case $step in
    sweep) timeout 200 python3 benchmarks/bench_sweep.py --out-dir $O --no-naive > $O/run-sweep.txt 2>&1; rc=$?; gzip -f $O/sweep*.jsonl;;
    naive) timeout 420 python3 benchmarks/bench_naive.py --out $O/bench-naive.json --n 64 --n 128 > $O/run-naive.txt 2>&1; rc=$?;;
    nvrtc) timeout 90 python3 benchmarks/bench_nvrtc.py --out $O/bench-nvrtc.json --kernels 12 > $O/run-nvrtc.txt 2>&1; rc=$?;;
    pytest) timeout 300 python3 benchmarks/bench_pytest.py --out $O/bench-pytest.json --runs readme,readme-warm > $O/run-pytest.txt 2>&1; rc=$?;;
    timing) timeout 120 python3 -m harness bench --out $O/bench-timing.jsonl > $O/run-timing.txt 2>&1; rc=$?;;
  esac
  echo "step $step done, exit $rc (124: cut off by its timeout) $(date -u)" >> $O/steps.txt
  pack
done
kill $VM; gzip -f $O/vmstat.txt; pack
