"""Fragment probes for wgmma: which (row, col) each register slot really holds, and which single edit of the
register-fragment model explains a difference.

A *slot* is one element position of a thread's registers, numbered as the kernel packs them: element e of
thread t sits in register e // per_reg at bit (e % per_reg) * width (per_reg elements of `width` bits a register:
one f32/s32 or two f16 halves of D; two 16-bit, four 8-bit, one tf32 or 32 b1 elements of A). That numbering is
the instruction's operand list, so it is the same for the model, the hardware and every hypothesis; what a
fragment says is which matrix element each slot holds.

Accumulator probe (every form), C = 0, scale-d = 0, the form's variant 0 (K-major, scale +1), two CTAs:
    row pass:  A[m, k] = digit_k(m),  B[n, k] = w_k           ->  D[m, n] = m
    col pass:  A[m, k] = w_k,         B[n, k] = digit_k(n)    ->  D[m, n] = n
(digit_k / w_k: binary digits with powers of two no larger than the operand type holds exactly, split over
several k where needed; unary for b1). The raw accumulator registers then say, slot by slot, which (row, col)
each register holds, without going through the model's D fragment. (C passed through with A = 0 would not
do: C and D share the fragment, so D's registers would equal C's whatever the fragment is.)

A-register probe (RS forms): every A slot holds a number naming it (digits of the largest base the type holds
exactly, one pass each), B is one-hot, B[n, k] = 1 iff k == s*N + n (sub-pass s), so D[m, n] = A_read[m, s*N + n]
names the slot the tensor core took A[m, k] from.

Explanation: the accumulator probe whose A was read from shared memory (an RS form's SS sibling) names, slot by
slot, the (row, col) the hardware put there, whatever the model says; the A probe's codes are decoded through that
observed D fragment, not the model's. Each table is solved for its GF(2) affine map (harness/diagnosis/affine.py:
row and col bits from lane, warp, field and register bits) and compared with the model's map, output bit by output
bit ("row bit 3 comes from register bit 0; the model takes it from register bit 1"). The recovered fragments are
then replayed on the CPU against every probe register (`consistent`). The catalogue of single edits (`edits`) only
names common recovered maps ("D registers 0-1 and 2-3 of every thread exchanged").
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.contract import ranges
from harness.diagnosis import bitmaps
from harness.diagnosis.digits import DIGIT_BASE, code_digits
from harness.families.wgmma import forms as wgmma
from harness.families.wgmma.cases import Case, operand_scenarios, plain_operand
from harness.families.wgmma.reference import POISON, Prepared, acc_bits, place
from harness.spec import dtypes, fragments, layouts

WARPGROUP = 128


# ------------------------------------------------------------------------------------------------ slots

@dataclass(frozen=True)
class Slots:
    """How the slots of one operand sit in a thread's registers."""
    operand: str  # 'A' or 'D'
    elements: int  # slots per thread
    width: int  # bits per slot
    regs: int  # registers per thread

    @property
    def per_reg(self) -> int:
        return self.elements // self.regs

    def reg(self, e):
        return np.asarray(e) // self.per_reg

    def shift(self, e):
        return (np.asarray(e) % self.per_reg) * self.width

    def where(self, e: int) -> str:
        """'register 3' or 'register 3 hi' / 'register 1 byte 2'."""
        r, s = int(self.reg(e)), int(self.shift(e))
        if self.per_reg == 1:
            return f"register {r}"
        if self.width == 16:
            return f"register {r} {'hi' if s else 'lo'}"
        return f"register {r} bits {s}-{s + self.width - 1}"

    def gather(self, vals: np.ndarray) -> np.ndarray:
        """[128, elements] raw element bits -> uint32 registers [128, regs]."""
        v = np.asarray(vals, np.uint64) & np.uint64((1 << self.width) - 1)
        e = np.arange(self.elements)
        shifted = v << self.shift(e).astype(np.uint64)[None, :]
        return shifted.reshape(WARPGROUP, self.regs, self.per_reg).sum(axis=2).astype(np.uint32)

    def scatter(self, regs: np.ndarray) -> np.ndarray:
        """uint32 registers [128, regs] -> raw element bits [128, elements]."""
        r = np.asarray(regs, np.uint64)
        e = np.arange(self.elements)
        return (r[:, self.reg(e)] >> self.shift(e).astype(np.uint64)[None, :]) & np.uint64((1 << self.width) - 1)


