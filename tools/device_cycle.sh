#!/usr/bin/env bash
# One device call that gathers every GPU claim of a session, from the repo root on a freshly lent H100 node:
#     tools/device_cycle.sh [STEP...]      # default: stock faults diagnosis fleet tcgen05
# Each step writes into $OUT/<step>/ and is packed into $OUT/<step>.tgz as soon as it ends (a step cut off by the
# call's limit loses only itself); $OUT/steps.txt says how each ended.
#   stock      tools/device_stock_image.sh: the README's two commands on the stock image, in order (issue 52)
#   faults     benchmarks/bench_mass_faults.py: a sweep where most launches fault, against a clean one (issue 53)
#   diagnosis  benchmarks/diagnosis_proof.py: planted model bugs named by their recovered maps (issue 56)
#   fleet      benchmarks/issue57_device.sh: level 1 cold and warm, the verdict, the textfile, the tap (issue 57)
#   tcgen05    benchmarks/tcgen05_forms_toolchain.py: every tcgen05 form built by this node's NVRTC (issue 54)
#   audit      benchmarks/speed_audit.py: the sweep cold and warm with each speed mechanism off in turn (issue 55)
#   audit-pytest  the same for the README test command, with the mechanisms that act in a test session
#   audit-fork the README test command's audit of the fork server alone (the one mechanism only a test session has)
#   ab         the default sweep cold and warm, the tree before issue 55's restructure (ab-old/, made here first:
#              mkdir ab-old && git archive 62e79a9 harness benchmarks pyproject.toml | tar -x -C ab-old; git ignores it:
#              the device call carries it, carry ["ab-old"]) and this
#              one in turn, three rounds (benchmarks/ab_sweep.sh; the sweeps' own files left out), on the old tree's four
#              families (this one's default adds mma_sync)
#   ab-timeline  where a warm sweep's time goes in each tree (ab-old/, as for ab, and this one): each tree's caches
#              filled by one cold sweep, then two rounds in turn of benchmarks/sweep_timeline.py warm (the old tree's
#              four families), each tree's own script; the timelines (old1.timeline, new1.timeline, ...) and their GPU
#              worker's (.worker) come back, the sweeps' files do not (issue 55: the warm gap, placed)
#   mma_sync   the mma_sync family's whole sweep (issue 58), and its timing forms beside wgmma's in `harness bench`
set -u
: "${OUT:?set OUT to the folder the results go to}"
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(stock faults diagnosis fleet tcgen05)
for s in "${steps[@]}"; do
  case $s in stock|faults|diagnosis|fleet|tcgen05|mma_sync|audit|audit-pytest|audit-fork|ab|ab-timeline) ;; *) echo "device_cycle.sh: unknown step $s" >&2; exit 2;; esac
done
export PYTHONUNBUFFERED=1
old_families=(--family wgmma --family wgmma_sp --family wgmma_seq --family tcgen05)  # the ab steps' selection
for s in "${steps[@]}"; do
  d=$OUT/$s; mkdir -p "$d"; t0=$(date +%s)
  case $s in
    stock) OUT=$d timeout 420 bash tools/device_stock_image.sh;;
    faults) PYTHONPATH=$PWD timeout 300 python3 benchmarks/bench_mass_faults.py --out-dir "$d" > "$d/run.txt" 2>&1;;
    diagnosis) timeout 200 python3 benchmarks/diagnosis_proof.py --out "$d/diagnosis-proof.jsonl" --random 3 \
                 > "$d/diagnosis-proof.log" 2>&1;;
    fleet) OUT=$d timeout 200 bash benchmarks/issue57_device.sh;;
    tcgen05) OUT=$d timeout 120 python3 benchmarks/tcgen05_forms_toolchain.py > "$d/run.txt" 2>&1;;
    audit) timeout 420 python3 benchmarks/speed_audit.py --out-dir "$d" --rounds 2 > "$d/run.txt" 2>&1;;
    audit-pytest) timeout 540 python3 benchmarks/speed_audit.py --out-dir "$d" --rounds 1 --workloads pytest \
                    --only fork-server,one-blas-thread,plan-cache > "$d/run.txt" 2>&1;;
    audit-fork) timeout 420 python3 benchmarks/speed_audit.py --out-dir "$d" --rounds 1 --workloads pytest \
                  --only fork-server > "$d/run.txt" 2>&1;;
    ab) OUT=$d timeout 300 bash benchmarks/ab_sweep.sh ab-old . 3 "${old_families[@]}" > "$d/run.txt" 2>&1
        rc=$?; find "$d" -name '*.jsonl*' -delete; (exit $rc);;
    ab-timeline) # 62e79a9's own script wraps GpuWorker.collect without the `restart` its engine passes: mended here
                 sed -i 's/def collect_(self):/def collect_(self, *a, **k):/; s/return collect(self)$/return collect(self, *a, **k)/' \
                   ab-old/benchmarks/sweep_timeline.py
                 for r in cold 1 2; do for side in old new; do
                   tree=ab-old; [ $side = new ] && tree=.
                   c=/tmp/ab-timeline-cache-$side; [ $r = cold ] && rm -rf $c; mkdir -p $c
                   if [ $r = cold ]; then
                     (cd $tree && TC_HARNESS_CACHE=$c CUDA_CACHE_PATH=$c/nv timeout 120 python3 -m harness sweep \
                        "${old_families[@]}" --out "$d/$side-cold.jsonl" > "$d/$side-cold.txt" 2>&1)
                   else
                     (cd $tree && T0=$(date +%s.%N) TC_HARNESS_CACHE=$c CUDA_CACHE_PATH=$c/nv timeout 60 \
                        python3 benchmarks/sweep_timeline.py --timeline "$d/$side$r.timeline" -- "${old_families[@]}" \
                        --out "$d/$side$r.jsonl" > "$d/$side$r.txt" 2>&1)
                   fi
                   echo "$side $r exit $?" >> "$d/steps.txt"
                 done; done
                 find "$d" -name '*.jsonl*' -delete;;
    mma_sync) timeout 300 python3 -m harness sweep --family mma_sync --out "$d/mma_sync.jsonl" > "$d/run.txt" 2>&1
              timeout 200 python3 -m harness bench --family wgmma --family mma_sync --out "$d/bench-h100.jsonl" \
                > "$d/bench.txt" 2>&1;;
  esac
  echo "$s exit $? in $(( $(date +%s) - t0 )) s" >> "$OUT/steps.txt"
  (cd "$OUT" && tar czf "$s.tgz" "$s" && rm -rf "$s")
done
cat "$OUT/steps.txt"
