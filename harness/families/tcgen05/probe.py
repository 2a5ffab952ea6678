"""Probe mode for tcgen05: recover, for every element of an operand, where the tensor core read it from.

As for wgmma (harness/families/wgmma/addresses.py): every element-sized slot of the probed operand's storage holds a
number naming the slot, written as digits of the largest base the operand type and the accumulator hold
exactly, one digit per pass; the other operand is one-hot, so each accumulator element is exactly one read
element of the probed operand:

    probing A:  B[n, k] = 1 iff k == s*N + n     ->  D[m, n] = A_read[m, s*N + n]    (sub-pass s)
    probing B:  A[m, k] = 1 iff k == s*M + m     ->  D[m, n] = B_read[n, s*M + m]

Shared memory: the slots are the element-sized slots of the CTA's image (plus SLACK_BYTES past it), so the
digits give the bit address read for every (row, k), compared with the layout the descriptor encodes
(harness.spec.layouts): the recovered map is decomposed into the descriptor's terms and printed in CuTe notation
beside the model's (harness/diagnosis/address_fit.py), explain.py's nearby layouts naming it where one matches.
Tensor Memory (A of a TS form): the slots are the element-sized parts of every 32-bit cell of all 128 lanes and
of the columns 0 .. read_cols + TMEM_SLACK_COLS, so the digits give the lane, column and position in the cell
read for every (row, k), compared with datapaths.a_lane and the A column the kernel gives.

Every probe job is a TcPrepared of the case's own kernel (kernel.pack), one CTA each, C = 0 (enable_input_d 0);
D is decoded through the case's data path (datapaths.decode_d). The one-hot of the other operand sits where *its*
descriptor (or the TMEM model) says it is read: the probe of one operand trusts the other operand's reads, and
says so when the accumulator values are not digits. Where both shared-memory operands read other than the model
says, each is probed again with the other's one-hot where the hardware was seen to read it (_second_look); where
that clears neither, they are probed apart (_apart): B in the case's TS form, where no A address enters its
probe, then A with B's one-hot where that probe saw B read, so that each record names its own operand's fields.

Probed: cta_group::1 without .ws, kinds tf32 and f16 (tf32, f16, bf16), f8f6f4 and i8 (s8, u8), A and B in
shared memory (SS) and A in Tensor Memory (TS), K- and MN-major, every swizzle layouts.py models. A 4/6-bit A in
Tensor Memory is numbered (and given its one-hot) one element per 8-bit container, at the container position the
model gives (datapaths.tmem_a_container: e2m1 in bits 5-2, "the central 4 bits of the 8-bit container" of the PTX
ISA's tcgen05.mma text; e2m3 / e3m2 in bits 5-0); a read of it from another position in its container, or packed
densely (CUTLASS's tmem_frg), is recognised and named; a 4/6-bit operand in shared memory (packed 16 per 16-byte
chunk) is not numbered, but holds the other operand's one-hot. Everything else gets a 'not-probed' record saying why
(unsupported(), packed_reason()); where D sits and which scale factors are used is tmem_probe.py's and
sf_probe.py's, for every form.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from harness.diagnosis import pictures
from harness.diagnosis.digits import DIGIT_BASE
from harness.spec.descriptors import START_FIELD  # tcgen05's start field is wgmma's
from harness.families.tcgen05 import datapaths, reference as R
from harness.families.tcgen05.cases import TcCase, storage_dtype
from harness.spec import desc_tcgen05, descriptors, dtypes, idesc as idesc_spec, layouts
from harness.spec.layouts import SmemLayout

# digit base per element type: the wgmma probe's, and for the 4/6-bit types the largest base whose digits they hold
DIGITS = {**DIGIT_BASE, "e2m1": 4, "e2m3": 8, "e3m2": 8}
SLACK_BYTES = 2048  # numbered bytes past the operands, so modest over-reads are still identified
TMEM_SLACK_COLS = 32  # numbered TMEM columns past the case's, for A read from too far right
MAX_TMEM_COLS = 512


class NotProbed(ValueError):
    """The probe cannot give a sound answer for this case / operand; the message says why."""


# ---------------------------------------------------------------------------------------------------- setup

@dataclass(frozen=True)
class SmemOperand:
    dtype: str  # element type (a storage width of 8, 16 or 32 bits)
    layout: SmemLayout  # the intended layout (what the image was written with), cut to the probe's rows
    desc_layout: SmemLayout  # the layout the descriptor encodes (differs in smem-descriptor controls)
    # where the hardware was seen to read it (another probe's answer): a one-hot goes there instead
    seen: np.ndarray | None = field(default=None, compare=False)

    @property
    def packed(self) -> bool:
        """A 4/6-bit element in an 8-bit slot of the layout: packed from the start of its 16-byte chunk."""
        return dtypes.get(self.dtype).bits < dtypes.get(self.layout.dtype).bits

    @property
    def width(self) -> int:
        """Bits written per element: the element's own when packed, the slot's otherwise."""
        return dtypes.get(self.dtype if self.packed else self.layout.dtype).bits

    def _bit_addresses(self, lay: SmemLayout) -> np.ndarray:
        if self.packed:
            return datapaths.subbyte_bit_addresses(lay, self.width)
        return layouts.element_bit_addresses(lay)

    @property
    def addr(self) -> np.ndarray:
        return self._bit_addresses(self.layout)

    @property
    def read_addr(self) -> np.ndarray:
        return self.seen if self.seen is not None else self._bit_addresses(self.desc_layout)

    @property
    def model_addr(self) -> np.ndarray:
        """Where the model says the tensor core reads it (the descriptor's layout)."""
        return self._bit_addresses(self.desc_layout)

    def write(self, image: np.ndarray, values_bits: np.ndarray) -> None:
        """Raw element bits [rows, k] into an image where the descriptor makes the tensor core read them."""
        if self.packed:  # clear the elements' bits (the image may hold the other operand's numbers), then OR
            addr = self.read_addr.ravel()
            mask = np.zeros_like(image)
            datapaths.write_bits_anywhere(mask, addr, np.full(addr.size, (1 << self.width) - 1), self.width)
            image &= ~mask
            datapaths.write_bits_anywhere(image, addr, np.asarray(values_bits).ravel(), self.width)
        else:
            layouts.write_bits(image, self.read_addr.ravel(), np.asarray(values_bits).ravel(), self.width)


@dataclass(frozen=True)
class TmemOperand:
    """A in Tensor Memory: row r on lane a_lane(M, r), element k in column col0 + k // per, part k % per (bits
    (k % per) * w ..); a 4/6-bit A's value sits in its 8-bit container where datapaths.tmem_a_container puts it
    (`shift` bits up: 2 for e2m1, the ISA's central 4 bits; 0 for e2m3 / e3m2)."""
    dtype: str
    rows: int
    k: int
    col0: int  # the column the kernel passes as A's address
    intended_m: int  # the M whose data path the rows were stored for
    model_m: int  # the M the instruction descriptor says (the hardware reads A through its path)
    element: str = ""  # the element type, where it differs from the storage type (4/6-bit A in 8-bit containers)

    @property
    def value_dtype(self) -> str:
        return self.element or self.dtype

    @property
    def bits(self) -> int:
        return dtypes.get(self.dtype).bits

    @property
    def per(self) -> int:
        return 32 // self.bits

    @property
    def shift(self) -> int:
        """Bits from a container's first bit to its element's (the model's: datapaths.tmem_a_container)."""
        return int(self.container(1)).bit_length() - 1

    def container(self, values_bits) -> np.ndarray:
        """Raw element bits -> the container bits that hold them where the model says the MMA reads them."""
        if not self.element:
            return np.asarray(values_bits, np.uint64)
        return datapaths.tmem_a_container(self.value_dtype, values_bits)

    def position(self, m: int):
        """(lane, column, part) [rows, k] of every element under the data path of M = m."""
        r, k = np.meshgrid(np.arange(self.rows), np.arange(self.k), indexing="ij")
        return datapaths.a_lane(m, r), self.col0 + k // self.per, k % self.per

    @property
    def intended(self):
        return self.position(self.intended_m)

    @property
    def model(self):
        return self.position(self.model_m)


@dataclass(frozen=True)
class Setup:
    case: TcCase
    probe_case: TcCase  # the case with the instruction descriptor's M, N and C = 0: D is decoded through it
    arch: str
    a: SmemOperand | TmemOperand | None  # None: A could not be modelled (see skipped)
    b: SmemOperand | None
    size: int  # image bytes the probe numbers (operands' footprints plus slack), 16-byte multiple
    read_cols: int  # TMEM columns stored and read back
    params: dict  # the case's parameter record (descriptors, idesc, A column), C off
    skipped: tuple = ()  # (operand, reason) of operands that cannot be modelled (the other is not probed either)
    unprobed: tuple = ()  # (operand, reason) of operands modelled (a one-hot can be written) but not numbered

    @property
    def m(self) -> int:
        return self.probe_case.m

    @property
    def n(self) -> int:
        return self.probe_case.n

    @property
    def k(self) -> int:
        return self.case.k


def unsupported(c: TcCase) -> str | None:
    """Why a case cannot be probed at all (None when it can)."""
    f = c.form
    if f.block_scaled:
        return (f"kind::{f.kind} is block-scaled: every product is multiplied by scale factors the kernel copies "
                "into Tensor Memory with tcgen05.cp, so a one-hot operand gives scale x digit, and the factors' own "
                "reads would need a probe of their own; not built")
    if f.cta_group != 1:
        return ("cta_group::2: A and B are split over the pair's two CTAs' shared memory and D over their Tensor "
                "Memory (data paths A and B), issued by one CTA for both; the probe numbers one CTA's storage")
    if f.ws:
        return (".ws: the zero-column mask and the .ws data paths (E: M=64, G: M=32, column parts folded onto "
                "lanes) are not handled by the probe")
    if f.variant in ("ashift", "shift_down"):
        from harness.families.tcgen05.tmem_probe import SHIFT_NOT_PROBED
        return SHIFT_NOT_PROBED
    for role, t in (("A", c.atype), ("B", c.btype)):
        if t not in DIGITS:
            return f"{role} is {t}: no digit base is known for it"
    return None


def packed_reason(role: str, t: str) -> str:
    return (f"{role} is {t}, a {dtypes.get(t).bits}-bit type packed 16 per 16-byte chunk in shared memory "
            "(datapaths.subbyte_bit_addresses): its storage is not numbered element by element (not built); the "
            "other operand's probe writes its one-hot there")


def _desc_layout(value: int, major: str, dtype: str, rows: int, k: int, arch: str, role: str) -> SmemLayout:
    dec = desc_tcgen05.decode_tcgen05_smem_desc(int(value), arch)
    if dec["problems"]:
        raise NotProbed(f"{role}'s smem descriptor {dec['value']} is outside the ISA ({'; '.join(dec['problems'])}): "
                        "the ISA does not say where the tensor core then reads, so there is no model to compare "
                        "with and no place to put a one-hot")
    fl = dec["fields"]
    if fl["lbo_mode"] != "relative":
        raise NotProbed(f"{role}'s descriptor uses the absolute-address LBO mode, which layouts.py does not model")
    lay = SmemLayout(major, fl["swizzle"], dtype, rows, k, fl["leading_byte_offset"], fl["stride_byte_offset"],
                     fl["start_address"], fl["base_offset"])
    try:
        layouts.validate(lay)
    except layouts.LayoutError as e:
        raise NotProbed(f"{role}'s descriptor encodes a layout layouts.py cannot express: {e}") from None
    return lay


def setup_of(c: TcCase, arch: str = "sm_100a") -> Setup:
    """What the probe of case `c` needs: the case's own parameters (prepare), the layouts its descriptors encode
    and the intended ones. Raises NotProbed when no operand of the case can be probed."""
    why = unsupported(c)
    if why:
        raise NotProbed(why)
    f = c.form
    prep = R.prepare(c, arch)
    p = dict(prep.params[0])
    idesc = idesc_spec.decode_idesc(int(p["idesc"]), f.kind)
    if idesc["problems"]:
        raise NotProbed(f"the instruction descriptor {idesc['value']} is outside the ISA "
                        f"({'; '.join(idesc['problems'])})")
    fi = idesc["fields"]
    m, n, K = fi["m"], fi["n"], c.k
    if (fi["atype"], fi["btype"], fi["dtype"]) != (c.atype, c.btype, c.dtype):
        raise NotProbed("the instruction descriptor's types differ from the case's; the probe's digits would be "
                        "read as another type")
    major_a, major_b = ("MN" if fi["transpose_a"] else "K"), ("MN" if fi["transpose_b"] else "K")
    sa, sb = storage_dtype(f, c.atype), storage_dtype(f, c.btype)
    skipped = []
    a_int = R.operand_layout(f, c.atype, c.m, K, c.major_a, c.swizzle_a, 0)  # as prepare() places them
    b_start = -(-layouts.footprint(a_int)[1] // 1024) * 1024
    b_int = R.operand_layout(f, c.btype, c.n, K, c.major_b, c.swizzle_b, b_start)
    spans = []
    a = b = None
    if f.a_src == "SS":
        try:
            a_d = _desc_layout(p["desc_a"], major_a, sa, m, K, arch, "A")
            a = SmemOperand(c.atype, a_int.moved(rows=m), a_d)
            spans += [layouts.footprint(a.layout)[1], layouts.footprint(a_d)[1]]
        except (NotProbed, layouts.LayoutError) as e:
            skipped.append(("A", str(e)))
    else:  # a 4/6-bit A sits in an 8-bit container where datapaths.tmem_a_container puts it (e2m1: bits 5-2)
        a = TmemOperand(sa, m, K, int(p["a_tmem_col"]), c.m, m, c.atype if sa != c.atype else "")
    if c.b_atoms != "layouts":
        skipped.append(("B", f"B is tiled as {c.b_atoms} (CUTLASS's 4-K-row 128B_base32b atoms), which "
                             "layouts.SmemLayout cannot express: no intended address map to compare with"))
    else:
        try:
            b_d = _desc_layout(p["desc_b"], major_b, sb, n, K, arch, "B")
            b = SmemOperand(c.btype, b_int.moved(rows=n), b_d)
            spans += [layouts.footprint(b.layout)[1], layouts.footprint(b_d)[1]]
        except (NotProbed, layouts.LayoutError) as e:
            skipped.append(("B", str(e)))
    if b is None or (a is None and f.a_src == "SS"):
        raise NotProbed("; ".join(f"{w}: {r}" for w, r in skipped) +
                        "; with one operand unmodelled the other cannot be given a one-hot either")
    size = -(-(max(spans) + SLACK_BYTES) // 16) * 16
    read_cols = int(prep.read_cols)
    if f.a_src == "TS":
        read_cols = min(MAX_TMEM_COLS, -(-(read_cols + TMEM_SLACK_COLS) // 8) * 8)
    p.update(enable_input_d=0, read_cols=read_cols, alloc_cols=max(32, 1 << (read_cols - 1).bit_length()))
    probe_case = replace(c, m=m, n=n, scale_d=0, zero_mask=None, control="")
    unprobed = tuple((role, packed_reason(role, op.dtype)) for role, op in (("A", a), ("B", b))
                     if isinstance(op, SmemOperand) and op.packed)
    return Setup(c, probe_case, arch, a, b, size, read_cols, p, tuple(skipped), unprobed)


def tmem_form(st: Setup) -> Setup:
    """The same instruction with A from Tensor Memory (the case's TS form, A K-major as Tensor Memory holds it) and B
    exactly as `st` has it (its descriptor, in an image of the same size): B probed there reads no A address, so
    however the hardware reads A from shared memory, B's probe is not disturbed by it."""
    c = st.case
    ts = setup_of(replace(c, form=replace(c.form, a_src="TS"), major_a="K", control=""), st.arch)
    return replace(ts, b=st.b, size=st.size, params={**ts.params, "desc_b": st.params["desc_b"]})


def b_moved_on(st: Setup) -> tuple[Setup, int]:
    """(the setup with B's descriptor start field moved past everything A's probe numbers, the bytes moved).

    The move is a multiple of 1024 bytes, where every swizzle's pattern and base-offset phase repeat, and only the
    start field of B's raw descriptor changes, so whatever else the descriptor says is read as before. A probed with
    B's one-hot there finds its own numbers wherever it is read in the numbered image: none of them is overwritten
    by B's one-hot, as they are where a misread A reaches into B's tile."""
    shift = -(-st.size // 1024) * 1024
    desc = int(st.params["desc_b"])
    start = (desc & START_FIELD) + (shift >> 4)
    if start > START_FIELD:
        raise NotProbed(f"B's start field cannot be moved {shift} bytes on (it holds 14 bits of the address / 16)")
    b = st.b
    moved = replace(b, layout=b.layout.moved(start=b.layout.start + shift),
                    desc_layout=b.desc_layout.moved(start=b.desc_layout.start + shift), seen=None)
    return replace(st, b=moved, size=st.size + shift,
                   params={**st.params, "desc_b": (desc & ~START_FIELD) | start}), shift


# ---------------------------------------------------------------------------------------------------- jobs

def _digits_to_values(dtype: str, digits: np.ndarray) -> np.ndarray:
    return digits - 128 if dtype == "s8" else digits


def _values_to_digits(dtype: str, values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, np.float64)
    return v + 128 if dtype == "s8" else v


def _slots(st: Setup, which: str) -> int:
    op = st.a if which == "A" else st.b
    if isinstance(op, TmemOperand):
        return 128 * st.read_cols * op.per
    return st.size * 8 // dtypes.get(op.layout.dtype).bits


def value_dtype(op: SmemOperand | TmemOperand) -> str:
    """The type an operand's values are read as (a TMEM operand's storage type may be wider)."""
    return op.value_dtype if isinstance(op, TmemOperand) else op.dtype


def plan_passes(st: Setup, which: str) -> tuple[int, int]:
    """(digit passes, sub-passes) for probing operand `which`."""
    op = st.a if which == "A" else st.b
    base = DIGITS[value_dtype(op)]
    passes, nslots = 1, _slots(st, which)
    while base ** passes < nslots:
        passes += 1
    sub = -(-st.k // (st.n if which == "A" else st.m))
    return passes, sub


def _one_hot(which: str, s: int, st: Setup) -> np.ndarray:
    """The other operand's values for sub-pass s: B as (N, K) when probing A, A as (M, K) when probing B."""
    rows = st.n if which == "A" else st.m
    return (np.arange(st.k)[None, :] == s * rows + np.arange(rows)[:, None]).astype(np.float64)


def _tmem_write(tm: np.ndarray, op: TmemOperand, values_bits: np.ndarray) -> None:
    """A's raw bits [rows, k] into one CTA's TMEM image [128, cols] at the model's positions (a 4/6-bit A's at its
    container position)."""
    lane, col, part = op.model
    w = np.uint64(op.bits)
    np.bitwise_or.at(tm, (lane, col), (op.container(values_bits) << (part.astype(np.uint64) * w)).astype(np.uint32))


def tmem_numbering(st: Setup, p: int) -> np.ndarray:
    """Pass p of the TMEM probe: every element-sized part of every cell [128, read_cols] holds digit p of its
    number (lane, column, part), as a raw value of A's type where the model says the MMA reads it: the part's low
    bits, or for a 4/6-bit A its 8-bit container's position (datapaths.tmem_a_container; e2m1: bits 5-2)."""
    op = st.a
    base, pt = DIGITS[op.value_dtype], dtypes.get(op.value_dtype)
    slot = np.arange(128 * st.read_cols * op.per, dtype=np.int64).reshape(128, st.read_cols, op.per)
    bits = op.container(pt.to_bits(_digits_to_values(op.value_dtype, (slot // base ** p) % base)))
    tm = np.zeros((128, st.read_cols), np.uint32)
    for j in range(op.per):
        tm |= (bits[:, :, j] << np.uint64(j * op.bits)).astype(np.uint32)
    return tm


def probe_jobs(st: Setup, which: str) -> list[R.TcPrepared]:
    """One TcPrepared per (pass, sub-pass): numbered storage of `which`, the other operand one-hot, C = 0."""
    probed = st.a if which == "A" else st.b
    other = st.b if which == "A" else st.a
    if probed is None:
        raise NotProbed(dict(st.skipped).get(which, f"operand {which} is not modelled"))
    if which in dict(st.unprobed):
        raise NotProbed(dict(st.unprobed)[which])
    if isinstance(other, SmemOperand):
        slots = other.read_addr.ravel()
        if np.unique(slots).size != slots.size:
            raise NotProbed(f"operand {'B' if which == 'A' else 'A'}'s descriptor reads two elements from one place, "
                            f"so it cannot hold a one-hot matrix; operand {which} was not probed")
    passes, sub = plan_passes(st, which)
    base = DIGITS[value_dtype(probed)]
    pt = dtypes.get(value_dtype(probed))
    jobs = []
    for p in range(passes):
        image = np.zeros(st.size, np.uint8)
        tm = np.zeros((128, st.read_cols), np.uint32)
        if isinstance(probed, TmemOperand):  # number every element-sized part of every cell
            tm = tmem_numbering(st, p)
        else:
            sb = dtypes.get(probed.layout.dtype).bits
            slot = np.arange(st.size * 8 // sb, dtype=np.int64)
            layouts.write_bits(image, slot * sb, pt.to_bits(_digits_to_values(probed.dtype, (slot // base ** p) % base)),
                               sb)
        for s in range(sub):
            img, t = image.copy(), tm.copy()
            hot = dtypes.get(value_dtype(other)).to_bits(_one_hot(which, s, st))
            if isinstance(other, TmemOperand):
                _tmem_write(t, other, hot)
            else:  # where the other operand's descriptor makes the tensor core read it
                other.write(img, hot)
            jobs.append(R.TcPrepared(st.probe_case, [img], [dict(st.params)], t[None], None, st.read_cols))
    return jobs


def recover_slots(st: Setup, which: str, d_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """D of the probe's jobs [jobs, M, N] in probe_jobs order -> (slot [rows, k] read for each element of the
    probed operand, valid [rows, k]: every digit was an integer in range)."""
    probed = st.a if which == "A" else st.b
    passes, sub = plan_passes(st, which)
    base, vt = DIGITS[value_dtype(probed)], value_dtype(probed)
    rows = st.m if which == "A" else st.n
    slot = np.zeros((rows, st.k), np.int64)
    valid = np.ones((rows, st.k), bool)
    d = np.asarray(d_values, np.float64).reshape(passes, sub, st.m, st.n)
    for s in range(sub):
        for p in range(passes):
            if which == "A":  # D[m, n] = A[m, s*N + n]
                ks = s * st.n + np.arange(st.n)
                ok = ks < st.k
                dig = _values_to_digits(vt, d[p, s][:, ok])
                tgt = (slice(None), ks[ok])
            else:  # D[m, n] = B[n, s*M + m]
                ks = s * st.m + np.arange(st.m)
                ok = ks < st.k
                dig = _values_to_digits(vt, d[p, s][ok, :]).T
                tgt = (slice(None), ks[ok])
            good = np.isfinite(dig) & (dig == np.rint(dig)) & (dig >= 0) & (dig < base)
            valid[tgt] &= good
            slot[tgt] += np.where(good, np.rint(np.where(np.isfinite(dig), dig, 0)), 0).astype(np.int64) * base ** p
    return slot, valid


def run_jobs(st: Setup, which: str, worker, cubin_path: str, kernel_name: str, timeout: float = 30.0):
    """Launch the probe of one operand and return recover_slots' (slot, valid)."""
    from harness.families.tcgen05 import kernel as tk
    jobs = probe_jobs(st, which)
    out = worker.run(str(cubin_path), kernel_name, tk.pack(jobs), timeout)
    d = np.stack([datapaths.decode_d(st.probe_case, out["tmem_out"][i:i + 1, :, :st.read_cols])
                  for i in range(len(jobs))])
    return recover_slots(st, which, d)


# ---------------------------------------------------------------------------------------------------- TMEM words

def tmem_position_of_slot(st: Setup, slot: np.ndarray):
    """Slot numbers of the TMEM probe -> (lane, column, part)."""
    per = st.a.per
    return slot // (st.read_cols * per), (slot // per) % st.read_cols, slot % per


def read_tmem_bits(tm: np.ndarray, lane, bit, width: int) -> np.ndarray:
    """`width` raw bits at bit offset `bit` of lane `lane`'s row of 32-bit cells, little-endian, across cells."""
    lane, bit = np.asarray(lane), np.asarray(bit)
    col, off = bit // 32, (bit % 32).astype(np.uint64)
    lo = tm[lane, np.minimum(col, tm.shape[1] - 1)].astype(np.uint64)
    hi = np.where(col + 1 < tm.shape[1], tm[lane, np.minimum(col + 1, tm.shape[1] - 1)], 0).astype(np.uint64)
    return ((lo | (hi << np.uint64(32))) >> off) & np.uint64((1 << width) - 1)


def container_reading(op: TmemOperand, shift: int | None = None):
    """(lane, bit offset in the lane's row) [rows, k] of A's elements one per container, the value `shift` bits up
    in it (None: the model's, op.shift)."""
    lane, col, part = op.model
    return lane, 32 * col + part * op.bits + (op.shift if shift is None else shift)


def container_alternatives(op: TmemOperand) -> list[int]:
    """The other positions a 4/6-bit A's value could sit at in its 8-bit container (shifts but the model's)."""
    if not op.element:
        return []
    w = dtypes.get(op.value_dtype).bits
    return [s for s in range(op.bits - w + 1) if s != op.shift]


def dense_reading(op: TmemOperand):
    """(lane, bit offset in the lane's row) [rows, k] of A's elements packed densely, element k at bits k*w.. from
    A's first column: how CUTLASS's tmem_frg would lay out a 4/6-bit A, against the model's one per byte."""
    r, k = np.meshgrid(np.arange(op.rows), np.arange(op.k), indexing="ij")
    return datapaths.a_lane(op.model_m, r), 32 * op.col0 + k * dtypes.get(op.value_dtype).bits


def predicted_tmem_slots(st: Setup, lane, bit) -> tuple[np.ndarray, np.ndarray]:
    """(slot, valid) [rows, k] that recover_slots gives when the hardware reads A's elements at (lane, bit) of the
    numbered Tensor Memory: every pass's field read as A's type, a digit where it is one."""
    vt = st.a.value_dtype
    base, et = DIGITS[vt], dtypes.get(vt)
    passes, _ = plan_passes(st, "A")
    slot = np.zeros(np.shape(lane), np.int64)
    valid = np.ones(np.shape(lane), bool)
    for p in range(passes):
        with np.errstate(invalid="ignore"):
            dig = _values_to_digits(vt, et.from_bits(read_tmem_bits(tmem_numbering(st, p), lane, bit, et.bits)))
        good = np.isfinite(dig) & (dig == np.rint(dig)) & (dig >= 0) & (dig < base)
        valid &= good
        slot += np.where(good, np.rint(np.where(np.isfinite(dig), dig, 0)), 0).astype(np.int64) * base ** p
    return slot, valid


CONTAINER_WORDS = ("{t} A read from bits {hi}-{lo} of its 8-bit Tensor Memory container, not bits {mhi}-{mlo} (the "
                   "model's: datapaths.tmem_a_container{isa})")
ISA_E2M1 = "; the PTX ISA's 'central 4 bits of the 8-bit container'"

DENSE_WORDS = ("A read densely packed, element k of a row at bits {w}k .. {w}k+{w1} from A's first column (as "
               "CUTLASS's tmem_frg would pack {t}), not one element per 8-bit container")


def explain_tmem(op: TmemOperand, lane, col, part, valid=None) -> dict:
    """Compare the (lane, column, part) A was read from with the intended one, in one sentence."""
    el, ec, ep = op.intended
    wrong = (lane != el) | (col != ec) | (part != ep)
    n = int(wrong.sum())
    out = {"operand": "A", "where": "tmem", "elements": int(wrong.size), "wrong": n}
    if n == 0:
        out["summary"] = (f"A (Tensor Memory): every element read from the lane and column the data path gives "
                          f"(rows on lanes of the M={op.intended_m} path, from column {op.col0})")
        return out
    from harness.contract import ranges
    rows, ks = np.nonzero(wrong)
    out.update({"rows": ranges(np.unique(rows)), "cols": ranges(np.unique(ks))})
    out["first"] = [{"row": int(r), "k": int(k), "expected": [int(el[r, k]), int(ec[r, k]), int(ep[r, k])],
                     "observed": [int(lane[r, k]), int(col[r, k]), int(part[r, k])]}
                    for r, k in list(zip(rows.tolist(), ks.tolist()))[:6]]
    parts = []
    if np.any(lane != el):
        dl = np.unique((lane - el)[lane != el])
        other = {m: datapaths.a_lane(m, np.arange(op.rows))[:, None] for m in (64, 128) if m != op.intended_m}
        named = next((m for m, ln in other.items() if np.array_equal(lane, np.broadcast_to(ln, lane.shape))), None)
        if named is not None:
            words = {64: "16 rows in each 32-lane quarter (layout F, M=64)", 128: "row r on lane r (layout D, M=128)"}
            parts.append(f"rows read from the lanes of {words[named]} instead of {words[op.intended_m]}")
        elif dl.size == 1:
            parts.append(f"every row read from {int(dl[0]):+d} lanes away")
        else:
            parts.append(f"rows {ranges(np.unique(rows[lane[wrong] != el[wrong]]))} read from other lanes")
    if np.any(col != ec):
        dc = np.unique((col - ec)[col != ec])
        if dc.size == 1 and np.array_equal(part, ep):
            parts.append(f"A read from column {op.col0 + int(dc[0])} instead of {op.col0} "
                         f"(the A address {int(dc[0]):+d} columns off)")
        else:
            parts.append(f"k {ranges(np.unique(ks[col[wrong] != ec[wrong]]))} read from other columns")
    if np.any(part != ep) and not (np.any(col != ec)):
        parts.append(f"elements read from another {op.bits}-bit part of their 32-bit cell "
                     f"(k -> part {ranges(np.unique(part[part != ep]))})")
    if valid is not None and not np.all(valid):
        parts.append(f"{int((~valid).sum())} elements gave no valid digits")
    out["summary"] = f"A (Tensor Memory) rows {out['rows']} (k {out['cols']}): {n} of {wrong.size} elements read " \
                     f"elsewhere; " + "; ".join(parts)
    return out


def tmem_map_reading(op: TmemOperand, lane, col, part, valid) -> dict | None:
    """The map (row, k) -> (part of the cell, column from A's first, lane) the hardware read A through, recovered
    over the elements with valid digits, beside the model's; where A starts is said apart (an address, added with
    carries, not an XOR). None when no element gave valid digits."""
    from harness.diagnosis import bitmaps
    ml, mc, mp = op.model
    if not np.asarray(valid, bool).any():
        return None
    c0, m0 = int(col[valid].min()), int(mc.min())  # A's first column: where its reads start
    rel, mrel = col - c0, mc - m0
    span = int(max(rel[valid].max(initial=0), mrel.max())) + 1
    cd = bitmaps.Coding((("row", op.rows), ("k", op.k)), (("part", op.per), ("column", span), ("lane", 128)))
    r, k = np.meshgrid(np.arange(op.rows), np.arange(op.k), indexing="ij")
    ok = np.asarray(valid, bool) & (lane >= 0) & (lane < 128) & (part >= 0) & (part < op.per)
    hw = bitmaps.recover(cd, cd.places(r, k), cd.elements(np.where(ok, part, 0), np.where(ok, rel, 0),
                                                          np.where(ok, lane, 0)), ok)
    model = bitmaps.recover(cd, cd.places(r, k), cd.elements(mp, mrel, ml))
    wrong = int(((lane != ml) | (col != mc) | (part != mp)).sum())
    said = bitmaps.verdict("A (Tensor Memory)", hw, model, f"{wrong} of {lane.size} elements read elsewhere")
    if c0 != m0:
        head = f"A (Tensor Memory): A starts at column {c0}, the model's at {m0}"
        said["sentence"] = head + ("; the rest of the map is the model's" if said["same"] else
                                   said["sentence"].replace("A (Tensor Memory):", ";", 1).replace(" ;", ";"))
    return said


# ---------------------------------------------------------------------------------------------------- diagnose

def not_probed(cid: str, operand: str, reason: str) -> dict:
    return {"type": "diagnosis", "family": "tcgen05", "id": cid, "operand": operand, "status": "not-probed",
            "summary": reason}


def diagnose(kernel, cases, cubin_path, worker, timeout: float = 30.0, png_dir=None, max_png: int = 64,
             cubin_of=None) -> list[dict]:
    """Records of type 'diagnosis', one per (case, operand): the probe's launches of the case's own kernel, the
    recovered address (or lane/column) map, and its explanation against the model and the intended layout.
    cubin_of(form): the cubin of a sibling form (the TS form that probes B apart from A's addresses); by default
    `cubin_path`, which serves a simulated device (it loads no cubin) but not a GPU."""
    from pathlib import Path

    from harness.contract import LaunchFailed
    arch = str(kernel.arch)
    out, plan, jobs = [], [], []
    for c in cases:
        try:
            st = setup_of(c, arch)
        except NotProbed as e:
            out.append(not_probed(c.id, "A,B", str(e)))
            continue
        except (descriptors.DescriptorError, layouts.LayoutError, ValueError) as e:
            out.append(not_probed(c.id, "A,B", f"the case could not be prepared for probing: {e}"))
            continue
        for w, reason in st.skipped:
            out.append(not_probed(c.id, w, reason))
        for which in ("A", "B"):
            if (st.a if which == "A" else st.b) is None:
                continue
            try:
                js = probe_jobs(st, which)
            except NotProbed as e:
                out.append(not_probed(c.id, which, str(e)))
                continue
            plan.append((c, st, which, len(jobs), len(js)))
            jobs += js
    if not jobs:
        return out
    from harness.families.tcgen05 import kernel as tk
    try:
        res = worker.run(str(cubin_path), kernel.name, tk.pack(jobs), timeout)
    except LaunchFailed as e:
        return out + [{"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": which, "status": e.status,
                       "error": str(e)} for c, _, which, _, _ in plan]
    tmem, status = res["tmem_out"], res["status"]
    for c, st, which, first, count in plan:
        if np.any(status[first:first + count]):
            out.append({"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": which,
                        "status": "timeout", "error": "a probe CTA's MMA never completed within the spin limit"})
            continue
        d = np.stack([datapaths.decode_d(st.probe_case, tmem[i:i + 1, :, :st.read_cols])
                      for i in range(first, first + count)])
        slot, valid = recover_slots(st, which, d)
        rec = _record(c, st, which, slot, valid)
        rec["_seen"] = (c, st, slot, valid)
        out.append(rec)
    _second_look(kernel, out, cubin_path, worker, timeout)
    _apart(kernel, out, cubin_path, worker, timeout, cubin_of or (lambda _form: cubin_path))
    pngs = 0
    png_dir = Path(png_dir) if png_dir is not None else None
    for r in out:  # what each operand's last probe saw (a record the second look cleared has nothing wrong)
        c, st, slot, _ = r.pop("_seen", (None,) * 4)
        if png_dir is not None and c is not None and r.get("wrong") and pngs < max_png:
            r["png"] = _png(c, st, r["operand"], slot, r, png_dir)
            pngs += r["png"].endswith(".png")
    return out


def _second_look(kernel, recs: list[dict], cubin_path, worker, timeout) -> None:
    """Where one shared-memory operand of a case reads other than the model says, the other's probe put that
    operand's one-hot where the model (not the hardware) reads it, and may read garbage. Each such other operand is
    probed again with the one-hot where the hardware was seen to read it; if it then reads as the model, its record
    says so (in place), and only the misread operand is blamed."""
    from harness.families.tcgen05 import kernel as tk
    from harness.contract import LaunchFailed
    by = {(r["id"], r["operand"]): r for r in recs if "_seen" in r}
    again, jobs = [], []
    for (cid, which), r in by.items():
        other = "B" if which == "A" else "A"
        o = by.get((cid, other))
        if o is None or o.get("reads_as_model") or r.get("reads_as_model"):
            continue
        _, st, slot, valid = o["_seen"]
        op = st.a if other == "A" else st.b
        if not isinstance(op, SmemOperand) or op.packed or not valid.all():
            continue
        seen = slot * dtypes.get(op.layout.dtype).bits
        if seen.min() < 0 or seen.max() >= 8 * st.size or np.unique(seen).size != seen.size:
            continue
        st2 = replace(st, **{other.lower(): replace(op, seen=seen)})
        try:
            js = probe_jobs(st2, which)
        except NotProbed:
            continue
        again.append((r, st2, which, len(jobs), len(js)))
        jobs += js
    if not jobs:
        return
    try:
        res = worker.run(str(cubin_path), kernel.name, tk.pack(jobs), timeout)
    except LaunchFailed:
        return  # the first records stand
    for r, st2, which, first, count in again:
        if np.any(res["status"][first:first + count]):
            continue
        d = np.stack([datapaths.decode_d(st2.probe_case, res["tmem_out"][i:i + 1, :, :st2.read_cols])
                      for i in range(first, first + count)])
        slot, valid = recover_slots(st2, which, d)
        op = st2.a if which == "A" else st2.b
        if isinstance(op, SmemOperand) and valid.all() and np.array_equal(
                slot * dtypes.get(op.layout.dtype).bits, op.model_addr):
            other = "B" if which == "A" else "A"
            keep = {k: r[k] for k in ("type", "family", "id", "operand", "where", "note") if k in r}
            r.clear()
            r.update(keep, status="pass", reads_as_model=True, elements=int(valid.size), wrong=0,
                     summary=f"{which}: every element read from the address the layout model gives, once {other}'s "
                             f"one-hot sits where the hardware was seen to read {other}",
                     second_look=f"probed again with {other}'s one-hot where the hardware was seen to read {other}")


def _launch_slots(kernel_name: str, cubin_path, worker, timeout, todo) -> list:
    """One launch probing every (setup, operand) of `todo`: per item, recover_slots' (slot, valid), or the words
    saying why there is none."""
    from harness.families.tcgen05 import kernel as tk
    from harness.contract import LaunchFailed
    out: list = [None] * len(todo)
    plan, jobs = [], []
    for i, (st, which) in enumerate(todo):
        try:
            js = probe_jobs(st, which)
        except NotProbed as e:
            out[i] = str(e)
            continue
        plan.append((i, st, which, len(jobs), len(js)))
        jobs += js
    if not jobs:
        return out
    try:
        res = worker.run(str(cubin_path), kernel_name, tk.pack(jobs), timeout)
    except LaunchFailed as e:
        return [o if o is not None else str(e) for o in out]
    for i, st, which, first, count in plan:
        if np.any(res["status"][first:first + count]):
            out[i] = "a probe CTA's MMA never completed within the spin limit"
            continue
        d = np.stack([datapaths.decode_d(st.probe_case, res["tmem_out"][j:j + 1, :, :st.read_cols])
                      for j in range(first, first + count)])
        out[i] = recover_slots(st, which, d)
    return out


def _apart(kernel, recs: list[dict], cubin_path, worker, timeout, cubin_of) -> None:
    """Where both shared-memory operands of a case still read other than the model says after the second look, both
    may be misread: then neither probe's one-hot sat where the hardware read it, no first map can be trusted, and
    none can place the other's one-hot. Each operand is then probed apart from the other's addresses, and its record
    rewritten in place:

    * B in the TS form of the same instruction (A in Tensor Memory: no A address enters B's probe), at its own start
      and with its start field moved past everything A's probe numbers (b_moved_on);
    * A in this form with B's one-hot where the TS probe saw the hardware read the moved B: A's numbers lie
      everywhere A may be read, none under B's one-hot, however far a misread A reaches into B's tile.

    An operand that cannot be probed apart is inconclusive (its first look says nothing about it), not failed."""
    from harness.contract import CompileError
    by = {(r["id"], r["operand"]): r for r in recs if "_seen" in r}
    both = []
    for (cid, which), r in by.items():
        o = by.get((cid, "B"))
        if which != "A" or o is None or r.get("reads_as_model") or o.get("reads_as_model"):
            continue
        c, st, _, _ = r["_seen"]
        if isinstance(st.a, SmemOperand) and not st.a.packed and not st.b.packed:
            both.append((c, st, r, o))
    if not both:
        return
    why_apart = ("A and B both read other than the model says, so neither first probe's one-hot surely sat where "
                 "the hardware read it")

    def unsure(rec: dict, why: str) -> None:
        rec.update(status="inconclusive", summary=f"{why_apart}, and {why}; {rec['summary']}")

    todo, items = [], []
    for c, st, r, o in both:
        try:
            ts, (st_m, shift) = tmem_form(st), b_moved_on(st)
            todo += [(ts, "B"), (b_moved_on(ts)[0], "B")]  # B at its start, and moved as in st_m
            items.append((c, st, r, o, st_m, shift))
        except (NotProbed, descriptors.DescriptorError, layouts.LayoutError, ValueError) as e:
            for rec in (r, o):
                unsure(rec, f"they could not be probed apart ({e})")
    if not items:
        return
    ts_form = todo[0][0].probe_case.form
    try:
        got = _launch_slots(ts_form.name, cubin_of(ts_form), worker, timeout, todo)
    except CompileError as e:
        got = [f"its kernel did not compile: {e}"] * len(todo)
    todo, placed = [], []
    for i, (c, st, r, o, st_m, shift) in enumerate(items):
        at, moved = got[2 * i], got[2 * i + 1]
        if isinstance(at, str):
            for rec in (r, o):
                unsure(rec, f"the probe of B in the {ts_form.name} form failed ({at})")
            continue
        slot, valid = at
        o.clear()
        o.update(_record(c, st, "B", slot, valid), _seen=(c, st, slot, valid),
                 second_look=f"{why_apart}: B was probed in the {ts_form.name} form (A in Tensor Memory), where no A "
                             "address enters its probe")
        if isinstance(moved, str):
            unsure(r, f"the probe of B moved in the {ts_form.name} form failed ({moved})")
            continue
        slot, valid = moved
        where = slot * dtypes.get(st.b.layout.dtype).bits
        if not valid.all() or where.min() < 0 or where.max() >= 8 * st_m.size or np.unique(where).size != where.size:
            unsure(r, "the hardware reads two elements of B from one place, or some gave no valid digits, so B "
                      "cannot hold a one-hot for A's probe")
            continue
        todo.append((replace(st_m, b=replace(st_m.b, seen=where)), "A"))
        placed.append((c, st, r, shift))
    got = _launch_slots(kernel.name, cubin_path, worker, timeout, todo) if todo else []
    for (c, st, r, shift), seen in zip(placed, got):
        if isinstance(seen, str):
            unsure(r, f"A's probe apart from B failed ({seen})")
            continue
        slot, valid = seen
        r.clear()
        r.update(_record(c, st, "A", slot, valid), _seen=(c, st, slot, valid),
                 second_look=f"{why_apart}: A was probed with B's one-hot where the hardware was seen to read B in "
                             f"the {ts_form.name} form, B's start moved {shift} bytes on (past A's numbers)")


def _record(c: TcCase, st: Setup, which: str, slot: np.ndarray, valid: np.ndarray) -> dict:
    from harness.diagnosis import explain
    op = st.a if which == "A" else st.b
    base = {"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": which}
    if st.m != c.m or st.n != c.n:
        base["note"] = (f"the instruction descriptor says M={st.m} N={st.n}, the case M={c.m} N={c.n}: probed "
                        "with the descriptor's shape, against the first rows of the intended layout")
    if isinstance(op, TmemOperand):
        lane, col, part = tmem_position_of_slot(st, slot)
        ml, mc, mp = op.model
        as_model = bool(valid.all() and np.array_equal(lane, ml) and np.array_equal(col, mc) and np.array_equal(part, mp))
        why = explain_tmem(op, lane, col, part, valid)
        rec = {**base, "where": "tmem", "status": "pass" if as_model else "fail", "reads_as_model": as_model,
               "reads_as_intended": bool(why["wrong"] == 0 and valid.all()),
               **{k: v for k, v in why.items() if k not in ("operand",)}}
        if not as_model:
            rec["observed_lanes"], rec["observed_columns"] = lane.tolist(), col.tolist()
            rec["observed_parts"] = part.tolist()
            tm = tmem_map_reading(op, lane, col, part, valid)
            if tm is not None:  # the map the hardware used, beside the model's, then the old words as its name
                rec.update(hardware_map=tm["hardware_map"], model_map=tm["model_map"], roles=tm["roles"])
                rec["summary"] = f"{tm['sentence']}; known as: {rec['summary']}"
        if not valid.all():
            rec["status"] = "inconclusive"
        if not as_model and op.element:  # a 4/6-bit A: another place in its container, or packed densely?
            w = dtypes.get(op.value_dtype).bits
            named = [(container_reading(op, s), CONTAINER_WORDS.format(
                t=op.value_dtype, hi=s + w - 1, lo=s, mhi=op.shift + w - 1, mlo=op.shift,
                isa=ISA_E2M1 if op.value_dtype == "e2m1" and op.shift == 2 else ""))
                for s in container_alternatives(op)]
            named.append((dense_reading(op), DENSE_WORDS.format(w=w, w1=w - 1, t=op.value_dtype)))
            for reading, words in named:
                d_slot, d_valid = predicted_tmem_slots(st, *reading)
                if np.array_equal(d_valid, valid) and np.array_equal(np.where(valid, d_slot, 0),
                                                                     np.where(valid, slot, 0)):
                    rec["status"] = "fail"
                    rec["explanation"] = words
                    rec["summary"] = f"A (Tensor Memory): {words} (every probe value reproduced)"
                    break
        return rec
    bits = dtypes.get(op.layout.dtype).bits
    observed = slot * bits
    model = op.read_addr
    why = explain.explain(op.addr, observed, op.layout, which)
    as_model = bool(valid.all() and np.array_equal(observed, model))
    rec = {**base, "where": "smem", "status": "pass" if as_model else "fail", "reads_as_model": as_model,
           "reads_as_intended": bool(why["wrong"] == 0 and valid.all()),
           **{k: v for k, v in why.items() if k != "operand"}}
    if not as_model:  # the map the hardware used, recovered from the data, beside the model's
        from harness.diagnosis import address_fit
        ok = valid.all()
        reading = address_fit.read(observed if ok else np.where(valid, observed, model), model, bits,
                                   f"{which} addresses", descriptor=address_fit.terms_of(op.desc_layout, bits))
        rec["recovered"] = reading.as_dict()
        rec["vs_model"] = reading.sentence
        if ok and np.array_equal(model, op.addr):  # an ordinary case: the one sentence is the recovered map's
            rec["summary"] = reading.sentence + (f" (known as: {why['observed_change']})"
                                                 if why.get("observed_change") else "")
        rec["observed_bytes"] = (observed >> 3).tolist()
    if not valid.all():
        rec["status"] = "inconclusive"
        rec["summary"] = (f"{int((~valid).sum())} of {valid.size} elements of {which} gave accumulator values that "
                          f"are not digits: the other operand's one-hot was not read where its descriptor says, or "
                          f"the MMA did not compute a plain product; the map is unreliable. " + rec["summary"])
    return rec


def _png(c: TcCase, st: Setup, which: str, slot: np.ndarray, rec: dict, png_dir) -> str:
    from harness.diagnosis.pictures import safe_name, wrap_text
    png_dir.mkdir(parents=True, exist_ok=True)
    path = png_dir / f"{safe_name(c.id)}-{which}.png"
    title = f"{c.id}  operand {which}\n{wrap_text(rec['summary'])}"
    op = st.a if which == "A" else st.b
    try:
        if isinstance(op, TmemOperand):
            tmem_comparison_png(op, *tmem_position_of_slot(st, slot), path, title)
        else:
            pictures.comparison_png(op.addr, slot * dtypes.get(op.layout.dtype).bits, path, title)
    except ImportError as e:  # a picture is a convenience; the record says why there is none
        return f"not drawn: {e}"
    return str(path)


@pictures.counted
def tmem_comparison_png(op: TmemOperand, lane, col, part, path, title: str) -> None:
    """Expected vs observed lane and column of every A element (rows = A row, columns = k), wrong ones outlined."""
    plt = pictures.pyplot()
    el, ec, ep = op.intended
    wrong = (lane != el) | (col != ec) | (part != ep)
    fig, axes = plt.subplots(2, 2, figsize=(max(8, op.k * 0.6 + 4), max(6, min(30, op.rows * 0.25 + 2))))
    pictures.draw_chunks(axes[0, 0], el, 0, "expected lane", None, cell_in=0.08)
    pictures.draw_chunks(axes[0, 1], lane, 0, f"observed lane: {int(wrong.sum())} elements elsewhere", wrong, cell_in=0.08)
    pictures.draw_chunks(axes[1, 0], ec * op.per + ep, 0, "expected column*parts + part", None, cell_in=0.08)
    pictures.draw_chunks(axes[1, 1], col * op.per + part, 0, "observed column*parts + part", wrong, cell_in=0.08)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
