"""The CUDA source of a timing module and the launch jobs that time it.

A timing module holds two kernels, `<module>_lat` and `<module>_tput` (wgmma_timing.cu,
tcgen05_timing.cu, mma_sync_timing.cu, in this folder). The instruction text is the validation harness's own:
wgmma from harness.families.wgmma.forms.instruction, tcgen05 from harness.families.tcgen05.forms.mma_statement/
commit, mma.sync from harness.families.mma_sync.forms.MmaForm.instruction (its register counts from the family's
fragment maps).
The shared-memory image (A then B, K-major, the form's swizzle, random finite values) and the descriptors are
built on the host from the spec models (harness.spec.layouts, harness.spec.descriptors).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness import kernels
from harness.families.mma_sync import cases as mma_sync_cases, kernel as mma_sync_kernel
from harness.families.tcgen05 import forms as T
from harness.families.wgmma import forms as W, kernel as wgmma_kernel
from harness.spec import desc_tcgen05, desc_wgmma, dtypes, idesc, layouts
from harness.spec.layouts import SmemLayout
from harness.timing.forms import MmaSyncTiming, Tcgen05Timing, WgmmaTiming

HERE = Path(__file__).resolve().parent  # the kernel's template sits beside this module

CONSUMER_WGS = 2  # wgmma throughput: warpgroups per CTA, each with its own accumulators
KSTEPS = 4  # MMAs per commit group in the throughput loops (kernels' KSTEPS)
# Dynamic shared memory asked for by a throughput CTA: more than half an SM's 228 KB, so one CTA per SM.
ONE_CTA_PER_SM_SMEM = 120 * 1024
TARGET_CYCLES = 1 << 21  # throughput: cycles of one launch at the datasheet rate (~1 ms)
LAT_WARMUP, LAT_REPS, LAT_LAUNCHES = 64, 512, 3
TPUT_WARMUP_LAUNCHES, TPUT_LAUNCHES = 3, 20
ASSUMED_B1_PEAK = 32768  # sizes the b1 loop only (no published figure)
# mma.sync: warps per throughput CTA (4 per SM sub-partition) and independent accumulators per warp, 32 mma in
# flight per sub-partition, several times an mma's latency over its issue interval; the latency chain's length
MMA_SYNC_WARPS, MMA_SYNC_CHAINS, MMA_SYNC_LAT_CHAIN = 16, 8, 64

PARAMS_WGMMA = np.dtype([("desc_a", "<u8"), ("desc_b", "<u8"), ("image_bytes", "<u4"), ("iters", "<u4"),
                         ("warmup", "<u4"), ("reps", "<u4"), ("kstep", "<u4", (KSTEPS,)),
                         ("scale_d", "<u4"), ("sink", "<u4")])
assert PARAMS_WGMMA.itemsize == 56
PARAMS_TCGEN05 = np.dtype([("desc_a", "<u8"), ("desc_b", "<u8"), ("image_bytes", "<u4"), ("iters", "<u4"),
                           ("warmup", "<u4"), ("reps", "<u4"), ("kstep", "<u4", (KSTEPS,)),
                           ("idesc", "<u4"), ("enable_input_d", "<u4"), ("alloc_cols", "<u4"),
                           ("a_tmem_col", "<u4"), ("a_tmem_cols", "<u4"), ("sink", "<u4")])
assert PARAMS_TCGEN05.itemsize == 72
PARAMS_MMA_SYNC = np.dtype([("image_bytes", "<u4"), ("iters", "<u4"), ("warmup", "<u4"), ("reps", "<u4"),
                            ("sink", "<u4"), ("pad", "<u4", (3,))])
assert PARAMS_MMA_SYNC.itemsize == 32


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


# a register of elements of this type: its C++ type and inline-asm constraint (f64 operands are .f64 registers)
_REG = {"f32": ("float", "f"), "f64": ("double", "d")}
_U32 = ("unsigned int", "r")


def mma_sync_operands(f: MmaSyncTiming) -> dict[str, tuple[int, int]]:
    """Per operand A, B, D: (registers, 32-bit words) of one lane, from the family's fragment maps."""
    maps = mma_sync_cases.operand_maps(f.key)
    return {x: (maps[x].registers, mma_sync_cases.words(f.key, x)) for x in "ABD"}


def mma_sync_statement(f: MmaSyncTiming) -> str:
    """One asm statement: the form's mma on accumulator array D in place (C is D), A and B from a[] and b[], the
    metadata from e with selector immediate (mma.sp)."""
    ops = mma_sync_operands(f)
    (na, _), (nb, _), (nd, _) = ops["A"], ops["B"], ops["D"]
    ab_con = _REG.get(f.atype, _U32)[1]
    acc_con = _REG.get(f.dtype, _U32)[1]
    regs = lambda start, n: "{" + ", ".join(f"%{start + i}" for i in range(n)) + "}"
    text = f"{f.form.instruction()} {regs(0, nd)}, {regs(nd, na)}, {regs(nd + na, nb)}, {regs(0, nd)}"
    if f.sparse:
        text += f", %{nd + na + nb}, {f.form.selector:#x}"
    outputs = ", ".join(f'"+{acc_con}"((D)[{i}])' for i in range(nd))
    salted = len(mma_sync_kernel.sass_expected(f.form)) > 1  # the template's SALT: where ptxas expands the mma
    salt = lambda x: f"({x} ^ (SALT))" if salted else x  # every register: each mma converts all of A and B
    inputs = [f'"{ab_con}"({salt(f"a[{i}]")})' for i in range(na)] + [f'"{ab_con}"({salt(f"b[{i}]")})' for i in range(nb)]
    inputs += ['"r"(e)'] if f.sparse else []
    return f'asm volatile("{text};\\n" : {outputs} : {", ".join(inputs)})'


