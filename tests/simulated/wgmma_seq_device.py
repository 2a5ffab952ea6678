"""A simulated sm_90a GPU for wgmma_seq launches (same `use_device` and `run` as harness.run.launch).

Per CTA it does what families/wgmma_seq/wgmma_seq.cu + the tensor core do, from the launch's raw buffers only: take the
params record, put the CTA's image in a window at shared address 0, form each warpgroup's base descriptors
(desc + wg_a for warpgroup 1), derive every step's descriptors with the kernel's operation as PTX defines it
(add.s64 modulo 2**64, or.b64; the operation comes from the kernel's name), read each step's operands through the
descriptors with the dense simulator's own descriptor decoding and address generation (tests/simulated/smem.py,
not harness/spec/layouts.py) or from that step's A registers through CuTe DSL's fragment, multiply and
accumulate step after step in the accumulator's arithmetic, and place D into each warpgroup's registers with
CuTe DSL's thread-value layout. It never calls the harness's reference, nor its sub-tile model: what a case's
descriptors read is decided here from the descriptor bits alone.
"""
from __future__ import annotations

import re

import numpy as np

from harness.enums import DescStep, SeqPattern
from harness.families.wgmma import forms as wgmma_forms
from harness.families.wgmma_seq import forms as seq_forms
from harness.contract import LaunchInput
from harness.spec import dtypes
from tests.simulated import smem, wgmma_device
from tests.simulated.sim_common import fault, log_launch, planted, use_device  # noqa: F401

NAME = re.compile(r"^wgmmaseq_(?P<kind>\w+?)_m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)x(?P<steps>\d+)_(?P<pattern>[a-z]+)_"
                  r"(?P<op>add|or)_(?P<dtype>\w+)_(?P<src>SS|RS)$")
U64 = (1 << 64) - 1


def key_of(kernel_name: str) -> seq_forms.SeqKey:
    m = NAME.match(kernel_name)
    if not m:
        raise ValueError(f"{kernel_name!r} is not a wgmma_seq kernel name")
    inst = wgmma_forms.KernelKey(m["kind"], int(m["n"]), m["dtype"], m["src"])
    key = seq_forms.SeqKey(pattern=SeqPattern(m["pattern"]), inst=inst, step_op=DescStep(m["op"]),
                           steps=int(m["steps"]))
    if key.name != kernel_name:
        raise ValueError(f"{kernel_name}: M or K does not match the pattern and kind")
    return key


def step(op: DescStep, base: int, advance: int) -> int:
    return (base + advance) & U64 if op == DescStep.ADD else base | advance


def simulate_cta(key: seq_forms.SeqKey, prm, image: np.ndarray, a_regs: np.ndarray, c_regs: np.ndarray,
                 out: np.ndarray) -> None:
    inst = key.inst
    v = seq_forms.variants(key)[int(prm["variant"])]
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    win = smem.window(image)
    for w in range(key.warpgroups):
        threads = slice(128 * w, 128 * w + 128)
        base_a = (int(prm["desc_a"]) + (int(prm["wg_a"]) if w else 0)) & U64
        d = wgmma_device.c_from_registers(inst.dtype, inst.n, c_regs[threads]) if int(prm["scale_d"]) else None
        with np.errstate(over="ignore", invalid="ignore"):
            for j in range(key.steps):
                desc_b = step(key.step_op, int(prm["desc_b"]), int(prm[f"step_b{j}"]))
                b = wgmma_device.operand(win, desc_b, "MN" if v.trans_b else "K", bt, inst.n, inst.k)
                if inst.a_src == "SS":
                    desc_a = step(key.step_op, base_a, int(prm[f"step_a{j}"]))
                    a = wgmma_device.operand(win, desc_a, "MN" if v.trans_a else "K", at, wgmma_forms.M, inst.k)
                else:
                    a = wgmma_device.a_from_registers(v.atype, inst.k, a_regs[threads, 4 * j:4 * j + 4])
                d = wgmma_device.mma(inst.dtype, v, a, b, d)  # the previous step's D is this one's C
        wgmma_device.d_to_registers(inst.dtype, inst.n, d, out[threads])


def run(cubin_path, kernel_name, launch) -> dict[str, np.ndarray]:
    inp = LaunchInput.load(launch)
    key = key_of(kernel_name)
    log_launch(kernel_name, inp)
    fault(planted(kernel_name, inp).values())
    return wgmma_device.each_cta(inp, lambda p, image, i, out: simulate_cta(
        key, p, image, inp.inputs["a_regs"][i], inp.inputs["c_regs"][i], out))
