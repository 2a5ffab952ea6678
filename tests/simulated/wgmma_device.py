"""A simulated sm_90a GPU for wgmma launches (same `use_device` and `run` as harness.run.launch).

Per CTA it does what families/wgmma/wgmma.cu + the tensor core do, from the launch's raw buffers only: take the params
record (image_offset, image_bytes, desc_a, desc_b, variant, scale_d, inject), put the CTA's image in a shared
window at address 0, decode the 64-bit descriptors and generate the address of every A/B element from the
descriptor fields (tests/simulated/smem.py, an independent reading of the PTX ISA), decode the elements
(harness.spec.dtypes), run the MMA with the variant's immediates (harness.families.wgmma.forms.variants), and
place D into each thread's registers with CuTe DSL's thread-value layout (tests/simulated/oracle_cache.py).
C and A (RS) are read from their registers the same way. Registers the layout does not cover keep the poison.

Faults: params.inject 1 trap / 3 misaligned raise like a sticky CUDA error, 2 hangs (the worker's timeout must
fire); TC_SIM_FAULTS plants the same per CTA (sim_common.py). TC_SIM_BUG=swizzle makes the simulated hardware
apply the 128B swizzle as if it were 64B (a planted hardware/model disagreement for the diagnosis test).
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

import numpy as np

from harness.families.wgmma import forms
from harness.contract import LaunchInput
from harness.spec import dtypes
from tests.simulated import oracle_cache, smem
from tests.simulated.sim_common import fault, log_launch, planted, use_device  # noqa: F401

INJECT_MODES = {1: "trap", 2: "hang", 3: "misaligned"}
NAME = re.compile(r"^wgmma_(?P<kind>\w+?)_m64n(?P<n>\d+)k(?P<k>\d+)_(?P<dtype>\w+)_(?P<src>SS|RS)$")


def key_of(kernel_name: str) -> forms.KernelKey:
    m = NAME.match(kernel_name)
    if not m:
        raise ValueError(f"{kernel_name!r} is not a wgmma kernel name")
    key = forms.validate_key(forms.KernelKey(m["kind"], int(m["n"]), m["dtype"], m["src"]))
    if key.k != int(m["k"]):
        raise ValueError(f"{kernel_name}: K = {m['k']} does not match kind {key.kind}")
    return key


@lru_cache(maxsize=None)
def d_layout(acc: str, n: int):
    """(register index, shift) [128, N/2 values] and (row, col) of each accumulator value."""
    row, col = oracle_cache.wgmma_d(acc, n)
    v = np.arange(row.shape[1])[None, :] + 0 * row
    if acc == "f16":
        return v // 2, 16 * (v % 2), row, col
    return v, 0 * v, row, col


@lru_cache(maxsize=None)
def a_layout(atype: str):
    row, col, _ = oracle_cache.wgmma_a(atype)
    bits = dtypes.get(atype).bits
    per = 32 // bits
    j = np.arange(row.shape[1])[None, :] + 0 * row
    return j // per, (j % per) * bits, row, col


def acc_from_bits(acc: str, bits: np.ndarray) -> np.ndarray:
    if acc == "s32":
        s = bits.astype(np.int64)
        return np.where(s >= 1 << 31, s - (1 << 32), s)
    return dtypes.get(acc).from_bits(bits)


def acc_to_bits(acc: str, vals: np.ndarray) -> np.ndarray:
    if acc == "s32":
        return (np.asarray(vals, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    with np.errstate(over="ignore", invalid="ignore"):
        return dtypes.get(acc).to_bits(vals)


# Misreading hooks for the diagnosis tests (tests/simulated/misreading_probe.py sets them, None: a faithful device):
# MISREAD_DESC[operand](decoded descriptor) -> the fields the 'hardware' uses instead;
# MISREAD_INDEX[operand](rows, k) -> (row, k) index arrays: element [r, k] is read where [row[r, k], k[r, k]] sits.
MISREAD_DESC: dict = {}
MISREAD_INDEX: dict = {}


def operand(win, desc: int, major: str, t: dtypes.ElementType, rows: int, k: int, which: str = "B") -> np.ndarray:
    """The rows x k values the tensor core reads through a 64-bit descriptor from a window at address 0."""
    d = smem.decode_wgmma(desc)
    if os.environ.get("TC_SIM_BUG") == "swizzle" and d["swizzle"] == "128B":
        d["swizzle"] = "64B"  # planted: the 'hardware' swizzles 128B tiles like 64B ones
    if which in MISREAD_DESC:
        d = MISREAD_DESC[which](dict(d))
    addr = smem.bit_addresses(d, major, t.bits, rows, k)
    if which in MISREAD_INDEX:
        r, c = MISREAD_INDEX[which](rows, k)
        addr = addr[r, c]
    bits = smem.read_bits(win, addr, t.bits)
    if t.name == "tf32":  # the tensor core ignores the low 13 mantissa bits
        bits = bits & np.uint64(0xFFFFE000)
    return t.from_bits(bits)


def a_from_registers(atype: str, k: int, regs: np.ndarray) -> np.ndarray:
    """A (M = 64 x K) from one warpgroup's four A registers per thread, uint32 [128, 4]."""
    t = dtypes.get(atype)
    reg, shift, row, col = a_layout(atype)
    raw = regs[np.arange(128)[:, None], reg].astype(np.uint64) >> shift.astype(np.uint64)
    a = np.zeros((forms.M, k))
    a[row, col] = t.from_bits(raw & np.uint64((1 << t.bits) - 1))
    return a


