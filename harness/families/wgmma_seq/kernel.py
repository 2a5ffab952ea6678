"""The wgmma_seq kernel: its CUDA source (wgmma_seq.cu, beside it, filled in per sequence key) and a launch of
prepared cases (one CTA per case, one or two warpgroups).

Each step's wgmma is the dense family's asm statement (wgmma.kernel.asm_operands), named onto that step's
descriptors, A registers and scale-d. The patterns differ only in what lies between the statements:
  * K-loop and two warpgroups: the steps back to back into one accumulator (same shape: no fence needed
    between them, PTX ISA 9.7.15.5), one commit_group, one wait_group 0;
  * RS pipeline: step j's A registers are loaded after step j-1 is committed and before it is waited on, then
    wgmma.fence (the registers were written since the last fence), issue, commit, wait_group 1 (step j-1 is then
    complete and its A registers may be reused); the compiler must keep each step's registers untouched until
    its wait.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from harness import kernels
from harness.contract import WINDOW_SLACK, LaunchInput, OutputSpec, SassCheck, SassRule
from harness.enums import DescStep, SeqPattern
from harness.families.wgmma import kernel as wgmma_kernel
from harness.families.wgmma_seq import forms
from harness.families.wgmma_seq.reference import POISON, SeqPrepared

HERE = Path(__file__).resolve().parent  # the kernel's template sits beside this module

PARAMS_DTYPE = np.dtype([("image_offset", "<u8"), ("desc_a", "<u8"), ("desc_b", "<u8")]
                        + [(f"step_a{j}", "<u8") for j in range(forms.MAX_STEPS)]
                        + [(f"step_b{j}", "<u8") for j in range(forms.MAX_STEPS)]
                        + [("wg_a", "<u8"), ("image_bytes", "<u4"), ("variant", "<u4"), ("scale_d", "<u4"),
                           ("pad", "<u4")])
assert PARAMS_DTYPE.itemsize == 112
STEP_PTX = {DescStep.ADD: "add.s64", DescStep.OR: "or.b64"}
MAX_IMAGE = 160 * 1024  # the window's address plus the image stays inside the 14-bit start field


def _fence(indent: str) -> str:
    return f'{indent}asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");'


def _commit(indent: str) -> str:
    return f'{indent}asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");'


def _wait(indent: str, n: int) -> str:
    return f'{indent}asm volatile("wgmma.wait_group.sync.aligned {n};\\n" ::: "memory");'


def _load_a(j: int, indent: str) -> str:
    return (f"{indent}const uint4 q{j} = ar[{j}];\n"
            f"{indent}const unsigned int a{j}_0 = q{j}.x, a{j}_1 = q{j}.y, a{j}_2 = q{j}.z, a{j}_3 = q{j}.w;")


def _step(key: forms.SeqKey, v, j: int, indent: str) -> str:
    ops = wgmma_kernel.asm_operands(key.inst, desc_a=f"desc_a{j}", desc_b=f"desc_b{j}",
                                    scale_d="p.scale_d" if j == 0 else "one", a_regs=f"a{j}_")
    return ops.statement(ops.instruction(v), indent)


def _variant_body(key: forms.SeqKey, v) -> str:
    ind = "        "
    if key.pattern != SeqPattern.RS_PIPELINE:
        return "\n".join([_step(key, v, j, ind) for j in range(key.steps)] + [_commit(ind), _wait(ind, 0)])
    lines = [_step(key, v, 0, ind), _commit(ind)]
    inner = ind + "    "
    for j in range(1, key.steps):
        lines += [f"{ind}{{  // step {j}: its A registers are loaded while step {j - 1} is in flight",
                  _load_a(j, inner), _fence(inner), _step(key, v, j, inner), _commit(inner),
                  f"{inner}// step {j - 1} is complete after this: its A registers may be reused",
                  _wait(inner, 1), f"{ind}}}"]
    return "\n".join(lines + [_wait(ind, 0)])


def source(key: forms.SeqKey) -> str:
    inst = key.inst
    is_f32 = inst.dtype == "f32"
    cases = [f"    case {idx}:  // {v.tag(inst.dtype)} trans_a={v.trans_a} trans_b={v.trans_b}\n"
             f"{_variant_body(key, v)}\n        break;" for idx, v in enumerate(forms.variants(key))]
    descs = []
    for j in range(key.steps):
        if inst.a_src == "SS":
            descs.append(f"    const unsigned long long desc_a{j} = step_desc(base_a, p.step_a{j});")
        descs.append(f"    const unsigned long long desc_b{j} = step_desc(base_b, p.step_b{j});")
    a_setup = ""
    if inst.a_src == "RS":  # each step's 4 A registers; the RS pipeline loads the later steps' in the sequence
        loaded = 1 if key.pattern == SeqPattern.RS_PIPELINE else key.steps
        a_setup = "\n".join([f"    const uint4* ar = reinterpret_cast<const uint4*>(a_regs) + slot * {key.steps}ull;"]
                             + [_load_a(j, "    ") for j in range(loaded)])
    return kernels.fill(kernels.template("wgmma_seq.cu", HERE), KERNEL_NAME=key.name, THREADS=key.threads,
                        WINDOW_ALIGN=forms.WINDOW_ALIGN, STEP_PTX=STEP_PTX[key.step_op],
                        WG_OFFSET=" + (tid >= 128u ? p.wg_a : 0ull)" if key.warpgroups == 2 else "",
                        STEP_DESCS="\n".join(descs), ACC_TYPE="float" if is_f32 else "unsigned int",
                        ACC_REGS=inst.acc_regs, A_SETUP=a_setup, VARIANT_CASES="\n".join(cases))


def pack(preps: list[SeqPrepared]) -> LaunchInput:
    """One launch of prepared cases: images, params, each step's A registers (RS), C registers; D comes back
    poisoned wherever the sequence did not write."""
    n = len(preps)
    key = preps[0].case.key
    threads, nreg = key.threads, key.inst.acc_regs
    sizes = np.array([p.image.size for p in preps], dtype=np.int64)
    if sizes.max() > MAX_IMAGE:
        raise ValueError(f"{preps[int(sizes.argmax())].case.id}: image of {sizes.max()} bytes exceeds {MAX_IMAGE}")
    params = np.zeros(n, PARAMS_DTYPE)
    params["image_offset"] = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    params["image_bytes"] = sizes
    a_regs = np.zeros((n, threads, 4 * key.steps), np.uint32)
    c_regs = np.zeros((n, threads, nreg), np.uint32)
    for i, p in enumerate(preps):
        h = p.handed
        params[i]["desc_a"], params[i]["desc_b"], params[i]["wg_a"] = h.desc_a, h.desc_b, h.wg_a
        for j in range(key.steps):
            params[i][f"step_a{j}"], params[i][f"step_b{j}"] = h.steps_a[j], h.steps_b[j]
        params[i]["variant"] = p.case.variant_index
        params[i]["scale_d"] = p.case.scale_d
        if p.a_regs is not None:
            a_regs[i] = p.a_regs
        c_regs[i] = p.c_regs
    return LaunchInput(np.concatenate([p.image for p in preps]), params, {"a_regs": a_regs, "c_regs": c_regs},
                       {"d_out": OutputSpec((threads, nreg), "uint32", POISON)}, threads=threads,
                       extra_smem=forms.WINDOW_ALIGN - WINDOW_SLACK)


def sass_check(key: forms.SeqKey) -> SassCheck:
    """What a sequence kernel's SASS must show: each variant's wgmma once per step (the dense family's opcode for
    it, A from a descriptor or from registers), so a step that ptxas dropped or merged shows; and, in the RS pipeline,
    each variant's wait_group 1 between its steps (WARPGROUP.DEPBAR.LE gsb0, 0x1: a pipeline ptxas serialised, whose
    waits became wait_group 0, computes the same D and tests nothing of the pipeline). How each step's descriptor was
    advanced (add or or) and whether an in-flight wgmma's registers are touched early are read by
    tests/sass_gmma.py."""
    counts: dict[str, list[str]] = {}
    for v in forms.variants(key):
        counts.setdefault(wgmma_kernel.sass_opcode(key.inst, v), []).append(v.tag(key.inst.dtype))
    a_operand = wgmma_kernel.sass_a_operand(key.inst.a_src)
    rules = [SassRule(re.escape(op), f"{op} for {', '.join(tags)}, once per step ({key.steps} steps)",
                      count=len(tags) * key.steps, operands=a_operand) for op, tags in counts.items()]
    if key.pattern == SeqPattern.RS_PIPELINE:
        pipelined = len(forms.variants(key)) * (key.steps - 1)
        rules.append(SassRule(r"WARPGROUP\.DEPBAR\.LE", f"wait_group 1 between the {key.steps} steps of each variant "
                              f"(the pipeline kept)", count=pipelined, operands=r"\bgsb0, 0x1$"))
    return SassCheck("sm_90a", function=key.name, rules=tuple(rules))
