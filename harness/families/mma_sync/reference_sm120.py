"""Inputs and expected registers of an sm_120a case (kernel_sm120.Sm120Case), from the models of block_scaled.py
alone: what a launch of an sm_120a kernel hands each lane, and what every output register must hold after it.

An mma case (one `.kind::` form): A [M, K] (a sparse form: its compressed M x K/2 storage and 2:4 metadata, as the
sm_80 form of `block_scaled.metadata_form` lays them out), B [K, N] and C [M, N] are drawn from the case's seed;
A and B are encoded as their type's codes in their containers (8-bit, e2m1 in bits 5-2 and e3m2 / e2m3 in bits 5-0,
padding 0; or packed e2m1) and packed into each lane's registers by the fragment maps; the scale factors (block
-scaled kinds) go into each lane's `scale-a-data` / `scale-b-data` byte by the selectors' `scale_map`, every byte
the MMA must not read holding a decoy factor no held byte has (a device that reads another byte, lane or chunk gets
a product the model does not predict); D = (A scale_A)(B scale_B) + C from `block_scaled.reference_d` in float64,
packed into D's registers. The kernel starts D poisoned, so every register of every lane is compared.

Exact data: the element pools are small dyadic values of each type (every value exactly representable in it), the
scale pools powers of two (ue8m0) or 0.5 .. 2 in steps a ue4m3 holds, C a multiple of 1/8 (f32) or 1/4 (f16); each
row's chunks get different factors, so that a device that swaps the bytes a selector picks computes another D.
`prepare` proves exactness on the data it draws, not on the pools' sizes: every product and C are multiples of one
power of two Q, and the sum of their magnitudes is below 2^p Q (p = 24 for f32, 11 for f16), so every partial sum
in any order, in any precision at least the accumulator's, is exact and D is the same bits whatever the hardware's
summation order. The f16-accumulating forms draw from the coarser pool {0, +-0.5, +-1, +-1.5, +-2, +-3}.

A sub-byte ldmatrix case: the rows of its `num` 8 x 16 matrices (random codes, the row padding filled with junk
bytes) at scattered 16-byte slots of a 1024-byte shared-memory image of junk, each lane handed its row's offset
(lanes past 8 * num an unused junk row's); the expected registers are `SubByteLoad.load` of that image, checked here
against the drawn codes element by element, and the registers past `num` stay poisoned.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from harness.families.mma_sync import block_scaled as BS, fragments as FR
from harness.families.mma_sync.kernel_sm120 import Sm120Case, words
from harness.families.mma_sync.reference import POISON, d_bits, draw_fields, expand, metadata_words
from harness.spec import dtypes

# element values of each type for the f32-accumulating forms: multiples of 1/8 (e2m1: 1/2), |v| <= 6
WIDE_POOL = {
    "e2m1": (0, 0.5, 1, 1.5, 2, 3, 4, 6),
    "e2m3": (0, 0.125, 0.375, 0.5, 1, 1.25, 1.75, 2, 3, 3.5),
    "e3m2": (0, 0.125, 0.25, 0.75, 1, 1.25, 1.5, 2, 3, 3.5),
    "e4m3": (0, 0.125, 0.5, 1, 1.25, 1.5, 1.75, 2, 3, 3.5),
    "e5m2": (0, 0.125, 0.5, 1, 1.25, 1.5, 1.75, 2, 3, 3.5),
}
COARSE_POOL = (0, 0.5, 1, 1.5, 2, 3)  # every type's values for the f16-accumulating f8f6f4 forms
SCALE_POOL = {"ue8m0": (0.5, 1, 2, 4), "ue4m3": (0.5, 0.75, 1, 1.5, 2)}
SCALE_DECOY = {"ue8m0": 0.25, "ue4m3": 3.5}  # in every scale byte the MMA must not read; in no pool
C_STEP = {"f32": 0.125, "f16": 0.25}  # C is k * step, |C| <= 8
PRECISION = {"f32": 24, "f16": 11}  # significand bits of the accumulator
LD_SLOTS = 64  # 16-byte row slots of a sub-byte ldmatrix case's 1024-byte image


@lru_cache(maxsize=None)
def pool_codes(type_name: str, values: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(codes, values) of a pool, both signs of each non-zero value (scale types: as given): ValueError unless each
    value is exactly a code of the type."""
    t = dtypes.get(type_name)
    v = np.asarray(values, np.float64)
    if not type_name.startswith("ue"):
        v = np.concatenate([v, -v[v != 0]])
    codes = t.to_bits(v)
    if not np.array_equal(BS.decode_values(type_name, codes), v):
        raise ValueError(f"a pool value of {type_name} is not exactly one of its codes")
    return codes.astype(np.uint32), v


