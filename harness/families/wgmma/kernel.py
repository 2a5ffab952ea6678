"""The wgmma kernel: its CUDA source (wgmma.cu, beside it, filled in per kernel key) and a launch of prepared
cases (one CTA, one warpgroup, per case)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness import kernels
from harness.contract import LaunchInput, OutputSpec, SassCheck, SassRule
from harness.families.wgmma import forms
from harness.families.wgmma.reference import POISON, Prepared
from harness.spec import desc_wgmma

HERE = Path(__file__).resolve().parent  # the kernel's template sits beside this module

PARAMS_DTYPE = np.dtype([("image_offset", "<u8"), ("desc_a", "<u8"), ("desc_b", "<u8"),
                         ("image_bytes", "<u4"), ("variant", "<u4"), ("scale_d", "<u4"), ("inject", "<u4")])
assert PARAMS_DTYPE.itemsize == 40
INJECT = {"": 0, "trap": 1, "hang": 2, "misaligned": 3}  # see wgmma.cu
# The kernel adds the window's (shared address >> 4) to the 14-bit start fields; keep the sum in range.
MAX_IMAGE = 160 * 1024


@dataclass(frozen=True)
class AsmOperands:
    """The operands of one wgmma asm statement: the accumulators (asm_operands: %0..%{regs-1}, C++ operands; or
    memory_operands, below), then A (descriptor or 4 registers), B's descriptor, scale-d; `outputs` / `inputs` are
    the constraint lists, `instruction(v)` the PTX text.

    With `acc_addresses` (the sweep kernel's statement, `memory_operands`) the accumulators are no C++ operands:
    they are PTX registers the statement declares (`d_ops`), %0 and %1 hold the addresses of this thread's C and D,
    and the statement loads C, issues the variant and stores D itself (`dispatch`)."""
    key: forms.KernelKey
    d_ops: str
    a_op: str
    b_op: str
    scale_op: str
    outputs: str
    inputs: str
    acc_addresses: tuple[str, str] | None = None

    def instruction(self, v: forms.Variant) -> str:
        return forms.instruction(self.key, v, self.d_ops, self.a_op, self.b_op, "p")

    def statement(self, instruction: str, indent: str = "        ") -> str:
        """The asm statement issuing one wgmma (its PTX text, e.g. instruction(v); scale-d turned into the
        predicate it takes): the sequence kernels' steps (wgmma_seq)."""
        if self.acc_addresses is not None:
            raise ValueError("statement: accumulators as C++ operands only (asm_operands)")
        return (f"{indent}asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, {self.scale_op}, 0;\\n"
                f"{instruction}\\n}}\\n\"\n"
                f"{indent}    : {self.outputs}\n{indent}    : {self.inputs} : \"memory\");")

    def dispatch(self, variants: list[tuple[str, str] | None], extra_inputs: tuple[str, ...] = (),
                 selector: str = "p.variant", indent: str = "    ") -> str:
        """One asm statement issuing the instruction of the variant `selector` names: `variants` are (comment,
        PTX instruction) in index order (None: that index issues nothing), and a uniform branch in PTX picks one
        (none for an index out of range), which runs fenced and committed (wgmma.fence, the instruction,
        commit_group) in its own block; every block then meets the one wait_group 0. `extra_inputs` (constraint
        strings) follow scale-d, as the sparse form's metadata register; the selector comes last. With
        `acc_addresses` the statement first loads C into its accumulator registers and last stores D.

        The wait after the blocks meet, not one in each: ptxas took a quarter to a third less time on the largest
        accumulators (a 32-variant m64n256 f32 kernel: 0.61 s against 0.86 s with NVRTC 13.0; the sweep's 48
        sm_90a modules 78 core-seconds against 102 with the vector moves of C and D, the CPU note
        2026-11-26 compile-work.txt in docs/performance.md). The fence and the commit stay in the blocks: outside them
        ptxas 12.8 to 13.0 inject a warpgroup.arrive (info C7519), and ptxas adds a GMMA of its own
        (HGMMA.64x8x16.F16 RZ, gdesc[URZ]) to carry a commit that follows no GMMA (no_other_gmma)."""
        if isinstance(extra_inputs, str):  # one constraint string would be counted character by character
            raise TypeError("extra_inputs: a tuple of constraint strings, e.g. ('\"r\"(meta)',)")
        sel = f"%{self.next_operand + len(extra_inputs)}"
        lines = [".reg .pred p;", ".reg .pred v;", f"setp.ne.b32 p, {self.scale_op}, 0;"]
        present = [(idx, v) for idx, v in enumerate(variants) if v is not None]
        for idx, _ in present:
            lines += [f"setp.eq.u32 v, {sel}, {idx};", f"@v bra.uni TC_VARIANT_{idx};"]
        lines.append("bra.uni TC_DONE;")
        for idx, (comment, instruction) in present:
            lines += [f"TC_VARIANT_{idx}:  // {comment}", "wgmma.fence.sync.aligned;", instruction,
                      "wgmma.commit_group.sync.aligned;", "bra.uni TC_DONE;"]
        lines += ["TC_DONE:", "wgmma.wait_group.sync.aligned 0;"]
        if self.acc_addresses is not None:
            load, store = self.accumulator_moves()
            lines = load + lines + store
        body = [f'{indent}    "{line}\\n"' for line in lines]
        inputs = ", ".join([self.inputs, *extra_inputs, f'"r"({selector})'])
        return (f'{indent}asm volatile("{{\\n"\n' + "\n".join(body) + f'\n{indent}    "}}\\n"\n'
                f"{indent}    : {self.outputs}\n{indent}    : {inputs} : \"memory\");")

    def accumulator_moves(self) -> tuple[list[str], list[str]]:
        """(PTX lines declaring the accumulator registers and loading C into them, lines storing them to D), four
        registers a vector (two where the count is not a multiple of four: each thread's C and D start at a
        multiple of the vector's size)."""
        n = self.key.acc_regs
        if n % 2:
            raise ValueError(f"{self.key.name}: {n} accumulator registers; the statement moves them in pairs")
        rtype = ".f32" if self.key.dtype == "f32" else ".b32"
        width = 4 if n % 4 == 0 else 2
        c_at, d_at = self.acc_addresses
        load = [f".reg {rtype} {ACC_REGISTER}<{n}>;", ".reg .b64 tc_c_at, tc_d_at;",
                f"cvta.to.global.u64 tc_c_at, {c_at};", f"cvta.to.global.u64 tc_d_at, {d_at};"]
        store = []
        for i in range(0, n, width):
            regs = "{" + ", ".join(f"{ACC_REGISTER}{i + j}" for j in range(width)) + "}"
            load.append(f"ld.global.v{width}{rtype} {regs}, [tc_c_at+{4 * i}];")
            store.append(f"st.global.v{width}{rtype} [tc_d_at+{4 * i}], {regs};")
        return load, store

    @property
    def next_operand(self) -> int:
        """The number the next operand appended after scale-d gets (the sparse form's metadata)."""
        return int(self.scale_op.lstrip("%")) + 1


ACC_REGISTER = "tc_d"  # the sweep statement's accumulator registers: tc_d0, tc_d1, ... (memory_operands)


def asm_operands(key: forms.KernelKey, desc_a: str = "desc_a", desc_b: str = "desc_b", scale_d: str = "p.scale_d",
                 a_regs: str = "a") -> AsmOperands:
    """Operand numbering of the timing kernel and the sequence kernels (wgmma_seq): the accumulators as C++
    operands (%0..), then A, B, scale-d. desc_a / desc_b / scale_d name the C expressions holding the descriptors
    and scale-d, a_regs the prefix of the four A register variables of an RS form (a0..a3 by default)."""
    nreg = key.acc_regs
    con = "f" if key.dtype == "f32" else "r"
    a_op, b_op, scale_op, ab_inputs = _a_b_scale(key, nreg, desc_a, desc_b, scale_d, a_regs)
    return AsmOperands(key, "{" + ", ".join(f"%{i}" for i in range(nreg)) + "}", a_op, b_op, scale_op,
                       ", ".join(f'"+{con}"(d[{i}])' for i in range(nreg)), ab_inputs)


def memory_operands(key: forms.KernelKey) -> AsmOperands:
    """Operand numbering of the sweep kernel (wgmma.cu): %0 and %1 the addresses of this thread's C and D
    (the template's c_at, d_at), then A, B, scale-d; the accumulators are the statement's own registers.

    Moved by the statement, not by C++ loops into an array of operands: NVRTC's optimizer had nothing left to do on
    the accumulators: the sweep's 748 wgmma and wgmma_sp kernels took 20-30% less NVRTC time, its optimizer a
    quarter of its time before (the CPU note 2026-11-27 statement-moves.txt in docs/performance.md)."""
    a_op, b_op, scale_op, ab_inputs = _a_b_scale(key, 2, "desc_a", "desc_b", "p.scale_d", "a")
    regs = "{" + ", ".join(f"{ACC_REGISTER}{i}" for i in range(key.acc_regs)) + "}"
    return AsmOperands(key, regs, a_op, b_op, scale_op, "", ", ".join(['"l"(c_at)', '"l"(d_at)', ab_inputs]),
                       acc_addresses=("%0", "%1"))


def _a_b_scale(key: forms.KernelKey, first: int, desc_a: str, desc_b: str, scale_d: str,
               a_regs: str) -> tuple[str, str, str, str]:
    """(A's operand, B's, scale-d's, their input constraints) numbered from `first`."""
    nxt = first
    if key.a_src == "SS":
        a_op, a_inputs = f"%{nxt}", [f'"l"({desc_a})']
        nxt += 1
    else:
        a_op = "{" + ", ".join(f"%{nxt + i}" for i in range(4)) + "}"
        a_inputs = [f'"r"({a_regs}{i})' for i in range(4)]
        nxt += 4
    return a_op, f"%{nxt}", f"%{nxt + 1}", ", ".join(a_inputs + [f'"l"({desc_b})', f'"r"({scale_d})'])


def fill_template(name: str, key, a_regs: str, dispatch: str, meta_param: str = "") -> str:
    """wgmma.cu for a kernel named `name` with `key`'s accumulator count, `dispatch` the statement of
    `memory_operands(key)` (which moves C and D); `meta_param` is the sparse form's extra kernel parameter
    (nothing for the dense form)."""
    if key.acc_regs % 2:  # the statement moves C and D two or four words at a time, from each thread's first register
        raise ValueError(f"{name}: {key.acc_regs} accumulator registers; the sweep statement moves them in "
                         "pairs")
    return kernels.fill(kernels.template("wgmma.cu", HERE), KERNEL_NAME=name, ACC_REGS=key.acc_regs,
                        A_REGS=a_regs, MMA_DISPATCH=dispatch, META_PARAM=meta_param)


def a_registers(key) -> str:
    """The kernel's code that loads A's four registers (RS), or marks the unused array (SS)."""
    if key.a_src == "RS":
        return ("const unsigned int* ar = a_regs + slot * 4ull;\n"
                "    const unsigned int a0 = ar[0], a1 = ar[1], a2 = ar[2], a3 = ar[3];")
    return "(void)a_regs;"


def source(key: forms.KernelKey, only_variant: int | None = None) -> str:
    """The kernel of one key, with every variant (or, for the naive baseline of the benchmark, one: the others'
    indices issue nothing)."""
    forms.validate_key(key)
    ops = memory_operands(key)
    variants = [(f"{v.tag(key.dtype)} trans_a={v.trans_a} trans_b={v.trans_b}", ops.instruction(v))
                if only_variant is None or idx == only_variant else None
                for idx, v in enumerate(forms.variants(key))]
    return fill_template(key.name, key, a_registers(key), ops.dispatch(variants))


def sass_opcode(key: forms.KernelKey, v: forms.Variant) -> str:
    """The SASS opcode (with modifiers) ptxas emits for one variant: HGMMA.64x8x16.F32.BF16, QGMMA..., IGMMA...,
    BGMMA... (read off sm_90a cubins; one per variant, so a dropped variant shows)."""
    if key.kind in ("f16", "tf32"):
        t = {"f16": "", "bf16": ".BF16", "tf32": ".TF32"}[v.atype]
        return f"HGMMA.64x{key.n}x{key.k}.{key.dtype.upper()}{t}"
    if key.kind == "f8":
        return f"QGMMA.64x{key.n}x32.{key.dtype.upper()}.{v.atype.upper()}.{v.btype.upper()}"
    if key.kind == "s8":
        return f"IGMMA.64x{key.n}x32.{v.atype.upper()}.{v.btype.upper()}" + (".SAT" if v.satfinite else "")
    return f"BGMMA.64x{key.n}x256.AND.POPC"


def sass_a_operand(a_src: str) -> str:
    """How a wgmma's operands read in SASS after D: A from a shared-memory descriptor (SS: `gdesc[..]`) or from
    registers (RS: a register, negated for imm-scale-a -1, then B's `gdesc[..]`)."""
    return r"^R\d+, gdesc\[" if a_src == "SS" else r"^R\d+, -?R\d+, gdesc\["


def sass_check(key: forms.KernelKey) -> SassCheck:
    """What the kernel's SASS must show: each variant's tensor-core instruction, with A from a shared-memory
    descriptor (SS: `D, gdesc[..], C`) or from registers (RS: `D, Ra, gdesc[..], C`)."""
    a_operand = sass_a_operand(key.a_src)
    by_opcode: dict[str, list[str]] = {}
    for v in forms.variants(key):  # variants differing only in transposes or signs share an opcode
        by_opcode.setdefault(sass_opcode(key, v), []).append(v.tag(key.dtype))
    src = "shared memory" if key.a_src == "SS" else "registers"
    rules = tuple(SassRule(re.escape(op), f"{op} for {', '.join(tags)} (A from {src}), one per variant",
                           count=len(tags), operands=a_operand) for op, tags in by_opcode.items())
    return SassCheck("sm_90a", rules + (no_other_gmma(len(forms.variants(key))),), function=key.name)


def no_other_gmma(variants: int) -> SassRule:
    """The kernel's tensor-core instructions are its variants' and no other: ptxas adds a GMMA of its own
    (HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ) where a commit_group may follow no GMMA, which every case would run
    (AsmOperands.dispatch)."""
    return SassRule(r"[HQIB]GMMA(\..*)?", f"{variants} tensor-core instructions, one per variant, and no other",
                    count=variants)


def encode_desc(layout) -> int:
    return desc_wgmma.encode_wgmma_desc(layout.start, layout.lbo, layout.sbo, layout.swizzle, layout.base_offset)


def pack(preps: list[Prepared]) -> LaunchInput:
    """One launch of prepared cases: images, params, A registers (RS), C registers; D comes back poisoned
    wherever the instruction did not write."""
    n = len(preps)
    key = preps[0].case.key
    nreg = key.acc_regs
    params = np.zeros(n, PARAMS_DTYPE)
    sizes = np.array([p.image.size for p in preps], dtype=np.int64)
    if sizes.max() > MAX_IMAGE:
        raise ValueError(f"{preps[int(sizes.argmax())].case.id}: image of {sizes.max()} bytes exceeds {MAX_IMAGE}")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    images = np.concatenate([p.image for p in preps])
    a_regs = np.zeros((n, 128, 4), np.uint32)
    c_regs = np.zeros((n, 128, nreg), np.uint32)
    for i, p in enumerate(preps):
        params[i]["image_offset"] = offsets[i]
        params[i]["image_bytes"] = p.image.size
        if p.descs is not None:  # raw descriptor values (probes of what the encoder would refuse)
            params[i]["desc_a"], params[i]["desc_b"] = p.descs[0] or 0, p.descs[1]
        else:
            params[i]["desc_a"] = encode_desc(p.a_layout) if p.a_layout is not None else 0
            params[i]["desc_b"] = encode_desc(p.b_layout)
        params[i]["variant"] = p.case.variant_index
        params[i]["scale_d"] = p.case.scale_d
        params[i]["inject"] = INJECT[p.case.inject]
        if p.a_regs is not None:
            a_regs[i] = p.a_regs
        c_regs[i] = p.c_regs
    return LaunchInput(images, params, {"a_regs": a_regs, "c_regs": c_regs},
                       {"d_out": OutputSpec((128, nreg), "uint32", POISON)})
