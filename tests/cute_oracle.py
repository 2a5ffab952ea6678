"""CUTLASS's CuTe DSL as an independent oracle, evaluated on the CPU.

CuTe DSL functions only run inside `cute.jit`. Layout algebra on static shapes is evaluated while the
function is traced, so we trace, collect plain Python ints, and raise before the DSL would compile and
launch anything (which needs a GPU). `CUTE_DSL_ARCH=sm_90a` makes the warpgroup MMA atoms available.
"""
from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.nvgpu import warpgroup as wg  # noqa: E402
import cute_eval  # noqa: E402  (this folder is on the path)

try:  # newer DSLs moved the enum; keep the old spelling as a fallback
    from cutlass.cute.nvgpu import OperandMajorMode as _Major
except ImportError:  # pragma: no cover
    _Major = wg.OperandMajorMode

CUTE_TYPES = {
    "f16": cutlass.Float16, "bf16": cutlass.BFloat16, "tf32": cutlass.TFloat32,
    "e4m3": cutlass.Float8E4M3FN, "e5m2": cutlass.Float8E5M2, "s8": cutlass.Int8, "u8": cutlass.Uint8,
}
ATOM_KIND = {
    ("MN", "none"): wg.SmemLayoutAtomKind.MN_INTER, ("MN", "32B"): wg.SmemLayoutAtomKind.MN_SW32,
    ("MN", "64B"): wg.SmemLayoutAtomKind.MN_SW64, ("MN", "128B"): wg.SmemLayoutAtomKind.MN_SW128,
    ("K", "none"): wg.SmemLayoutAtomKind.K_INTER, ("K", "32B"): wg.SmemLayoutAtomKind.K_SW32,
    ("K", "64B"): wg.SmemLayoutAtomKind.K_SW64, ("K", "128B"): wg.SmemLayoutAtomKind.K_SW128,
}


class _Collected(Exception):
    """Raised at the end of tracing: everything we wanted was computed while tracing."""


def _trace(body):
    out = {}

    @cute.jit
    def traced():
        body(out)
        raise _Collected()

    try:
        traced()
    except _Collected:
        return out
    raise RuntimeError("the CuTe DSL function returned without reaching the end of tracing")


def _swizzle_bytes(addr: np.ndarray, bits: int, base: int, shift: int) -> np.ndarray:
    """CuTe's Swizzle<B,M,S>: XOR bits [M+S, M+S+B) into bits [M, M+B)."""
    if bits == 0:
        return addr
    mask = ((1 << bits) - 1) << (base + shift)
    return addr ^ ((addr & mask) >> shift)


def smem_tiles(requests) -> list[dict]:
    """For each (major, swizzle, dtype, rows, cols): the atom CuTe builds, tiled to rows (MN) x cols (K)
    MN-first. Each answer has the element offsets of the unswizzled layout, the swizzle parameters, and the
    byte address of every element with CuTe's swizzle applied to the byte address (as it is on a
    shared-memory pointer). All requests are evaluated in one trace."""
    def body(out):
        for i, (major, swizzle, dtype, rows, cols) in enumerate(requests):
            atom = wg.make_smem_layout_atom(ATOM_KIND[(major, swizzle)], CUTE_TYPES[dtype])
            tile = cute.tile_to_shape(atom, (rows, cols), (0, 1))
            sw, outer = tile.inner, tile.outer
            out[i] = {"swizzle": (int(sw.num_bits), int(sw.num_base), int(sw.num_shift)), "atom": str(atom),
                      "offsets": cute_eval.offsets(outer, rows, cols)}

    traced = _trace(body)
    answers = []
    for i, (major, swizzle, dtype, rows, cols) in enumerate(requests):
        res = traced[i]
        offsets = np.array(res["offsets"], dtype=np.int64)
        res["elem_bytes"] = CUTE_TYPES[dtype].width // 8
        res["address"] = _swizzle_bytes(offsets * res["elem_bytes"], *res["swizzle"])
        res["offsets"] = offsets
        answers.append(res)
    return answers


def _mma_op(dtype: str, acc: str, n: int, a_src: str):
    at = CUTE_TYPES[dtype]
    acc_t = {"f32": cutlass.Float32, "f16": cutlass.Float16, "s32": cutlass.Int32}[acc]
    src = wg.OperandSource.RMEM if a_src == "RS" else wg.OperandSource.SMEM
    k = {16: 16, 8: 32}[at.width]
    if dtype in ("f16", "bf16"):
        return wg.MmaF16BF16Op(at, acc_t, (64, n, k), src, _Major.K, _Major.K)
    if dtype in ("e4m3", "e5m2"):
        return wg.MmaF8Op(at, at, acc_t, (64, n, k), src, _Major.K, _Major.K)
    return wg.MmaI8Op(at, at, acc_t, (64, n, k), src, _Major.K, _Major.K)


def mma_tv_layouts(requests) -> list[dict]:
    """For each (atype, acc, n): thread-value layouts of the warpgroup MMA atom, C over (64, N) and A
    (registers) over (64, K), as (row, col) arrays [thread, value] decoded from CuTe's column-major tile
    index, and where each value sits in the thread's 32-bit registers (register index, bit offset: for 16-bit
    values the half). All requests are evaluated in one trace."""
    def body(out):
        for i, (dtype, acc, n) in enumerate(requests):
            tm_rs = cute.make_tiled_mma(_mma_op(dtype, acc, n, "RS"))
            C, A = tm_rs.tv_layout_C, tm_rs.tv_layout_A
            nv_c, nv_a = cute.size(C, mode=[1]), cute.size(A, mode=[1])
            acc_t = {"f32": cutlass.Float32, "f16": cutlass.Float16, "s32": cutlass.Int32}[acc]
            out[i] = {"C": cute_eval.offsets(C, 128, nv_c), "A": cute_eval.offsets(A, 128, nv_a),
                      "K": int(tm_rs.shape_mnk[2]), "C_bits": int(acc_t.width),
                      "A_bits": int(CUTE_TYPES[dtype].width)}

    traced = _trace(body)
    answers = []
    for i in range(len(requests)):
        c = np.array(traced[i]["C"], dtype=np.int64)
        a = np.array(traced[i]["A"], dtype=np.int64)
        ans = {"C_row": c % 64, "C_col": c // 64, "A_row": a % 64, "A_col": a // 64, "K": traced[i]["K"]}
        # CuTe's value v of a thread is the v-th element of its register fragment: the MMA atom recasts the
        # fragment to 32-bit registers in order, so v sits in register v // (32 / bits), at bit (v % (32 / bits)) * bits
        for op in ("C", "A"):
            bits = traced[i][f"{op}_bits"]
            v = np.broadcast_to(np.arange(ans[f"{op}_row"].shape[1]), ans[f"{op}_row"].shape)
            ans[f"{op}_reg"], ans[f"{op}_shift"], ans[f"{op}_bits"] = v // (32 // bits), (v % (32 // bits)) * bits, bits
        answers.append(ans)
    return answers
