"""Part sizes of a launch's preparation, alternating in one process (prepare-in-parts.txt):
    OPENBLAS_NUM_THREADS=1 python prepare-in-parts.py FAMILY SEED KERNELS     (from the repo root)"""
import os
import sys, time, random, gc, statistics
sys.path.insert(0, os.getcwd())
from harness import families, plan as planning
from harness.run.launch import LaunchInput
fam = sys.argv[1]; seed = int(sys.argv[2]); nk = int(sys.argv[3])
F = families.get(fam)
ref = F.module("reference"); kmod = F.module("kernel")
work = planning.make(planning.Selection(families=(fam,)), {fam: 'sm_90a'}, None, cache=True).work
random.Random(seed).shuffle(work)
work = work[:nk]
def parts(size):
    def f(k, cs):
        ps, ex = [], []
        for preps in ref.prepared_in_parts(cs, size):
            ps.append(kmod.pack(preps)); ex += [p.slim() for p in preps]
        return LaunchInput.concatenate(ps), ex
    return f
def run(f):
    t = time.process_time()
    for k, cs in work: f(k, cs)
    return time.process_time() - t
sizes = (4, 8, 16, 32, 10000)
res = {s: [] for s in sizes}
for rep in range(7):
    for s in sizes:
        gc.collect(); res[s].append(run(parts(s)))
print(fam, {k: (round(min(v), 3), round(statistics.median(v), 3)) for k, v in res.items()})