def d_slots(key: wgmma.KernelKey) -> Slots:
    w = 16 if key.dtype == "f16" else 32
    return Slots("D", key.n // 2, w, key.acc_regs)


def a_slots(atype: str) -> Slots:
    bits = dtypes.get(atype).bits
    return Slots("A", 4 * 32 // bits, bits, 4)


def as_slots(frag: fragments.Fragment, slots: Slots) -> tuple[np.ndarray, np.ndarray]:
    """A model Fragment -> (row, col) [128, elements] indexed by slot (its (reg, shift) -> slot number)."""
    e = frag.reg * slots.per_reg + frag.shift // slots.width
    row = np.zeros((WARPGROUP, slots.elements), np.int64)
    col = np.zeros_like(row)
    t = np.broadcast_to(np.arange(WARPGROUP)[:, None], e.shape)
    row[t, e] = frag.row
    col[t, e] = frag.col
    return row, col


def model_d(key) -> tuple[np.ndarray, np.ndarray]:
    return as_slots(fragments.wgmma_d_fragment(key.n, key.dtype), d_slots(key))


def model_a(atype: str) -> tuple[np.ndarray, np.ndarray]:
    return as_slots(fragments.wgmma_a_fragment(atype), a_slots(atype))


# ------------------------------------------------------------------------------------------------ edits

@dataclass(frozen=True)
class Edit:
    """One plausible change of a register fragment: `apply((row, col)) -> (row, col)` on slot-indexed maps."""
    id: str
    operand: str  # 'A' or 'D'
    kind: str  # 'slots' (slot e <-> e ^ mask in every thread) or 'threads' (thread t takes thread perm[t]'s)
    mask: int = 0
    perm: tuple[int, ...] = ()
    words: str = ""  # what changed, for thread permutations

    def apply(self, frag: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        row, col = frag
        if self.kind == "slots":
            e = np.arange(row.shape[1]) ^ self.mask
            return row[:, e], col[:, e]
        p = np.array(self.perm)
        return row[p], col[p]

    def describe(self, model: tuple[np.ndarray, np.ndarray], slots: Slots) -> str:
        """In words: which registers / threads and what it does to (row, col)."""
        op = self.operand
        if self.kind == "threads":
            what = self.words
        else:
            m = self.mask
            e = np.arange(slots.elements)
            lo = e[(e & m) == 0]
            if np.all(slots.reg(lo) == slots.reg(lo ^ m)):  # within registers
                if slots.width == 16:
                    what = f"the 16-bit halves of every {op} register of every thread exchanged"
                else:
                    a = sorted({int(x) for x in slots.shift(lo[lo < slots.per_reg])})
                    b = sorted({int(x) for x in slots.shift(lo[lo < slots.per_reg] ^ m)})
                    what = (f"the {slots.width}-bit fields at bits {','.join(map(str, a))} and "
                            f"{','.join(map(str, b))} of every {op} register exchanged")
            else:
                period = 2 * m // slots.per_reg if m >= slots.per_reg else 2
                g1 = sorted({int(x) for x in slots.reg(lo) if x < period})
                g2 = sorted({int(x) for x in slots.reg(lo ^ m) if x < period})
                what = f"{op} registers {ranges(g1)} and {ranges(g2)} of every thread exchanged"
                if slots.regs > period:
                    what += f" (and likewise in every group of {period})"
        row, col = model
        new_row, new_col = self.apply(model)
        parts = []
        dr = np.unique(np.abs(new_row - row))
        dc = np.unique(np.abs(new_col - col))
        dr, dc = dr[dr > 0], dc[dc > 0]
        if dr.size == 1:
            parts.append(f"rows r and r+{int(dr[0])} swapped")
        elif dr.size:
            parts.append("rows permuted")
        if dc.size == 1:
            parts.append(f"columns c and c+{int(dc[0])} swapped" if op == "D" else f"k and k+{int(dc[0])} swapped")
        elif dc.size:
            parts.append("columns permuted" if op == "D" else "k permuted")
        return what + (": " + ", ".join(parts) if parts else "")


def _thread_edits(operand: str) -> list[Edit]:
    t = np.arange(WARPGROUP)
    w, l = t // 32, t % 32
    out = [
        ("warps-reversed", 32 * (3 - w) + l, "warps in reverse order (warp w holds warp 3-w's part)"),
        ("warp-pairs", 32 * (w ^ 1) + l, "warps 0 and 1, and 2 and 3, exchanged (warp w holds warp w^1's part)"),
        ("quads-reversed", 32 * w + 4 * (7 - l // 4) + l % 4,
         "lane quads in reverse order (lanes 4q..4q+3 hold quad 7-q's part)"),
        ("lane-in-quad-reversed", 32 * w + 4 * (l // 4) + (3 - l % 4),
         "lanes reversed within each quad (lane 4q+i holds lane 4q+3-i's part)"),
        ("lane-pairs", 32 * w + (l ^ 1), "neighbouring lanes exchanged (lane l holds lane l^1's part)"),
    ]
    return [Edit(f"{operand}:{name}", operand, "threads", perm=tuple(int(x) for x in p), words=f"{operand} {txt}")
            for name, p, txt in out]


def edits(operand: str, slots: Slots) -> list[Edit]:
    """The catalogue for one operand: every slot exchange e <-> e ^ mask (mask a power of two, and the
    reversal of a register's fields), and the thread permutations (warp order, lane-quad order, lanes)."""
    masks = [1 << i for i in range(int(np.log2(slots.elements)))]
    if slots.per_reg > 2:
        masks.append(slots.per_reg - 1)
    out = [Edit(f"{operand}:slots^{m}", operand, "slots", mask=m) for m in masks
           if m < slots.elements and slots.elements % (2 * (1 << (m.bit_length() - 1))) == 0]
    return out + _thread_edits(operand)


# ------------------------------------------------------------------------------------------------ jobs

@dataclass
class Job:
    """One probe CTA: the inputs as the harness packs them, and the logical values needed to predict it."""
    prep: Prepared
    key: wgmma.KernelKey  # the kernel it runs in (an RS form's accumulator probe also runs in its SS sibling)
    probe: str  # 'row', 'col' (accumulator) or 'a<pass>.<sub>' (A registers)
    a_mat: np.ndarray | None  # SS: A as the tensor core reads it (the address probe vouches for the layout)
    a_slot_vals: np.ndarray | None  # RS: values of every A slot [128, elements]
    b_mat: np.ndarray  # N x K


def _plain_case(key: wgmma.KernelKey) -> Case:
    v = wgmma.variants(key)[0]
    a = None
    if key.a_src == "SS":
        a = plain_operand(*operand_scenarios(v.atype, wgmma.M, key.k, ("K",))[0])
    b = plain_operand(*operand_scenarios(v.btype, key.n, key.k, ("K",))[0])
    return Case(key, 0, a, b, 0)


def _job(key, probe: str, a_mat, b_mat, a_regs=None, a_slot_vals=None) -> Job:
    case = _plain_case(key)
    v = case.variant
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    a_lay, _, b_lay, _, _, size = place(case)
    image = np.zeros(size, np.uint8)
    if a_lay is not None:
        layouts.write_image(a_lay, at.to_bits(a_mat), image)
    layouts.write_image(b_lay, bt.to_bits(b_mat), image)
    if a_regs is None and key.a_src == "RS":  # through the model's A fragment, as the harness packs A
        a_regs = fragments.gather_registers(fragments.wgmma_a_fragment(v.atype), at.to_bits(a_mat))
        a_slot_vals = at.from_bits(a_slots(v.atype).scatter(a_regs))
    c_regs = np.zeros((WARPGROUP, key.acc_regs), np.uint32)
    prep = Prepared(case, image, a_lay, b_lay, a_regs, c_regs, None, None, None, None, None, None)
    return Job(prep, key, probe, a_mat if key.a_src == "SS" else None, a_slot_vals, b_mat)


def accumulator_jobs(key: wgmma.KernelKey) -> list[Job]:
    v = wgmma.variants(key)[0]
    M, N, K = wgmma.M, key.n, key.k
    wa, da = code_digits(v.atype, M, K)
    wb, db = code_digits(v.btype, N, K)
    row = _job(key, "row", da(np.arange(M)), np.broadcast_to(wa, (N, K)).copy())
    col = _job(key, "col", np.broadcast_to(wb, (M, K)).copy(), db(np.arange(N)))
    return [row, col]


def a_plan(key: wgmma.KernelKey) -> tuple[int, int, int]:
    """(digit base, passes, sub-passes) of the A-register probe."""
    v = wgmma.variants(key)[0]
    s = a_slots(v.atype)
    nslots = WARPGROUP * s.elements
    base = DIGIT_BASE[v.atype]
    passes = 1
    while base ** passes < nslots:
        passes += 1
    return base, passes, -(-key.k // key.n)


def a_register_jobs(key: wgmma.KernelKey) -> list[Job]:
    v = wgmma.variants(key)[0]
    at = dtypes.get(v.atype)
    s = a_slots(v.atype)
    base, passes, sub = a_plan(key)
    code = np.arange(WARPGROUP * s.elements).reshape(WARPGROUP, s.elements)
    jobs = []
    for p in range(passes):
        digit = (code // base ** p) % base
        vals = digit - 128 if v.atype == "s8" else digit
        regs = s.gather(at.to_bits(vals.astype(np.float64)))
        for q in range(sub):
            n = np.arange(key.n)[:, None]
            k = np.arange(key.k)[None, :]
            b = (k == q * key.n + n).astype(np.float64)
            jobs.append(_job(key, f"a{p}.{q}", None, b, regs, at.from_bits(s.scatter(regs))))
    return jobs


def sibling(key: wgmma.KernelKey) -> wgmma.KernelKey:
    """The SS form of an RS key: the same accumulator, A from shared memory."""
    return wgmma.KernelKey(key.kind, key.n, key.dtype, "SS")


def probe_launches(key: wgmma.KernelKey) -> list[tuple[wgmma.KernelKey, list[Job]]]:
    """(kernel key, jobs) per launch. An RS form also runs the accumulator probe in its SS sibling: with A in
    registers, a permutation of the M rows applied to both the A and the D fragment returns the same registers
    (D = A B and C goes in and out through one fragment), so only A read from shared memory pins D's rows."""
    if key.a_src == "SS":
        return [(key, accumulator_jobs(key))]
    return [(sibling(key), accumulator_jobs(sibling(key))), (key, accumulator_jobs(key) + a_register_jobs(key))]


def probe_jobs(key: wgmma.KernelKey) -> list[Job]:
    return [j for _, js in probe_launches(key) for j in js]


# ------------------------------------------------------------------------------------------------ prediction

def _acc_values(key, raw: np.ndarray) -> np.ndarray:
    """Raw D slot bits -> values."""
    raw = np.asarray(raw, np.uint64)
    if key.dtype == "s32":
        s = raw.astype(np.int64)
        return np.where(s >= 1 << 31, s - (1 << 32), s)
    return dtypes.get(key.dtype).from_bits(raw)


def predict(job: Job, d_frag, a_frag) -> np.ndarray:
    """The D registers [128, regs] a tensor core with these fragments would return for one probe CTA."""
    key = job.key
    v = wgmma.variants(key)[0]
    if job.a_mat is not None:
        a = job.a_mat
    else:
        a = np.zeros((wgmma.M, key.k))
        a[a_frag[0], a_frag[1]] = job.a_slot_vals
    if key.dtype == "s32":
        d = dtypes.exact_integer_matmul(a, job.b_mat)
    else:
        d = (v.scale_a * a) @ (v.scale_b * job.b_mat).T
    bits = acc_bits(key.dtype, d)
    return d_slots(key).gather(bits[d_frag[0], d_frag[1]])


# ------------------------------------------------------------------------------------------------ analysis

def coding(slots: Slots, cols: int) -> bitmaps.Coding:
    """A place is (lane, warp, field within the register, register); an element (row, col) -- (row, k) for A."""
    fields = [("lane", 32), ("warp", 4)]
    if slots.per_reg > 1:
        fields.append(("half" if slots.per_reg == 2 else f"{slots.width}-bit field", slots.per_reg))
    fields.append(("register", slots.regs))
    return bitmaps.Coding(tuple(fields), (("row", wgmma.M), ("col" if slots.operand == "D" else "k", cols)))


def index_map(slots: Slots, cols: int, table: tuple[np.ndarray, np.ndarray]):
    """The affine map (or the proof there is none) of a slot table (row, col) [128, elements]; entries outside
    the tile (-1: never seen) are left out."""
    row, col = (np.asarray(a, np.int64) for a in table)
    t = np.broadcast_to(np.arange(WARPGROUP)[:, None], row.shape)
    e = np.broadcast_to(np.arange(slots.elements)[None, :], row.shape)
    ok = (row >= 0) & (row < wgmma.M) & (col >= 0) & (col < cols)
    cd = coding(slots, cols)
    places = cd.places(t % 32, t // 32, *([e % slots.per_reg] if slots.per_reg > 1 else []), e // slots.per_reg)
    elements = np.where(ok, row, 0) + (np.where(ok, col, 0) << bitmaps.bit_width(wgmma.M))
    return bitmaps.recover(cd, places, elements, ok)


@dataclass
class Finding:
    """What the probes of one kernel key say. observed_d comes from an accumulator probe whose inputs went
    through no model fragment (SS: the key's own; RS: its SS sibling's), observed_a is decoded through observed_d,
    so neither leans on the model."""
    observed_d: tuple  # (row, col) per D slot
    observed_a: tuple | None  # (row, k) per A slot (RS)
    d_map: object  # affine.AffineMap | bitmaps.Witness, recovered from observed_d
    a_map: object | None
    consistent: bool  # the observed fragments reproduce every probe register bit for bit
    aliases: dict  # operand -> [catalogue edits whose fragment is the observed one]
    unwritten: int

    @property
    def matched(self) -> list:
        """The catalogue edits naming the observed fragments (kept for callers of the catalogue era)."""
        return [e for es in self.aliases.values() for e in es]

    @property
    def d_frag(self) -> tuple:
        return self.observed_d

    @property
    def a_frag(self) -> tuple | None:
        return self.observed_a


def _slot_values(key, raw: np.ndarray) -> np.ndarray:
    """Accumulator slot values as integers; -1 where a value is not a number (poison, never written)."""
    with np.errstate(invalid="ignore"):
        v = np.asarray(_acc_values(key, raw), np.float64)
    bad = ~np.isfinite(v)
    return np.where(bad, -1, np.rint(np.nan_to_num(v, nan=-1.0, posinf=-1.0, neginf=-1.0))).astype(np.int64)


def analyse(key: wgmma.KernelKey, jobs: list[Job], regs: np.ndarray) -> Finding:
    regs = np.asarray(regs, np.uint32)
    v = wgmma.variants(key)[0]
    ds = d_slots(key)
    first = {}
    for i, j in enumerate(jobs):  # an RS key's sibling launch comes first: its A was read from shared memory
        if j.probe in ("row", "col"):
            first.setdefault(j.probe, i)
    observed_d = tuple(_slot_values(key, ds.scatter(regs[first[p]])) for p in ("row", "col"))
    observed_a = _recover_a(key, jobs, regs, observed_d) if key.a_src == "RS" else None
    d_map = index_map(ds, key.n, observed_d)
    a_map = index_map(a_slots(v.atype), key.k, observed_a) if observed_a is not None else None
    consistent = _reproduces(key, jobs, regs, observed_d, observed_a)
    aliases = {"D": _aliases("D", ds, model_d(key), observed_d)}
    if observed_a is not None:
        aliases["A"] = _aliases("A", a_slots(v.atype), model_a(v.atype), observed_a)
    return Finding(observed_d, observed_a, d_map, a_map, consistent, aliases,
                   int((regs == POISON).sum()) if key.dtype != "s32" else 0)


def _reproduces(key, jobs, regs, d_frag, a_frag) -> bool:
    for t in (d_frag,) + ((a_frag,) if a_frag is not None else ()):
        if (t[0] < 0).any() or (t[1] < 0).any() or (t[0] >= wgmma.M).any():
            return False
    if (d_frag[1] >= key.n).any() or (a_frag is not None and (a_frag[1] >= key.k).any()):
        return False
    return all(np.array_equal(predict(j, d_frag, a_frag), regs[i]) for i, j in enumerate(jobs))


def _aliases(op: str, slots: Slots, model, observed) -> list[Edit]:
    """Catalogue edits whose fragment is exactly the observed one: their words name a common recovered map."""
    out = []
    for e in edits(op, slots):
        r, c = e.apply(model)
        if np.array_equal(r, model[0]) and np.array_equal(c, model[1]):
            continue  # changes nothing for this form
        if np.array_equal(r, observed[0]) and np.array_equal(c, observed[1]):
            out.append(e)
    return out


def _recover_a(key, jobs, regs, d_frag) -> tuple[np.ndarray, np.ndarray]:
    """(row, k) per A slot: where each slot's code came out, D decoded through d_frag (the observed accumulator
    fragment); -1 where it never did."""
    v = wgmma.variants(key)[0]
    s = a_slots(v.atype)
    base, passes, sub = a_plan(key)
    ds = d_slots(key)
    fr, fc = (np.asarray(a) for a in d_frag)
    ok_d = (fr >= 0) & (fr < wgmma.M) & (fc >= 0) & (fc < key.n)
    code = np.zeros((wgmma.M, key.k), np.int64)
    seen = np.zeros((wgmma.M, key.k), bool)
    for i, j in enumerate(jobs):
        if not j.probe.startswith("a"):
            continue
        p, q = map(int, j.probe[1:].split("."))
        d = np.full((wgmma.M, key.n), np.nan)
        with np.errstate(invalid="ignore"):
            d[fr[ok_d], fc[ok_d]] = _acc_values(key, ds.scatter(regs[i]))[ok_d]
        ks = q * key.n + np.arange(key.n)
        ok = ks < key.k
        dig = np.rint(np.nan_to_num(d[:, ok], nan=-1e9)).astype(np.int64) + (128 if v.atype == "s8" else 0)
        code[:, ks[ok]] += dig * base ** p
        seen[:, ks[ok]] = True
    row = -np.ones((WARPGROUP, s.elements), np.int64)
    col = -np.ones_like(row)
    valid = seen & (code >= 0) & (code < row.size)
    m, k = np.nonzero(valid)
    c = code[m, k]
    row.ravel()[c] = m
    col.ravel()[c] = k
    return row, col


def _compare(model, observed, slots: Slots) -> dict:
    wrong = (model[0] != observed[0]) | (model[1] != observed[1])
    out = {"slots": int(wrong.size), "wrong": int(wrong.sum())}
    if out["wrong"]:
        t, e = np.nonzero(wrong)
        out["threads"] = ranges(np.unique(t))
        out["registers"] = ranges(np.unique(slots.reg(e)))
        out["first"] = [{"thread": int(a), "slot": slots.where(int(b)),
                         "expected": [int(model[0][a, b]), int(model[1][a, b])],
                         "observed": [int(observed[0][a, b]), int(observed[1][a, b])]}
                        for a, b in list(zip(t.tolist(), e.tolist()))[:6]]
    return out


def records(cid: str, key: wgmma.KernelKey, f: Finding) -> list[dict]:
    """The 'accumulator' record (and for RS the 'a-registers' record) of one case: the map each probe recovered,
    the model's, and one sentence naming the output bits whose sources differ."""
    v = wgmma.variants(key)[0]
    ds = d_slots(key)
    probes = [("accumulator", "D", model_d(key), f.observed_d, ds, key.n, f.d_map)]
    if key.a_src == "RS":
        probes.append(("a-registers", "A", model_a(v.atype), f.observed_a, a_slots(v.atype), key.k, f.a_map))
    out = []
    for probe, op, model, observed, slots, cols, hw in probes:
        cmp = _compare(model, observed, slots)
        rec = {"type": "diagnosis", "id": cid, "operand": op, "probe": probe, "kernel": key.name, **cmp}
        differ = f"{cmp['wrong']} of {cmp['slots']} slots differ" + (
            f", threads {cmp['threads']}, registers {cmp['registers']}" if cmp["wrong"] else "")
        sentence = bitmaps.record_maps(rec, f"{op} fragment", hw, index_map(slots, cols, model), differ)
        names = f.aliases.get(op, [])
        if not cmp["wrong"] and not f.unwritten:
            rec["status"] = "pass"
            rec["summary"] = (f"{op}: every register slot holds the element the model's {op} fragment gives "
                              f"({cmp['slots']} slots)")
        else:
            rec["status"] = "fail"
            rec["explanation"] = sentence
            if names:  # the catalogue's words are a name for this recovered map
                rec.update(edit=names[0].id, equivalent_edits=[e.id for e in names[1:]],
                           known_as=names[0].describe(model, slots))
                rec["explanation"] += f"; that is, {rec['known_as']}"
            rec["summary"] = rec["explanation"]
            if f.unwritten:
                rec["summary"] += f"; {f.unwritten} registers came back unwritten"
        if op == "D" and rec["status"] == "fail" and not _bijective(observed, cols):
            # the hardware writes every element of D into exactly one slot: a table that is not a bijection
            # was read through misread operands, not off a fragment
            rec["status"] = "inconclusive"
            rec["summary"] = (f"D: inconclusive: the slots do not hold every element of D once (the probe's operands "
                              f"were likely read elsewhere than the model says; see the address records). As read: "
                              f"{rec['summary']}")
        if not f.consistent and rec["status"] == "fail":
            # no placement of the elements explains the values: the probe's own operands were not read as its
            # inputs assumed (an address bug: see the address records), so this record blames nothing
            rec["status"] = "inconclusive"
            rec["summary"] = (f"{op}: inconclusive: the slots' values are not reproduced by any placement of the "
                              f"elements (the probe's operands were likely read elsewhere than the model says; see "
                              f"the address records). As read: {rec['summary']}")
        out.append(rec)
    return out


def _bijective(table, cols: int) -> bool:
    r, c = (np.asarray(a) for a in table)
    ok = (r >= 0) & (r < wgmma.M) & (c >= 0) & (c < cols)
    return bool(ok.all()) and np.unique(r * cols + c).size == r.size == wgmma.M * cols


def tables(f: Finding) -> tuple | None:
    """(observed D table, observed A table or None) when both are complete (every slot named, every element
    once), so another probe may decode and pack through the hardware's fragments instead of the model's."""
    def complete(t, cols):
        r, c = (np.asarray(a) for a in t)
        if (r < 0).any() or (c < 0).any() or (r >= wgmma.M).any() or (c >= cols).any():
            return False
        return np.unique(r * cols + c).size == r.size
    d = f.observed_d
    if not complete(d, int(np.asarray(d[1]).max()) + 1):
        return None
    a = f.observed_a
    if a is not None and not complete(a, int(np.asarray(a[1]).max()) + 1):
        return None
    return d, a


def decode_d(key: wgmma.KernelKey, regs: np.ndarray, d_table) -> np.ndarray:
    """Accumulator values [jobs, 64, N] of a launch's registers [jobs, 128, regs], placed by a (row, col) table."""
    ds = d_slots(key)
    row, col = (np.asarray(a) for a in d_table)
    out = np.zeros((len(regs), wgmma.M, key.n))
    for i, r in enumerate(np.asarray(regs, np.uint32)):
        out[i][row, col] = _acc_values(key, ds.scatter(r))
    return out


def gather_a(atype: str, a_table, element_bits: np.ndarray) -> np.ndarray:
    """A registers [128, 4] holding the raw bits of a 64 x K matrix where an A table (row, k per slot) puts them."""
    row, k = (np.asarray(x) for x in a_table)
    return a_slots(atype).gather(np.asarray(element_bits, np.uint64)[row, k])


# ------------------------------------------------------------------------------------------------ running

def run(key: wgmma.KernelKey, worker, cubin_of, timeout: float = 30.0) -> tuple[list[Job], np.ndarray]:
    """Launch every probe CTA of a key (cubin_of(kernel key) -> cubin path; an RS key also asks for its SS
    sibling's) and return the jobs and their D registers [jobs, 128, regs]."""
    from harness.families.wgmma import kernel as launch
    jobs, regs = [], []
    for k, js in probe_launches(key):
        out = worker.run(str(cubin_of(k)), k.name, launch.pack([j.prep for j in js]), timeout)["d_out"]
        jobs += js
        regs.append(np.asarray(out))
    return jobs, np.concatenate(regs)


def diagnose(cases, cubin_of, worker, timeout: float = 30.0, png_dir: Path | None = None,
             max_png: int = 16, found: dict | None = None) -> list[dict]:
    """Fragment records of type 'diagnosis' for failing wgmma cases: the probes run once per kernel key, and
    every case of that key gets the records. `found`, when given, receives each key's Finding."""
    from harness.contract import LaunchFailed
    by_key: dict = {}
    for c in cases:
        by_key.setdefault(c.key, []).append(c)
    out, pngs = [], 0
    for key, cs in by_key.items():
        try:
            jobs, regs = run(key, worker, cubin_of, timeout)
        except LaunchFailed as e:
            out += [{"type": "diagnosis", "id": c.id, "operand": "D", "probe": "accumulator", "status": e.status,
                     "error": str(e), "summary": f"accumulator probe launch failed: {e}"} for c in cs]
            continue
        except ValueError as e:  # a form the probe cannot code (too few k for the digits)
            out += [{"type": "diagnosis", "id": c.id, "operand": "D", "probe": "accumulator",
                     "status": "not-probed", "summary": str(e)} for c in cs]
            continue
        f = analyse(key, jobs, regs)
        if found is not None:
            found[key] = f
        recs = records(cs[0].id, key, f)
        if png_dir is not None and pngs < max_png:
            for rec in recs:
                if rec["status"] == "fail":
                    rec["png"] = _png(key, rec, f, png_dir)
                    pngs += 1
        for c in cs:
            out += [{**r, "id": c.id} for r in recs]
    return out


def _png(key, rec: dict, f: Finding, png_dir: Path) -> str:
    from harness.diagnosis.pictures import safe_name, wrap_text
    png_dir = Path(png_dir)
    png_dir.mkdir(parents=True, exist_ok=True)
    path = png_dir / f"{safe_name(key.name)}-{rec['probe']}.png"
    v = wgmma.variants(key)[0]
    if rec["operand"] == "D":
        model, obs, slots = model_d(key), f.observed_d, d_slots(key)
    else:
        model, obs, slots = model_a(v.atype), f.observed_a, a_slots(v.atype)
    try:
        from harness.diagnosis import pictures
        pictures.ownership_png(model, obs, path, f"{key.name}  {rec['probe']} probe\n{wrap_text(rec['summary'])}",
                               slots.per_reg, "k" if rec["operand"] == "A" else "col")
        return str(path)
    except ImportError as e:
        return f"not drawn: {e}"
