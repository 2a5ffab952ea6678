"""CUDA source for one kernel key: kernels/<template>.cu with its {{...}} parts filled in."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from harness.families.wgmma import forms as wgmma

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"


@lru_cache(maxsize=None)
def template(name: str) -> str:
    return (KERNEL_DIR / name).read_text()


def fill(text: str, **parts: str) -> str:
    parts.setdefault("SMEM_WINDOW", template("smem_window.cuh"))
    for k, v in parts.items():
        text = text.replace("{{" + k + "}}", str(v))
    if "{{" in text:
        raise ValueError(f"unfilled template part in kernel source: {text[text.index('{{'):][:40]}")
    return text


def wgmma_source(key: wgmma.KernelKey, only_variant: int | None = None) -> str:
    """The kernel of one key, with every variant (or, for the naive baseline of the benchmark, one)."""
    wgmma.validate_key(key)
    nreg = key.acc_regs
    is_f32 = key.dtype == "f32"
    acc_con = "f" if is_f32 else "r"
    # Operand numbering: %0..%{nreg-1} accumulators, then A (desc or 4 regs), desc_b, scale_d.
    d_ops = "{" + ", ".join(f"%{i}" for i in range(nreg)) + "}"
    nxt = nreg
    if key.a_src == "SS":
        a_op, a_inputs = f"%{nxt}", ['"l"(desc_a)']
        nxt += 1
    else:
        a_op = "{" + ", ".join(f"%{nxt + i}" for i in range(4)) + "}"
        a_inputs = [f'"r"(a{i})' for i in range(4)]
        nxt += 4
    b_op, scale_op = f"%{nxt}", f"%{nxt + 1}"
    outputs = ", ".join(f'"+{acc_con}"(d[{i}])' for i in range(nreg))
    inputs = ", ".join(a_inputs + ['"l"(desc_b)', '"r"(p.scale_d)'])
    cases = []
    for idx, v in enumerate(wgmma.variants(key)):
        if only_variant is not None and idx != only_variant:
            continue
        instr = wgmma.instruction(key, v, d_ops, a_op, b_op, "p")
        cases.append(
            f"    case {idx}:  // {v.tag(key.dtype)} trans_a={v.trans_a} trans_b={v.trans_b}\n"
            f"        asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, {scale_op}, 0;\\n{instr}\\n}}\\n\"\n"
            f"            : {outputs}\n            : {inputs} : \"memory\");\n        break;")
    if key.a_src == "RS":
        a_regs = ("const unsigned int* ar = a_regs + slot * 4ull;\n"
                  "    const unsigned int a0 = ar[0], a1 = ar[1], a2 = ar[2], a3 = ar[3];")
    else:
        a_regs = "(void)a_regs;"
    return fill(template("wgmma.cu"),
                KERNEL_NAME=key.name,
                ACC_TYPE="float" if is_f32 else "unsigned int",
                ACC_REGS=nreg,
                FROM_BITS="__uint_as_float" if is_f32 else "",
                TO_BITS="__float_as_uint" if is_f32 else "",
                A_REGS=a_regs,
                VARIANT_CASES="\n".join(cases))


def tcgen05_source(form) -> str:
    from harness.families.tcgen05 import forms as tcgen05
    tcgen05.validate_form(form)
    pair = form.cta_group == 2
    cluster_sync = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");\n'
                    '    asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");')
    leader = "cluster_rank() == 0u"  # the even CTA of the pair issues the pair's MMA
    return fill(template("tcgen05.cu"),
                KERNEL_NAME=form.name,
                CTA_GROUP=form.cta_group,
                CLUSTER_ATTR="__cluster_dims__(2, 1, 1)" if pair else "",
                CTA_SYNC=cluster_sync if pair else "__syncthreads();",
                ISSUER=leader if pair else "true",
                MMA=tcgen05.mma_statement(form),
                SCALE_COPY=tcgen05.scale_copy(form),
                COMMIT=tcgen05.commit(form))


def smoke_source() -> str:
    return template("smoke.cu")
