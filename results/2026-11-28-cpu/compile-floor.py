"""Where a cold compile's CPU goes, and what does not shorten it (NVRTC 13.0, the H100 nodes'; the CUDA 13.0
toolkit's ptxas; the nvdisasm the harness uses). Run from the repo root on an otherwise idle machine:
    python results/2026-11-28-cpu/compile-floor.py
Each time is the least of 3 (this machine's other load only ever adds time)."""
import os, random, re, subprocess, sys, tempfile, time
sys.path.insert(0, os.getcwd())
from harness import families  # noqa: E402
from harness.enums import Arch  # noqa: E402
from harness.run import compile as C, sass, toolchain  # noqa: E402

LIB = os.path.expanduser("~/.cache/tc-harness/nvrtc/13.0/nvidia/cu13/lib/libnvrtc.so.13")
PTXAS = "/usr/local/cuda-13.0/bin/ptxas"
FAST = C.DEFAULT_OPTIONS + ("--Ofast-compile=min",)
TMP = tempfile.mkdtemp()


def least(f, n=3):
    best = None
    for _ in range(n):
        t = time.perf_counter(); out = f(); dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def ptxas(ptx: str, *opts) -> tuple[float, subprocess.CompletedProcess]:
    path = os.path.join(TMP, "k.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    return least(lambda: subprocess.run([PTXAS, "-arch=sm_90a", *opts, path, "-o", path + ".cubin"],
                                        capture_output=True, text=True))


def ptx_of(jobs) -> str:
    d, log = toolchain.ctypes_compile(LIB, C.module_source(jobs), "m", "sm_90a", FAST, toolchain.PTX)
    assert d is not None, log
    return d.decode()


def kernel(name):
    fam = families.get(name.split("_m64")[0].rsplit("_", 1)[0])
    return next(k for k, _ in fam.kernels(Arch("sm_90a")) if k.name == name)


def module_sample(seed=3, size=24):
    ks = [k for f in ("wgmma", "wgmma_sp") for k, _ in families.get(f).kernels(Arch("sm_90a"))]
    return random.Random(seed).sample(ks, size)


def nvrtc_phases():
    jobs = [families.compile_job(k) for k in module_sample()]
    csv = os.path.join(TMP, "time.csv")
    d, log = toolchain.ctypes_compile(LIB, C.module_source(jobs), "m", "sm_90a", FAST + (f"--time={csv}",),
                                      toolchain.CUBIN)
    assert d is not None, log
    print("## 1. NVRTC's phases, one module of 24 seeded wgmma and wgmma_sp kernels (--time)")
    for line in open(csv).read().splitlines()[1:]:
        print("  ", line.split(",", 1)[1].strip())
    return jobs


def ptxas_levels(jobs):
    print("\n## 2. ptxas's optimization levels on that module's PTX (-Ofc min is what NVRTC's fast-compile level runs)")
    ptx = ptx_of(jobs)
    checks = [families.get(k.family).sass_check(k) for k in module_sample()]
    for opts in (("-Ofc", "min"), ("-Ofc", "mid"), ("-Ofc", "max"), ("-O3",), ("-O2",), ("-O1",), ("-O0",)):
        dt, out = ptxas(ptx, *opts)
        data = open(os.path.join(TMP, "k.ptx.cubin"), "rb").read()
        content = sass.content_digest(data)
        broken = sum(not sass.judge(data, content, c).ok for c in checks)
        print(f"   {' '.join(opts):9} {dt:6.3f} s   kernels failing their SASS check: {broken} of {len(checks)}"
              f"{'   (ptxas infos C7511/C7517/C7519: ' + str(len(re.findall('C75', out.stderr))) + ')' if broken else ''}")


