"""Probe mode: recover, for every element of an operand, the shared-memory address the tensor core read.

Every element-sized slot of the shared-memory image holds a number that names the slot (its index, written
as digits of the largest base the operand type and the accumulator hold exactly, one digit per pass). The
other operand is one-hot, so each accumulator element is exactly one read element of the probed operand:

    probing A:  B[n, k] = 1 iff k == s*N + n     ->  D[m, n] = A_read[m, s*N + n]    (sub-pass s)
    probing B:  A[m, k] = 1 iff k == s*64 + m    ->  D[m, n] = B_read[n, s*64 + m]

Digits of all passes give the slot, the slot gives the byte (and bit) address the hardware read for that
(row, k), which is compared with the address the layout model says. All passes and sub-passes of a probe
are CTAs of one launch of the ordinary wgmma kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from harness.diagnosis.digits import DIGIT_BASE
from harness.families.wgmma import kernel as launch, forms as wgmma
from harness.families.wgmma.cases import Case
from harness.families.wgmma.reference import Prepared, acc_bits, place
from harness.spec import dtypes, fragments, layouts
from harness.spec.descriptors import START_FIELD

SLACK_BYTES = 2048  # numbered bytes past the image, so modest over-reads are still identified


class ProbeImpossible(ValueError):
    """No one-hot of the other operand can be placed (its descriptor makes two of its elements share storage, or
    cannot be moved where the probe needs it)."""


@dataclass(frozen=True)
class Placed:
    """One operand as the probe sees it: where the image holds each element, and the descriptor used."""
    dtype: str
    addr: np.ndarray  # (rows, cols) absolute bit address of element [mn, k] in the intended layout
    desc: int | None  # raw descriptor (start relative to the window); None: A comes from registers
    layout: layouts.SmemLayout | None = None  # the intended layout, when there is one (for explanations)
    desc_layout: layouts.SmemLayout | None = None  # the layout the descriptor encodes, when there is one

    @property
    def read_addr(self) -> np.ndarray:
        """Where the model says the tensor core reads each element (differs from addr in controls)."""
        return layouts.element_bit_addresses(self.desc_layout) if self.desc_layout is not None else self.addr


@dataclass(frozen=True)
class Setup:
    key: wgmma.KernelKey
    variant_index: int
    a: Placed | None  # None: A from registers
    b: Placed
    size: int  # image bytes the operands span

    @property
    def variant(self) -> wgmma.Variant:
        return wgmma.variants(self.key)[self.variant_index]


def setup_of(case: Case) -> Setup:
    a_lay, a_desc, b_lay, b_desc, _, size = place(case)
    v = case.variant  # the element types are the variant's (a layout only needs the width)
    a = None
    if a_lay is not None:
        a = Placed(v.atype, layouts.element_bit_addresses(a_lay), launch.encode_desc(a_desc), a_lay, a_desc)
    b = Placed(v.btype, layouts.element_bit_addresses(b_lay), launch.encode_desc(b_desc), b_lay, b_desc)
    return Setup(case.key, case.variant_index, a, b, size)


def registers_form(st: Setup) -> Setup:
    """The same instruction with A from registers: the key's RS form, in the variant with the same types, B
    major-ness and scales (A from registers has no major-ness). B probed there reads no A address, so however the
    hardware reads A from shared memory, B's probe is not disturbed by it."""
    key = replace(st.key, a_src="RS")
    return Setup(key, wgmma.variant_index(key, replace(st.variant, trans_a=0)), None, st.b, st.size)




