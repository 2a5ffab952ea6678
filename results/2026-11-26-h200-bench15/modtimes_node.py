"""Per module of a 16-worker cold sweep's compile (compile.modules_to_compile with MODULES_PER_WORKER, KERNELS_PER_MODULE
from argv), on this machine's default NVRTC, 16 processes at once (a sweep's load): NVRTC's CPU seconds, the
disassembly's (cuobjdump, a child process: its CPU from resource.getrusage), the parse's. Writes JSON to argv[3]."""
import sys, time, json, resource
from concurrent.futures import ProcessPoolExecutor
from harness import families, plan as planning, sweep
from harness.run import compile as C, toolchain as T, sass
def one(args):
    i, jobs = args
    tc = T.default()
    c0 = time.process_time(); w = time.perf_counter()
    src = C.module_source(jobs) if len(jobs) > 1 else jobs[0].source
    m, log = tc.compile(src, f"m{i}", jobs[0].arch, C.DEFAULT_OPTIONS)
    t_nvrtc, c_nvrtc = time.perf_counter() - w, time.process_time() - c0
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN); w = time.perf_counter()
    text = C.sass_of_bytes(m)
    ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t_dis = time.perf_counter() - w; c_dis = (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime)
    c0 = time.process_time()
    fns = {chunk.split()[0]: tuple(sass.instructions(chunk)) for chunk in text.split("Function : ")[1:]}
    return dict(i=i, arch=jobs[0].arch, n=len(jobs), nvrtc_wall=t_nvrtc, nvrtc_cpu=c_nvrtc, dis_wall=t_dis, dis_cpu=c_dis, parse_cpu=time.process_time() - c0)
if __name__ == "__main__":
    C.MODULES_PER_WORKER, C.KERNELS_PER_MODULE = int(sys.argv[1]), int(sys.argv[2])
    ks = sweep.plan_kernels(planning.make(planning.Selection(), {"wgmma": "sm_90a", "wgmma_sp": "sm_90a", "wgmma_seq": "sm_90a"}, None))
    jobs = [C.CompileJob(k.name, families.get(k.family).source(k), str(k.arch)) for k in ks]
    mods = C.modules_to_compile([(None, j, None) for j in jobs], T.default(), 16)
    w = time.perf_counter()
    with ProcessPoolExecutor(16) as ex:
        r = list(ex.map(one, [(i, [t[1] for t in m]) for i, m in enumerate(mods)]))
    wall = time.perf_counter() - w
    json.dump({"wall": wall, "modules": r}, open(sys.argv[3], "w"))
    print(f"MPW {sys.argv[1]} cap {sys.argv[2]}: {len(ks)} kernels in {len(mods)} modules, wall {wall:.2f} s; NVRTC {sum(x['nvrtc_cpu'] for x in r):.1f} core-s, disassembly {sum(x['dis_cpu'] for x in r):.1f}, parse {sum(x['parse_cpu'] for x in r):.1f}; largest module {max(x['nvrtc_wall'] + x['dis_wall'] for x in r):.2f} s", flush=True)
