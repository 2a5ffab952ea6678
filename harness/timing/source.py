"""The CUDA source of a timing module and the launch jobs that time it.

A timing module holds two kernels, `<module>_lat` and `<module>_tput` (wgmma_timing.cu,
tcgen05_timing.cu, in this folder). The instruction text is the validation harness's own: wgmma from
harness.families.wgmma.forms.instruction, tcgen05 from harness.families.tcgen05.forms.mma_statement/commit.
The shared-memory image (A then B, K-major, the form's swizzle, random finite values) and the descriptors are
built on the host from the spec models (harness.spec.layouts, harness.spec.descriptors).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness import kernels
from harness.families.tcgen05 import forms as T
from harness.families.wgmma import forms as W, kernel as wgmma_kernel
from harness.spec import desc_tcgen05, desc_wgmma, dtypes, idesc, layouts
from harness.spec.layouts import SmemLayout
from harness.timing.forms import Tcgen05Timing, WgmmaTiming

HERE = Path(__file__).resolve().parent  # the kernel's template sits beside this module

CONSUMER_WGS = 2  # wgmma throughput: warpgroups per CTA, each with its own accumulators
KSTEPS = 4  # MMAs per commit group in the throughput loops (kernels' KSTEPS)
# Dynamic shared memory asked for by a throughput CTA: more than half an SM's 228 KB, so one CTA per SM.
ONE_CTA_PER_SM_SMEM = 120 * 1024
TARGET_CYCLES = 1 << 21  # throughput: cycles of one launch at the datasheet rate (~1 ms)
LAT_WARMUP, LAT_REPS, LAT_LAUNCHES = 64, 512, 3
TPUT_WARMUP_LAUNCHES, TPUT_LAUNCHES = 3, 20
ASSUMED_B1_PEAK = 32768  # sizes the b1 loop only (no published figure)

PARAMS_WGMMA = np.dtype([("desc_a", "<u8"), ("desc_b", "<u8"), ("image_bytes", "<u4"), ("iters", "<u4"),
                         ("warmup", "<u4"), ("reps", "<u4"), ("kstep", "<u4", (KSTEPS,)),
                         ("scale_d", "<u4"), ("sink", "<u4")])
assert PARAMS_WGMMA.itemsize == 56
PARAMS_TCGEN05 = np.dtype([("desc_a", "<u8"), ("desc_b", "<u8"), ("image_bytes", "<u4"), ("iters", "<u4"),
                           ("warmup", "<u4"), ("reps", "<u4"), ("kstep", "<u4", (KSTEPS,)),
                           ("idesc", "<u4"), ("enable_input_d", "<u4"), ("alloc_cols", "<u4"),
                           ("a_tmem_col", "<u4"), ("a_tmem_cols", "<u4"), ("sink", "<u4")])
assert PARAMS_TCGEN05.itemsize == 72


# ---------------------------------------------------------------------------------------------------- source

def _one_line(stmt: str) -> str:
    """A statement that goes inside a #define: no raw newlines (the asm text's \\n are escapes)."""
    return " ".join(line.strip() for line in stmt.splitlines())


def wgmma_source(f: WgmmaTiming) -> str:
    key, v = f.key, f.variant
    nreg = key.acc_regs
    is_f32 = key.dtype == "f32"
    con = "f" if is_f32 else "r"
    ops = wgmma_kernel.asm_operands(key, desc_a="DESC_A", desc_b="DESC_B")
    scale_op, instr, outputs, inputs = ops.scale_op, ops.instruction(v), ops.outputs, ops.inputs
    body = (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, {scale_op}, 0;\\n{instr}\\n}}\\n" '
            f': {outputs} : {inputs} : "memory")')
    return kernels.fill(kernels.template("wgmma_timing.cu", HERE), KERNEL_NAME=f.module_name,
                        CONSUMER_WGS=CONSUMER_WGS, ACC_TYPE="float" if is_f32 else "unsigned int",
                        ACC_REGS=nreg, ACC_CON=con, TO_BITS="__float_as_uint" if is_f32 else "", MMA_BODY=body)


