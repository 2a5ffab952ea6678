"""Inputs and the numpy reference of a wgmma case, from the spec alone.

`prepare(case)` draws the case's matrices (deterministically from its id), writes the shared-memory image with
the layout model, packs A (for RS) and C into per-thread registers with the fragment model, and computes the
expected accumulator. The expected result is what the instruction must produce if the hardware reads the
operands through the *descriptor's* layout: for a positive case that is the logical matrix; for a negative
control it is the model's prediction of the misread (and the case must differ from the intended product).
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
    expected: np.ndarray  # M x N accumulator values (float64 / int64) the descriptors should produce
    intended: np.ndarray  # M x N values of the intended product (== expected unless a negative control)
    tolerance: np.ndarray | None  # per-element bound for 'normal' data, None for exact
    expected_regs: np.ndarray | None = None  # exact data: `expected` as the device's registers [128, acc_regs]
    descs: tuple[int | None, int] | None = None  # raw (A, B) descriptors, start relative to the window;
    # None: encode a_layout / b_layout

    def slim(self) -> "Prepared":
        """Keep only what the diff needs, in the accumulator's own width (exact results are representable
        there), so that shipping a case between processes costs kilobytes, not hundreds of them."""
        self.image = self.a_regs = self.c_regs = self.a_vals = self.b_vals = self.c_vals = None
        if self.tolerance is None:
            narrow = np.int32 if self.case.key.dtype == "s32" else np.float32
            self.expected = self.expected.astype(narrow)
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
        return t.from_bits(t.to_bits(rng.standard_normal(shape)))
    return pick(rng, EXACT_POOL[t.name], shape)


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
    t = dtypes.get(name)
    pool = EXACT_POOL[name]
    enc = t.to_bits(pool[pool != 0]).astype({1: np.uint8, 2: np.uint16, 4: np.uint32}[t.bits // 8])
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
        t = dtypes.get(dt)
        return t.from_bits(t.to_bits(rng.standard_normal(shape)))
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
    """d as the accumulator holds it: (its values, its raw bits)."""
    dt = case.key.dtype
    if dt == "s32":
        return d, acc_bits(dt, d)
    t = dtypes.get(dt)
    bits = t.to_bits(d)
    return t.from_bits(bits), bits


def place(case: Case):
    """Where a case's operands sit in the window: A's region at 0, B's on the next 1024-byte boundary after
    everything A's layout or descriptor touches. Returns (A layout, A descriptor layout, B layout, B
    descriptor layout, B region start, image bytes); the A entries are None when A is in registers."""
    a_lay = a_desc = None
    end = 0
    if case.a is not None:
        a_lay = absolute(case.a.layout, 0)
        a_desc = absolute(case.a.desc_layout, 0)
        end = max(layouts.footprint(a_lay)[1], layouts.footprint(a_desc)[1])
    region_b = -(-end // REGION_ALIGN) * REGION_ALIGN
    b_lay = absolute(case.b.layout, region_b)
    b_desc = absolute(case.b.desc_layout, region_b)
    size = max(end, layouts.footprint(b_lay)[1], layouts.footprint(b_desc)[1])
    return a_lay, a_desc, b_lay, b_desc, region_b, -(-size // 16) * 16


def dirty_if_asked(case, rng, a_bits: np.ndarray, b_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 'tf32dirty' case puts junk in the low 13 mantissa bits of A and B, which the tensor core must ignore."""
    if case.extra == "tf32dirty":
        a_bits = a_bits | rng.integers(0, 1 << 13, size=a_bits.shape).astype(np.uint64)
        b_bits = b_bits | rng.integers(0, 1 << 13, size=b_bits.shape).astype(np.uint64)
    return a_bits, b_bits


def expected_results(case, a_read, b_read, a_logical, b_logical, c_vals):
    """(expected D, the intended product, the tolerance of a 'normal' case or None, the expected registers) of a
    case whose tensor core reads a_read / b_read (a control's misread) where a_logical / b_logical were meant."""
    key, v = case.key, case.variant
    with np.errstate(invalid="ignore", over="ignore"):
        exact_expected = accumulate(case, a_read, b_read, c_vals)
        expected, expected_bits = rounded(case, exact_expected)
        if same_bits(a_read, a_logical) and same_bits(b_read, b_logical):  # read as meant: the same product
            intended = expected.copy()
        else:
            intended = round_to_accumulator(case, accumulate(case, a_logical, b_logical, c_vals))
    tol = None
    if case.data == "normal":
        mag = np.abs(a_logical) @ np.abs(b_logical).T + (np.abs(c_vals) if case.scale_d else 0)
        tol = NORMAL_REL_TOL[(v.atype, key.dtype)] * mag + 1e-30
        expected = exact_expected  # compare with the float64 product itself
    elif key.dtype != "s32":
        # self-check: the exact inputs (and, for a negative control, the exact junk it misreads) must give
        # a product the accumulator holds exactly
        if not np.array_equal(expected, exact_expected):
            raise AssertionError(f"{case.id}: reference is not exact in {key.dtype}; the value pools are wrong")
    # the bits `expected` was decoded from: the same as encoding it again, since an exact product (checked above)
    # is no NaN, the one value whose bits a decode and encode may change
    dfrag = fragments.wgmma_d_fragment(key.n, key.dtype)
    expected_regs = None if tol is not None else fragments.gather_registers(dfrag, expected_bits)
    return expected, intended, tol, expected_regs


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    """The same array to the bit (a -0.0 is not a 0.0, a NaN is itself)."""
    return x is y or (x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes())


def prepare(case: Case) -> Prepared:
    key, v = case.key, case.variant
    rng = np.random.default_rng(case.seed)
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    M, N, K = 64, key.n, key.k

    a_vals = draw_values(rng, at, (M, K), case.data)
    b_vals = draw_values(rng, bt, (N, K), case.data)
    c_vals = c_values(rng, case, (M, N))
    a_bits, b_bits = dirty_if_asked(case, rng, at.to_bits(a_vals), bt.to_bits(b_vals))
    a_logical = at.from_bits(a_bits)
    b_logical = bt.from_bits(b_bits)

    image, a_desc, b_desc, a_read, b_read = window(case, rng, at, bt, a_bits, b_bits, a_logical, b_logical)

    a_regs = None
    if case.a is None:
        a_regs = fragments.gather_registers(fragments.wgmma_a_fragment(v.atype), a_bits)
    dfrag = fragments.wgmma_d_fragment(N, key.dtype)
    c_bits = acc_bits(key.dtype, c_vals)
    c_regs = fragments.gather_registers(dfrag, c_bits)

    expected, intended, tol, expected_regs = expected_results(case, a_read, b_read, a_logical, b_logical, c_vals)
    return Prepared(case, image, a_desc, b_desc, a_regs, c_regs, a_logical, b_logical, c_vals,
                    expected, intended, tol, expected_regs)


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


def acc_bits(dtype: str, vals: np.ndarray) -> np.ndarray:
    if dtype == "s32":
        return (np.asarray(vals, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    return dtypes.get(dtype).to_bits(vals)
