#!/usr/bin/env bash
# Issue 57's GPU evidence in one device call on an H100 node, from the repo root, everything under $OUT (7 files):
#   steps.txt                   each step's exit status and time
#   level1.txt, level1-cold.jsonl.gz, verdict.json, textfile.prom   benchmarks/level1_timing.sh (level 1, cold and warm)
#   tap-proof.json              benchmarks/tap_proof.py (the tap flags the planted SBO bug, passes the fix)
#   tap-pytest.txt              the GPU tests of the tap, the level and the fleet formats (tests/test_tap_gpu.py ...)
# Runs in about a minute; exit status 1 when any step failed.
set -u
: "${OUT:?set OUT to the folder the results go to}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
status=0
step() { echo "$1 exit $2 $(date -u +%T)" >> "$OUT/steps.txt"; [ "$2" -eq 0 ] || status=1; }
timeout 150 benchmarks/level1_timing.sh; step level1 $?
timeout 60 python3 benchmarks/tap_proof.py > /dev/null 2>> "$OUT/steps.txt"; step tap-proof $?
timeout 120 python3 -m pytest -q -p no:cacheprovider -rA tests/test_tap_gpu.py tests/test_tap.py tests/test_api.py \
    tests/test_fleet_formats.py > "$OUT/tap-pytest.txt" 2>&1; step pytest $?
exit $status
