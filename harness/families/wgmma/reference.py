"""Inputs and the numpy reference of a wgmma case, from the spec alone.

`prepare(case)` draws the case's matrices (deterministically from its id), writes the shared-memory image with
the layout model, packs A (for RS) and C into per-thread registers with the fragment model, and computes the
expected accumulator. `prepare_all(cases)` does the same for cases of one kernel: each case's draws and window
alone (each has its own stream and layouts), the rounding of their products and the packing of their C and D
registers in one numpy call each (the same values and bits as case by case); a launch prepares its cases so, 16 at a
time (`prepared_in_parts`). The expected result is what the instruction must produce if the hardware reads the
operands through the *descriptor's* layout: for a positive case that is the logical matrix; for a negative control
it is the model's prediction of the misread (and the case must differ from the intended product).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from harness.spec import dtypes, fragments, layouts
from harness.families.wgmma.cases import REGION_ALIGN, Case

POISON = 0x7FFF7FFF  # NaN as f32 and as both f16 halves; never a result of an exact case


@dataclass
class Prepared:
    case: Case
    image: np.ndarray  # uint8, multiple of 16 bytes
    a_layout: layouts.SmemLayout | None  # absolute (start within the window) layouts the descriptors encode
    b_layout: layouts.SmemLayout
    a_regs: np.ndarray | None  # uint32 [128, 4]
    c_regs: np.ndarray  # uint32 [128, acc_regs]
    a_vals: np.ndarray  # logical A (M x K) values
    b_vals: np.ndarray  # logical B as stored: N x K (row = n, col = k)
    c_vals: np.ndarray  # M x N
    expected: np.ndarray | None  # M x N accumulator values (float64 / int64) the descriptors should produce;
    # after slim(), None where expected_regs holds them
    intended: np.ndarray  # M x N values of the intended product (== expected unless a negative control)
    tolerance: np.ndarray | None  # per-element bound for 'normal' data, None for exact
    expected_regs: np.ndarray | None = None  # exact data: `expected` as the device's registers [128, acc_regs]
    descs: tuple[int | None, int] | None = None  # raw (A, B) descriptors, start relative to the window;
    # None: encode a_layout / b_layout

    def slim(self) -> "Prepared":
        """Keep only what the diff needs, in the accumulator's own width (exact results are representable
        there), so that shipping a case between processes costs kilobytes, not hundreds of them. An exact case's
        expected registers are its expected values, bit for bit: those values are left out (readback.expected_of
        decodes them where a diff needs them), as much again as the registers (the CPU note
        2026-11-27 expectations.txt in docs/performance.md)."""
        self.image = self.a_regs = self.c_regs = self.a_vals = self.b_vals = self.c_vals = None
        if self.tolerance is None:
            narrow = np.int32 if self.case.key.dtype == "s32" else np.float32
            self.expected = None if self.expected_regs is not None else self.expected.astype(narrow)
            self.intended = self.intended.astype(narrow) if self.case.control else None
        else:
            self.intended = None
            self.tolerance = self.tolerance.astype(np.float32)
        return self


# value pools for exact data: every product and every partial sum is exact in the accumulator
EXACT_POOL = {
    "f16": np.arange(-4, 5, dtype=np.float64),
    "bf16": np.arange(-4, 5, dtype=np.float64),
    "tf32": np.arange(-8, 9, dtype=np.float64),
    "e4m3": np.array([0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3], dtype=np.float64),
    "e5m2": np.array([0, 0.5, -0.5, 1, -1, 1.5, -1.5, 2, -2, 3, -3], dtype=np.float64),
}


def draw_values(rng, t: dtypes.ElementType, shape, mode: str) -> np.ndarray:
    if t.name == "b1":
        return rng.integers(0, 2, size=shape).astype(np.int64)
    if t.kind in ("int", "uint"):
        lo, hi = t.int_range()
        return rng.integers(lo, hi + 1, size=shape).astype(np.int64)
    if mode == "normal":
        return t.encoded(rng.standard_normal(shape))[1]
    return pick(rng, EXACT_POOL[t.name], shape)


def draw_operand(rng, t: dtypes.ElementType, shape, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(raw bits, the values they decode to) of an operand drawn as `draw_values` draws it, from the same stream:
    integer and b1 values (whatever the mode, as draw_values) are their own bits' two's complement; exact float
    values come with their encodings from a table of the pool's (no encode and decode of each matrix)."""
    if t.name == "b1" or t.kind in ("int", "uint"):  # in range by construction: to_bits' range check is moot
        values = draw_values(rng, t, shape, mode)
        return (values & ((1 << t.bits) - 1)).astype(np.uint64), values
    if mode == "normal":  # draw_values' encoding of the normal draw: its bits, and the values they decode to
        return t.encoded(rng.standard_normal(shape))
    return draw_from_pool(rng, t.name, shape)


