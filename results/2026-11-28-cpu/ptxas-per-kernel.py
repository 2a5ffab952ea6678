"""ptxas's seconds for each sm_90a kernel of the default sweep alone (wgmma, wgmma_sp, wgmma_seq), by accumulator
type, N and variant count. NVRTC 13.0 (the H100 nodes') makes each kernel's PTX at the family's options; the CUDA 13.0
toolkit's ptxas (/usr/local/cuda-13.0/bin/ptxas) compiles it at the matching level (-Ofc min where the family compiles
at NVRTC's fast-compile level). Run from the repo root: python results/2026-11-28-cpu/ptxas-per-kernel.py OUT.json"""
import json, os, re, subprocess, sys, tempfile, time
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
sys.path.insert(0, os.getcwd())
from harness import families  # noqa: E402
from harness.enums import Arch  # noqa: E402
from harness.run import compile as C, toolchain  # noqa: E402

LIB = os.path.expanduser("~/.cache/tc-harness/nvrtc/13.0/nvidia/cu13/lib/libnvrtc.so.13")
PTXAS = "/usr/local/cuda-13.0/bin/ptxas"
FAMILIES = ("wgmma", "wgmma_sp", "wgmma_seq")


@lru_cache(maxsize=None)
def kernels(family):
    return [k for k, _ in families.get(family).kernels(Arch("sm_90a"))]


def one(item):
    family, i = item
    kernel = kernels(family)[i]
    job = families.compile_job(kernel)
    fast = ("--Ofast-compile=min",) if job.fast_compile else ()
    ptx, log = toolchain.ctypes_compile(LIB, C.module_source([job]), "m", "sm_90a", job.options + fast, toolchain.PTX)
    assert ptx is not None, log
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "wb") as f:
            f.write(ptx)
        t = time.perf_counter()
        subprocess.run([PTXAS, "-arch=sm_90a", *(["-Ofc", "min"] if fast else []), path, "-o", path + ".cubin"],
                       check=True, capture_output=True)
        seconds = time.perf_counter() - t
    text = ptx.decode()
    return {"family": family, "name": kernel.name, "ptxas_s": round(seconds, 4),
            "variants": len(re.findall(r"^TC_VARIANT_\d+:", text, re.M)) or text.count("wgmma.mma_async")}


def main():
    todo = [(f, i) for f in FAMILIES for i in range(len(kernels(f)))]
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(one, todo, chunksize=8))
    with open(sys.argv[1], "w") as f:
        json.dump(rows, f, indent=0)
    groups = {}
    for r in rows:
        m = re.search(r"m64n(\d+)k\d+_(\w+?)_(SS|RS)", r["name"])
        n, acc = (int(m.group(1)), m.group(2)) if m else (0, "?")
        band = "N >= 192" if n >= 192 else "128 <= N < 192" if n >= 128 else "N < 128"
        g = groups.setdefault((r["family"], acc, band), [0, 0.0, 0])
        g[0] += 1; g[1] += r["ptxas_s"]; g[2] += r["variants"]
    print(f"{len(rows)} kernels, ptxas {sum(r['ptxas_s'] for r in rows):.1f} s in all (one process a kernel)")
    print(f"{'family':10} {'acc':4} {'N':15} {'kernels':>7} {'ptxas s':>8} {'variants':>8} {'ms/variant':>10}")
    for (fam, acc, band), (k, s, v) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"{fam:10} {acc:4} {band:15} {k:7d} {s:8.1f} {v:8d} {1e3 * s / max(v, 1):10.1f}")


if __name__ == "__main__":
    main()
