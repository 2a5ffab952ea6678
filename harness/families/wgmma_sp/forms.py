"""The wgmma.mma_async.sp instruction forms of PTX ISA 9.7.15.6.3 (sm_90a), as data.

A sparse kernel key is the dense one's (K-shape kind, N, accumulator type, A source) with the sparse K: k32 for
f16/bf16, k16 for tf32, k64 for e4m3/e5m2 and s8/u8 (there is no sparse b1). The legal N and accumulators are
the dense forms' (harness.families.wgmma.forms). A variant is a dense variant (A/B types, imm-trans-a/b,
imm-scale-a/b, .satfinite) plus the sparsity selector, an immediate of the instruction: 0 or 1 for f16/bf16 and
tf32, 0 for the 8-bit types (harness.spec.sparsity). Each variant is its own asm statement.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from harness.families.wgmma import forms as dense
from harness.spec import sparsity

M = dense.M
KINDS = ("f16", "tf32", "f8", "s8")
KIND_TYPES = {k: dense.KIND_TYPES[k] for k in KINDS}
KIND_DTYPES = {k: dense.KIND_DTYPES[k] for k in KINDS}


@dataclass(frozen=True)
class KernelKey:
    kind: str  # f16 (f16/bf16), tf32, f8 (e4m3/e5m2), s8 (s8/u8)
    n: int
    dtype: str
    a_src: str  # 'SS' or 'RS'

    @property
    def k(self) -> int:
        """The instruction's K (the logical K of A and of B); A holds K/2 of it per row."""
        return sparsity.format_of(KIND_TYPES[self.kind][0]).k

    @property
    def packed_k(self) -> int:
        return self.k // 2

    @property
    def name(self) -> str:
        return f"wgmma_sp_{self.kind}_m64n{self.n}k{self.k}_{self.dtype}_{self.a_src}"

    @property
    def dense(self) -> dense.KernelKey:
        """The dense key of the same kind, N, accumulator and A source: its accumulator fragment, register count
        and A-register fragment (over A's packed columns) are this key's."""
        return dense.KernelKey(self.kind, self.n, self.dtype, self.a_src)

    @property
    def acc_regs(self) -> int:
        return self.dense.acc_regs


@dataclass(frozen=True)
class Variant(dense.Variant):
    selector: int = 0  # the sparsity selector (sp-sel)

    def tag(self, dtype: str) -> str:
        return super().tag(dtype) + (f"-sel{self.selector}" if self.selector else "")


def validate_key(key: KernelKey) -> KernelKey:
    if key.kind not in KINDS:
        raise ValueError(f"unknown wgmma.mma_async.sp kind {key.kind!r}; one of {', '.join(KINDS)}")
    dense.validate_key(key.dense)
    return key


def validate_variant(key: KernelKey, v: Variant) -> Variant:
    """Refuse an immediate combination the PTX ISA does not allow for this sparse kernel key, in one sentence."""
    validate_key(key)
    dense.validate_variant(key.dense, v)
    legal = sparsity.format_of(v.atype).selectors
    if v.selector not in legal:
        raise ValueError(f"sparse {v.atype} takes sparsity selector {' or '.join(map(str, legal))}, not {v.selector}")
    return v


@lru_cache(maxsize=None)
def variants(key: KernelKey) -> tuple[Variant, ...]:
    """Every dense variant with selector 0, then, where selector 1 is legal, each type and transposition with
    selector 1 (imm-scale +1 +1): the runtime switch index is the position here."""
    validate_key(key)
    base = dense.variants(key.dense)
    out = [Variant(**vars(v)) for v in base]
    if 1 in sparsity.format_of(KIND_TYPES[key.kind][0]).selectors:
        out += [Variant(**{**vars(v), "selector": 1}) for v in base if v.scale_a == v.scale_b == 1]
    return tuple(validate_variant(key, v) for v in out)


def variant_index(key: KernelKey, v: Variant) -> int:
    return variants(key).index(validate_variant(key, v))


def with_selector(key: KernelKey, vi: int, selector: int) -> int:
    """The index of variant `vi` with another sparsity selector (the wrong-selector control's instruction)."""
    v = variants(key)[vi]
    return variant_index(key, Variant(**{**vars(v), "selector": selector}))


def instruction(key: KernelKey, v: Variant, d_operands: str, a_operand: str, b_operand: str, meta_operand: str,
                scale_d_pred: str) -> str:
    """The PTX text of one wgmma.mma_async.sp: d, a, b-desc, sp-meta, sp-sel, scale-d, then the immediates."""
    shape = f"m64n{key.n}k{key.k}"
    operands = f"{d_operands}, {a_operand}, {b_operand}, {meta_operand}, {v.selector}, {scale_d_pred}"
    if key.kind == "s8":
        sat = ".satfinite" if v.satfinite else ""
        return f"wgmma.mma_async.sp.sync.aligned.{shape}{sat}.s32.{v.atype}.{v.btype} {operands};"
    imms = f"{v.scale_a}, {v.scale_b}"
    if key.kind == "f16":
        imms += f", {v.trans_a}, {v.trans_b}" if key.a_src == "SS" else f", {v.trans_b}"
    return f"wgmma.mma_async.sp.sync.aligned.{shape}.{key.dtype}.{v.atype}.{v.btype} {operands}, {imms};"


def all_kernel_keys(families=KINDS, n_values=None, a_srcs=("SS", "RS")) -> list[KernelKey]:
    return [KernelKey(k.kind, k.n, k.dtype, k.a_src) for k in dense.all_kernel_keys(families, n_values, a_srcs)]
