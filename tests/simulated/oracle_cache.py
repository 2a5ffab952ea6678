"""Fragment layouts for the simulated devices, from an independent source, cached as JSON so that worker
processes never re-run CUTLASS's CuTe DSL.

  * wgmma D (accumulator) registers: CuTe DSL's thread-value layout C of the warpgroup MMA atom
    (tests/cute_oracle.py, evaluated on the CPU). The D layout does not depend on the input type, so the
    f32 accumulator is asked of an f16 atom, f16 of f16, s32 of s8.
  * wgmma A registers (RS): CuTe's thread-value layout A for f16/bf16/e4m3/e5m2/s8/u8. The DSL has no tf32 or
    b1 warpgroup atom: for those two the simulator uses its own reading of the PTX ISA fragment figures
    (/work/shared/spec/README.md: tf32 row 16w + l/4 + 8*(j%2), col l%4 + 4*(j/2); b1 row
    16w + l/4 + 8*((j/32)%2), col 32*(l%4) + j%32 + 128*(j/64)).
  * tcgen05 Tensor Memory cells of D (and of A for TS f16/bf16): CuTe DSL's TMEM fragment layouts
    (tests/cute_oracle_sm100.py tmem_mma_layouts), per CTA. 32-bit accumulators (f32, s32) share one layout.

Cache: $TC_SIM_ORACLE_DIR, *.json, written atomically. The first process to import this module names it (its
$TC_HARNESS_CACHE, or ~/.cache/tc-harness, / sim-oracle) for itself and every process it starts: a test that gives
the harness a private cache, and the GPU workers of its sweeps, still read the session's layouts. The first
wgmma layout missing is computed with every other one the simulated devices can ask (every_wgmma_request), in one
DSL process, one process at a time: a CI run started 13 DSL processes of ~1.4 CPU s each, most for one layout.
"""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
VERSION = 1


os.environ.setdefault("TC_SIM_ORACLE_DIR", str(Path(os.environ.get("TC_HARNESS_CACHE",
                                                                   Path.home() / ".cache" / "tc-harness")) / "sim-oracle"))


def cache_dir() -> Path:
    d = Path(os.environ["TC_SIM_ORACLE_DIR"])
    d.mkdir(parents=True, exist_ok=True)
    return d


def _path(name: str) -> Path:
    return cache_dir() / f"v{VERSION}-{name}.json"


def _store(name: str, obj) -> None:
    p = _path(name)
    tmp = p.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj))
    tmp.replace(p)


