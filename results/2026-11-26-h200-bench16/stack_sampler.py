"""A sampling profile of a harness command's own process, every thread: every INTERVAL s, the innermost frames of each
thread (sys._current_frames), counted; written to OUT as the most frequent stacks per thread and, per thread, the
innermost function. For finding what paces a warm sweep's main loop.
    python3 stack_sampler.py OUT.txt -- sweep --out x.jsonl"""
import collections, sys, threading, time
sys.path.insert(0, ".")
def run_sampled():
    out_path, args = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    INTERVAL = 0.002
    stacks = collections.Counter()
    leaf = collections.Counter()
    names = {}
    stop = threading.Event()
    def sample():
        me = threading.get_ident()
        while not stop.is_set():
            for th in threading.enumerate():
                names.setdefault(th.ident, th.name)
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                chain = []
                f = frame
                while f is not None and len(chain) < 10:
                    chain.append(f"{f.f_code.co_filename.rsplit('/', 2)[-1]}:{f.f_code.co_name}:{f.f_lineno}")
                    f = f.f_back
                stacks[(tid, " < ".join(chain))] += 1
                leaf[(tid, chain[0] if chain else "?")] += 1
            time.sleep(INTERVAL)
    t = threading.Thread(target=sample, daemon=True); t.start()
    from harness.cli import main
    t0 = time.time(); rc = main(args); wall = time.time() - t0
    stop.set(); t.join()
    names[threading.main_thread().ident] = "MainThread"
    with open(out_path, "w") as fh:
        fh.write(f"rc {rc} wall {wall:.2f} s, samples every {INTERVAL * 1000:.0f} ms\n")
        per = collections.Counter()
        for (tid, _), n in leaf.items(): per[tid] += n
        for tid, n in per.most_common():
            fh.write(f"\n== thread {names.get(tid, tid)}: {n} samples\n")
            for (t2, s), m in leaf.most_common():
                if t2 == tid and m >= max(3, n // 200): fh.write(f"  leaf {m:6d}  {s}\n")
            for (t2, s), m in stacks.most_common():
                if t2 == tid and m >= max(3, n // 100): fh.write(f"  stack {m:6d}  {s}\n")
    sys.exit(rc)


if __name__ == "__main__":  # the sweep's spawned processes import this file as their __main__
    run_sampled()
