"""tcgen05's compile-only modules in a cold default sweep's compile on 16 workers (compile.modules_to_compile), with
MIN_MODULE_SHARE as it is and with it near zero (the rule before it: only MIN_KERNELS_PER_MODULE): each module
compiled by NVRTC 13.0 (the H100 nodes'; a pip wheel loaded with ctypes) at the sweep's options and disassembled as
the SASS check does (compile.sass_of_bytes); CPU seconds of each (NVRTC in this process, nvdisasm a child).
    python module-share.py              (from the repo root; module-share.txt has its output)"""
import os, resource, sys, tempfile, time
os.environ["TC_HARNESS_CACHE"] = tempfile.mkdtemp()
sys.path.insert(0, os.getcwd())
from harness import families, plan as planning, sweep
from harness.run import compile as C, toolchain as T
LIB = "/root/.cache/tc-harness/nvrtc/13.0/nvidia/cu13/lib/libnvrtc.so.13"


def children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


kernels = sweep.plan_kernels(planning.make(planning.Selection(), {}, None))
jobs = [families.compile_job(k, families.get(k.family).sass_check(k)) for k in kernels]
for label, share in (("before (MIN_MODULE_SHARE ~ 0)", 1e-9), (f"MIN_MODULE_SHARE = {C.MIN_MODULE_SHARE:.3f}", C.MIN_MODULE_SHARE)):
    C.MIN_MODULE_SHARE = share
    modules = C.modules_to_compile([(None, j) for j in jobs], T.default(), 16)
    tc5 = [m for m in modules if m[0][1].arch in ("sm_100a", "sm_103a")]
    total_nvrtc = total_dis = 0.0
    longest = 0.0
    for m in tc5:
        js = [t[1] for t in m]
        t = time.process_time()
        data, log = T.ctypes_compile(LIB, C.module_source(js), "m", js[0].arch, js[0].options + ("--Ofast-compile=min",), T.CUBIN)
        nvrtc = time.process_time() - t
        c = children()
        C.sass_of_bytes(data)
        dis = children() - c
        total_nvrtc, total_dis, longest = total_nvrtc + nvrtc, total_dis + dis, max(longest, nvrtc + dis)
    sizes = sorted((m[0][1].arch, len(m)) for m in tc5)
    print(f"{label}: {len(modules)} modules in all; tcgen05's {len(tc5)}: {sizes}")
    print(f"  NVRTC {total_nvrtc:.2f} s, disassembler {total_dis:.2f} s, in all {total_nvrtc + total_dis:.2f} s; "
          f"the longest module {longest:.2f} s")
