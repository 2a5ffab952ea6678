"""The warp-level mma.sync / mma.sp forms of PTX ISA 9.7.14 that an H100 (sm_90a) executes, as data.

A form fixes every qualifier and immediate of one instruction: the shape, the four types (D, A, B, C), the
layouts of A and B (.row/.col: only m8n8k4 .f16 takes any other than .row.col), .satfinite, the single-bit
operation, and for mma.sp the metadata kind (plain `.sp` or `.sp::ordered_metadata`) and the sparsity selector
(an immediate). `MmaForm.__post_init__` refuses, in one sentence, every combination the ISA does not define;
`all_forms()` lists every legal one.

Where a form came in (PTX ISA "Target ISA notes" / "PTX ISA notes" of mma and mma.sp; the e4m3/e5m2 versions
as LLVM's NVPTX test generator, llvm/test/CodeGen/NVPTX/wmma.py, gates them):
  m8n8k4 .f16                              sm_70, PTX 6.4 (on sm_80+ "substantially reduced performance")
  m16n8k8 .f16, m8n8k16 s8, m8n8k32 s4,
  m8n8k128 .b1 .xor.popc                   sm_75, PTX 6.5
  bf16, tf32, f64 m8n8k4, m16n8k16/k32/k64
  integer, b1 m16n8k128/k256               sm_80, PTX 7.0 (.and.popc: PTX 7.1)
  f64 m16n8k4/k8/k16                       sm_90, PTX 7.8
  m16n8k32 e4m3/e5m2 .f32                  sm_89, PTX 8.4
  m16n8k32 e4m3/e5m2 .f16, m16n8k16 e4m3/e5m2  sm_89, PTX 8.7
  mma.sp (every shape below)               sm_80, PTX 7.1; e4m3/e5m2 sm_89, PTX 8.4
  mma.sp::ordered_metadata                 sm_80, PTX 8.5
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache


class _Str(str, Enum):
    def __str__(self) -> str:
        return self.value


class Shape(_Str):
    M8N8K4 = "m8n8k4"
    M8N8K16 = "m8n8k16"
    M8N8K32 = "m8n8k32"
    M8N8K128 = "m8n8k128"
    M16N8K4 = "m16n8k4"
    M16N8K8 = "m16n8k8"
    M16N8K16 = "m16n8k16"
    M16N8K32 = "m16n8k32"
    M16N8K64 = "m16n8k64"
    M16N8K128 = "m16n8k128"
    M16N8K256 = "m16n8k256"

    @property
    def mnk(self) -> tuple[int, int, int]:
        m, rest = self.value[1:].split("n")
        n, k = rest.split("k")
        return int(m), int(n), int(k)


class Sparsity(_Str):
    DENSE = "dense"  # mma.sync
    SP = "sp"  # mma.sp.sync: metadata indices in any order
    SP_ORDERED = "sp::ordered_metadata"  # mma.sp::ordered_metadata.sync: indices ascending within a chunk


class BitOp(_Str):
    XOR_POPC = "xor.popc"
    AND_POPC = "and.popc"


class MatrixLayout(_Str):
    ROW = "row"
    COL = "col"


F16_TYPES = ("f16", "bf16")
F8_TYPES = ("e4m3", "e5m2")
I8_TYPES = ("s8", "u8")
I4_TYPES = ("s4", "u4")
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8,
        "s4": 4, "u4": 4, "b1": 1, "s32": 32}


@dataclass(frozen=True)
class _Rule:
    """One row of the ISA's table of forms: the input types it takes, its (D, C) pairs, since when."""
    ab_types: tuple[tuple[str, str], ...]
    dc_types: tuple[tuple[str, str], ...]
    sm: int
    ptx: tuple[int, int]


def _same(*types):
    return tuple((t, t) for t in types)


def _mixed(types):
    return tuple(itertools.product(types, types))


_F32 = (("f32", "f32"),)
_S32 = (("s32", "s32"),)
_F16_ACC = (("f16", "f16"), ("f32", "f32"))
# m8n8k4 .f16 alone lets D and C differ, except that an .f32 C needs an .f32 D (LLVM's wmma.py is_mma_variant_supported)
_M8N8K4_ACC = (("f16", "f16"), ("f32", "f16"), ("f32", "f32"))

