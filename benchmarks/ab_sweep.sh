#!/usr/bin/env bash
# Same-machine A/B of the whole sweep, cold and warm: bench_sweep.py (--no-naive) run from two trees in turn,
# OLD NEW OLD NEW ..., so that the machine's drift and its speed (nodes differ by up to a fifth) weigh on both alike.
#     benchmarks/ab_sweep.sh OLD_TREE NEW_TREE ROUNDS [SWEEP-ARGS...]
# OLD_TREE, NEW_TREE: checkouts (say `git archive <commit> | tar -x -C old`); each run imports its own tree's
# harness. Results go to $OUT/ab/<old|new><round>/ (bench.json, the sweep files gzipped) and $OUT/ab/run-*.txt;
# $OUT/ab/table.txt has one line a run: wall cold / warm, and the sweep's own timing. Each tree's bytecode is
# compiled first, as `pip install` compiles an installed package's (the GPU nodes' image sets PYTHONDONTWRITEBYTECODE,
# so a checkout run as it is compiles every module again at each start: about 0.3 s of a warm sweep there).
set -u
[ $# -ge 3 ] || { echo "usage: benchmarks/ab_sweep.sh OLD_TREE NEW_TREE ROUNDS [SWEEP-ARGS...]" >&2; exit 2; }
: "${OUT:?set OUT to the folder the results go to}"
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd) rounds=$3; shift 3  # the rest: the selection, the same for both trees
for t in "$old" "$new"; do [ -f "$t/benchmarks/bench_sweep.py" ] || { echo "ab_sweep.sh: $t has no benchmarks/bench_sweep.py" >&2; exit 2; }; done
A=$OUT/ab; mkdir -p $A
for t in "$old" "$new"; do [ -d "$t/harness" ] && python3 -m compileall -q "$t/harness" > /dev/null; done
for r in $(seq 1 "$rounds"); do
  for side in old new; do
    tree=$old; [ $side = new ] && tree=$new
    (cd "$tree" && timeout 240 python3 benchmarks/bench_sweep.py --out-dir $A/$side$r --no-naive -- "$@" > $A/run-$side$r.txt 2>&1)
    echo "$side$r exit $?" >> $A/steps.txt
    gzip -f $A/$side$r/sweep*.jsonl 2>/dev/null
    python3 - "$A/$side$r/bench.json" "$side$r" >> $A/table.txt <<'PY'
import json, sys
try:
    b = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"{sys.argv[2]:<6} no bench.json ({e})"); raise SystemExit
def line(run):
    t = b[run]["summary"].get("timing", {})
    return (f"{b[run]['wall_s']:6.2f} s (in the sweep {b[run]['summary'].get('wall_s')}, plan {t.get('plan_s')}, compile "
            f"{b[run]['summary'].get('compile_s')}, preparation {t.get('prepare_s')} core-s, read-back "
            f"{t.get('readback_s')} core-s, GPU worker {t.get('gpu_worker_s')} s"
            + (f"; CPU {b[run]['cpu_s']} core-s" if "cpu_s" in b[run] else "") + ")")
print(f"{sys.argv[2]:<6} cold {line('cold')}\n{'':<6} warm {line('warm')}")
PY
  done
done
