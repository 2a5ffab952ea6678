"""NVRTC's time per kernel, on any machine (no GPU): a seeded sample of each family's sm_90a kernels compiled to
cubins one at a time in this process (no cache), and, for the wgmma family, the same kernels holding one variant
only (the naive baseline's form), which shows how much of a kernel's time is fixed and how much each variant adds.
A cold sweep's compile is about (kernels x seconds per kernel) / cores.

    python benchmarks/bench_nvrtc.py --out results/<run>/bench-nvrtc.json [--kernels 12] [--family wgmma ...]
"""
import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's harness, run from anywhere

from harness import plan as planning, registry  # noqa: E402
from harness.families.wgmma import forms as wgmma_forms, kernel as wgmma_kernel  # noqa: E402
from harness.run import compile as C, toolchain  # noqa: E402


def seconds(source: str, name: str) -> float:
    t = time.perf_counter()
    data, log = toolchain.default().compile(source, name, "sm_90a", C.DEFAULT_OPTIONS)
    if data is None:
        raise SystemExit(f"bench_nvrtc: NVRTC rejected {name}: {log[:300]}")
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", type=int, default=12, help="kernels sampled per family (seeded)")
    ap.add_argument("--family", action="append", help="default: wgmma and wgmma_sp")
    a = ap.parse_args()
    fams = a.family or ["wgmma", "wgmma_sp"]
    bad = [f for f in fams if f not in registry.registry() or "sm_90a" not in map(str, registry.get(f).archs)]
    if bad or a.kernels < 1:
        raise SystemExit(f"bench_nvrtc: {f'{bad[0]!r} is no sm_90a family' if bad else '--kernels must be >= 1'}")
    tc = toolchain.default()
    report = {"cpus": os.cpu_count(), "toolchain": tc.describe(), "families": {}}
    for f in fams:
        work = planning.make(planning.Selection(families=(f,)), {f: "sm_90a"}, None, cache=True).work
        kernels = [k for k, _ in work]
        random.Random(1).shuffle(kernels)
        kernels = kernels[:a.kernels]
        fam = registry.get(f)
        full = [seconds(fam.source(k), k.name) for k in kernels]
        r = {"kernels": len(kernels), "s_per_kernel": round(sum(full) / len(full), 3), "max_s": round(max(full), 3)}
        if f == "wgmma":  # one variant of each: the part of a kernel's time that does not grow with its variants
            one = [seconds(wgmma_kernel.source(k.form, 0), k.name) for k in kernels]
            r["one_variant_s_per_kernel"] = round(sum(one) / len(one), 3)
            r["variants_per_kernel"] = round(sum(len(wgmma_forms.variants(k.form)) for k in kernels) / len(kernels), 1)
        report["families"][f] = r
        print(f"{f:<10} {r}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