# shape -> the rules of its dense forms (ISA 9.7.14.5.14 "mma" syntax and its Target ISA notes)
DENSE_RULES: dict[Shape, tuple[_Rule, ...]] = {
    Shape.M8N8K4: (_Rule(_same("f16"), _M8N8K4_ACC, 70, (6, 4)), _Rule(_same("f64"), (("f64", "f64"),), 80, (7, 0))),
    Shape.M8N8K16: (_Rule(_mixed(I8_TYPES), _S32, 75, (6, 5)),),
    Shape.M8N8K32: (_Rule(_mixed(I4_TYPES), _S32, 75, (6, 5)),),
    Shape.M8N8K128: (_Rule(_same("b1"), _S32, 75, (6, 5)),),
    Shape.M16N8K4: (_Rule(_same("tf32"), _F32, 80, (7, 0)), _Rule(_same("f64"), (("f64", "f64"),), 90, (7, 8))),
    Shape.M16N8K8: (_Rule(_same("f16"), _F16_ACC, 75, (6, 5)), _Rule(_same("bf16", "tf32"), _F32, 80, (7, 0)),
                    _Rule(_same("f64"), (("f64", "f64"),), 90, (7, 8))),
    Shape.M16N8K16: (_Rule(_same("f16"), _F16_ACC, 80, (7, 0)), _Rule(_same("bf16"), _F32, 80, (7, 0)),
                     _Rule(_mixed(I8_TYPES), _S32, 80, (7, 0)), _Rule(_same("f64"), (("f64", "f64"),), 90, (7, 8)),
                     _Rule(_mixed(F8_TYPES), _F16_ACC, 89, (8, 7))),
    Shape.M16N8K32: (_Rule(_mixed(I8_TYPES), _S32, 80, (7, 0)), _Rule(_mixed(I4_TYPES), _S32, 80, (7, 0)),
                     _Rule(_mixed(F8_TYPES), _F32, 89, (8, 4)), _Rule(_mixed(F8_TYPES), (("f16", "f16"),), 89, (8, 7))),
    Shape.M16N8K64: (_Rule(_mixed(I4_TYPES), _S32, 80, (7, 0)),),
    Shape.M16N8K128: (_Rule(_same("b1"), _S32, 80, (7, 0)),),
    Shape.M16N8K256: (_Rule(_same("b1"), _S32, 80, (7, 0)),),
}

# shape -> the rules of its mma.sp forms (ISA 9.7.14.6.3 "mma.sp" syntax); K is the logical (uncompressed) K
SPARSE_RULES: dict[Shape, tuple[_Rule, ...]] = {
    Shape.M16N8K8: (_Rule(_same("tf32"), _F32, 80, (7, 1)),),
    Shape.M16N8K16: (_Rule(_same("f16"), _F16_ACC, 80, (7, 1)), _Rule(_same("bf16", "tf32"), _F32, 80, (7, 1))),
    Shape.M16N8K32: (_Rule(_same("f16"), _F16_ACC, 80, (7, 1)), _Rule(_same("bf16"), _F32, 80, (7, 1)),
                     _Rule(_mixed(I8_TYPES), _S32, 80, (7, 1))),
    Shape.M16N8K64: (_Rule(_mixed(I8_TYPES), _S32, 80, (7, 1)), _Rule(_mixed(I4_TYPES), _S32, 80, (7, 1)),
                     _Rule(_mixed(F8_TYPES), _F32, 89, (8, 4))),
    Shape.M16N8K128: (_Rule(_mixed(I4_TYPES), _S32, 80, (7, 1)),),
}

ORDERED_METADATA_PTX = (8, 5)
AND_POPC_PTX = (7, 1)


def chunk_elements(atype: str) -> int:
    """Elements of a row of sparse A that one 4-bit metadata field covers (ISA 9.7.14.6.1): 2:4 on 16- and
    8-bit types, 1:2 on .tf32, 2:4 on pairs (4:8) of 4-bit types."""
    return {32: 2, 16: 4, 8: 4, 4: 8}[BITS[atype]]


def kept_per_chunk(atype: str) -> int:
    """Non-zero elements of a chunk that the compressed A operand keeps."""
    return chunk_elements(atype) // 2