def c_from_registers(acc: str, n: int, regs: np.ndarray) -> np.ndarray:
    """C (64 x N) from one warpgroup's accumulator registers, uint32 [128, regs]."""
    reg, shift, row, col = d_layout(acc, n)
    width = 16 if acc == "f16" else 32
    raw = regs[np.arange(128)[:, None], reg].astype(np.uint64) >> shift.astype(np.uint64)
    bits = raw & np.uint64((1 << width) - 1)
    c = np.zeros((forms.M, n), np.int64 if acc == "s32" else np.float64)
    c[row, col] = acc_from_bits(acc, bits)
    return c


def mma(acc: str, v: forms.Variant, a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """One instruction: (scale_a A) (scale_b B)^T (+ C), in the accumulator's arithmetic (s32 wraps or
    saturates); floats stay exact float64 (the harness's inputs are exact)."""
    if acc == "s32":
        d = a.astype(np.int64) @ b.astype(np.int64).T
        if c is not None:
            d = d + c
        return np.clip(d, -(1 << 31), (1 << 31) - 1) if v.satfinite else ((d + (1 << 31)) % (1 << 32)) - (1 << 31)
    d = (v.scale_a * a) @ (v.scale_b * b).T
    return d if c is None else d + c


def d_to_registers(acc: str, n: int, d: np.ndarray, out: np.ndarray) -> None:
    """Write D (64 x N) into one warpgroup's registers (uint32 [128, regs], in place); registers the layout
    does not cover keep what they hold (the poison)."""
    reg, shift, row, col = d_layout(acc, n)
    tid = np.arange(128)[:, None]
    d_bits = acc_to_bits(acc, d)[row, col]
    if acc == "f16":
        cell = np.zeros((128, out.shape[1]), np.uint64)
        np.bitwise_or.at(cell, (np.broadcast_to(tid, reg.shape), reg), d_bits << shift.astype(np.uint64))
        written = np.unique(reg)
        out[:, written] = cell[:, written].astype(np.uint32)
    else:
        out[np.broadcast_to(tid, reg.shape), reg] = d_bits.astype(np.uint32)


def simulate_cta(key: forms.KernelKey, prm, image: np.ndarray, a_regs: np.ndarray, c_regs: np.ndarray,
                 out: np.ndarray) -> None:
    v = forms.variants(key)[int(prm["variant"])]
    mma_cta(v, key, key.k, key.k, prm, image, a_regs, c_regs, out)


def mma_cta(v, key, k_a: int, k_b: int, prm, image: np.ndarray, a_regs: np.ndarray, c_regs: np.ndarray,
            out: np.ndarray, expand_a=None) -> None:
    """One CTA of a wgmma-like launch with variant `v` of a key (its n, dtype, a_src): A is 64 x k_a as stored
    (shared memory or registers), B is N x k_b; `expand_a` turns the stored A into the 64 x k_b matrix the
    tensor core multiplies (the sparse form's decompression), D goes to `out`."""
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    M, N = forms.M, key.n
    win = smem.window(image)
    with np.errstate(over="ignore", invalid="ignore"):
        b = operand(win, int(prm["desc_b"]), "MN" if v.trans_b else "K", bt, N, k_b, "B")
        if key.a_src == "SS":
            a = operand(win, int(prm["desc_a"]), "MN" if v.trans_a else "K", at, M, k_a, "A")
        else:
            a = a_from_registers(v.atype, k_a, a_regs)
        if expand_a is not None:
            a = expand_a(a)
        c = c_from_registers(key.dtype, N, c_regs) if int(prm["scale_d"]) else None
        d = mma(key.dtype, v, a, b, c)
    d_to_registers(key.dtype, N, d, out)


def run(cubin_path, kernel_name, launch) -> dict[str, np.ndarray]:
    inp = LaunchInput.load(launch)
    key = key_of(kernel_name)
    log_launch(kernel_name, inp)
    modes = {i: INJECT_MODES[int(x)] for i, x in enumerate(inp.params["inject"]) if int(x) in INJECT_MODES}
    modes.update(planted(kernel_name, inp))
    fault(modes.values())
    return each_cta(inp, lambda p, image, i, out: simulate_cta(key, p, image, inp.inputs["a_regs"][i],
                                                               inp.inputs["c_regs"][i], out))


def each_cta(inp: LaunchInput, simulate) -> dict[str, np.ndarray]:
    """D of every CTA of a launch, poisoned where nothing writes: simulate(params, image, cta, out) fills out."""
    spec = inp.outputs["d_out"]
    out = np.full((inp.ctas, *spec.shape), spec.fill, dtype=spec.dtype)
    for i in range(inp.ctas):
        p = inp.params[i]
        off, size = int(p["image_offset"]), int(p["image_bytes"])
        simulate(p, inp.images[off:off + size], i, out[i])
    return {"d_out": out}
