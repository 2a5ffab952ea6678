"""The sm_120a / sm_121a kernels of the `.kind::` mma forms and the sub-byte ldmatrix (block_scaled.py): kernel keys,
CUDA source (mma_sync_sm120.cu, beside it), SASS rules and the launch of prepared cases (`pack`; the inputs and
expected registers are reference_sm120.py's, the diff readback_sm120.py's). No sm_120 GPU exists here or anywhere in
the project: on every machine so far their cases are recorded not-run, and the launch path has run on the simulated
device of tests/simulated/mma_sync_sm120_device.py only.

Nine kernels an arch: one per group of forms that share every register count and type (the kind's class, dense or
sparse, the accumulator), each form a variant behind a uniform branch (as kernel.py's), and one kernel of the six
sub-byte ldmatrix forms. A block-scaled kernel's variants are every type / scale combination with the scale
selectors 0, and three more that give each selector component every value Table 37 allows (spread over the type
pairs, not crossed: 3,400 selector combinations would be as many mma blocks).

What ptxas (NVRTC 13.5) makes of them on sm_120a and sm_121a, read off nvdisasm (one tensor instruction a form, no
emulation call):
  kind::f8f6f4             QMMA.16832.<D>.<A>.<B>               sparse: QMMA.SP.16864.<D>.<A>.<B>
  kind::mxf8f6f4           QMMA.SF.16832.F32.<A>.<B>.E8         sparse: QMMA.SF.SP.16864.F32.<A>.<B>.E8
  kind::mxf4, mxf4nvf4     OMMA.SF.16864.F32.E2M1.E2M1.<S>      sparse: OMMA.SF.SP.168128.F32.E2M1.E2M1.<S>
     <S>: E8 (.ue8m0 .scale_vec::2X, mxf4 and mxf4nvf4 alike), E8.4X (.ue8m0 4X), UE4M3.4X (.ue4m3 4X)
  ldmatrix .m8n16 .b8x16   LDSM.U4x16P64TO8.M816[.2|.4], LDSM.U6x16P32TO8.M816[.2|.4]
The four scale selectors travel as a uniform register operand of the QMMA.SF / OMMA.SF: URZ where all four are 0.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from harness import kernels
from harness.contract import LaunchInput, OutputSpec, SassCheck, SassRule
from harness.families.mma_sync import block_scaled as BS
from harness.families.mma_sync.cases import ExactCase
from harness.families.mma_sync.reference import POISON

HERE = Path(__file__).resolve().parent
GROUPS = ("f8f6f4", "mxf8f6f4", "mxf4", "ldmatrix")  # mxf4 and mxf4nvf4 share their registers: one group


@dataclass(frozen=True)
class Sm120Key:
    """The forms one sm_120a kernel issues: kind group `group` ('f8f6f4', 'mxf8f6f4', 'mxf4' = mxf4 and mxf4nvf4, or
    'ldmatrix': the sub-byte loads), dense or sparse, accumulating in `dtype`."""
    group: str
    sparse: bool = False
    dtype: str = "f32"

    def __post_init__(self):
        if self.group not in GROUPS:
            raise ValueError(f"group {self.group!r} is not one of {', '.join(GROUPS)}")
        if self.group == "ldmatrix" and (self.sparse or self.dtype != "f32"):
            raise ValueError("the ldmatrix kernel has no sparsity or accumulator")
        if self.group != "ldmatrix" and not variants(self):
            raise ValueError(f"no sm_120a form of kind group {self.group} is {'sparse' if self.sparse else 'dense'} "
                             f"with a {self.dtype} accumulator")

    @property
    def kind(self) -> str:
        """The `kind` facet of its cases."""
        return self.group

    @property
    def shape(self):
        return None if self.group == "ldmatrix" else variants(self)[0].shape

    @property
    def mnk(self) -> tuple[int, int, int]:
        return (8, 16, 0) if self.group == "ldmatrix" else self.shape.mnk

    @property
    def name(self) -> str:
        if self.group == "ldmatrix":
            return "mmasync120_ldmatrix_m8n16_b8x16"
        return f"mmasync120_{self.shape.value}_{self.group}_{self.dtype}_{'sp' if self.sparse else 'dense'}"


def _group_of(form: BS.BlockScaledForm) -> str:
    return "mxf4" if form.kind in ("mxf4", "mxf4nvf4") else form.kind


def _spread_selectors(scale_vec: str) -> list[tuple[int, int, int, int]]:
    """Selector combinations 1.. that, with all-zero, give each component every legal value (component i of
    combination j is its legal values[j % count])."""
    legal = (BS.BYTE_IDS[scale_vec], BS.THREAD_IDS_A, BS.BYTE_IDS[scale_vec], BS.THREAD_IDS_B)
    n = max(len(x) for x in legal)
    return [tuple(x[j % len(x)] for x in legal) for j in range(1, n)]


@lru_cache(maxsize=None)
def variants(key: Sm120Key):
    """The forms (BlockScaledForm) or loads (SubByteLoad) a kernel issues; a variant index is a position here."""
    if key.group == "ldmatrix":
        return BS.SUB_BYTE_LOADS
    base = [f for f in BS.all_forms() if (_group_of(f), f.sparse, f.dtype) == (key.group, key.sparse, key.dtype)]
    out = list(base)
    if key.group != "f8f6f4":
        for scale_vec in dict.fromkeys(f.scale_vec for f in base):
            of_size = [f for f in base if f.scale_vec == scale_vec]
            for j, sel in enumerate(_spread_selectors(scale_vec)):
                f = of_size[(7 * (j + 1)) % len(of_size)]
                out.append(BS.BlockScaledForm(f.kind, f.atype, f.btype, f.dtype, f.ctype, f.sparse, f.stype,
                                              f.scale_vec, *sel))
    return tuple(out)


@lru_cache(maxsize=None)
def all_keys() -> tuple[Sm120Key, ...]:
    keys = dict.fromkeys(Sm120Key(_group_of(f), f.sparse, f.dtype) for f in BS.all_forms())
    return tuple(keys) + (Sm120Key("ldmatrix"),)


# ------------------------------------------------------------------------------------------------ the source

def words(key: Sm120Key) -> dict[str, int]:
    """32-bit words a lane holds of A, B, C and the output D."""
    if key.group == "ldmatrix":
        return {"A": 1, "B": 1, "C": 1, "D": 4}
    f = variants(key)[0]
    acc = BS.acc_map(f).registers
    return {"A": BS.a_map(f).registers, "B": BS.b_map(f).registers, "C": acc, "D": acc}


def _block(key: Sm120Key, i: int) -> list[str]:
    """The PTX lines of variant i (operands: %0.. the outputs, then A, B, C, e, sfa, sfb; or the row address)."""
    v = variants(key)[i]
    if key.group == "ldmatrix":
        regs = "{" + ", ".join(f"%{j}" for j in range(v.num)) + "}"
        return [f"{v.instruction()} {regs}, [%4];"]
    w = words(key)
    at = 0
    groups = []
    for n in (w["D"], w["A"], w["B"], w["C"]):
        groups.append("{" + ", ".join(f"%{at + j}" for j in range(n)) + "}")
        at += n
    e, sfa, sfb = f"%{at}", f"%{at + 1}", f"%{at + 2}"
    ops = ", ".join(groups)
    if v.sparse:
        ops += f", {e}, 0x0"
    if v.block_scaled:
        ops += ", " + v.scale_operands(sfa, sfb)
    return [f"{v.instruction()} {ops};"]


def dispatch(key: Sm120Key, only_variant: int | None = None) -> str:
    w = words(key)
    f32 = key.group != "ldmatrix" and key.dtype == "f32"
    dcon = "f" if f32 else "r"
    dvar = (lambda j: f"dr[{j}]") if f32 else (lambda j: f"d[{j}]")
    if key.group == "ldmatrix":
        outputs = ", ".join(f'"+r"(d[{j}])' for j in range(4))
        inputs = '"r"(row)'
        sel = 5
    else:
        outputs = ", ".join(f'"+{dcon}"({dvar(j)})' for j in range(w["D"]))
        cvar = (lambda j: f"__uint_as_float(c[{j}])") if f32 else (lambda j: f"c[{j}]")
        inputs = ", ".join([f'"r"(a[{j}])' for j in range(w["A"])] + [f'"r"(b[{j}])' for j in range(w["B"])]
                           + [f'"{dcon}"({cvar(j)})' for j in range(w["C"])] + ['"r"(e)', '"r"(sfa)', '"r"(sfb)'])
        sel = w["D"] + w["A"] + w["B"] + w["C"] + 3
    lines = [".reg .pred v;"]
    chosen = [i for i in range(len(variants(key))) if only_variant is None or i == only_variant]
    for i in chosen:
        lines += [f"setp.eq.u32 v, %{sel}, {i};", f"@v bra.uni TC_VARIANT_{i};"]
    lines.append("bra.uni TC_DONE;")
    for i in chosen:
        v = variants(key)[i]
        what = v.instruction() if key.group == "ldmatrix" else v.describe()
        lines += [f"TC_VARIANT_{i}:  // {what}", *_block(key, i), "bra.uni TC_DONE;"]
    lines.append("TC_DONE:")
    body = "\n".join(f'        "{ln}\\n"' for ln in lines)
    pre, post = "", ""
    if f32:
        pre = (f"    float dr[{w['D']}];\n    for (int i = 0; i < {w['D']}; ++i) dr[i] = __uint_as_float(d[i]);\n")
        post = f"\n    for (int i = 0; i < {w['D']}; ++i) d[i] = __float_as_uint(dr[i]);"
    return (f'{pre}    asm volatile("{{\\n"\n{body}\n        "}}\\n"\n        : {outputs}\n'
            f'        : {inputs}, "r"(p.variant) : "memory");{post}')


def source(key: Sm120Key, only_variant: int | None = None, name: str | None = None) -> str:
    w = words(key)
    return kernels.fill(kernels.template("mma_sync_sm120.cu", HERE), KERNEL_NAME=name or key.name,
                        A_WORDS=w["A"], B_WORDS=w["B"], C_WORDS=w["C"], D_WORDS=w["D"], POISON=f"{POISON:#x}",
                        DISPATCH=dispatch(key, only_variant))


# ------------------------------------------------------------------------------------------------ the SASS

_SCALE_SASS = {("ue8m0", "1X"): "E8", ("ue8m0", "2X"): "E8", ("ue8m0", "4X"): "E8.4X", ("ue4m3", "4X"): "UE4M3.4X"}


def sass_expected(v) -> str:
    """The one SASS instruction ptxas makes of a form or sub-byte load on sm_120a / sm_121a (the table above)."""
    if isinstance(v, BS.SubByteLoad):
        src = "U4x16P64TO8" if v.bits == 4 else "U6x16P32TO8"
        return f"LDSM.{src}.M816" + (f".{v.num}" if v.num > 1 else "")
    m, n, k = v.mnk
    unit = "QMMA" if v.kind in ("f8f6f4", "mxf8f6f4") else "OMMA"
    mods = (".SF" if v.block_scaled else "") + (".SP" if v.sparse else "")
    tail = f".{_SCALE_SASS[(v.stype, v.scale_vec)]}" if v.block_scaled else ""
    return f"{unit}{mods}.{m}{n}{k}.{v.dtype.upper()}.{v.atype.upper()}.{v.btype.upper()}{tail}"


TENSOR_OPCODE = r"[HIDBQO]MMA(\..*)?"


def sass_check(key: Sm120Key, arch: str) -> SassCheck:
    """Each variant's instruction and no other tensor-core instruction, ldmatrix or call (exact counts summed over
    the variants: a dropped variant shows); for the block-scaled kernels, the all-zero-selector variants' scale
    selectors as URZ and every other variant's as a uniform register (the selectors reach the instruction)."""
    counts = Counter(sass_expected(v) for v in variants(key))
    rules = [SassRule(re.escape(op), f"{op} of the variants that issue it", count=n)
             for op, n in sorted(counts.items())]
    total = sum(counts.values())
    if key.group == "ldmatrix":
        rules.append(SassRule(r"LDSM(\..*)?", f"{total} sub-byte ldmatrix of its variants, and no other", count=total))
        rules.append(SassRule(TENSOR_OPCODE, "no tensor-core instruction", count=0))
    else:
        rules.append(SassRule(TENSOR_OPCODE, f"{total} tensor-core instructions of its variants, and no other",
                              count=total))
        rules.append(SassRule(r"LDSM(\..*)?", "no ldmatrix", count=0))
        if key.group != "f8f6f4":
            zero = sum(1 for v in variants(key) if not any(v.selectors))
            rules.append(SassRule(r"[QO]MMA\.SF(\..*)?", f"the scale selectors of its {zero} all-zero-selector "
                                  "variants as URZ", count=zero, operands=r"\bURZ\b"))
            rules.append(SassRule(r"[QO]MMA\.SF(\..*)?", f"the scale selectors of its {total - zero} other variants "
                                  "in a uniform register", count=total - zero, operands=r"\bUR\d+\b"))
    rules.append(SassRule(r"CALL(\..*)?", "no call: sm_120a has a datapath for every form here", count=0))
    return SassCheck(arch, tuple(rules), function=key.name)