def element_pool(form: BS.BlockScaledForm, type_name: str) -> tuple[np.ndarray, np.ndarray]:
    return pool_codes(type_name, COARSE_POOL if form.dtype == "f16" else WIDE_POOL[type_name])


def draw_codes(rng, form: BS.BlockScaledForm, type_name: str, shape) -> np.ndarray:
    codes, _ = element_pool(form, type_name)
    return codes.take(rng.integers(0, len(codes), size=shape))


def draw_scales(rng, stype: str, rows: int, count: int) -> np.ndarray:
    """Scale codes [rows, count], the factors of one row all different (a swap of two chunks' bytes shows)."""
    codes, _ = pool_codes(stype, SCALE_POOL[stype])
    order = np.argsort(rng.random((rows, len(codes))), axis=1)[:, :count]
    return codes[order]


def scale_registers(form: BS.BlockScaledForm, operand: str, factors: np.ndarray) -> np.ndarray:
    """Each lane's scale register (uint32 [32]): the held bytes the factors (`encode_scales`), every other byte the
    decoy."""
    decoy = int(pool_codes(form.stype, (SCALE_DECOY[form.stype],))[0][0])
    held = BS.scale_map(form, operand).held
    fill = np.where(held, 0, decoy).astype(np.uint32) << (8 * np.arange(4, dtype=np.uint32))[None, :]
    return BS.encode_scales(form, operand, factors) | np.bitwise_or.reduce(fill, axis=1).astype(np.uint32)


def _two_adic(x: np.ndarray) -> np.ndarray:
    """The exponent of the largest power of two dividing each non-zero float64 (dyadic) value."""
    mant, exp = np.frexp(np.abs(x))
    n = (mant * 2.0 ** 53).astype(np.int64)
    return exp - 53 + np.log2(n & -n).astype(np.int64)


def check_exact(form: BS.BlockScaledForm, a: np.ndarray, b: np.ndarray, c: np.ndarray, what: str) -> None:
    """AssertionError unless every partial sum of every element of (A)(B) + C, in any order, is exact in the
    accumulator (A, B already scaled, float64): all products and C multiples of one power of two Q, their magnitudes
    summing below 2^p Q and below the type's largest finite value."""
    prods = a[:, :, None] * b[None, :, :]  # [M, K, N]
    terms = np.concatenate([prods.ravel(), np.asarray(c, np.float64).ravel()])
    nonzero = terms[terms != 0]
    if nonzero.size == 0:
        return
    q = 2.0 ** int(_two_adic(nonzero).min())
    bound = float((np.abs(prods).sum(axis=1) + np.abs(c)).max())
    top = float(np.finfo(np.float32 if form.dtype == "f32" else np.float16).max)
    if not (bound < 2.0 ** PRECISION[form.dtype] * q and bound <= top):
        raise AssertionError(f"{what}: a partial sum may round in {form.dtype} (sum of |terms| {bound}, quantum {q}):"
                             " the value pools are wrong")


# ------------------------------------------------------------------------------------------------ a case

