"""The wgmma.mma_async.sp kernel: kernels/wgmma.cu (the dense family's template) with one more per-thread input,
the metadata register, and one asm statement per sparse variant; and a launch of prepared cases (the dense
launch plus the metadata registers)."""
from __future__ import annotations

import numpy as np

from harness.families.wgmma import kernel as dense
from harness.families.wgmma_sp import forms
from harness.families.wgmma_sp.reference import Prepared
from harness.run.launch import LaunchInput

META_PARAM = "\n                const unsigned int* __restrict__ e_regs,"  # after c_regs: LaunchInput input order
META_LOAD = "\n    const unsigned int meta = e_regs[slot];"


def source(key: forms.KernelKey) -> str:
    """The kernel of one sparse key, with every variant; operands as the dense kernel's (D, A, B, scale-d)
    followed by the metadata register; the selector is an immediate of each variant's statement."""
    forms.validate_key(key)
    ops = dense.asm_operands(key.dense)
    meta_op = f"%{ops.next_operand}"
    inputs = ops.inputs + ', "r"(meta)'
    cases = []
    for idx, v in enumerate(forms.variants(key)):
        text = forms.instruction(key, v, ops.d_ops, ops.a_op, ops.b_op, meta_op, "p")
        cases.append(dense.switch_case(idx, f"{v.tag(key.dtype)} trans_a={v.trans_a} trans_b={v.trans_b}",
                                       ops.scale_op, text, ops.outputs, inputs))
    return dense.fill_template(key.name, key.dense, dense.a_registers(key.dense) + META_LOAD, cases, META_PARAM)


def pack(preps: list[Prepared]) -> LaunchInput:
    """The dense launch of the prepared cases with each CTA's metadata registers (uint32 [128]) added."""
    base = dense.pack(preps)
    e_regs = np.stack([p.e_regs for p in preps]).astype(np.uint32)
    return LaunchInput(base.images, base.params, {**base.inputs, "e_regs": e_regs}, base.outputs)
