#!/usr/bin/env bash
# The README's two commands on a freshly lent GPU node's stock image, in order, as a user runs them, from the repo
# root (through the device tool: its OUT folder gets everything). The image's Python is itself a venv
# (/opt/torch/.venv); it has no network, so the install cannot build in isolation or fetch anything, and the test
# extra (CuTe DSL, CUTLASS's headers, nvJitLink: the CPU oracles) cannot be installed: the tests run with the image's
# pytest, xdist and hypothesis, and the oracle tests skip with their reason.
#     tools/device_stock_image.sh            # writes env.txt steps.txt install.txt doctor.txt sweep.txt
#                                            # sweep.jsonl.gz pytest.txt under $OUT
set -u
: "${OUT:?set OUT to the folder the results go to}"
export PYTHONUNBUFFERED=1
step() { echo "$1 exit $2 $(date -u +%T)" >> "$OUT/steps.txt"; }
elapsed() { python3 -c 'import sys, time; print(f"{time.time() - float(sys.argv[1]):.2f}")' "$1"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader; nproc
  command -v python3; python3 --version; python3 -c 'import sys; print("venv:", sys.prefix != sys.base_prefix)'
  python3 -m pip list 2>/dev/null | grep -i -E "^(cuda|cupy|numpy|ml.dtypes|pytest|hypothesis|setuptools|nvidia)"
} > "$OUT/env.txt" 2>&1
# the README's first command: pip install -e . && python -m harness sweep
{ python3 -m pip install --no-build-isolation --no-index -e . || { echo "--- with --no-deps:"
  python3 -m pip install --no-build-isolation --no-index --no-deps -e .; }; } > "$OUT/install.txt" 2>&1; step install $?
python3 -m harness doctor > "$OUT/doctor.txt" 2>&1; step doctor $?
t=$(date +%s.%N); python3 -m harness sweep > "$OUT/sweep.txt" 2>&1; rc=$?
echo "wall $(elapsed "$t") s" >> "$OUT/sweep.txt"; step sweep $rc
f=$(ls -t results/scratch/sweep-*.jsonl 2>/dev/null | head -1)
[ -n "$f" ] && gzip -c "$f" > "$OUT/sweep.jsonl.gz"
# the README's second command, with the image's test tools (the extra cannot be fetched here)
# -v: each test's outcome is named as it ends, so a run cut off still says which failed; a test that hangs is stopped
# (pytest-timeout, where the image has it) and named
per_test=$(python3 -c 'import pytest_timeout' 2>/dev/null && echo "--timeout 90")
t=$(date +%s.%N); python3 -m pytest -n auto -v $per_test -p no:cacheprovider -rfEs --durations 30 > "$OUT/pytest.txt" 2>&1; rc=$?
echo "wall $(elapsed "$t") s" >> "$OUT/pytest.txt"; step pytest $rc
