"""The timed instruction forms, as data, and the figures they are read against.

wgmma (sm_90a): a form is the instruction's types (A/B type, accumulator type), N, where A comes from (SS or
RS) and the swizzle of the shared-memory operands (K-major). Only dense wgmma exists in the harness: sparse
wgmma (wgmma.mma_async.sp) is not modelled, so it is not timed.
tcgen05 (sm_100a, sm_103a): .kind::f16 with bf16 inputs and f32 accumulator, M = 128 per CTA, N, CTA group,
A from shared memory (SS) or Tensor Memory (TS), K-major 128B swizzle.
mma.sync / mma.sp (sm_90a): one warp-level form of harness.families.mma_sync per type kind (MMA_SYNC_TIMED), A and
B in registers (no shared memory, no swizzle). The family is outside the default registry; the bench times it
directly (harness.timing sits above the families).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.families.mma_sync import forms as MS
from harness.families.wgmma import forms as W
from harness.spec.fragments import WGMMA_K

# ---------------------------------------------------------------------------------------------------- figures

# Dense tensor-core FLOP (integer kinds: OP) per clock per SM of the H100 SXM datasheet: 989.4 dense bf16
# TFLOPS = 4096 FLOP/clk/SM x 132 SMs x 1.83 GHz (boost); tf32 half of it, fp8/int8 twice it. b1 has no
# published figure.
H100_PEAK_PER_CLK_SM = {"f16": 4096, "tf32": 2048, "f8": 8192, "s8": 8192, "b1": None}
BF16_PEAK_H100 = 4096  # the column "% of bf16 peak" of the bench table divides by this
# Blackwell (B200) dense bf16 per SM per clock: twice Hopper's per SM (2.25 PFLOPS dense bf16 over 148 SMs at
# ~1.85 GHz). Derived from the datasheet, not measured here.
B200_BF16_PEAK_PER_CLK_SM = 8192

# Published figures (not measured by this harness): SemiAnalysis's tcgen05 microbenchmarks on B200,
# tcgen05.mma latency with A and B in shared memory, M = 128 (cta_group::1), bf16.
PUBLISHED_TCGEN05_LATENCY = {
    # (M, N, a_src, cta_group) -> cycles
    (128, 64, "SS", 1): 168,
    (128, 128, "SS", 1): 200,
    (128, 256, "SS", 1): 264,
}
PUBLISHED_SOURCE = "published figure: SemiAnalysis, B200 tcgen05.mma latency (A, B in shared memory), M = 128"

# ---------------------------------------------------------------------------------------------------- wgmma

SWIZZLES = ("128B", "64B", "32B", "none")
# (A type, B type, accumulator) per timed type combination of each wgmma kind
WGMMA_TYPES = (
    ("bf16", "bf16", "f32"), ("f16", "f16", "f32"), ("f16", "f16", "f16"),
    ("tf32", "tf32", "f32"),
    ("e4m3", "e4m3", "f32"), ("e4m3", "e4m3", "f16"), ("e5m2", "e5m2", "f32"),
    ("s8", "s8", "s32"),
    ("b1", "b1", "s32"),
)


@dataclass(frozen=True)
class WgmmaTiming:
    atype: str
    btype: str
    dtype: str
    n: int
    a_src: str  # SS or RS
    swizzle: str = "128B"  # of both shared-memory operands, K-major
    family = "wgmma"
    archs = ("sm_90a",)

    @property
    def kind(self) -> str:
        return W.kind_of(self.atype)

    @property
    def m(self) -> int:
        return W.M

    @property
    def k(self) -> int:
        return WGMMA_K[self.atype]

    @property
    def key(self) -> W.KernelKey:
        return W.validate_key(W.KernelKey(self.kind, self.n, self.dtype, self.a_src))

    @property
    def variant(self) -> W.Variant:
        return W.validate_variant(self.key, W.Variant(self.atype, self.btype))

    @property
    def module_name(self) -> str:
        """One compiled module per instruction (the swizzle is a runtime descriptor field)."""
        return f"time_wgmma_{self.atype}{self.btype}_{self.dtype}_m64n{self.n}k{self.k}_{self.a_src}"

    @property
    def id(self) -> str:
        return f"wgmma.m64n{self.n}k{self.k}.{self.dtype}.{self.atype}.{self.btype}.{self.a_src}.{self.swizzle}"

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def cta_group(self) -> int:
        return 1

    def facets(self) -> dict:
        return {"family": self.family, "kind": self.kind, "atype": self.atype, "btype": self.btype,
                "dtype": self.dtype, "m": self.m, "n": self.n, "k": self.k, "a_src": self.a_src,
                "swizzle": self.swizzle, "cta_group": 1}

    def peak(self) -> int | None:
        return H100_PEAK_PER_CLK_SM[self.kind]

    def reference(self) -> dict | None:
        return None


def wgmma_default(n_values=(64, 128, 256)) -> list[WgmmaTiming]:
    """Every timed type combination at N = 64, 128, 256, SS and RS, K-major 128B swizzle; plus the other
    swizzles for bf16 N = 256."""
    out = [WgmmaTiming(a, b, d, n, src) for a, b, d in WGMMA_TYPES for n in n_values for src in ("SS", "RS")]
    out += [WgmmaTiming("bf16", "bf16", "f32", 256, src, sw) for sw in SWIZZLES[1:] for src in ("SS", "RS")]
    for f in out:
        f.variant  # validates the combination
    return out


# ---------------------------------------------------------------------------------------------------- tcgen05

@dataclass(frozen=True)
class Tcgen05Timing:
    n: int
    a_src: str  # SS or TS
    cta_group: int = 1
    arch: str = "sm_100a"
    atype: str = "bf16"
    dtype: str = "f32"
    swizzle: str = "128B"
    family = "tcgen05"
    kind = "f16"

    @property
    def btype(self) -> str:
        return self.atype

    @property
    def archs(self) -> tuple[str, ...]:
        return (self.arch,)

    @property
    def m(self) -> int:
        """M of the instruction: 128 per CTA, the pair's 256 for cta_group::2."""
        return 128 * self.cta_group

    @property
    def k(self) -> int:
        return 16

    @property
    def module_name(self) -> str:
        return f"time_tcgen05_f16_cg{self.cta_group}_{self.a_src}"

    @property
    def id(self) -> str:
        return (f"tcgen05.cg{self.cta_group}.m{self.m}n{self.n}k{self.k}.{self.dtype}.{self.atype}.{self.a_src}."
                f"{self.swizzle}.{self.arch}")

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    def facets(self) -> dict:
        return {"family": self.family, "kind": self.kind, "atype": self.atype, "btype": self.btype,
                "dtype": self.dtype, "m": self.m, "n": self.n, "k": self.k, "a_src": self.a_src,
                "swizzle": self.swizzle, "cta_group": self.cta_group, "arch": self.arch}

    def peak(self) -> int | None:
        return B200_BF16_PEAK_PER_CLK_SM

    def reference(self) -> dict | None:
        cycles = PUBLISHED_TCGEN05_LATENCY.get((self.m, self.n, self.a_src, self.cta_group))
        if cycles is None:
            return None
        return {"latency_clk": cycles, "gpu": "B200", "source": PUBLISHED_SOURCE}