def _load(var: str, n: int, words_per: int, base: str, reg_type: str) -> str:
    if reg_type == "double":
        get = (f"__hiloint2double((int)words[{base} + lane * {n * 2}u + 2u * i + 1u], "
               f"(int)words[{base} + lane * {n * 2}u + 2u * i])")
    else:
        get = f"words[{base} + lane * {n * words_per}u + i]"
    return f"#pragma unroll\n    for (unsigned int i = 0; i < {n}u; ++i) {var}[i] = {get};"


def mma_sync_source(f: MmaSyncTiming) -> str:
    ops = mma_sync_operands(f)
    (na, wa), (nb, wb), (nd, _) = ops["A"], ops["B"], ops["D"]
    ab_t = _REG.get(f.atype, _U32)[0]
    acc_t = _REG.get(f.dtype, _U32)[0]
    load = "\n".join("    " + x for x in (
        _load("a", na, wa // na, "0u", ab_t), _load("b", nb, wb // nb, f"{32 * wa}u", ab_t),
        f"e = words[{32 * (wa + wb)}u + lane];"))
    acc_bits = {"float": "__float_as_uint(D[i_])",
                "double": "(unsigned int)__double2loint(D[i_]) ^ (unsigned int)__double2hiint(D[i_])",
                "unsigned int": "D[i_]"}[acc_t]
    return kernels.fill(kernels.template("mma_sync_timing.cu", HERE), KERNEL_NAME=f.module_name,
                        WARPS=MMA_SYNC_WARPS, CHAINS=MMA_SYNC_CHAINS, LAT_CHAIN=MMA_SYNC_LAT_CHAIN, A_REGS=na,
                        B_REGS=nb, ACC_REGS=nd, AB_TYPE=ab_t, ACC_TYPE=acc_t, ACC_BITS=acc_bits,
                        LOAD_OPERANDS=load, MMA_BODY=mma_sync_statement(f))


def source(f) -> str:
    if isinstance(f, MmaSyncTiming):
        return mma_sync_source(f)
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
    sizing = getattr(f, "sizing_peak", f.peak)  # mma.sync: an assumed rate where its kind has no peak
    return sizing() or ASSUMED_B1_PEAK


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


def _mma_sync_words(dtype: str, n: int, rng) -> np.ndarray:
    """n random 32-bit words of elements of `dtype`: finite normal values of a float type, any bits otherwise
    (integers, s4 pairs, b1)."""
    if dtype == "f64":
        return rng.standard_normal(n // 2).view(np.uint32)
    t = dtypes.get(dtype) if dtype in dtypes.TYPES else None
    if t is None or t.kind != "float":
        return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    width = {8: np.uint8, 16: np.uint16, 32: np.uint32}[t.bits]
    return t.to_bits(rng.standard_normal(n * 32 // t.bits)).astype(width).view(np.uint32)


# sparse metadata: every 4-bit field holds indices 0 and 1 (ascending: legal for .sp and .sp::ordered_metadata)
MMA_SYNC_METADATA = 0x44444444


def mma_sync_image(f: MmaSyncTiming) -> np.ndarray:
    """A's words of the 32 lanes, B's, then each lane's metadata word, as bytes."""
    ops = mma_sync_operands(f)
    rng = np.random.default_rng(12345)
    parts = [_mma_sync_words(f.atype, 32 * ops["A"][1], rng), _mma_sync_words(f.btype, 32 * ops["B"][1], rng),
             np.full(32, MMA_SYNC_METADATA if f.sparse else 0, np.uint32)]
    return np.concatenate(parts).astype("<u4").view(np.uint8)


def mma_sync_jobs(f: MmaSyncTiming, sms: int) -> tuple[Job, Job]:
    img = mma_sync_image(f)
    base = np.zeros(1, PARAMS_MMA_SYNC)
    base["image_bytes"] = img.size
    lat = base.copy()
    lat["warmup"], lat["reps"] = LAT_WARMUP, LAT_REPS
    tput = base.copy()
    per_iter = MMA_SYNC_WARPS * MMA_SYNC_CHAINS * f.flop  # FLOP of one CTA's loop iteration
    tput["iters"] = max(64, TARGET_CYCLES * _peak_for_sizing(f) // per_iter)
    return (Job(f"{f.module_name}_lat", 1, 32, 0, lat, img, 2 * LAT_REPS, 1, LAT_LAUNCHES,
                {"latency_chain": MMA_SYNC_LAT_CHAIN}),
            Job(f"{f.module_name}_tput", sms, 32 * MMA_SYNC_WARPS, ONE_CTA_PER_SM_SMEM, tput, img, 5 * sms,
                TPUT_WARMUP_LAUNCHES, TPUT_LAUNCHES,
                {"flop_per_cta": int(tput["iters"][0]) * per_iter, "ctas_per_group": 1,
                 "mma_per_iter": MMA_SYNC_WARPS * MMA_SYNC_CHAINS}))


def jobs(f, sms: int) -> tuple[Job, Job]:
    if isinstance(f, MmaSyncTiming):
        return mma_sync_jobs(f, sms)
    return wgmma_jobs(f, sms) if isinstance(f, WgmmaTiming) else tcgen05_jobs(f, sms)