def arch_kernels(arch: str) -> list:
    """The kernels of an arch (sm_120a or sm_121a: the same sources, the same names), as the family's Kernel
    objects: `FAMILY.source` / `FAMILY.sass_check` take them, so the harness's compile path (run/compile.compile_job)
    builds and checks them; `FAMILY.prepare` / `FAMILY.readback` launch and diff sm_120a's."""
    from harness.contract import Kernel
    if arch not in BS.ARCHS:
        raise ValueError(f"the .kind:: mma forms are sm_120a / sm_121a code, not {arch}")
    return [Kernel("mma_sync", arch, k.name, k) for k in all_keys()]


# ------------------------------------------------------------------------------------------------- the cases

@dataclass(frozen=True)
class Sm120Case(ExactCase):
    """One variant of an sm_120a kernel: planned, compiled and SASS-checked, and recorded `not-run` with the reason
    wherever no sm_120 GPU is (every machine this harness has met). Its inputs and expected registers come from its
    seed (reference_sm120.prepare), its launch from `pack`, its record from readback_sm120.diff_launch."""
    key: Sm120Key
    variant_index: int

    def __post_init__(self):
        if not isinstance(self.key, Sm120Key):
            raise ValueError(f"an sm_120 case's key is an Sm120Key, not {type(self.key).__name__}")
        if not 0 <= self.variant_index < len(variants(self.key)):
            raise ValueError(f"{self.key.name} has {len(variants(self.key))} variants, not index {self.variant_index}")

    @property
    def variant(self):
        return variants(self.key)[self.variant_index]

    @property
    def id(self) -> str:
        v = self.variant
        if self.key.group == "ldmatrix":
            return f"sm120-ldmatrix-m8n16-x{v.num}-{v.src}"
        sel = "" if v.selectors == (0, 0, 0, 0) else "-sel" + "".join(map(str, v.selectors))
        scale = f"-{v.stype}-{v.scale_vec}" if v.block_scaled else ""
        return (f"sm120-{v.shape.value}-{v.kind}{'-sp' if v.sparse else ''}-{v.dtype}.{v.atype}.{v.btype}.{v.ctype}"
                f"{scale}{sel}")

    @property
    def control(self) -> str:
        return ""


