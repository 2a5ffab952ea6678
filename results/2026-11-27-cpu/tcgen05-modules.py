"""Each compile module of tests/test_tcgen05.py's fixture (before its refused forms went apart), compiled in turn in this
process, with its seconds (run from the tree's root, TC_HARNESS_CACHE pointing at an empty folder)."""
import time, os, sys
sys.path.insert(0, '.')
from harness.run import compile as C, cores, sass
from harness.families.tcgen05 import forms as tcgen05, kernel as K
from harness.run import toolchain as toolchains
def main():
    FORMS = tcgen05.all_forms()
    jobs = [C.CompileJob(f.name, K.source(f), arch, sass_check=K.sass_check(f, arch)) for arch in tcgen05.ARCHS for f in FORMS]
    tc = toolchains.default()
    todo=[(i,j,None) for i,j in enumerate(jobs)]
    mods = C.modules_to_compile(todo, tc, 4)
    tot=0
    for m in mods:
        js=[t[1] for t in m]
        t=time.time()
        built, shared, verdicts = C._run_job((js, tc))
        dt=time.time()-t; tot+=dt
        print(f"{dt:6.2f} shared={shared} n={len(js)} {js[0].arch} i8={sum('_i8_' in j.name for j in js)}", flush=True)
    print("total", round(tot,1))
if __name__ == "__main__":
    main()
