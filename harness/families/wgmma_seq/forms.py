"""Sequences of wgmma.mma_async in one kernel (sm_90a), as data: the kernel keys and their runtime variants.

A *sequence key* fixes what is compiled into one kernel: the pattern (harness.enums.SeqPattern), how a step's
descriptor is derived from the base descriptor (DescStep: `add.s64` or `or.b64` on the 64-bit descriptor), the
instruction every step issues (a dense wgmma KernelKey: kind, N, accumulator, A source) and the number of steps.
Inside one kernel a runtime switch picks the variant (A/B types, imm-trans-a/b), as in the dense family; the
variants here keep imm-scale-a/b = +1 and .satfinite off: a sequence tests what happens between the
instructions, the dense sweep already tests every immediate of one.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from harness.enums import DescStep, SeqPattern
from harness.families.wgmma import forms as wgmma_forms

WARPGROUP = 128  # threads
MAX_STEPS = 4  # the kernel's parameter record has room for this many step offsets per operand
# The kernel aligns its shared-memory window to this many bytes and the host places every operand on such a
# boundary: an `or` of an advance below it into the start field then equals an add (the window's own address
# bits are clear there); the reference checks that claim case by case.
WINDOW_ALIGN = 8192


@dataclass(frozen=True)
class SeqKey:
    pattern: SeqPattern
    inst: wgmma_forms.KernelKey  # the instruction every step issues (M = 64 per warpgroup)
    step_op: DescStep
    steps: int

    def __post_init__(self):
        wgmma_forms.validate_key(self.inst)
        if not isinstance(self.pattern, SeqPattern) or not isinstance(self.step_op, DescStep):
            raise ValueError(f"pattern and step_op are SeqPattern and DescStep, not {self.pattern!r}, "
                             f"{self.step_op!r}")
        if not 1 <= self.steps <= MAX_STEPS:
            raise ValueError(f"a sequence has 1..{MAX_STEPS} steps, not {self.steps}")
        if self.pattern == SeqPattern.K_LOOP and (self.inst.a_src != "SS" or self.steps < 2):
            raise ValueError("a K-loop takes A and B from shared memory (SS) over at least 2 steps")
        if self.pattern == SeqPattern.RS_PIPELINE and (self.inst.a_src != "RS" or self.steps < 2):
            raise ValueError("the RS pipeline takes A from registers (RS) over at least 2 steps")
        if self.step_op == DescStep.OR and self.pattern != SeqPattern.K_LOOP:
            raise ValueError("the or-advance is a K-loop form; the other patterns advance by add")
        if self.inst.kind == "b1":
            raise ValueError("b1 sequences are not built: b1 has one variant and no exact-accumulation question")

    @property
    def warpgroups(self) -> int:
        return 2 if self.pattern == SeqPattern.TWO_WARPGROUPS else 1

    @property
    def m(self) -> int:
        return wgmma_forms.M * self.warpgroups

    @property
    def threads(self) -> int:
        return WARPGROUP * self.warpgroups

    @property
    def name(self) -> str:
        i = self.inst
        return (f"wgmmaseq_{i.kind}_m{self.m}n{i.n}k{i.k}x{self.steps}_{self.pattern}_{self.step_op}_"
                f"{i.dtype}_{i.a_src}")


@lru_cache(maxsize=None)
def variants(key: SeqKey) -> tuple[wgmma_forms.Variant, ...]:
    """The variants a sequence kernel compiles, in runtime-switch order: the dense form's, with imm-scale +1
    and no .satfinite."""
    return tuple(v for v in wgmma_forms.variants(key.inst)
                 if v.scale_a == 1 and v.scale_b == 1 and not v.satfinite)


def all_keys() -> list[SeqKey]:
    """Every sequence kernel of the sweep. Few on purpose (each compiles in about a second): a K-loop per input
    kind and per advance (add, or), the RS pipeline per input kind with N large enough to press on registers,
    and two warpgroups per A source."""
    K = wgmma_forms.KernelKey
    out = [SeqKey(pattern=SeqPattern.K_LOOP, inst=inst, step_op=op, steps=MAX_STEPS)
           for op in (DescStep.ADD, DescStep.OR)
           for inst in (K("f16", 32, "f32", "SS"), K("tf32", 32, "f32", "SS"), K("f8", 32, "f32", "SS"),
                        K("s8", 32, "s32", "SS"))]
    out += [SeqKey(pattern=SeqPattern.RS_PIPELINE, inst=inst, step_op=DescStep.ADD, steps=MAX_STEPS)
            for inst in (K("f16", 256, "f32", "RS"), K("tf32", 64, "f32", "RS"), K("f8", 128, "f32", "RS"),
                         K("s8", 128, "s32", "RS"))]
    out += [SeqKey(pattern=SeqPattern.TWO_WARPGROUPS, inst=K("f16", 64, "f32", src), step_op=DescStep.ADD, steps=2)
            for src in ("SS", "RS")]
    return out


U64 = (1 << 64) - 1


def advance(desc: int, step: int, op: DescStep) -> int:
    """What a kernel's step instruction makes of a 64-bit descriptor: add.s64 (modulo 2**64) or or.b64."""
    return (desc + step) & U64 if op == DescStep.ADD else desc | step