def cases_for_key(key: Sm120Key) -> list[Sm120Case]:
    """Every variant of the kernel, one case each."""
    return [Sm120Case(key, i) for i in range(len(variants(key)))]


# ------------------------------------------------------------------------------------------------- the launch

PARAMS_DTYPE = np.dtype([("image_offset", "<u8"), ("image_bytes", "<u4"), ("variant", "<u4")])  # CaseParams
assert PARAMS_DTYPE.itemsize == 16
THREADS = 32


def pack(preps: list) -> LaunchInput:
    """One launch of prepared sm_120a cases (reference_sm120.Sm120Prepared, all of one kernel), in the order of the
    kernel's parameters: images, params, a_in, b_in, c_in, e_in, sf_in, ld_rows, then d_out (poisoned before the
    launch: a register the kernel never wrote shows)."""
    if not preps:
        raise ValueError("a launch packs one prepared case or more")
    key = preps[0].case.key
    if any(p.case.key != key for p in preps):
        raise ValueError(f"a launch is of one kernel: {key.name} and others were packed together")
    if any(p.image is None for p in preps):
        raise ValueError("a slimmed preparation has no inputs left to launch")
    n = len(preps)
    w = words(key)
    params = np.zeros(n, PARAMS_DTYPE)
    sizes = np.array([p.image.size for p in preps], dtype=np.int64)
    params["image_offset"] = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    params["image_bytes"] = sizes
    params["variant"] = [p.launch_variant for p in preps]
    inputs = {"a_in": np.stack([p.a_words for p in preps]).reshape(n, THREADS, w["A"]),
              "b_in": np.stack([p.b_words for p in preps]).reshape(n, THREADS, w["B"]),
              "c_in": np.stack([p.c_words for p in preps]).reshape(n, THREADS, w["C"]),
              "e_in": np.stack([p.e_words for p in preps]).reshape(n, THREADS),
              "sf_in": np.stack([p.sf_words for p in preps]).reshape(n, THREADS, 2),
              "ld_rows": np.stack([p.ld_rows for p in preps]).reshape(n, THREADS)}
    outputs = {"d_out": OutputSpec((THREADS, w["D"]), "uint32", POISON)}
    return LaunchInput(np.concatenate([p.image for p in preps]), params, inputs, outputs, 1, THREADS)