def b_moved_on(st: Setup) -> tuple[Setup, int]:
    """(the setup with B's descriptor start field moved past everything A's probe numbers, the bytes moved).

    The move is a multiple of 1024 bytes, where every swizzle's pattern and base-offset phase repeat, and only the
    start field of B's raw descriptor changes, so whatever else the descriptor says (a field the encoder got wrong
    included) is read as before. A probed with B's one-hot there finds its own numbers wherever it is read, up to
    the slack past the tiles: none of them is overwritten by B's one-hot, as they are where a misread A reaches
    into B's tile."""
    b = st.b
    shift = -(-(st.size + SLACK_BYTES) // 1024) * 1024
    start = (b.desc & START_FIELD) + (shift >> 4)
    if start > START_FIELD:
        raise ProbeImpossible(f"B's start field cannot be moved {shift} bytes on (it holds 14 bits of the address "
                              "/ 16); A was not probed apart from B")

    def on(lay):
        return lay.moved(start=lay.start + shift) if lay is not None else None
    moved = Placed(b.dtype, b.addr + 8 * shift, (b.desc & ~START_FIELD) | start, on(b.layout), on(b.desc_layout))
    return replace(st, b=moved, size=st.size + shift), shift


def _digit_values(dtype: str, digits: np.ndarray) -> np.ndarray:
    return digits - 128 if dtype == "s8" else digits


def _value_digits(dtype: str, values: np.ndarray) -> np.ndarray:
    v = np.rint(np.asarray(values, dtype=np.float64)).astype(np.int64)
    return v + 128 if dtype == "s8" else v


def plan_passes(st: Setup, which: str) -> tuple[int, int]:
    """(digit passes, sub-passes) for probing operand `which` ('A' or 'B')."""
    op = st.a if which == "A" else st.b
    if op is None:
        raise ValueError("A comes from registers in this form: only B can be probed")
    bits = dtypes.get(op.dtype).bits
    nslots = (st.size + SLACK_BYTES) * 8 // bits
    base = DIGIT_BASE[op.dtype]
    passes = max(1, int(np.ceil(np.log(nslots) / np.log(base))))
    while base ** passes < nslots:
        passes += 1
    K = st.key.k
    sub = -(-K // (st.key.n if which == "A" else wgmma.M))
    return passes, sub


def _one_hot(which: str, s: int, n: int, K: int) -> np.ndarray:
    """The other operand's values for sub-pass s: B as (N, K) when probing A, A as (64, K) when probing B."""
    rows = n if which == "A" else wgmma.M
    m = np.arange(rows)[:, None]
    k = np.arange(K)[None, :]
    return (k == s * rows + m).astype(np.float64)


def probe_jobs(st: Setup, which: str, a_table=None) -> list[Prepared]:
    """One Prepared per (pass, sub-pass): numbered image, one-hot other operand, C = 0, scale-d = 0. `a_table`:
    the A fragment the hardware was seen to use ((row, k) per slot, fragments_probe), for packing a one-hot A
    in registers through it rather than through the model's."""
    key, v = st.key, st.variant
    probed = st.a if which == "A" else st.b
    other = st.b if which == "A" else st.a
    pt = dtypes.get(probed.dtype)
    if other is not None:
        slots = other.read_addr.ravel()
        if np.unique(slots).size != slots.size:
            raise ProbeImpossible(f"operand {'B' if which == 'A' else 'A'}'s descriptor reads two elements from one "
                                  f"place, so it cannot hold a one-hot matrix; operand {which} was not probed")
    passes, sub = plan_passes(st, which)
    base = DIGIT_BASE[probed.dtype]
    size = -(-(st.size + SLACK_BYTES) // 16) * 16
    slots = np.arange(size * 8 // pt.bits, dtype=np.int64)
    dfrag = fragments.wgmma_d_fragment(key.n, key.dtype)
    c_regs = fragments.gather_registers(dfrag, acc_bits(key.dtype, np.zeros((wgmma.M, key.n))))
    case = Case(key, st.variant_index, None, None, 0)  # carries the variant and scale-d for pack()
    jobs = []
    for p in range(passes):
        digits = (slots // base ** p) % base
        image = np.zeros(size, np.uint8)
        layouts.write_bits(image, slots * pt.bits, pt.to_bits(_digit_values(probed.dtype, digits)), pt.bits)
        for s in range(sub):
            img = image.copy()
            hot = _one_hot(which, s, key.n, key.k)
            a_regs = None
            if other is not None:  # where the other operand's descriptor makes the tensor core read it
                layouts.write_bits(img, other.read_addr.ravel(), dtypes.get(other.dtype).to_bits(hot).ravel(),
                            dtypes.get(other.dtype).bits)
            elif a_table is not None:  # A from registers, where the hardware takes each element from
                from harness.families.wgmma.fragments_probe import gather_a
                a_regs = gather_a(v.atype, a_table, dtypes.get(v.atype).to_bits(hot))
            else:  # A from registers, through the model's fragment
                a_regs = fragments.gather_registers(fragments.wgmma_a_fragment(v.atype),
                                                    dtypes.get(v.atype).to_bits(hot))
            descs = (st.a.desc if st.a is not None else None, st.b.desc)
            jobs.append(Prepared(case, img, None, None, a_regs, c_regs, None, None, None, None, None, None,
                                 None, descs))
    return jobs


def recover(st: Setup, which: str, d_values: np.ndarray) -> np.ndarray:
    """Accumulator values of the probe's CTAs, [jobs, 64, N] in probe_jobs order -> (rows, cols) bit address
    the hardware read for each element of the probed operand; -1 for an element whose accumulator value in some pass
    was no number (an address no layout gives)."""
    key, v = st.key, st.variant
    probed = st.a if which == "A" else st.b
    bits = dtypes.get(probed.dtype).bits
    passes, sub = plan_passes(st, which)
    base = DIGIT_BASE[probed.dtype]
    sign = v.scale_a * v.scale_b
    rows = wgmma.M if which == "A" else key.n
    slot = np.zeros((rows, key.k), np.int64)
    unread = np.zeros((rows, key.k), bool)
    d = np.asarray(d_values, dtype=np.float64).reshape(passes, sub, wgmma.M, key.n) * sign
    # a value that is no number (NaN, infinite: read from outside the probe's digits, as a planted LBO makes it)
    # leaves its element unread, never a cast of NaN to an integer
    finite = np.isfinite(d)
    d = np.where(finite, d, 0.0)
    for s in range(sub):
        if which == "A":  # D[m, n] = A[m, s*N + n]
            ks = s * key.n + np.arange(key.n)
            ok = ks < key.k
            for p in range(passes):
                slot[:, ks[ok]] += _value_digits(probed.dtype, d[p, s][:, ok]) * base ** p
                unread[:, ks[ok]] |= ~finite[p, s][:, ok]
        else:  # D[m, n] = B[n, s*64 + m]
            ks = s * wgmma.M + np.arange(wgmma.M)
            ok = ks < key.k
            for p in range(passes):
                slot[:, ks[ok]] += _value_digits(probed.dtype, d[p, s][ok, :]).T * base ** p
                unread[:, ks[ok]] |= ~finite[p, s][ok, :].T
    return np.where(unread, -1, slot * bits)


def run(st: Setup, which: str, worker, cubin_path: str, timeout: float = 30.0) -> np.ndarray:
    """Launch the probe of one operand on a GPU worker and return the observed bit-address map."""
    from harness.families.wgmma.readback import decode_launch
    jobs = probe_jobs(st, which)
    regs = worker.run(str(cubin_path), st.key.name, launch.pack(jobs), timeout)["d_out"]
    return recover(st, which, decode_launch(st.key, regs)[0])
