"""Affine maps over GF(2): recover, from a probe's observations, the bit matrix and constant of the map the
hardware used, or prove from the data that it is not affine.

Swizzles (XORs of address-bit ranges), power-of-two strides (bit moves), register fragments and Tensor Memory
data paths are affine on the bits of their indices within the power-of-two tiles the harness uses:

    y = A x ^ c        x: input index bits (row, k; thread, register slot), y: output bits (an address; row, col)

A probe observes y for every input (or a subset: a tile of 24 rows covers rows 0-23 only). `solve` finds A and
c exactly by Gaussian elimination over GF(2), or returns a `NotAffine` witness: inputs x_1..x_n of even count
whose XOR is 0 while the XOR of their outputs is not -- no affine map can produce that, since an affine map
takes an even set XORing to 0 to outputs XORing to 0. The witness is the smallest there is where the data
allow (four inputs x, a, b, x^a^b; two equal inputs with different outputs), and is re-checkable from the data.

Bits are numbered from 0 (least significant); an input or output is an int, its bits the index's bits.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MAX_BITS = 62  # inputs and outputs live in int64


def _bits_of(mask: int) -> list[int]:
    return [i for i in range(int(mask).bit_length()) if mask >> i & 1]


@dataclass(frozen=True)
class AffineMap:
    """y = A x ^ c on `in_bits` input bits and `out_bits` output bits. columns[i] is the output mask input bit
    i flips (column i of A); `span_bits` the input bits the observations determined (a bit outside them -- an
    index that never varied -- has column 0 by choice, not by observation)."""
    in_bits: int
    out_bits: int
    columns: tuple[int, ...]
    constant: int
    in_names: tuple[str, ...] = field(default=(), compare=False)
    out_names: tuple[str, ...] = field(default=(), compare=False)
    span_bits: int = -1  # mask of determined input bits; -1: all

    def __post_init__(self):
        if not 0 <= self.in_bits <= MAX_BITS or not 0 <= self.out_bits <= MAX_BITS:
            raise ValueError(f"at most {MAX_BITS} input and output bits")
        if len(self.columns) != self.in_bits:
            raise ValueError(f"{len(self.columns)} columns for {self.in_bits} input bits")
        top = (1 << self.out_bits) - 1
        if any(c & ~top for c in self.columns) or self.constant & ~top:
            raise ValueError(f"a column or the constant has bits beyond the {self.out_bits} output bits")
        if self.in_names and len(self.in_names) != self.in_bits:
            raise ValueError("one name per input bit")
        if self.out_names and len(self.out_names) != self.out_bits:
            raise ValueError("one name per output bit")

    def __call__(self, x):
        x = np.asarray(x, np.int64)
        y = np.full(x.shape, self.constant, np.int64)
        for i, col in enumerate(self.columns):
            if col:
                y ^= ((x >> i) & 1) * col
        return y

    def matrix(self) -> np.ndarray:
        """A as a uint8 array [out_bits, in_bits]."""
        return np.array([[(c >> j) & 1 for c in self.columns] for j in range(self.out_bits)],
                        np.uint8).reshape(self.out_bits, self.in_bits)

    def named(self, in_names, out_names) -> "AffineMap":
        return AffineMap(self.in_bits, self.out_bits, self.columns, self.constant, tuple(in_names), tuple(out_names),
                         self.span_bits)

    def in_name(self, i: int) -> str:
        return self.in_names[i] if self.in_names else f"x{i}"

    def out_name(self, j: int) -> str:
        return self.out_names[j] if self.out_names else f"y{j}"

    def sources(self, j: int) -> tuple[list[int], int]:
        """(input bits XORed into output bit j, its constant bit)."""
        return [i for i, c in enumerate(self.columns) if c >> j & 1], self.constant >> j & 1

    def term(self, j: int) -> str:
        """'row bit 3 ^ lane bit 2 ^ 1' for output bit j ('0' when nothing drives it)."""
        src, one = self.sources(j)
        parts = [self.in_name(i) for i in src] + (["1"] if one else [])
        return " ^ ".join(parts) if parts else "0"

    def describe(self) -> str:
        """Every output bit as the XOR of its sources: '<out>: <term>; ...'."""
        return "; ".join(f"{self.out_name(j)} = {self.term(j)}" for j in range(self.out_bits))

    def as_dict(self) -> dict:
        return {"in_bits": list(self.in_names) or self.in_bits, "out_bits": list(self.out_names) or self.out_bits,
                "columns": list(self.columns), "constant": self.constant,
                "map": {self.out_name(j): self.term(j) for j in range(self.out_bits)}}


@dataclass(frozen=True)
class NotAffine:
    """Proof that the observed map is not affine: `inputs` (even count, XOR 0) whose `outputs` do not XOR to 0."""
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    def __post_init__(self):
        if len(self.inputs) != len(self.outputs) or len(self.inputs) % 2 or len(self.inputs) < 2:
            raise ValueError("a witness is an even number (at least 2) of inputs with their outputs")

    def holds(self) -> bool:
        """The witness shows non-affinity on its own numbers (inputs XOR to 0, outputs do not)."""
        return _xor(self.inputs) == 0 and _xor(self.outputs) != 0

    def describe(self, fmt=str, fmt_out=None) -> str:
        """In words; fmt / fmt_out format an input / output (default: the number)."""
        fmt_out = fmt_out or fmt
        pts = ", ".join(f"{fmt(x)} -> {fmt_out(y)}" for x, y in zip(self.inputs, self.outputs))
        if len(self.inputs) == 2:
            return f"not a function: {pts}"
        return (f"not affine: the inputs {pts} XOR to 0 but their outputs XOR to {_xor(self.outputs):#x} (an affine "
                f"map takes them to outputs XORing to 0)")


def _xor(vals) -> int:
    out = 0
    for v in vals:
        out ^= int(v)
    return out


class _Basis:
    """Echelon basis of translated input vectors, each with the output it maps to and (for witnesses) the
    observation indices it is the XOR of."""
    def __init__(self):
        self.vec: list[int] = []
        self.out: list[int] = []
        self.members: list[frozenset] = []

    def reduce(self, v: int, track: bool = False):
        out, members = 0, frozenset()
        for b, o, m in zip(self.vec, self.out, self.members):
            if v >> (b.bit_length() - 1) & 1:
                v ^= b
                out ^= o
                if track:
                    members = members ^ m
        return v, out, members

    def add(self, v: int, out: int, members: frozenset) -> None:
        self.vec.append(v)
        self.out.append(out)
        self.members.append(members)
        # keep the list in descending pivot order so one pass reduces
        order = sorted(range(len(self.vec)), key=lambda i: -self.vec[i].bit_length())
        self.vec = [self.vec[i] for i in order]
        self.out = [self.out[i] for i in order]
        self.members = [self.members[i] for i in order]

    def reduce_all(self, u: np.ndarray):
        cur = u.copy()
        out = np.zeros_like(u)
        for b, o in zip(self.vec, self.out):
            hit = (cur >> (b.bit_length() - 1)) & 1
            cur ^= hit * b
            out ^= hit * o
        return cur, out


def solve(inputs, outputs, in_bits: int | None = None, out_bits: int | None = None) -> AffineMap | NotAffine:
    """The affine map taking every observed input to its output, or a witness that none does.

    inputs, outputs: int arrays of one shape (non-negative). in_bits / out_bits: widths (default: what the data
    need). The map is exact on every observation; where the inputs do not span an input bit, its column is 0
    and `span_bits` leaves it out."""
    x = np.asarray(inputs, np.int64).ravel()
    y = np.asarray(outputs, np.int64).ravel()
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"inputs and outputs must be non-empty and of one size ({x.size} and {y.size})")
    if (x < 0).any() or (y < 0).any():
        raise ValueError("inputs and outputs must be non-negative")
    need_in, need_out = int(x.max()).bit_length(), int(y.max()).bit_length()
    in_bits = need_in if in_bits is None else in_bits
    out_bits = need_out if out_bits is None else out_bits
    if need_in > in_bits or need_out > out_bits:
        raise ValueError(f"data need {need_in} input / {need_out} output bits, more than {in_bits} / {out_bits}")
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    clash = np.nonzero((xs[1:] == xs[:-1]) & (ys[1:] != ys[:-1]))[0]
    if clash.size:
        i = int(clash[0])
        return NotAffine((int(xs[i]), int(xs[i + 1])), (int(ys[i]), int(ys[i + 1])))
    keep = np.ones(xs.size, bool)
    keep[1:] = xs[1:] != xs[:-1]
    ux, uy = xs[keep], ys[keep]
    x0, y0 = int(ux[0]), int(uy[0])
    u, v = ux ^ x0, uy ^ y0  # translated: a linear map takes u to v
    basis = _Basis()
    while True:
        cur, pred = basis.reduce_all(u)
        outside = np.nonzero(cur)[0]
        if not outside.size:
            break
        i = int(outside[0])
        r, o, m = basis.reduce(int(u[i]), track=True)
        basis.add(r, o ^ int(v[i]), m ^ frozenset([i]))
    bad = np.nonzero(pred != v)[0]
    if bad.size:
        return _witness(ux, uy, u, v, pred, basis, bad)
    span = 0
    for b in basis.vec:
        span |= b
    columns = []
    determined = 0
    for i in range(in_bits):
        r, o, _ = basis.reduce(1 << i)
        if r == 0:
            determined |= 1 << i
        columns.append(o if r == 0 else 0)
    # bits outside the span: extend with the unit vector mapped to 0 so the columns stay consistent
    if determined != (1 << in_bits) - 1:
        for i in range(in_bits):
            if not determined >> i & 1:
                r, o, m = basis.reduce(1 << i)
                if r:
                    basis.add(r, o, m)  # maps e_i to 0 (o cancels the reduced part's output)
        columns = [basis.reduce(1 << i)[1] for i in range(in_bits)]
    const = y0
    for i in range(in_bits):
        if x0 >> i & 1:
            const ^= columns[i]
    return AffineMap(in_bits, out_bits, tuple(int(c) for c in columns), int(const),
                     span_bits=-1 if determined == (1 << in_bits) - 1 else determined)


def _witness(ux, uy, u, v, pred, basis: _Basis, bad) -> NotAffine:
    """The smallest witness found: four inputs {x0, x0^a, x0^b, x0^a^b} when the data hold such a square, else
    the elimination's (an observation and the basis vectors it reduces by)."""
    dev = pred ^ v  # deviation from the affine map fitted on the basis; 0 on the basis' own points
    pos = {int(w): k for k, w in enumerate(u)}
    for i in bad[:256]:
        w = int(u[i])
        partner = u ^ w
        present = np.isin(partner, u)
        idx = np.nonzero(present)[0]
        if not idx.size:
            continue
        j = np.array([pos[int(p)] for p in partner[idx]])
        hit = np.nonzero((dev[idx] ^ dev[j]) != dev[i])[0]
        if hit.size:
            a, b = int(idx[hit[0]]), int(j[hit[0]])
            pts = [0, a, b, int(i)]
            return NotAffine(tuple(int(ux[p]) for p in pts), tuple(int(uy[p]) for p in pts))
    i = int(bad[0])
    _, _, members = basis.reduce(int(u[i]), track=True)
    pts = sorted(members ^ frozenset([i]))
    if len(pts) % 2:
        pts = [0] + pts if 0 not in pts else [p for p in pts if p != 0]
    return NotAffine(tuple(int(ux[p]) for p in pts), tuple(int(uy[p]) for p in pts))


def differences(hardware: AffineMap, model: AffineMap) -> list[int]:
    """Output bits whose sources (input bits or constant) differ between two maps of one shape."""
    return [j for j in range(max(hardware.out_bits, model.out_bits))
            if hardware.sources(j) != model.sources(j)]
