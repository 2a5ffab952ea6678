"""A launch prepared whole (reference.prepare_all, kernel.pack, slim) against prepared in parts (the family's
prepare: reference.prepared_in_parts, PREPARE_PART cases a part), on every core at once as a sweep's pool prepares:
PROCS processes, each its own seeded sample of KERNELS launches of one family, each pass alternating the two ways
(ROUNDS passes each; CPU seconds of this process). The bytes are the same (tests/test_prepare_launch.py, bench_host
digests); this measures only the CPU.
    python3 prep_parallel.py FAMILY PROCS KERNELS ROUNDS > out.json      (from the repo root)"""
import json, multiprocessing as mp, os, random, sys, time
sys.path.insert(0, os.getcwd())


def one(args):
    fam_name, seed, nk, rounds = args
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    from harness import families, plan as planning
    fam = families.get(fam_name)
    ref, kmod = fam.module("reference"), fam.module("kernel")
    work = planning.make(planning.Selection(families=(fam_name,)), {fam_name: "sm_90a"}, None, cache=True).work
    random.Random(seed).shuffle(work)
    work = work[:nk]

    def whole(k, cs):
        preps = ref.prepare_all(cs)
        return kmod.pack(preps), [p.slim() for p in preps]

    out = {"whole": [], "parts": [], "cases": sum(len(cs) for _, cs in work)}
    for r in range(rounds):
        order = [("whole", whole), ("parts", fam.prepare)]
        for name, f in (order if (r + seed) % 2 == 0 else order[::-1]):
            t = time.process_time()
            for k, cs in work:
                f(k, cs)
            out[name].append(time.process_time() - t)
    return out


if __name__ == "__main__":
    fam_name, procs, nk, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    from harness import plan as planning  # the plan cached once before the processes read it
    planning.make(planning.Selection(families=(fam_name,)), {fam_name: "sm_90a"}, None, cache=True)
    with mp.get_context("spawn").Pool(procs) as pool:
        res = pool.map(one, [(fam_name, s, nk, rounds) for s in range(procs)])
    cases = sum(r["cases"] for r in res)
    summary = {way: {"cpu_s_per_round": [round(sum(r[way][i] for r in res), 2) for i in range(rounds)],
                     "us_per_case_min_round": round(min(sum(r[way][i] for r in res) for i in range(rounds)) / cases * 1e6, 1)}
               for way in ("whole", "parts")}
    print(json.dumps({"family": fam_name, "procs": procs, "kernels_each": nk, "rounds": rounds, "cases": cases,
                      **summary}))
