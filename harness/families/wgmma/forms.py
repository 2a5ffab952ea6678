"""The wgmma.mma_async instruction forms of PTX ISA 9.7.15 (sm_90a), as data.

A *kernel key* fixes what must be compiled into one kernel: the K-shape kind, N, the accumulator type and
where A comes from (SS: shared memory descriptor, RS: registers). Inside one kernel a runtime switch picks a
*variant*: the remaining immediates of the instruction (A/B types, imm-trans-a/b, imm-scale-a/b,
.satfinite). Each variant's instruction text is its own asm statement, so every immediate is compiled in.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

from harness.spec.fragments import WGMMA_K

M = 64
N_ALL = tuple(range(8, 257, 8))
# Integer and b1 accumulators: N = 8, 16, 24, 32, then 48..256 step 16.
N_S32 = (8, 16, 24, 32) + tuple(range(48, 257, 16))

KINDS = ("f16", "tf32", "f8", "s8", "b1")
KIND_TYPES = {
    "f16": ("f16", "bf16"),
    "tf32": ("tf32",),
    "f8": ("e4m3", "e5m2"),
    "s8": ("s8", "u8"),
    "b1": ("b1",),
}
KIND_DTYPES = {"f16": ("f16", "f32"), "tf32": ("f32",), "f8": ("f16", "f32"), "s8": ("s32",), "b1": ("s32",)}


def kind_of(atype: str) -> str:
    for fam, types in KIND_TYPES.items():
        if atype in types:
            return fam
    raise ValueError(f"{atype!r} is not a wgmma input type; one of "
                     f"{', '.join(t for ts in KIND_TYPES.values() for t in ts)}")


def legal_n(kind: str) -> tuple[int, ...]:
    return N_S32 if kind in ("s8", "b1") else N_ALL


@dataclass(frozen=True)
class KernelKey:
    kind: str  # the K-shape kind: f16 (f16/bf16), tf32, f8 (e4m3/e5m2), s8 (s8/u8), b1
    n: int
    dtype: str
    a_src: str  # 'SS' or 'RS'

    @property
    def k(self) -> int:
        return WGMMA_K[KIND_TYPES[self.kind][0]]

    @property
    def name(self) -> str:
        return f"wgmma_{self.kind}_m64n{self.n}k{self.k}_{self.dtype}_{self.a_src}"

    @property
    def acc_regs(self) -> int:
        return self.n // 4 if self.dtype == "f16" else self.n // 2


@dataclass(frozen=True)
class Variant:
    atype: str
    btype: str
    trans_a: int = 0  # 1: A is M-major (imm-trans-a = 1)
    trans_b: int = 0  # 1: B is N-major
    scale_a: int = 1  # imm-scale-a
    scale_b: int = 1
    satfinite: bool = False

    def tag(self, dtype: str) -> str:
        s = f"{dtype}.{self.atype}.{self.btype}"
        if self.satfinite:
            s += ".satfinite"
        if self.scale_a != 1 or self.scale_b != 1:
            s += f"-scale{self.scale_a:+d}{self.scale_b:+d}"
        return s


def validate_key(key: KernelKey) -> KernelKey:
    if key.kind not in KINDS:
        raise ValueError(f"unknown wgmma kind {key.kind!r}; one of {', '.join(KINDS)}")
    if key.n not in legal_n(key.kind):
        raise ValueError(f"N = {key.n} is not legal for wgmma {key.kind} "
                         f"({'8, 16, 24, 32, 48..256 step 16' if key.kind in ('s8', 'b1') else '8..256 step 8'})")
    if key.dtype not in KIND_DTYPES[key.kind]:
        raise ValueError(f"wgmma {key.kind} accumulates into {'/'.join(KIND_DTYPES[key.kind])}, "
                         f"not {key.dtype}")
    if key.a_src not in ("SS", "RS"):
        raise ValueError(f"A source must be SS or RS, not {key.a_src!r}")
    return key


def validate_variant(key: KernelKey, v: Variant) -> Variant:
    """Refuse an immediate combination the PTX ISA does not allow for this kernel key, in one sentence."""
    validate_key(key)
    fam = key.kind
    for role, t in (("A", v.atype), ("B", v.btype)):
        if t not in KIND_TYPES[fam]:
            raise ValueError(f"wgmma {fam} takes {role} of type {'/'.join(KIND_TYPES[fam])}, not {t!r}")
    if fam == "f16" and v.atype != v.btype:
        raise ValueError("wgmma k16 needs A and B of the same type (f16 x f16 or bf16 x bf16)")
    if fam == "f16" and key.dtype == "f16" and v.atype != "f16":
        raise ValueError("bf16 inputs accumulate into f32 only")
    if (v.trans_a or v.trans_b) and fam != "f16":
        raise ValueError(f"{v.atype} operands are K-major only: imm-trans-a/b exist for f16/bf16 alone")
    if v.trans_a and key.a_src == "RS":
        raise ValueError("A from registers has no major-ness: imm-trans-a is not part of the RS form")
    if (v.scale_a, v.scale_b) != (1, 1) and fam in ("s8", "b1"):
        raise ValueError(f"wgmma {fam} has no imm-scale-a/b")
    if v.scale_a not in (1, -1) or v.scale_b not in (1, -1):
        raise ValueError("imm-scale-a/b must be 1 or -1")
    if v.satfinite and fam != "s8":
        raise ValueError(".satfinite is for the s8/u8 forms only")
    return v


@lru_cache(maxsize=None)
def variants(key: KernelKey) -> tuple[Variant, ...]:
    """Every legal immediate combination of a kernel key, in a fixed order (the runtime switch index)."""
    validate_key(key)
    fam, out = key.kind, []
    if fam == "f16":
        types = ("f16",) if key.dtype == "f16" else ("f16", "bf16")
        trans_a = (0, 1) if key.a_src == "SS" else (0,)  # A from registers has no major-ness
        for t, ta, tb, sa, sb in itertools.product(types, trans_a, (0, 1), (1, -1), (1, -1)):
            out.append(Variant(t, t, ta, tb, sa, sb))
    elif fam == "tf32":  # K-major only
        for sa, sb in itertools.product((1, -1), (1, -1)):
            out.append(Variant("tf32", "tf32", 0, 0, sa, sb))
    elif fam == "f8":  # K-major only, all four pairings
        for at, bt, sa, sb in itertools.product(("e4m3", "e5m2"), ("e4m3", "e5m2"), (1, -1), (1, -1)):
            out.append(Variant(at, bt, 0, 0, sa, sb))
    elif fam == "s8":  # no imm-scale, no transpose; mixed signedness pairings
        for at, bt, sat in itertools.product(("s8", "u8"), ("s8", "u8"), (False, True)):
            out.append(Variant(at, bt, satfinite=sat))
    else:
        out.append(Variant("b1", "b1"))
    return tuple(validate_variant(key, v) for v in out)


def instruction(key: KernelKey, v: Variant, d_operands: str, a_operand: str, b_operand: str,
                scale_d_pred: str) -> str:
    """The PTX text of one wgmma.mma_async."""
    shape = f"m64n{key.n}k{key.k}"
    fam = key.kind
    if fam == "s8":
        sat = ".satfinite" if v.satfinite else ""
        return (f"wgmma.mma_async.sync.aligned.{shape}{sat}.s32.{v.atype}.{v.btype} "
                f"{d_operands}, {a_operand}, {b_operand}, {scale_d_pred};")
    if fam == "b1":
        return (f"wgmma.mma_async.sync.aligned.{shape}.s32.b1.b1.and.popc "
                f"{d_operands}, {a_operand}, {b_operand}, {scale_d_pred};")
    head = f"wgmma.mma_async.sync.aligned.{shape}.{key.dtype}.{v.atype}.{v.btype} "
    imms = f"{v.scale_a}, {v.scale_b}"
    if fam == "f16":
        imms += f", {v.trans_a}, {v.trans_b}" if key.a_src == "SS" else f", {v.trans_b}"
    return f"{head}{d_operands}, {a_operand}, {b_operand}, {scale_d_pred}, {imms};"


def variant_index(key: KernelKey, v: Variant) -> int:
    """The runtime switch index of a (validated) variant within its kernel."""
    return variants(key).index(validate_variant(key, v))


def all_kernel_keys(families=KINDS, n_values=None, a_srcs=("SS", "RS")) -> list[KernelKey]:
    keys = []
    for fam in families:
        for dtype in KIND_DTYPES[fam]:
            for n in legal_n(fam):
                if n_values is not None and n not in n_values:
                    continue
                for src in a_srcs:
                    keys.append(KernelKey(fam, n, dtype, src))
    return keys
