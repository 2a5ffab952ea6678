"""Inputs and the numpy reference of a wgmma.mma_async.sp case, from the spec alone.

`prepare(case)` draws the packed A (64 x K/2, non-zero values so that every misplaced element shows), B (N x K)
and C (deterministically from the case's id), compresses nothing: the metadata pattern says where each stored
element of A belongs (harness.spec.sparsity), writes the shared-memory image with the layout model, lays out the
metadata registers for the selector, packs A (for RS) and C into registers with the dense fragment models, and
computes the expected accumulator:

    expected = accumulate(decompress(A as the descriptor reads it, metadata as the selector reads it), B as read, C)
    intended = accumulate(decompress(A, the pattern's metadata), B, C)

A negative control changes what the tensor core is given (a wrong descriptor, wrong metadata, the other
selector); `expected` is then the model's prediction of the misread and must differ from `intended`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from harness.families.wgmma import reference as dense
from harness.families.wgmma.reference import EXACT_POOL
from harness.families.wgmma_sp.cases import Case
from harness.spec import dtypes, sparsity


@dataclass
class Prepared(dense.Prepared):
    e_regs: np.ndarray | None = None  # uint32 [128]: each thread's metadata register
    nibbles: np.ndarray | None = None  # [64, chunks] metadata the tensor core reads (the model's prediction)

    def slim(self) -> "Prepared":
        self.e_regs = self.nibbles = None
        return super().slim()


def draw_packed(rng, t: dtypes.ElementType, shape, mode: str) -> np.ndarray:
    """The stored elements of A: never zero, so a stored element put in the wrong place always shows."""
    if t.kind in ("int", "uint"):
        lo, hi = t.int_range()
        vals = rng.integers(lo, hi, size=shape).astype(np.int64)
        return np.where(vals >= 0, vals + 1, vals)  # lo..hi without 0
    if mode == "normal":
        return dense.draw_values(rng, t, shape, mode)
    pool = EXACT_POOL[t.name]
    return dense.pick(rng, pool[pool != 0], shape)


def pattern_nibbles(fmt: sparsity.SparseFormat, pattern: str, rng) -> np.ndarray:
    """[64, chunks] metadata of one of the patterns of cases.PATTERNS (every value legal for the type)."""
    ordered = sparsity.legal_nibbles(fmt, ordered_only=True)
    rows, chunks = np.arange(sparsity.M)[:, None], np.arange(fmt.chunks)[None, :]
    # cycle: neighbouring chunks of a nibble group, chunks c and c + 4 (f16/tf32: the two threads of a pair),
    # c and c + 8 (8-bit: T0 and T2), rows r and r + 8 (T0 and T1) get different values, even with tf32's two;
    # with 2:4's six, chunk c + 4 of row r also differs from chunk c of row r + 8 (a pair's thread roles swapped)
    step = chunks + chunks // 4 + rows * 5 + 3 * (rows // 8)
    if pattern == "cycle":
        return np.asarray(ordered)[step % len(ordered)]
    if pattern == "random":
        return rng.choice(ordered, size=(sparsity.M, fmt.chunks))
    if pattern == "rows":
        return np.asarray(ordered)[np.broadcast_to((rows * 5 + rows // 8) % len(ordered), (sparsity.M, fmt.chunks))]
    if pattern == "cols":
        return np.asarray(ordered)[np.broadcast_to(chunks % len(ordered), (sparsity.M, fmt.chunks))]
    if pattern == "reversed":
        rev = [v for v in sparsity.legal_nibbles(fmt) if not sparsity.is_ordered(fmt, v)]
        return np.asarray(rev)[step % len(rev)]
    raise ValueError(f"unknown metadata pattern {pattern!r}")


def other_pattern(fmt: sparsity.SparseFormat, nibbles: np.ndarray) -> np.ndarray:
    """Valid metadata that differs from `nibbles` in every chunk: each chunk's value moved on by one in the list
    of legal increasing pairs (the decoy of the unread threads, and the wrong-metadata control)."""
    nib = np.asarray(nibbles, dtype=np.int64)
    moved = successors(fmt).take(nib & 0xF)
    if ((nib < 0) | (nib > 0xF) | (moved < 0)).any():
        bad = nib[(nib < 0) | (nib > 0xF) | (moved < 0)].flat[0]
        raise KeyError(f"{fmt.atype} metadata {bad} is not a legal chunk value")
    return moved


@lru_cache(maxsize=None)
def successors(fmt: sparsity.SparseFormat) -> np.ndarray:
    """[16]: what other_pattern moves each metadata value to (-1: not a legal value), read-only."""
    ordered = list(sparsity.legal_nibbles(fmt, ordered_only=True))
    table = np.full(16, -1, np.int64)
    for v in sparsity.legal_nibbles(fmt):
        table[v] = ordered[(ordered.index(v) + 1) % len(ordered)] if v in ordered else ordered[0]
    table.flags.writeable = False
    return table


def swap_nibbles_01(regs: np.ndarray) -> np.ndarray:
    r = np.asarray(regs, dtype=np.uint32)
    return (r & np.uint32(0xFFFFFF00)) | ((r & np.uint32(0xF)) << 4) | ((r >> 4) & np.uint32(0xF))


def swap_pair_threads(regs: np.ndarray, selector: int, all_threads: bool) -> np.ndarray:
    """Exchange the registers of lanes 4g + 2s and 4g + 2s + 1 (for all four supplying threads: 4g and 4g + 1)."""
    r = np.asarray(regs, dtype=np.uint32).copy()
    first = 0 if all_threads else 2 * selector
    t = np.arange(sparsity.WARPGROUP)
    lo = t[t % 4 == first]
    r[lo], r[lo + 1] = regs[lo + 1], regs[lo]
    return r


def metadata(case: Case, fmt: sparsity.SparseFormat, rng,
             made: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the pattern's nibbles, the registers the kernel gets, the nibbles the tensor core reads from them). Only the
    'random' pattern draws (from the case's stream); every other case's are those of every case of its type,
    pattern, selectors and control: made once a launch, in `made` (the launch's: prepared_in_parts' for its parts,
    else prepare_all's own, kept for that call only, so that a model changed between calls, as a planted bug is, is
    read again), read-only. 0.2 ms a case, a sixth of a sparse case's preparation
    (the CPU note 2026-11-27 sparse-metadata.txt in docs/performance.md)."""
    v = case.variant
    if case.pattern == "random":
        return metadata_of(v.atype, pattern_nibbles(fmt, case.pattern, rng), case.placed_selector, case.control,
                           v.selector)
    key = (v.atype, case.pattern, case.placed_selector, case.control, v.selector)
    if key not in made:
        made[key] = metadata_of(v.atype, pattern_nibbles(fmt, case.pattern, None), case.placed_selector,
                                case.control, v.selector)
        for a in made[key]:
            a.flags.writeable = False
    return made[key]


