#!/usr/bin/env bash
# bench20 call1 (issue 15, eighteenth session), from the repo root: the node's pytest and pytest-xdist; the shared
# libraries every process of a cold default sweep and of the README's test command loads (LD_DEBUG=files), against
# the CUDA libraries pyproject.toml no longer asks for; then the README's test command timed on empty caches
# (benchmarks/bench_pytest.py), with this tree's conftest (its check of pytest-xdist's groups)
set -u
R=$OUT; W=$R/call1; mkdir -p $W
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; python3 -m pytest --version
  python3 -c "import xdist, cupy, numpy; print('pytest-xdist', xdist.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__)"
  pip list 2>/dev/null | grep -iE "^(pytest|cupy|cuda|nvidia)"; } > $W/env.txt 2>&1
python3 -m compileall -q harness benchmarks tests conftest.py > /dev/null
mkdir -p /tmp/ld-sweep /tmp/ld-pytest
t=$(date +%s%N); LD_DEBUG=files LD_DEBUG_OUTPUT=/tmp/ld-sweep/ld TC_HARNESS_CACHE=/tmp/c-ld CUDA_CACHE_PATH=/tmp/nv-ld \
  python3 -m harness sweep --out /tmp/sweep-ld.jsonl > $W/sweep-ld.log 2>&1
echo "sweep-ld exit $? $(ms $t) ms" >> $W/steps.txt; tail -1 /tmp/sweep-ld.jsonl > $W/sweep-ld.summary.json
t=$(date +%s%N); LD_DEBUG=files LD_DEBUG_OUTPUT=/tmp/ld-pytest/ld TC_HARNESS_CACHE=/tmp/c-ldp CUDA_CACHE_PATH=/tmp/nv-ldp \
  timeout 400 python3 -m pytest -n auto -p no:cacheprovider > $W/pytest-ld.log 2>&1
echo "pytest-ld exit $? $(ms $t) ms" >> $W/steps.txt
python3 results/2026-11-27-h100-bench20/ld_libraries.py /tmp/ld-sweep/ld > $W/sweep-libraries.txt 2>&1
python3 results/2026-11-27-h100-bench20/ld_libraries.py /tmp/ld-pytest/ld > $W/pytest-libraries.txt 2>&1
t=$(date +%s%N); timeout 300 python3 benchmarks/bench_pytest.py --cache /tmp/pc1 --runs readme --out $W/bench-pytest.json \
  > $W/pytest.log 2>&1; echo "bench-pytest exit $? $(ms $t) ms" >> $W/steps.txt
gzip -f $W/*.log 2>/dev/null
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