@dataclass(frozen=True, eq=False)  # arrays inside: identity, not an element-wise == that has no truth value
class Sm120Prepared:
    """One sm_120a case's launch inputs (None once `slim`) and the registers it must leave: `expected` uint32
    [32, D words] (the ldmatrix kernel: 4 words, those past .x{num} the poison)."""
    case: Sm120Case
    image: np.ndarray | None  # uint8, a multiple of 16 bytes: the ldmatrix rows (16 zero bytes for an mma case)
    a_words: np.ndarray | None  # uint32 [32, A words]
    b_words: np.ndarray | None
    c_words: np.ndarray | None
    e_words: np.ndarray | None  # uint32 [32]: the sparse metadata (0 for dense forms and ldmatrix)
    sf_words: np.ndarray | None  # uint32 [32, 2]: scale-a-data, scale-b-data (0 for kind::f8f6f4 and ldmatrix)
    ld_rows: np.ndarray | None  # uint32 [32]: each lane's ldmatrix row offset in the window (0 for an mma case)
    expected: np.ndarray

    def __post_init__(self):
        if not isinstance(self.case, Sm120Case):
            raise ValueError(f"an sm_120a preparation is of an Sm120Case, not {type(self.case).__name__}")
        w = words(self.case.key)
        if self.expected.shape != (FR.WARP, w["D"]) or self.expected.dtype != np.uint32:
            raise ValueError(f"{self.case.id}: expected is uint32 [32, {w['D']}], not {self.expected.dtype} "
                             f"{self.expected.shape}")
        if self.image is None:
            return
        shapes = {"a_words": (FR.WARP, w["A"]), "b_words": (FR.WARP, w["B"]), "c_words": (FR.WARP, w["C"]),
                  "e_words": (FR.WARP,), "sf_words": (FR.WARP, 2), "ld_rows": (FR.WARP,)}
        for name, shape in shapes.items():
            arr = getattr(self, name)
            if arr is None or arr.shape != shape or arr.dtype != np.uint32:
                raise ValueError(f"{self.case.id}: {name} is uint32 {list(shape)}")
        if self.image.dtype != np.uint8 or self.image.size % 16 or not self.image.size:
            raise ValueError(f"{self.case.id}: the image is whole 16-byte chunks of uint8")

    @property
    def launch_variant(self) -> int:
        return self.case.variant_index

    def slim(self) -> "Sm120Prepared":
        """Only what the diff needs (the case and its expected registers), for shipping between processes."""
        return replace(self, image=None, a_words=None, b_words=None, c_words=None, e_words=None, sf_words=None,
                       ld_rows=None)


def prepare(case: Sm120Case) -> Sm120Prepared:
    if case.key.group == "ldmatrix":
        return _prepare_ldmatrix(case)
    return _prepare_mma(case)


