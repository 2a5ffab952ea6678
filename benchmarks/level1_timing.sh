#!/usr/bin/env bash
# Fleet level 1 end to end on a GPU node (issue 57: under 10 s, warm or cold): `python -m harness sweep --level 1`
# as a Slurm prolog runs it, a fresh process each time, timed from outside (process start to exit).
#     benchmarks/level1_timing.sh            # from the repo root; writes under $OUT:
#       level1.txt            one line a run: cold (an empty harness cache: no plan, no kernel, no kept launch), then
#                             three warm runs; exit status, wall seconds, the sweep's own summary line
#       level1-cold.jsonl.gz  the cold run's results file
#       verdict.json          python -m harness verdict of it (NVIDIA Health Validation's shape), its exit status last
#       textfile.prom         python -m harness textfile of it (the first GPU's file)
# Exit status 1 when a run did not pass or took 10 s or more.
set -u
: "${OUT:?set OUT to the folder the results go to}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TC_HARNESS_CACHE="$work/cache"  # cold: nothing cached; the warm runs share what the cold one left
T=$OUT/level1.txt
status=0
one() {  # run name
  t0=$(date +%s.%N)
  python3 -m harness sweep --level 1 --out "$work/$1.jsonl" > "$work/$1.log" 2>&1
  rc=$?
  wall=$(python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$t0" "$(date +%s.%N)")
  echo "$1 exit $rc wall_s $wall | $(grep -E 'passed, .* failed' "$work/$1.log" | tail -1)" >> "$T"
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)' "$wall" || status=1
  [ "$rc" -eq 0 ] || { status=1; tail -5 "$work/$1.log" >> "$T"; }
}
{ nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader; nproc; } > "$T" 2>&1
one cold
for i in 1 2 3; do one "warm$i"; done
gzip -c "$work/cold.jsonl" > "$OUT/level1-cold.jsonl.gz"
python3 -m harness verdict "$work/cold.jsonl" > "$OUT/verdict.json" 2>&1
echo "exit $?" >> "$OUT/verdict.json"
python3 -m harness textfile "$work/cold.jsonl" --out "$work/tf" >> "$T" 2>&1
cat "$work"/tf/*.prom > "$OUT/textfile.prom" 2>/dev/null
exit $status