def tcgen05_default(archs=("sm_100a", "sm_103a"), n_values=(64, 128, 256)) -> list[Tcgen05Timing]:
    return [Tcgen05Timing(n, src, cg, arch) for arch in archs for cg in (1, 2) for src in ("SS", "TS")
            for n in n_values]


# ---------------------------------------------------------------------------------------------------- mma.sync

# What mma.sync reaches on the H100 relative to wgmma: no figure is cited here. Luo et al., "Benchmarking and
# Dissecting the Nvidia Hopper GPU Architecture" (arXiv:2402.13499) and "Dissecting the NVIDIA Hopper Architecture
# through Microbenchmarking and Multiple Level Analysis" (arXiv:2501.12084) measured mma against wgmma on an H800
# and say that only wgmma reaches the tensor cores' full rate, but the text available to this change (their
# abstracts and summaries) holds no number to put here. So an mma.sync row's peak is wgmma's datasheet peak of
# the same kind (H100_PEAK_PER_CLK_SM), as the table's "% wgmma" column header says; the bench measures the
# rest. Sparse (mma.sp) forms count the logical K (2*M*N*K) against twice the dense peak, as the datasheet's
# sparse figures do (1979 against 989.4 dense bf16 TFLOPS).
MMA_SYNC_PEAK_BASIS = "wgmma's datasheet peak of the kind (no cited mma.sync rate)"
# the family's kind -> the kind of H100_PEAK_PER_CLK_SM that mma.sync is read against (None: no wgmma kind, no
# datasheet figure per clock: s4/u4 have none on Hopper; f64 runs on DMMA, which wgmma lacks)
MMA_SYNC_PEAK_KIND = {"f16": "f16", "tf32": "tf32", "f8": "f8", "i8": "s8", "b1": "b1", "i4": None, "f64": None}
# Sizes the throughput loop only (a launch of about TARGET_CYCLES at this rate; slower is longer, never wrong):
# where the kind has no peak. f64: NVIDIA's Hopper in-depth blog (Table 3) gives 60 FP64 Tensor TFLOPS against
# 1000 FP16 for the H100 SXM5, about 1/16 of 4096; s4 (emulated on sm_90a) as s8.
MMA_SYNC_SIZING_PEAK = {"f64": 256, "i4": 8192}