def draw_from_pool(rng, name: str, shape, nonzero: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(bits, values) of elements drawn uniformly from the exact pool of a float type (its non-zero values only
    with `nonzero`): pick's draw from the same stream, the encodings taken from the pool's table."""
    bits, values = pool_encodings(name, nonzero)
    index = rng.integers(0, len(bits), size=shape)
    return bits.take(index), values.take(index)


@lru_cache(maxsize=None)
def pool_encodings(name: str, nonzero: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(each value of the exact pool of a float type encoded, as uint64; what each encoding decodes to), read-only;
    `nonzero`: of the pool's non-zero values only, in the pool's order."""
    t = dtypes.get(name)
    pool = EXACT_POOL[name]
    bits = t.to_bits(pool[pool != 0] if nonzero else pool)
    values = t.from_bits(bits)
    bits.flags.writeable = values.flags.writeable = False
    return bits, values


def pick(rng, pool: np.ndarray, shape) -> np.ndarray:
    """Elements of a 1-D `pool` drawn uniformly with replacement: what rng.choice(pool, size=shape) draws, the same
    values from the same stream (its index draw, without its argument checks, a fifth of a small draw's time)."""
    if pool.ndim != 1:  # rng.choice would draw rows of it; this, elements of it flattened
        raise ValueError(f"pick draws from a 1-D pool, not one of shape {pool.shape}")
    return pool.take(rng.integers(0, len(pool), size=shape))


def junk_bytes(rng, t: dtypes.ElementType, nbytes: int) -> np.ndarray:
    """Filler for the bytes no element occupies. For float types it is non-zero values of the exact pool,
    so that a misread (a negative control, or a real bug) still sums exactly and the model can predict
    it bit for bit; for integer and b1 operands any byte is a valid element."""
    if t.name not in EXACT_POOL or nbytes == 0:
        return rng.integers(0, 256, size=nbytes, dtype=np.uint8)
    return pick(rng, nonzero_pool_encodings(t.name), nbytes // (t.bits // 8)).view(np.uint8)


@lru_cache(maxsize=None)
def nonzero_pool_encodings(name: str) -> np.ndarray:
    """The encodings of the exact pool's non-zero values of a float type, in its own width (read-only)."""
    width = dtypes.get(name).bits // 8
    enc = pool_encodings(name, nonzero=True)[0].astype(dtypes.UNSIGNED_OF_WIDTH[width])
    enc.flags.writeable = False
    return enc


def c_values(rng, case: Case, shape) -> np.ndarray:
    dt = case.key.dtype
    if dt == "s32":
        if case.extra == "ovf":  # push half the rows towards +/-2^31 so the sum overflows
            c = rng.integers(-(1 << 20), 1 << 20, size=shape).astype(np.int64)
            sign = np.where(rng.random(shape) < 0.5, 1, -1)
            return np.where(rng.random(shape) < 0.5, sign * ((1 << 31) - 1 - rng.integers(0, 64, shape)), c)
        return rng.integers(-(1 << 20), 1 << 20, size=shape).astype(np.int64)
    if case.data == "normal":
        return dtypes.get(dt).encoded(rng.standard_normal(shape))[1]
    return rng.integers(-8, 9, size=shape).astype(np.float64)


def absolute(lay: layouts.SmemLayout, region: int) -> layouts.SmemLayout:
    """Move a region-relative layout to its place in the window; the base offset follows the spec formula
    only when the scenario asked for it (it is already part of the layout)."""
    return lay if region == 0 else lay.moved(start=region + lay.start)


def accumulate(case: Case, a_vals, b_vals_nk, c_vals) -> np.ndarray:
    """D = scale_d * C + (sa * A) @ (sb * B), in exact arithmetic, then the accumulator's conversion."""
    v = case.variant
    dt = case.key.dtype
    if dt == "s32":
        prod = dtypes.exact_integer_matmul(a_vals, b_vals_nk)
        d = prod + (c_vals if case.scale_d else 0)
        if v.satfinite:
            return np.clip(d, -(1 << 31), (1 << 31) - 1)
        return ((d + (1 << 31)) % (1 << 32)) - (1 << 31)
    prod = (v.scale_a * a_vals) @ (v.scale_b * b_vals_nk).T
    return prod + (c_vals if case.scale_d else 0.0)


def round_to_accumulator(case: Case, d: np.ndarray) -> np.ndarray:
    return rounded(case, d)[0]


def rounded(case: Case, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """d as the accumulator holds it: (its values, its raw bits: uint64 for s32, else in the float's own width)."""
    dt = case.key.dtype
    if dt == "s32":
        return d, acc_bits(dt, d)
    bits, values = dtypes.get(dt).encoded(d, native=True)
    return values, bits


def place(case: Case):
    """Where a case's operands sit in the window: A's region at 0, B's on the next 1024-byte boundary after
    everything A's layout or descriptor touches. Returns (A layout, A descriptor layout, B layout, B
    descriptor layout, B region start, image bytes); the A entries are None when A is in registers."""
    return placement(case.a.layout if case.a else None, case.a.desc_layout if case.a else None,
                     case.b.layout, case.b.desc_layout)


@lru_cache(maxsize=4096)  # a kernel's cases place the same few operand layouts over and over
def placement(a_layout, a_desc_layout, b_layout, b_desc_layout):
    a_lay = a_desc = None
    end = 0
    if a_layout is not None:
        a_lay = absolute(a_layout, 0)
        a_desc = absolute(a_desc_layout, 0)
        end = max(layouts.footprint(a_lay)[1], layouts.footprint(a_desc)[1])
    region_b = -(-end // REGION_ALIGN) * REGION_ALIGN
    b_lay = absolute(b_layout, region_b)
    b_desc = absolute(b_desc_layout, region_b)
    size = max(end, layouts.footprint(b_lay)[1], layouts.footprint(b_desc)[1])
    return a_lay, a_desc, b_lay, b_desc, region_b, -(-size // 16) * 16


def dirty_if_asked(case, rng, at, bt, a_bits: np.ndarray, b_bits: np.ndarray, a_values: np.ndarray,
                   b_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A 'tf32dirty' case puts junk in the low 13 mantissa bits of A and B, which the tensor core must ignore:
    (A's bits, B's bits, the values A's and B's bits decode to, decoded again as the tensor core reads them);
    any other case's unchanged."""
    if case.extra != "tf32dirty":
        return a_bits, b_bits, a_values, b_values
    a_bits = a_bits | rng.integers(0, 1 << 13, size=a_bits.shape).astype(np.uint64)
    b_bits = b_bits | rng.integers(0, 1 << 13, size=b_bits.shape).astype(np.uint64)
    return a_bits, b_bits, at.from_bits(a_bits), bt.from_bits(b_bits)


@dataclass
class Inputs:
    """One case's half of its preparation, the part drawn from its own stream and placed by its own layouts: the
    operands as written (A's bits are what A's registers hold for RS), the window, and what the descriptors make
    the tensor core read. `a_logical` / `a_read` are the A that is multiplied (a sparse family's: decompressed)."""
    image: np.ndarray
    a_desc: layouts.SmemLayout | None
    b_desc: layouts.SmemLayout
    a_bits: np.ndarray
    a_logical: np.ndarray
    b_logical: np.ndarray
    c_vals: np.ndarray
    a_read: np.ndarray
    b_read: np.ndarray


def draw_inputs(case: Case) -> Inputs:
    v = case.variant
    rng = np.random.default_rng(case.seed)
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    M, N, K = 64, case.key.n, case.key.k
    a_bits, a_logical = draw_operand(rng, at, (M, K), case.data)
    b_bits, b_logical = draw_operand(rng, bt, (N, K), case.data)
    c_vals = c_values(rng, case, (M, N))
    a_bits, b_bits, a_logical, b_logical = dirty_if_asked(case, rng, at, bt, a_bits, b_bits, a_logical, b_logical)
    image, a_desc, b_desc, a_read, b_read = window(case, rng, at, bt, a_bits, b_bits, a_logical, b_logical)
    return Inputs(image, a_desc, b_desc, a_bits, a_logical, b_logical, c_vals, a_read, b_read)


@dataclass
class Expectations:
    """What a launch's cases must give, each field a list with one entry per case (see Prepared)."""
    expected: list
    intended: list
    tolerance: list
    expected_regs: list
    c_regs: list


def expectations(cases: list[Case], inputs: list[Inputs]) -> Expectations:
    """Of cases of one kernel key (one accumulator type and N): for each, the expected D, the intended product,
    the tolerance of a 'normal' case (else None), the expected registers of an exact case (else None) and C's
    registers. Each product is its own matmul; its rounding and the packing of registers are one call each for
    the cases given (elementwise and gathers: the values and bits of doing it case by case)."""
    if not cases:
        return Expectations([], [], [], [], [])
    key = cases[0].key
    if any(c.key != key for c in cases):
        raise ValueError("expectations are of the cases of one kernel key")
    n = len(cases)
    dfrag = fragments.wgmma_d_fragment(key.n, key.dtype)
    c_regs = fragments.gather_registers(dfrag, register_bits(key.dtype, np.stack([i.c_vals for i in inputs])))
    with np.errstate(invalid="ignore", over="ignore"):
        exact = np.stack([accumulate(c, i.a_read, i.b_read, i.c_vals) for c, i in zip(cases, inputs)])
        values, bits = rounded(cases[0], exact)
        # read as meant: the same product (a copy: `intended` is not `expected`); a control's misread: the product
        # of what was meant
        intended = [values[j].copy() if same_bits(i.a_read, i.a_logical) and same_bits(i.b_read, i.b_logical)
                    else None for j, i in enumerate(inputs)]
        misread = [j for j in range(n) if intended[j] is None]
        if misread:
            meant = rounded(cases[0], np.stack([accumulate(cases[j], inputs[j].a_logical, inputs[j].b_logical,
                                                           inputs[j].c_vals) for j in misread]))[0]
            for j, d in zip(misread, meant):
                intended[j] = d
    normal = [c.data == "normal" for c in cases]
    expected = [exact[j] if normal[j] else values[j] for j in range(n)]  # a normal case: the float64 product
    tol = [None] * n
    for j in (j for j in range(n) if normal[j]):
        c, i = cases[j], inputs[j]
        mag = np.abs(i.a_logical) @ np.abs(i.b_logical).T + (np.abs(i.c_vals) if c.scale_d else 0)
        tol[j] = NORMAL_REL_TOL[(c.variant.atype, key.dtype)] * mag + 1e-30
    if key.dtype != "s32":
        # self-check: the exact inputs (and, for a negative control, the exact junk it misreads) must give
        # a product the accumulator holds exactly
        inexact = ~(values == exact).reshape(n, -1).all(axis=1)
        for j in np.flatnonzero(inexact):
            if not normal[j]:
                raise AssertionError(f"{cases[j].id}: reference is not exact in {key.dtype}; the value pools are "
                                     "wrong")
    # the bits `expected` was decoded from: the same as encoding it again, since an exact product (checked above)
    # is no NaN, the one value whose bits a decode and encode may change
    exact_cases = [j for j in range(n) if not normal[j]]
    expected_regs = [None] * n
    if exact_cases:
        for j, regs in zip(exact_cases, fragments.gather_registers(dfrag, bits[exact_cases])):
            expected_regs[j] = regs
    return Expectations(expected, intended, tol, expected_regs, list(c_regs))


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    """The same array to the bit (a -0.0 is not a 0.0, a NaN is itself)."""
    return x is y or (x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes())


def prepare(case: Case) -> Prepared:
    return prepare_all([case])[0]


def prepare_all(cases: list[Case]) -> list[Prepared]:
    """Every case prepared (cases of one kernel key, as a launch has)."""
    inputs = [draw_inputs(c) for c in cases]
    e = expectations(cases, inputs)
    return [prepared(Prepared, case, i, e, j) for j, (case, i) in enumerate(zip(cases, inputs))]


# Cases a launch prepares together, its launch packed a part at a time (WgmmaFamily.prepare): a part's arrays (a few
# hundred kilobytes to a few megabytes) stay in a core's caches through the draws, the expectations, the packing and
# the slimming, where a whole launch's (up to tens of megabytes) went out to memory and back at each step. With 16
# processes preparing at once on an H100 node, parts of 16 cases took 10% (dense) and 9% (sparse) less CPU than whole
# launches (bench25 in docs/performance.md); the prepared bytes are the same
# (the CPU note 2026-11-27 prepare-in-parts.txt in docs/performance.md).
PREPARE_PART = 16


def prepared_in_parts(cases: list[Case], part: int = PREPARE_PART):
    """prepare_all of the cases, `part` at a time, in order: one list of Prepared a part."""
    return in_parts(prepare_all, cases, part)


def in_parts(prepare, cases: list, part: int):
    """prepare(cases of one part) for each part of `part` cases, in order (a family's prepared_in_parts)."""
    for start in range(0, len(cases), part):
        yield prepare(cases[start:start + part])


def prepared(kind, case, inputs: Inputs, e: "Expectations", j: int, **more):
    """The Prepared (`kind`: this family's or a family's built on it, with its `more` fields) of case j of a launch."""
    return kind(case, inputs.image, inputs.a_desc, inputs.b_desc, a_registers(case, inputs), e.c_regs[j],
                inputs.a_logical, inputs.b_logical, inputs.c_vals, e.expected[j], e.intended[j], e.tolerance[j],
                e.expected_regs[j], **more)


def a_registers(case, inputs: Inputs) -> np.ndarray | None:
    """A's registers of an RS case, its bits as drawn (a sparse family's: the packed A) in the A fragment of its
    type; None when A is in shared memory."""
    if case.a is not None:
        return None
    return fragments.gather_registers(fragments.wgmma_a_fragment(case.variant.atype), inputs.a_bits)


def window(case: Case, rng, at, bt, a_bits, b_bits, a_written, b_written):
    """The case's shared-memory window: junk bytes, A (SS) and B written where their layouts put them, and what
    the descriptors make the tensor core read back, the model's prediction (A's own values for RS):
    (image, A descriptor, B descriptor, A read, B read). `a_written`, `b_written`: the values the bits decode to."""
    a_lay, a_desc, b_lay, b_desc, region_b, size = place(case)
    image = np.concatenate([junk_bytes(rng, at, region_b), junk_bytes(rng, bt, size - region_b)])
    if a_lay is not None:
        layouts.write_image(a_lay, a_bits, image)
    layouts.write_image(b_lay, b_bits, image)
    a_read = a_written if a_desc is None else read_back(at, a_lay, a_desc, a_written, image)
    b_read = read_back(bt, b_lay, b_desc, b_written, image)
    return image, a_desc, b_desc, a_read, b_read


def read_back(t, written: layouts.SmemLayout, desc: layouts.SmemLayout, values: np.ndarray,
              image: np.ndarray) -> np.ndarray:
    """The values a descriptor's layout reads from the image: those just written where it is the layout they were
    written with (write_image refused it unless its elements are distinct, and writes each element's bits whole;
    `place` puts B after everything A's layouts touch, so nothing is written over A), else decoded from the image
    (a negative control's misread)."""
    if desc == written:
        return values
    with np.errstate(invalid="ignore", over="ignore"):  # junk bytes may decode to NaN/Inf
        return t.from_bits(layouts.read_image(desc, image))


# Bounds for random-normal data, relative to sum |a||b| + |c| per element.
NORMAL_REL_TOL = {
    ("f16", "f32"): 2.0 ** -20, ("bf16", "f32"): 2.0 ** -20, ("tf32", "f32"): 2.0 ** -20,
    ("f16", "f16"): 2.0 ** -9,
    ("e4m3", "f32"): 2.0 ** -12, ("e5m2", "f32"): 2.0 ** -12,  # Hopper's fp8 accumulation keeps fewer bits
    ("e4m3", "f16"): 2.0 ** -9, ("e5m2", "f16"): 2.0 ** -9,
}


def register_bits(dtype: str, vals: np.ndarray) -> np.ndarray:
    """acc_bits of values the accumulator holds exactly (C as drawn), a float accumulator's in its own width: the
    same numbers; an f32 accumulator's are packed as they are (gather_registers widens narrower ones)."""
    bits = dtypes.get(dtype).container_bits(vals)
    return acc_bits(dtype, vals) if bits is None else bits


def acc_bits(dtype: str, vals: np.ndarray) -> np.ndarray:
    if dtype == "s32":
        return (np.asarray(vals, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    return dtypes.get(dtype).to_bits(vals)
