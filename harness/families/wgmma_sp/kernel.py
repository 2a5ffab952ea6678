"""The wgmma.mma_async.sp kernel: families/wgmma/wgmma.cu (the dense family's template) with one more per-thread input,
the metadata register, and the asm statement of the sparse variants; and a launch of prepared cases (the dense
launch plus the metadata registers)."""
from __future__ import annotations

import re

import numpy as np

from harness.contract import LaunchInput, SassCheck, SassRule
from harness.families.wgmma import kernel as dense
from harness.families.wgmma_sp import forms
from harness.families.wgmma_sp.reference import Prepared

META_PARAM = "\n                const unsigned int* __restrict__ e_regs,"  # after c_regs: LaunchInput input order
META_LOAD = "\n    const unsigned int meta = e_regs[slot];"


def source(key: forms.KernelKey) -> str:
    """The kernel of one sparse key, with every variant; operands as the dense kernel's (C's and D's addresses, A,
    B, scale-d) followed by the metadata register; the sparsity selector is an immediate of each variant's instruction."""
    forms.validate_key(key)
    ops = dense.memory_operands(key.dense)
    meta_op = f"%{ops.next_operand}"
    variants = [(f"{v.tag(key.dtype)} trans_a={v.trans_a} trans_b={v.trans_b}",
                 forms.instruction(key, v, ops.d_ops, ops.a_op, ops.b_op, meta_op, "p"))
                for v in forms.variants(key)]
    return dense.fill_template(key.name, key.dense, dense.a_registers(key.dense) + META_LOAD,
                               ops.dispatch(variants, extra_inputs=('"r"(meta)',)), META_PARAM)


def pack(preps: list[Prepared]) -> LaunchInput:
    """The dense launch of the prepared cases with each CTA's metadata registers (uint32 [128]) added."""
    base = dense.pack(preps)
    e_regs = np.stack([p.e_regs for p in preps]).astype(np.uint32)
    return LaunchInput(base.images, base.params, {**base.inputs, "e_regs": e_regs}, base.outputs)


def sass_opcode(key: forms.KernelKey, v: forms.Variant) -> str:
    """The SASS opcode of one sparse variant (read off sm_90a cubins): HGMMA.SP (f16, bf16, tf32), QGMMA.SP (fp8),
    IGMMA.SP (s8/u8), with the dense form's modifiers."""
    return dense.sass_opcode(key.dense, v).replace("GMMA.", "GMMA.SP.", 1).replace(
        f"x{key.dense.k}.", f"x{key.k}.", 1)


def sass_check(key: forms.KernelKey) -> SassCheck:
    """What a sparse kernel's SASS must show: each variant's sparse opcode with A from a descriptor (SS) or
    registers (RS) and, for HGMMA.SP, the variant's selector as its last immediate (QGMMA.SP and IGMMA.SP print
    none: theirs is always 0)."""
    a = dense.sass_a_operand(key.a_src)
    rules: dict[tuple[str, int], list[str]] = {}
    for v in forms.variants(key):
        rules.setdefault((sass_opcode(key, v), v.selector), []).append(v.tag(key.dtype))
    out = []
    for (op, sel), tags in rules.items():
        operands = a + (rf".*, 0x{sel}(, gsb0)?$" if op.startswith("HGMMA") else "")
        out.append(SassRule(re.escape(op), f"{op} (selector {sel}) for {', '.join(tags)}, one per variant",
                            count=len(tags), operands=operands))
    return SassCheck("sm_90a", (*out, dense.no_other_gmma(len(forms.variants(key)))), function=key.name)