def variant_scaling():
    print("\n## 3. ptxas's seconds against a kernel's variants (its blocks of one wgmma each), the rest of the kernel kept")
    for name in ("wgmma_f16_m64n256k16_f32_SS", "wgmma_f16_m64n176k16_f32_RS", "wgmma_f16_m64n248k16_f16_SS",
                 "wgmma_f16_m64n64k16_f32_SS"):
        lines = ptx_of([families.compile_job(kernel(name))]).split("\n")
        starts = [i for i, ln in enumerate(lines) if re.match(r"TC_VARIANT_\d+:", ln)]
        done = next(i for i, ln in enumerate(lines) if ln.startswith("TC_DONE:"))
        row = []
        for m in (1, 2, 4, 8, 16, 32):
            if m > len(starts):
                break
            drop = set(range(starts[m], done)) if m < len(starts) else set()
            kept = [ln for i, ln in enumerate(lines) if i not in drop and not (
                re.search(r"bra\.uni TC_VARIANT_(\d+);", ln) and int(re.search(r"TC_VARIANT_(\d+)", ln)[1]) >= m)]
            row.append(f"{m}: {ptxas(chr(10).join(kept), '-Ofc', 'min')[0] * 1e3:.0f}")
        print(f"   {name:30} ({len(starts)} variants)  variants: ms  " + ", ".join(row))
    return name


def block_shapes():
    print("\n## 4. Other shapes of wgmma_f16_m64n256k16_f32_SS's 32 blocks (the same 32 wgmma instructions)")
    lines = ptx_of([families.compile_job(kernel("wgmma_f16_m64n256k16_f32_SS"))]).split("\n")
    starts = [i for i, ln in enumerate(lines) if re.match(r"TC_VARIANT_\d+:", ln)]
    done = next(i for i, ln in enumerate(lines) if ln.startswith("TC_DONE:"))
    first = next(i for i, ln in enumerate(lines) if ln.startswith("setp.eq.u32 v,"))
    blocks = [lines[s:(starts[j + 1] if j + 1 < len(starts) else done)] for j, s in enumerate(starts)]
    head, tail = lines[:first], lines[done:]
    wg = [next(ln for ln in b if ln.startswith("wgmma.mma_async")) for b in blocks]
    shapes = {
        "as the harness makes it (a compare and branch a block)": lines[first:done],
        "a jump table (brx.idx)": [f"ts: .branchtargets {', '.join(f'TC_VARIANT_{j}' for j in range(len(blocks)))};",
                                   f"setp.lt.u32 v, %r11, {len(blocks)};", "@!v bra.uni TC_DONE;",
                                   "brx.idx.uni %r11, ts;"] + [ln for b in blocks for ln in b],
        "one fence before the dispatch": ["wgmma.fence.sync.aligned;"] + lines[first:starts[0]]
        + [ln for b in blocks for ln in b if not ln.startswith("wgmma.fence")],
        "no branches: one fence, each wgmma predicated, one commit": ["wgmma.fence.sync.aligned;"]
        + [x for j, w in enumerate(wg) for x in (f"setp.eq.u32 v, %r11, {j};", "@v " + w)]
        + ["wgmma.commit_group.sync.aligned;"],
    }
    for label, body in shapes.items():
        dt, out = ptxas("\n".join(head + body + tail), "-Ofc", "min")
        print(f"   {label:58} {dt:6.3f} s  injected arrives/waits (C7517, C7519): "
              f"{len(re.findall('C751[79]', out.stderr))}")


def disassembler():
    print("\n## 5. nvdisasm (the harness's options) on a cubin of one empty kernel and on the 24-kernel module")
    triv = os.path.join(TMP, "t.ptx")
    with open(triv, "w") as f:
        f.write(".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { ret; }\n")
    subprocess.run([PTXAS, "-arch=sm_90a", triv, "-o", triv + ".cubin"], check=True)
    d, _ = toolchain.ctypes_compile(LIB, C.module_source([families.compile_job(k) for k in module_sample()]), "m",
                                    "sm_90a", FAST, toolchain.CUBIN)
    with open(os.path.join(TMP, "m.cubin"), "wb") as f:
        f.write(d)
    for label, path in (("empty kernel", triv + ".cubin"), ("24 kernels", os.path.join(TMP, "m.cubin"))):
        before = os.times()
        for _ in range(3):
            subprocess.run([C.nvdisasm_path(), *C.DISASSEMBLER_OPTIONS, path], capture_output=True, check=True)
        after = os.times()
        cpu = (after.children_user + after.children_system - before.children_user - before.children_system) / 3
        print(f"   {label:13} {os.path.getsize(path):8d} bytes: {cpu:.2f} s of CPU a disassembly")


if __name__ == "__main__":
    ptxas_levels(nvrtc_phases())
    variant_scaling()
    block_shapes()
    disassembler()