def _prepare_mma(case: Sm120Case) -> Sm120Prepared:
    form: BS.BlockScaledForm = case.variant
    rng = np.random.default_rng(case.seed)
    m, n, k = form.mnk
    amap, bmap, accmap = BS.a_map(form), BS.b_map(form), BS.acc_map(form)
    a_stored = draw_codes(rng, form, form.atype, (amap.rows, amap.cols))  # a sparse form's compressed storage
    b_codes = draw_codes(rng, form, form.btype, (k, n))
    step = C_STEP[form.dtype]
    c_vals = rng.integers(-int(8 / step), int(8 / step) + 1, size=(m, n)) * step
    e_words = np.zeros(FR.WARP, np.uint32)
    if form.sparse:
        meta = BS.metadata_form(form)
        fields, decoy = draw_fields(rng, meta)
        e_words = metadata_words(meta, fields, decoy)
        a_codes = expand(meta, a_stored, fields)  # logical M x K, zero where the metadata drops
    else:
        a_codes = a_stored
    sf_words = np.zeros((FR.WARP, 2), np.uint32)
    sfa = sfb = None
    a_vals, b_vals = BS.decode_values(form.atype, a_codes), BS.decode_values(form.btype, b_codes)
    if form.block_scaled:
        sfa = draw_scales(rng, form.stype, m, form.scale_count)
        sfb = draw_scales(rng, form.stype, n, form.scale_count)
        sf_words[:, 0] = scale_registers(form, "A", sfa)
        sf_words[:, 1] = scale_registers(form, "B", sfb)
        chunk = np.arange(k) // form.scale_vector_size
        a_vals = a_vals * BS.decode_values(form.stype, sfa)[:, chunk]
        b_vals = b_vals * BS.decode_values(form.stype, sfb)[:, chunk].T
    check_exact(form, a_vals, b_vals, c_vals, case.id)
    d = BS.reference_d(form, a_codes, b_codes, c_vals, sfa, sfb)
    a_words = BS.pack_registers(amap, BS.encode_containers(form, "A", a_stored))
    b_words = BS.pack_registers(bmap, BS.encode_containers(form, "B", b_codes))
    c_words = BS.pack_registers(accmap, d_bits(form, c_vals, case.id))
    expected = BS.pack_registers(accmap, d_bits(form, d, case.id))
    # the registers read back through the models give the same D: the packing and the matrices agree
    a_back = BS.decode_containers(form, "A", BS.unpack_registers(amap, a_words))
    if form.sparse:
        a_back = expand(BS.metadata_form(form), a_back, FR.decode_metadata(BS.metadata_form(form), e_words))
    back = [a_back, BS.decode_containers(form, "B", BS.unpack_registers(bmap, b_words)), c_vals]
    if form.block_scaled:
        back += [BS.decode_scales(form, "A", sf_words[:, 0]), BS.decode_scales(form, "B", sf_words[:, 1])]
    if not np.array_equal(BS.reference_d(form, *back), d):
        raise AssertionError(f"{case.id}: D from the packed registers is not D from the matrices")
    return Sm120Prepared(case, np.zeros(16, np.uint8), a_words, b_words, c_words, e_words, sf_words,
                         np.zeros(FR.WARP, np.uint32), expected)


def _prepare_ldmatrix(case: Sm120Case) -> Sm120Prepared:
    load: BS.SubByteLoad = case.variant
    rng = np.random.default_rng(case.seed)
    image = rng.integers(0, 256, size=LD_SLOTS * 16, dtype=np.uint8)
    rows = 8 * load.num
    codes = rng.integers(0, 1 << load.bits, size=(rows, 16))
    slot = rng.permutation(LD_SLOTS)  # row r of the loaded matrices at slot[r]; lanes past them get later slots
    data_bytes = 16 * load.bits // 8
    for r in range(rows):
        packed = load.pack_row(codes[r])
        image[16 * slot[r]:16 * slot[r] + data_bytes] = packed[:data_bytes]  # the padding keeps its junk
    ld_rows = (16 * slot[:FR.WARP]).astype(np.uint32)
    loaded = load.load(ld_rows, image)
    matrix, row, element = load.elements
    want = (codes[8 * matrix + row, element].astype(np.uint32) << (8 * np.arange(4, dtype=np.uint32))).sum(
        axis=-1, dtype=np.uint64).astype(np.uint32)
    if not np.array_equal(loaded, want):  # the load model and the drawn codes agree before any GPU is asked
        raise AssertionError(f"{case.id}: the sub-byte ldmatrix model does not give the rows' codes")
    expected = np.full((FR.WARP, words(case.key)["D"]), POISON, np.uint32)
    expected[:, :load.num] = loaded
    zeros = {w: np.zeros((FR.WARP, words(case.key)[w]), np.uint32) for w in "ABC"}
    return Sm120Prepared(case, image, zeros["A"], zeros["B"], zeros["C"], np.zeros(FR.WARP, np.uint32),
                         np.zeros((FR.WARP, 2), np.uint32), ld_rows, expected)
