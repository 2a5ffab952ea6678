"""harness.run.launch with a sampler thread in the GPU worker: every 1 ms each thread's stack is taken
(sys._current_frames); per thread the counts of leaf lines and of short stacks are written to $SAMPLED_BACKEND_OUT
every 0.5 s (the worker ends through os._exit: no atexit)."""
import collections, json, os, sys, threading, time
from harness.run import launch
from harness.run.launch import *  # noqa: F401,F403
STAGINGS, stage, OUTPUT_STAGINGS = launch.STAGINGS, launch.stage, launch.OUTPUT_STAGINGS
run, run_to_host = launch.run, launch.run_to_host
OUT = os.environ.get("SAMPLED_BACKEND_OUT")
_started = False

def _sample():
    leaves = collections.defaultdict(collections.Counter)
    stacks = collections.defaultdict(collections.Counter)
    n = 0
    me = threading.get_ident()
    last = time.time()
    while True:
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            name = names.get(ident, str(ident))
            chain = []
            f = frame
            while f is not None and len(chain) < 6:
                chain.append(f"{os.path.basename(f.f_code.co_filename)}:{f.f_code.co_name}:{f.f_lineno}")
                f = f.f_back
            leaves[name][chain[0]] += 1
            stacks[name][" < ".join(chain)] += 1
        n += 1
        time.sleep(0.001)
        if OUT and time.time() - last > 0.5:
            last = time.time()
            with open(OUT, "w") as fh:
                json.dump({"samples": n, "leaves": {k: v.most_common(15) for k, v in leaves.items()},
                           "stacks": {k: v.most_common(12) for k, v in stacks.items()}}, fh, indent=1)

def use_device(index):
    global _started
    launch.use_device(index)
    if not _started:
        _started = True
        threading.Thread(target=_sample, daemon=True, name="sampler").start()
