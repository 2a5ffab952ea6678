# What a warm sweep's GPU worker reads per launch: 120 launches of the default plan, drawn at random (seed 1), prepared
# on the CPU, saved as launch files, and read back as the worker's stage reads them (into a staging); run from the
# repo root with PYTHONPATH=. (results/2026-11-27-cpu/launch-bytes.txt)
import os, time, tempfile, statistics, cProfile, pstats, random
from harness import plan
from harness.enums import Arch
from harness.run import engine, launch as L
sel = plan.Selection()
p = plan.make(sel, run_archs={"wgmma": Arch("sm_90a"), "wgmma_sp": Arch("sm_90a"), "wgmma_seq": Arch("sm_90a")})
random.seed(1)
work = random.sample(p.work, 120)
d = tempfile.mkdtemp()
paths = []
for k, cases in work:
    inp, exp = engine.prepare(k, cases)
    paths.append((inp.save(os.path.join(d, f"{k.name}.launch")), sum(a.nbytes for a in [inp.images, inp.params, *inp.inputs.values()])))
print("sizes: median KB", statistics.median(s for _, s in paths) / 1e3, "sum MB", sum(s for _, s in paths) / 1e6)
st = L.PinnedStaging(allocate=bytearray)
for _ in range(2):
    t = time.perf_counter()
    for path, _ in paths: L.LaunchInput.load(path, st)
    print("load per launch ms", round((time.perf_counter() - t) / len(paths) * 1e3, 3))
pr = cProfile.Profile(); pr.enable()
for _ in range(5):
    for path, _ in paths: L.LaunchInput.load(path, st)
pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(12)
import numpy as np
tot = z = 0; parts = {"images": 0, "params": 0, "inputs": 0}
for path, _ in paths:
    inp = L.LaunchInput.load(path)
    tot += inp.images.size; z += int((inp.images == 0).sum())
    parts["images"] += inp.images.nbytes; parts["params"] += inp.params.nbytes; parts["inputs"] += sum(a.nbytes for a in inp.inputs.values())
print("image bytes zero: %.1f%%" % (100 * z / tot), {k: round(v / 1e6, 1) for k, v in parts.items()})
import collections
agg = collections.Counter(); cnt = collections.Counter()
for path, _ in paths:
    inp = L.LaunchInput.load(path)
    for k, a in inp.inputs.items(): agg[k] += a.nbytes; cnt[k] += 1
print({k: (round(v / 1e6, 1), cnt[k]) for k, v in agg.items()})
k0, c0 = work[0]; inp = L.LaunchInput.load(paths[0][0]); print(k0.name, len(c0), inp.ctas, {k: (a.shape, a.dtype) for k, a in inp.inputs.items()}, inp.images.shape)