def tcgen05_form(f: Tcgen05Timing) -> T.Form:
    return T.validate_form(T.Form(f.kind, f.cta_group, False, f.a_src))


def tcgen05_source(f: Tcgen05Timing) -> str:
    form = tcgen05_form(f)
    pair = f.cta_group == 2
    sync = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory"); '
            'asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");') if pair else "__syncthreads();"
    return kernels.fill(kernels.template("tcgen05_timing.cu", HERE), KERNEL_NAME=f.module_name, CTA_GROUP=f.cta_group,
                        CLUSTER_ATTR="__cluster_dims__(2, 1, 1)" if pair else "", CTA_SYNC=sync,
                        ISSUER="cluster_rank() == 0u" if pair else "true",
                        MMA=_one_line(T.mma_statement(form)), COMMIT=_one_line(T.commit(form)))


def source(f) -> str:
    return wgmma_source(f) if isinstance(f, WgmmaTiming) else tcgen05_source(f)


def module_forms(forms_) -> dict[tuple[str, str], object]:
    """(module name, arch) -> a form of it: what to compile (one module serves every swizzle / N it runs)."""
    out = {}
    for f in forms_:
        for arch in f.archs:
            out.setdefault((f.module_name, arch), f)
    return out


# ---------------------------------------------------------------------------------------------------- jobs

@dataclass
class Job:
    """One timing run of one kernel: `warmup` launches not kept, then `launches` kept; each launch returns
    `out_words` u64 (the kernel's clocks). Picklable: it goes to the GPU worker through its pipe."""
    entry: str
    grid: int
    block: int
    smem: int
    params: np.ndarray  # one record
    image: np.ndarray  # uint8
    out_words: int
    warmup: int
    launches: int
    meta: dict = field(default_factory=dict)


