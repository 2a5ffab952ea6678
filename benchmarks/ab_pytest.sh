#!/usr/bin/env bash
# Same-machine A/B of the README's test command (pytest -n auto): this folder's bench_pytest.py runs it in two trees in
# turn, OLD NEW OLD NEW ..., so that the machine's drift and its speed weigh on both alike.
#     benchmarks/ab_pytest.sh OLD_TREE NEW_TREE ROUNDS
# Each tree has a compile cache of its own (one cache would hold one tree's plans at a time: a plan of other sources
# is deleted when a new one is written, harness/plan.py). First NEW runs cold, then OLD: these fill the caches and
# write each tree's bytecode, and are timed too (the machine's first run, NEW's, also reads everything from disk
# first). Every run after them is warm. Results: $OUT/ab-pytest/<run>.json with each run's log and timeline beside
# it, and table.txt, one line a run. Exit status 1 if any run did not give its result (bench_pytest failed or was
# cut off at 240 s); a run whose tests fail still gives one (its `exit` in the table).
set -u
[ $# -eq 3 ] || { echo "usage: benchmarks/ab_pytest.sh OLD_TREE NEW_TREE ROUNDS" >&2; exit 2; }
: "${OUT:?set OUT to the folder the results go to}"
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) rounds=$3 bench=$(cd "$(dirname "$0")" && pwd)/bench_pytest.py
for t in "$old" "$new"; do [ -f "$t/conftest.py" ] || { echo "ab_pytest.sh: $t has no conftest.py" >&2; exit 2; }; done
A=$OUT/ab-pytest; mkdir -p "$A"
caches=$(mktemp -d); mkdir "$caches/old" "$caches/new"
trap 'rm -rf "$caches"' EXIT
status=0
one() {  # run name, old or new, bench_pytest's run
  tree=$old; [ "$2" = new ] && tree=$new
  (cd "$tree" && timeout 240 python3 "$bench" --cache "$caches/$2" --runs "$3" --out "$A/$1.json" > "$A/run-$1.txt" 2>&1)
  rc=$?
  echo "$1 exit $rc" >> "$A/steps.txt"
  [ $rc -eq 0 ] || status=1
  python3 - "$A/$1.json" "$1" >> "$A/table.txt" <<'PY'
import json, sys
try:
    r = next(iter(json.load(open(sys.argv[1]))["runs"].values()))
except (OSError, ValueError, StopIteration) as e:
    print(f"{sys.argv[2]:<10} no result ({e})"); raise SystemExit
print(f"{sys.argv[2]:<10} {r['wall_s']:6.1f} s  exit {r['exit']}  {r['last_line']}")
PY
}
one new-cold new readme
one old-cold old readme
for r in $(seq 1 "$rounds"); do
  one "old$r" old readme-warm
  one "new$r" new readme-warm
done
exit $status