def metadata_of(atype: str, truth: np.ndarray, placed: int, control: str | None,
                selector: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """metadata() of the pattern's nibbles `truth`: the registers placed for selector `placed` (the other pair
    holding other valid metadata), changed as the control says, and what `selector` reads from them."""
    fmt = sparsity.format_of(atype)
    decoy = None
    if len(fmt.selectors) == 2:  # the pair the placed selector does not name holds other valid metadata
        decoy = sparsity.metadata_registers(atype, other_pattern(fmt, truth), 1 - placed)
    if control == "meta:other-pattern":
        regs = sparsity.metadata_registers(atype, other_pattern(fmt, truth), placed, decoy)
    else:
        regs = sparsity.metadata_registers(atype, truth, placed, decoy)
    if control == "meta:swapped-nibbles":
        regs = swap_nibbles_01(regs)
    elif control == "meta:swapped-threads":
        regs = swap_pair_threads(regs, placed, len(fmt.selectors) == 1)
    return truth, regs, sparsity.metadata_read(atype, regs, selector)


def draw_packed_operand(rng, t: dtypes.ElementType, shape, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(raw bits, values) of the stored elements of A drawn as `draw_packed` draws them, from the same stream."""
    if mode != "normal" and t.name in EXACT_POOL:
        return dense.draw_from_pool(rng, t.name, shape, nonzero=True)
    return t.encoded(draw_packed(rng, t, shape, mode))


@dataclass
class SparseInputs:
    """A case's own half of its preparation (the dense family's Inputs, A decompressed) and its metadata."""
    dense: dense.Inputs
    e_regs: np.ndarray  # each thread's metadata register
    read_nibbles: np.ndarray  # the metadata the tensor core reads from them


def draw_inputs(case: Case, made: dict) -> SparseInputs:
    """`made`: the metadata of the launch's cases so far (metadata())."""
    key, v = case.key, case.variant
    fmt = sparsity.format_of(v.atype)
    rng = np.random.default_rng(case.seed)
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    M, N, K, KP = sparsity.M, key.n, key.k, key.packed_k

    a_bits, packed_written = draw_packed_operand(rng, at, (M, KP), case.data)
    b_bits, b_logical = dense.draw_operand(rng, bt, (N, K), case.data)
    c_vals = dense.c_values(rng, case, (M, N))
    a_bits, b_bits, packed_written, b_logical = dense.dirty_if_asked(case, rng, at, bt, a_bits, b_bits,
                                                                     packed_written, b_logical)
    truth, e_regs, read_nibbles = metadata(case, fmt, rng, made)

    image, a_desc, b_desc, packed_read, b_read = dense.window(case, rng, at, bt, a_bits, b_bits,  # A: the packed
                                                              packed_written, b_logical)        # tile
    a_logical = sparsity.decompress(fmt, packed_written, truth)
    # read as written, under the metadata as meant: the logical A itself (decompressed once)
    a_read = a_logical if packed_read is packed_written and np.array_equal(read_nibbles, truth) else \
        sparsity.decompress(fmt, packed_read, read_nibbles)
    return SparseInputs(dense.Inputs(image, a_desc, b_desc, a_bits, a_logical, b_logical, c_vals, a_read, b_read),
                        e_regs, read_nibbles)


def prepare(case: Case) -> Prepared:
    return prepare_all([case])[0]


def prepared_in_parts(cases: list[Case], part: int = dense.PREPARE_PART):
    """prepare_all of the cases, `part` at a time, in order (the dense family's prepared_in_parts), the metadata made
    once for all of them (metadata())."""
    made: dict = {}
    return dense.in_parts(lambda some: prepare_all(some, made), cases, part)


def prepare_all(cases: list[Case], made: dict | None = None) -> list[Prepared]:
    """Every case prepared (cases of one kernel key, as a launch has): the dense family's expectations of the
    decompressed A, then each control checked able to fail. `made`: the metadata made so far for cases of the same
    launch (metadata()); by default, this call's own."""
    made = {} if made is None else made
    drawn = [draw_inputs(c, made) for c in cases]
    e = dense.expectations(cases, [d.dense for d in drawn])
    out = []
    for j, (case, d) in enumerate(zip(cases, drawn)):
        i = d.dense
        if case.control and case.data == "exact":
            with np.errstate(invalid="ignore"):
                if np.array_equal(e.expected[j], e.intended[j]):
                    raise AssertionError(f"{case.id}: the control reads exactly the intended product: it could not "
                                         "fail")
        out.append(dense.prepared(Prepared, case, i, e, j, e_regs=d.e_regs, nibbles=d.read_nibbles))
    return out