def _region(dtype: str, rows: int, k: int, swizzle: str, start: int) -> tuple[list[SmemLayout], int]:
    """The K-step layouts of one K-major operand (rows x k per instruction) and the end of its region."""
    lbo, sbo = layouts.packed_strides("K", swizzle, dtype, rows, k)
    row_bytes = layouts.SWIZZLE_ROW_BYTES[swizzle]
    steps = max(1, row_bytes // 32) if swizzle != "none" else 1
    lays = [layouts.validate(SmemLayout("K", swizzle, dtype, rows, k, lbo, sbo, start + 32 * s, 0))
            for s in range(steps)]
    end = max(layouts.footprint(lay)[1] for lay in lays)
    return lays, -(-end // 1024) * 1024


def kstep_offsets(n_steps: int) -> list[int]:
    """Start-field increments (16-byte units) of the KSTEPS MMAs of a group, cycling through the K-steps."""
    return [(s % n_steps) * 2 for s in range(KSTEPS)]


def _fill(img: np.ndarray, dtype: str, rng) -> None:
    t = dtypes.get(dtype)
    if t.kind in ("int", "uint") or t.name == "b1":
        img[:] = rng.integers(0, 256, img.size, dtype=np.uint8)
        return
    width = {8: np.uint8, 16: np.uint16, 32: np.uint32}[t.bits]
    vals = t.to_bits(rng.standard_normal(img.size // (t.bits // 8))).astype(width)
    img[:] = vals.view(np.uint8)


def _image_and_descs(f, rows_a: int, rows_b: int, encode) -> tuple[np.ndarray, int, int, list[int]]:
    sw = f.swizzle
    a_lays, a_end = _region(f.atype, rows_a, f.k, sw, 0)
    b_lays, b_end = _region(f.btype, rows_b, f.k, sw, a_end)
    img = np.zeros(b_end, np.uint8)
    rng = np.random.default_rng(12345)
    _fill(img[:a_end], f.atype, rng)
    _fill(img[a_end:], f.btype, rng)
    a0, b0 = a_lays[0], b_lays[0]
    return img, encode(a0), encode(b0), kstep_offsets(len(a_lays))


def _peak_for_sizing(f) -> int:
    return f.peak() or ASSUMED_B1_PEAK


def wgmma_jobs(f: WgmmaTiming, sms: int) -> tuple[Job, Job]:
    img, da, db, ks = _image_and_descs(
        f, W.M, f.n, lambda lay: desc_wgmma.encode_wgmma_desc(lay.start, lay.lbo, lay.sbo, lay.swizzle, 0))
    base = np.zeros(1, PARAMS_WGMMA)
    base["desc_a"] = da if f.a_src == "SS" else 0
    base["desc_b"], base["image_bytes"], base["kstep"], base["scale_d"] = db, img.size, ks, 1
    lat = base.copy()
    lat["warmup"], lat["reps"] = LAT_WARMUP, LAT_REPS
    tput = base.copy()
    iters = TARGET_CYCLES * _peak_for_sizing(f) // (CONSUMER_WGS * KSTEPS * f.flop)
    tput["iters"] = max(64, iters)
    smem = img.size + 1024
    return (Job(f"{f.module_name}_lat", 1, 128, smem, lat, img, 2 * LAT_REPS, 1, LAT_LAUNCHES),
            Job(f"{f.module_name}_tput", sms, 128 * CONSUMER_WGS, max(smem, ONE_CTA_PER_SM_SMEM), tput, img,
                5 * sms, TPUT_WARMUP_LAUNCHES, TPUT_LAUNCHES,
                {"flop_per_cta": int(tput["iters"][0]) * KSTEPS * CONSUMER_WGS * f.flop, "ctas_per_group": 1}))


def tcgen05_idesc(f: Tcgen05Timing) -> int:
    return idesc.encode_idesc(idesc.InstrDescriptor("f16", f.atype, f.btype, f.dtype, f.m, f.n, cta_group=f.cta_group))


def tcgen05_jobs(f: Tcgen05Timing, sms: int) -> tuple[Job, Job]:
    cg = f.cta_group
    img, da, db, ks = _image_and_descs(
        f, 128, f.n // cg,
        lambda lay: desc_tcgen05.encode_tcgen05_smem_desc(lay.start, lay.lbo, lay.sbo, lay.swizzle, 0, "relative", f.arch))
    base = np.zeros(1, PARAMS_TCGEN05)
    base["desc_a"] = da if f.a_src == "SS" else 0
    base["desc_b"], base["image_bytes"], base["kstep"] = db, img.size, ks
    base["idesc"], base["enable_input_d"], base["alloc_cols"] = tcgen05_idesc(f), 1, 512
    if f.a_src == "TS":  # A: 128 lanes x K 16-bit elements = K/2 columns, after the largest accumulator
        base["a_tmem_col"], base["a_tmem_cols"] = 256, 8
    lat = base.copy()
    lat["warmup"], lat["reps"] = LAT_WARMUP, LAT_REPS
    tput = base.copy()
    iters = TARGET_CYCLES * _peak_for_sizing(f) * cg // (KSTEPS * f.flop)
    tput["iters"] = max(64, iters)
    smem = img.size + 1024
    grid = sms - sms % cg
    return (Job(f"{f.module_name}_lat", cg, 128, smem, lat, img, 2 * LAT_REPS, 1, LAT_LAUNCHES),
            Job(f"{f.module_name}_tput", grid, 128, max(smem, ONE_CTA_PER_SM_SMEM), tput, img, 5 * grid,
                TPUT_WARMUP_LAUNCHES, TPUT_LAUNCHES,
                {"flop_per_cta": int(tput["iters"][0]) * KSTEPS * f.flop // cg, "ctas_per_group": cg}))


def jobs(f, sms: int) -> tuple[Job, Job]:
    return wgmma_jobs(f, sms) if isinstance(f, WgmmaTiming) else tcgen05_jobs(f, sms)