def metadata_threads(shape: Shape, atype: str) -> int:
    """Threads of each group of four that hold metadata: every row's metadata is 4 bits a chunk, the 16 rows
    together 16 * K / chunk * 4 bits, spread over 8 groups of 32-bit registers (ISA 9.7.14.6.1: one thread, a
    thread pair, or all four)."""
    k = Shape(shape).mnk[2]
    return (16 * (k // chunk_elements(atype)) * 4) // (8 * 32)


def selectors(shape: Shape, atype: str) -> tuple[int, ...]:
    """The legal sparsity selector values: which thread (or pair) of each group of four holds the metadata."""
    return tuple(range(4 // metadata_threads(shape, atype)))


@dataclass(frozen=True)
class MmaForm:
    shape: Shape
    dtype: str
    atype: str
    btype: str
    ctype: str
    sparsity: Sparsity = Sparsity.DENSE
    satfinite: bool = False
    bitop: BitOp | None = None  # .b1 forms only
    alayout: MatrixLayout = MatrixLayout.ROW
    blayout: MatrixLayout = MatrixLayout.COL
    selector: int | None = None  # mma.sp only: the sparsity selector immediate

    def __post_init__(self):
        for name, enum in (("shape", Shape), ("sparsity", Sparsity), ("alayout", MatrixLayout),
                           ("blayout", MatrixLayout)):
            try:
                object.__setattr__(self, name, enum(getattr(self, name)))
            except ValueError:
                raise ValueError(f"{name} {getattr(self, name)!r} is not one of "
                                 f"{', '.join(m.value for m in enum)}") from None
        if self.bitop is not None:
            try:
                object.__setattr__(self, "bitop", BitOp(self.bitop))
            except ValueError:
                raise ValueError(f"bitop {self.bitop!r} is not xor.popc or and.popc") from None
        problem = _why_illegal(self)
        if problem:
            raise ValueError(f"{self.describe()}: {problem}")

    @property
    def sparse(self) -> bool:
        return self.sparsity is not Sparsity.DENSE

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.shape.mnk

    @property
    def rule(self) -> _Rule:
        rules = (SPARSE_RULES if self.sparse else DENSE_RULES)[self.shape]
        return next(r for r in rules if (self.atype, self.btype) in r.ab_types
                    and (self.dtype, self.ctype) in r.dc_types)

    @property
    def min_sm(self) -> int:
        return self.rule.sm

    @property
    def min_ptx(self) -> tuple[int, int]:
        ptx = self.rule.ptx
        if self.sparsity is Sparsity.SP_ORDERED:
            ptx = max(ptx, ORDERED_METADATA_PTX)
        if self.bitop is BitOp.AND_POPC:
            ptx = max(ptx, AND_POPC_PTX)
        return ptx

    def describe(self) -> str:
        return (f"mma.{'sync' if not self.sparse else self.sparsity.value + '.sync'} {self.shape.value} "
                f"{self.alayout.value}.{self.blayout.value} {self.dtype}.{self.atype}.{self.btype}.{self.ctype}"
                + (" .satfinite" if self.satfinite else "") + (f" .{self.bitop.value}" if self.bitop else "")
                + (f" selector {self.selector}" if self.selector is not None else ""))

    def instruction(self) -> str:
        """The PTX opcode with its qualifiers (operands left to the kernel)."""
        head = "mma." + (self.sparsity.value + "." if self.sparse else "") + "sync.aligned"
        sat = ".satfinite" if self.satfinite else ""
        bitop = f".{self.bitop.value}" if self.bitop else ""
        return (f"{head}.{self.shape.value}.{self.alayout.value}.{self.blayout.value}{sat}"
                f".{self.dtype}.{self.atype}.{self.btype}.{self.ctype}{bitop}")


def _why_illegal(f: MmaForm) -> str | None:
    rules = (SPARSE_RULES if f.sparse else DENSE_RULES).get(f.shape)
    if rules is None:
        return f"{'mma.sp' if f.sparse else 'mma'} has no shape {f.shape.value}"
    if not any((f.atype, f.btype) in r.ab_types for r in rules):
        takes = sorted({f"{a}.{b}" for r in rules for a, b in r.ab_types})
        return f"{f.shape.value} takes A.B types {', '.join(takes)}, not {f.atype}.{f.btype}"
    if not any((f.atype, f.btype) in r.ab_types and (f.dtype, f.ctype) in r.dc_types for r in rules):
        dcs = sorted({f"{d}/{c}" for r in rules if (f.atype, f.btype) in r.ab_types for d, c in r.dc_types})
        return f"{f.atype} inputs accumulate as D/C {', '.join(dcs)}, not {f.dtype}/{f.ctype}"
    layouts = (f.alayout, f.blayout)
    if layouts != (MatrixLayout.ROW, MatrixLayout.COL) and not (f.shape is Shape.M8N8K4 and f.atype == "f16"):
        return "only m8n8k4 .f16 takes A/B layouts other than .row.col"
    is_int = f.atype in I8_TYPES + I4_TYPES
    if f.satfinite and not is_int:
        return ".satfinite is for the s8/u8/s4/u4 forms only"
    if (f.atype == "b1") != (f.bitop is not None):
        return "a .b1 form needs .xor.popc or .and.popc" if f.atype == "b1" else "only .b1 forms take a bit operation"
    if f.sparse:
        if f.selector not in selectors(f.shape, f.atype):
            return (f"the sparsity selector of {f.shape.value} .{f.atype} is one of "
                    f"{', '.join(map(str, selectors(f.shape, f.atype)))}, not {f.selector}")
    elif f.selector is not None:
        return "only mma.sp takes a sparsity selector"
    return None


@lru_cache(maxsize=None)
def all_forms(sm: int = 90, ptx: tuple[int, int] = (8, 7)) -> tuple[MmaForm, ...]:
    """Every legal form a GPU of compute capability `sm` runs under PTX ISA `ptx`, in a fixed order."""
    out = []
    for sparse, table in ((False, DENSE_RULES), (True, SPARSE_RULES)):
        for shape, rules in table.items():
            for rule in rules:
                if rule.sm > sm:
                    continue
                for (a, b), (d, c) in itertools.product(rule.ab_types, rule.dc_types):
                    sats = (False, True) if a in I8_TYPES + I4_TYPES else (False,)
                    bitops = tuple(BitOp) if a == "b1" else (None,)
                    layouts = (tuple(itertools.product(MatrixLayout, MatrixLayout))
                               if shape is Shape.M8N8K4 and a == "f16" else ((MatrixLayout.ROW, MatrixLayout.COL),))
                    kinds = (Sparsity.SP, Sparsity.SP_ORDERED) if sparse else (Sparsity.DENSE,)
                    sels = selectors(shape, a) if sparse else (None,)
                    for sat, op, (al, bl), kind, sel in itertools.product(sats, bitops, layouts, kinds, sels):
                        form = MmaForm(shape, d, a, b, c, kind, sat, op, al, bl, sel)
                        if form.min_ptx <= ptx:
                            out.append(form)
    return tuple(out)


# ------------------------------------------------------------------------------------------------ kernel keys
# One kernel per group of forms that share every register count and register type (the shape, the input types'
# class, D's and C's types, dense or sparse): its variants are the group's forms (signedness, .satfinite, the bit
# operation, m8n8k4's layouts, the metadata kind, the selector), each an immediate combination compiled in, and a
# case picks one at run time: the 246 forms of sm_90a are 37 kernels, not 246 NVRTC entries and SASS checks.

KIND_OF = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "f64": "f64", "e4m3": "f8", "e5m2": "f8", "s8": "i8",
           "u8": "i8", "s4": "i4", "u4": "i4", "b1": "b1"}
KINDS = ("f16", "tf32", "f64", "f8", "i8", "i4", "b1")


@dataclass(frozen=True)
class KernelKey:
    """The forms one kernel issues: those of `shape` whose A/B types are of class `kind` (KINDS), with D of type
    `dtype` and C of `ctype`, dense or sparse."""
    shape: Shape
    kind: str
    dtype: str
    ctype: str
    sparse: bool

    def __post_init__(self):
        try:
            object.__setattr__(self, "shape", Shape(self.shape))
        except ValueError:
            raise ValueError(f"shape {self.shape!r} is not an mma shape") from None
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not variants(self):
            raise ValueError(f"{self.name}: no mma form of sm_90a has this shape, kind, D/C types and sparsity")

    @property
    def name(self) -> str:
        acc = self.dtype if self.dtype == self.ctype else f"{self.dtype}{self.ctype}"
        return f"mmasync_{self.shape.value}_{self.kind}_{acc}_{'sp' if self.sparse else 'dense'}"

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.shape.mnk


def key_of(form: MmaForm) -> KernelKey:
    return KernelKey(form.shape, KIND_OF[form.atype], form.dtype, form.ctype, form.sparse)


@lru_cache(maxsize=None)
def variants(key: KernelKey) -> tuple[MmaForm, ...]:
    """The forms of a kernel key, in all_forms' order (the variant index a case launches is a position here)."""
    return tuple(f for f in all_forms() if (f.shape, KIND_OF[f.atype], f.dtype, f.ctype, f.sparse)
                 == (key.shape, key.kind, key.dtype, key.ctype, key.sparse))


@lru_cache(maxsize=None)
def all_kernel_keys() -> tuple[KernelKey, ...]:
    """Every kernel key of the sm_90a forms, in all_forms' order of first appearance."""
    return tuple(dict.fromkeys(key_of(f) for f in all_forms()))
