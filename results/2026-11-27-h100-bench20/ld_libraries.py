"""Which shared libraries a run's processes loaded, from glibc's LD_DEBUG=files logs (LD_DEBUG_OUTPUT=PREFIX writes
PREFIX.<pid>): each CUDA library's name and how many processes mapped it (a name only tried is not counted), and a verdict on the libraries CuPy's `ctk`
extra brings that the harness's dependencies leave out (pyproject.toml).

    python3 ld_libraries.py PREFIX > libraries.txt
"""
import glob
import re
import sys
from collections import Counter

LEFT_OUT = ("libcublas", "libcublasLt", "libcufft", "libcufftw", "libcurand", "libcusolver", "libcusolverMg",
            "libcusparse", "libnvJitLink")

loaded_by = Counter()
why = {}  # a library's name -> what asked for it, the first time it was mapped
files = glob.glob(sys.argv[1] + ".*")
for path in files:
    names, asked = set(), {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.search(r"file=(\S+?) \[\d+\];\s+(needed|dynamically loaded) by (\S+)", line)
            if m:
                asked.setdefault(m.group(1).rsplit("/", 1)[-1], f"{m.group(2)} by {m.group(3)}")
            m = re.search(r"file=(\S+?) \[\d+\];\s+generating link map", line)  # found and mapped, not tried
            if m:
                name = m.group(1).rsplit("/", 1)[-1]
                names.add(name)
                why.setdefault(name, asked.get(name, "?"))
    loaded_by.update(names)
print(f"{len(files)} processes")
for name, n in sorted(loaded_by.items()):
    if name.startswith(("libcu", "libnv", "libcuda")):
        print(f"{n:6d}  {name}  ({why[name]})")
hits = sorted(n for n in loaded_by if n.split(".so")[0] in LEFT_OUT)
# a log that missed the libraries every GPU run loads (the driver, NVRTC) cannot vouch for the others' absence
seen = [lib for lib in ("libcuda.so", "libnvrtc.so") if any(n.startswith(lib) for n in loaded_by)]
if len(seen) < 2:
    print("cannot judge: the logs do not show libcuda and libnvrtc loaded")
    sys.exit(1)
print("left-out libraries loaded:", ", ".join(hits) if hits else "none")
