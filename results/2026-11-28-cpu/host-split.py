"""Per case, where a wgmma launch's preparation goes (its parts timed by wrapping them), and what the read-back of a
launch costs when every case passes (outputs from the tests' simulated sm_90a device). 40 seeded launches a family.
Run from the repo root: python results/2026-11-28-cpu/host-split.py"""
import collections, functools, os, pickle, random, sys, time
sys.path.insert(0, os.getcwd())
from harness import families, plan as planning  # noqa: E402
from harness.families.wgmma import kernel as K, reference as R  # noqa: E402
from harness.run import engine  # noqa: E402
from harness.spec import layouts  # noqa: E402
from tests.simulated import wgmma_device, wgmma_sp_device  # noqa: E402

spent = collections.Counter()


def timed(module, name):
    fn = getattr(module, name)

    @functools.wraps(fn)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[name] += time.perf_counter() - t
    setattr(module, name, wrapper)


def launches(family, count=40):
    work = planning.make(planning.Selection(families=(family,)), {family: "sm_90a"}, None, cache=True).work
    random.Random(1).shuffle(work)
    return work[:count]


def preparation():
    for name in ("draw_operand", "c_values", "window", "expectations", "junk_bytes"):
        timed(R, name)
    timed(layouts, "write_image")
    timed(K, "pack")
    work = launches("wgmma")
    for kernel, cases in work:
        engine.prepare(kernel, cases)  # warm-up: caches and lazy tables
    spent.clear()
    t = time.perf_counter()
    for kernel, cases in work:
        engine.prepare(kernel, cases)
    total = time.perf_counter() - t
    n = sum(len(cases) for _, cases in work)
    print(f"preparing {n} wgmma cases: {1e3 * total / n:.3f} ms a case, of it (nested: junk_bytes and write_image are "
          "parts of window):")
    for name, s in spent.most_common():
        print(f"   {name:15} {1e3 * s / n:.3f} ms")


def readback():
    done = []
    for family, device in (("wgmma", wgmma_device), ("wgmma_sp", wgmma_sp_device)):
        for kernel, cases in launches(family, 30):
            launch, expectations = engine.prepare(kernel, cases)
            done.append((kernel, pickle.dumps(expectations), device.run("/nonexistent/x.cubin", kernel.name, launch)))
    statuses = collections.Counter()
    t = time.process_time()
    for kernel, expectations, outputs in done:
        statuses.update(r["status"] for r in families.get(kernel.family).readback(kernel, pickle.loads(expectations),
                                                                                 outputs))
    n = sum(statuses.values())
    print(f"reading back {n} wgmma and wgmma_sp cases (expectations unpickled, every case diffed): "
          f"{1e3 * (time.process_time() - t) / n:.3f} ms of CPU a case; {dict(statuses)}")


if __name__ == "__main__":
    preparation()
    readback()