# one form per type kind the brief of issue 58 names; every form's A and B layouts are .row.col
MMA_SYNC_TIMED = (
    MS.MmaForm("m16n8k16", "f16", "f16", "f16", "f16"),
    MS.MmaForm("m16n8k16", "f32", "f16", "f16", "f32"),
    MS.MmaForm("m16n8k16", "f32", "bf16", "bf16", "f32"),
    MS.MmaForm("m16n8k8", "f32", "tf32", "tf32", "f32"),
    MS.MmaForm("m16n8k32", "s32", "s8", "s8", "s32"),
    MS.MmaForm("m16n8k32", "f32", "e4m3", "e4m3", "f32"),  # ptxas: conversions and two f16 HMMAs of K 16
    MS.MmaForm("m16n8k64", "s32", "s4", "s4", "s32"),  # emulated on sm_90a: a call of ptxas's routine per mma
    MS.MmaForm("m16n8k256", "s32", "b1", "b1", "s32", bitop="and.popc"),
    MS.MmaForm("m16n8k16", "f64", "f64", "f64", "f64"),
    MS.MmaForm("m8n8k4", "f64", "f64", "f64", "f64"),
    MS.MmaForm("m16n8k32", "f32", "f16", "f16", "f32", MS.Sparsity.SP_ORDERED, selector=0),
)


@dataclass(frozen=True)
class MmaSyncTiming:
    form: MS.MmaForm
    family = "mma_sync"
    archs = ("sm_90a",)
    a_src = "regs"  # A and B in registers: no SS/RS/TS, no swizzle, no CTA group
    swizzle = None
    cta_group = None

    @property
    def atype(self) -> str:
        return self.form.atype

    @property
    def btype(self) -> str:
        return self.form.btype

    @property
    def dtype(self) -> str:
        return self.form.dtype

    @property
    def kind(self) -> str:
        return MS.KIND_OF[self.form.atype]

    @property
    def m(self) -> int:
        return self.form.mnk[0]

    @property
    def n(self) -> int:
        return self.form.mnk[1]

    @property
    def k(self) -> int:
        """The ISA's K (for mma.sp the logical, uncompressed K)."""
        return self.form.mnk[2]

    @property
    def sparse(self) -> bool:
        return self.form.sparse

    @property
    def key(self) -> MS.KernelKey:
        return MS.key_of(self.form)

    @property
    def module_name(self) -> str:
        f = self.form
        return (f"time_mmasync_{f.shape.value}_{f.dtype}_{f.atype}" + ("_sp" if f.sparse else "")
                + (f"_{f.bitop.value.replace('.', '')}" if f.bitop else ""))

    @property
    def id(self) -> str:
        """The instruction without `.aligned` and `.row.col` (every timed form has both)."""
        return self.form.instruction().replace(".aligned", "").replace(".row.col", "")

    @property
    def flop(self) -> int:
        return 2 * self.m * self.n * self.k

    def facets(self) -> dict:
        f = self.form
        return {"family": self.family, "kind": self.kind, "atype": self.atype, "btype": self.btype,
                "dtype": self.dtype, "m": self.m, "n": self.n, "k": self.k, "a_src": self.a_src,
                "swizzle": None, "cta_group": None, "sparsity": f.sparsity.value, "selector": f.selector,
                "bitop": f.bitop.value if f.bitop else None, "peak_basis": MMA_SYNC_PEAK_BASIS}

    def peak(self) -> int | None:
        kind = MMA_SYNC_PEAK_KIND[self.kind]
        dense = H100_PEAK_PER_CLK_SM[kind] if kind else None
        return dense * 2 if dense and self.sparse else dense

    def sizing_peak(self) -> int | None:
        return self.peak() or MMA_SYNC_SIZING_PEAK.get(self.kind)

    def reference(self) -> dict | None:
        return None


def mma_sync_default() -> list[MmaSyncTiming]:
    return [MmaSyncTiming(f) for f in MMA_SYNC_TIMED]


def all_default() -> list:
    return wgmma_default() + mma_sync_default() + tcgen05_default()


def select(forms_, match=None, kinds=None, n_values=None, a_srcs=None, swizzles=None, families=None,
           cta_groups=None) -> list:
    """The forms the filters keep (each filter a collection; None keeps all)."""
    out = []
    for f in forms_:
        if match and match not in f.id:
            continue
        if kinds and f.kind not in kinds and f.atype not in kinds:
            continue
        if n_values and f.n not in n_values:
            continue
        if a_srcs and f.a_src not in a_srcs:
            continue
        if swizzles and f.swizzle not in swizzles:
            continue
        if families and f.family not in families:
            continue
        if cta_groups and f.cta_group not in cta_groups:
            continue
        out.append(f)
    return out