def _subprocess(what: str, requests: list) -> list:
    out = subprocess.run([sys.executable, __file__, what, json.dumps(requests)], capture_output=True, text=True,
                         timeout=600, cwd=str(ROOT), env=dict(os.environ, PYTHONPATH=str(ROOT / "tests")))
    if out.returncode != 0:
        raise RuntimeError(f"CuTe DSL oracle failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------ wgmma

D_ATOM = {"f32": "f16", "f16": "f16", "s32": "s8"}
A_ACC = {"f16": "f32", "bf16": "f32", "e4m3": "f32", "e5m2": "f32", "s8": "s32", "u8": "s32"}


def _wgmma_name(atype: str, acc: str, n: int) -> str:
    return f"wgmma-{atype}-{acc}-n{n}"


def every_wgmma_request() -> list[tuple]:
    """Every (atype, acc, n) the simulated wgmma devices can ask: the accumulator layout of each dense, sparse and
    sequence kernel's N and accumulator, and the A layouts (which kernels exist is the harness's list; the layouts
    are the DSL's)."""
    from harness import registry
    reqs = {(t, A_ACC[t], 8) for t in A_ACC}
    for name in ("wgmma", "wgmma_sp", "wgmma_seq"):
        fam = registry.get(name)
        for kernel in fam.kernel_list(fam.archs[0]):
            f = fam.kernel_facets_of(kernel)
            reqs.add((D_ATOM[f["dtype"]], f["dtype"], f["n"]))
    return sorted(reqs)


def ensure_wgmma(requests) -> None:
    """Cache every (atype, acc, n) request not cached yet: where one is missing, every request the simulated devices
    can ask is computed with it, in one DSL process, while this process holds the cache's lock (another waits for it,
    then reads)."""
    def missing(reqs):
        return [r for r in dict.fromkeys(map(tuple, reqs)) if not _path(_wgmma_name(*r)).exists()]
    if not missing(requests):
        return
    with open(cache_dir() / "wgmma.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        asked = missing(requests)
        if asked:
            todo = list(dict.fromkeys(asked + missing(every_wgmma_request())))
            try:
                answers = _subprocess("wgmma", todo)
            except RuntimeError:  # a layout the DSL refuses (a kernel added since?): not asked for here, leave it
                todo, answers = asked, _subprocess("wgmma", asked)  # to the caller that asks, and fail there
            for r, ans in zip(todo, answers):
                _store(_wgmma_name(*r), ans)


def _wgmma(atype: str, acc: str, n: int) -> dict:
    ensure_wgmma([(atype, acc, n)])
    return json.loads(_path(_wgmma_name(atype, acc, n)).read_text())


def wgmma_d(acc: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) [128 threads, N/2 values] of the accumulator; value v sits in register v (f32/s32) or in
    half v % 2 of register v // 2 (f16, lower-numbered value in the low half, PTX ISA)."""
    t = _wgmma(D_ATOM[acc], acc, n)
    return np.array(t["C_row"]), np.array(t["C_col"])


def wgmma_a(atype: str) -> tuple[np.ndarray, np.ndarray, str]:
    """(row, col) [128 threads, values] of A in registers, and the source."""
    if atype in A_ACC:
        t = _wgmma(atype, A_ACC[atype], 8)
        return np.array(t["A_row"]), np.array(t["A_col"]), "CuTe DSL"
    tid = np.arange(128)[:, None]
    w, l = tid // 32, tid % 32
    if atype == "tf32":
        j = np.arange(4)[None, :]
        return 16 * w + l // 4 + 8 * (j % 2), l % 4 + 4 * (j // 2), "PTX ISA figure (own reading)"
    if atype == "b1":
        j = np.arange(128)[None, :]
        return 16 * w + l // 4 + 8 * ((j // 32) % 2), 32 * (l % 4) + j % 32 + 128 * (j // 64), \
            "PTX ISA figure (own reading)"
    raise KeyError(atype)


# ------------------------------------------------------------------------------------------------ tcgen05

def _tmem_name(operand, m, nk, cg, t) -> str:
    return f"tmem-{operand}-m{m}-{nk}-cg{cg}-{t}"


def ensure_tmem(requests) -> None:
    """requests: (operand 'C'|'A', M, N or K, cta_group, 'f32'|'f16' (C) or 'f16' (A))."""
    todo = [r for r in dict.fromkeys(map(tuple, requests)) if not _path(_tmem_name(*r)).exists()]
    if todo:
        sys.path.insert(0, str(ROOT / "tests"))
        from cute_oracle_sm100 import tmem_mma_layouts
        for r, ans in zip(todo, tmem_mma_layouts([list(r) for r in todo])):
            _store(_tmem_name(*r), ans)


def tmem_cells(operand: str, m: int, nk: int, cg: int, t: str) -> np.ndarray:
    """[rows of one CTA, N (or K), 3]: (lane, 32-bit column, bit offset) of each element, per CTA."""
    req = (operand, m, nk, cg, t)
    ensure_tmem([req])
    return np.array(json.loads(_path(_tmem_name(*req)).read_text()), dtype=np.int64)


# ------------------------------------------------------------------------------------------------ DSL side

def _wgmma_main(requests):
    import cute_oracle  # sets CUTE_DSL_ARCH=sm_90a before importing the DSL
    out = []
    for ans in cute_oracle.mma_tv_layouts([tuple(r) for r in requests]):
        out.append({k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in ans.items()})
    print(json.dumps(out))


if __name__ == "__main__":
    {"wgmma": _wgmma_main}[sys.argv[1]](json.loads(sys.argv[2]))
