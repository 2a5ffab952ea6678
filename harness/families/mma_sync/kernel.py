"""The mma.sync kernel: its CUDA source (mma_sync.cu, beside it, filled in per kernel key), its SASS rules and a
launch of prepared cases (one CTA, one warp, per case)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np

from harness import kernels
from harness.contract import LaunchInput, OutputSpec, SassCheck, SassRule
from harness.families.mma_sync import forms, store
from harness.families.mma_sync.cases import LD_PATH, ldmatrix_paths, operand_maps, words
from harness.families.mma_sync.ldmatrix import MatrixMoveForm
from harness.families.mma_sync.reference import POISON, ST_ARGS, ST_BYTES, Prepared

HERE = Path(__file__).resolve().parent  # the kernel's template sits beside this module

PARAMS_DTYPE = np.dtype([("image_offset", "<u8"), ("image_bytes", "<u4"), ("variant", "<u4"), ("a_path", "<u4"),
                         ("b_path", "<u4")])
assert PARAMS_DTYPE.itemsize == 24
MAX_IMAGE = 32 * 1024  # two small tiles a case; far below the 227 KB a CTA may have
THREADS = 32


def register_type(t: str) -> str:
    """The C++ type of a register holding elements of type t: f32 and f64 registers are float and double (the PTX
    operands of those types are .f32 / .f64 registers), every other one a 32-bit word."""
    return {"f32": "float", "f64": "double"}.get(t, "unsigned int")


CONSTRAINT = {"float": "f", "double": "d", "unsigned int": "r"}


def _to_words(var: str, ctype: str) -> list[str]:
    """C++ expressions of the 32-bit words of register `var`, low first."""
    if ctype == "float":
        return [f"__float_as_uint({var})"]
    if ctype == "double":
        return [f"(unsigned int)__double2loint({var})", f"(unsigned int)__double2hiint({var})"]
    return [var]


def _from_words(words_: list[str], ctype: str) -> str:
    if ctype == "float":
        return f"__uint_as_float({words_[0]})"
    if ctype == "double":
        return f"__hiloint2double((int)({words_[1]}), (int)({words_[0]}))"
    return words_[0]


def _ldmatrix(operand: str, move: MatrixMoveForm, row: str) -> str:
    outs = ", ".join(f'"=r"({operand}[{i}])' for i in range(move.num))
    regs = "{" + ", ".join(f"%{i}" for i in range(move.num)) + "}"
    return f'asm volatile("{move.instruction()} {regs}, [%{move.num}];" : {outs} : "r"({row}) : "memory");'


def load_code(key: forms.KernelKey, operand: str) -> str:
    """The code filling A's or B's 32-bit words: an ldmatrix [.trans] per path the operand's fragment allows
    (cases.ldmatrix_paths), else from global memory (path 0, and any path the kernel does not have)."""
    lower = operand.lower()
    n = words(key, operand)
    paths = ldmatrix_paths(key)[operand]
    frag = operand_maps(key)[operand]
    lines, first = [], True
    for path, contiguous in sorted(paths.items()):
        move = MatrixMoveForm(frag.registers, trans=path == LD_PATH["ldmatrix.trans"])
        lines.append(f"    {'if' if first else 'else if'} (p.{lower}_path == {path}u) "
                     f"{{ {_ldmatrix(lower, move, f'{lower}_row')} }}")
        first = False
    fallback = f"for (int i = 0; i < {n}; ++i) {lower}[i] = {lower}_in[slot * {n}ull + i];"
    lines.append(f"    else {{ {fallback} }}" if lines else f"    {fallback}")
    return "\n".join(lines)


def _typed(name: str, words_of: str, count: int, ctype: str) -> tuple[list[str], list[str]]:
    """(declarations of `count` registers `name`0.. of `ctype` built from the word array `words_of`, their names)."""
    per = 2 if ctype == "double" else 1
    decls, names = [], []
    for i in range(count):
        ws = [f"{words_of}[{per * i + j}]" for j in range(per)]
        decls.append(f"    const {ctype} {name}{i} = {_from_words(ws, ctype)};")
        names.append(f"{name}{i}")
    return decls, names


def asm_parts(key: forms.KernelKey):
    """(C++ code before the asm statement, the asm's output constraints, its input constraints, the PTX operand text
    of D, A, B, C and metadata, the stores after it)."""
    maps = operand_maps(key)
    form = forms.variants(key)[0]
    a_t, b_t = register_type(form.atype), register_type(form.btype)
    c_t, d_t = register_type(key.ctype), register_type(key.dtype)
    code, stores = [], []
    a_decl, a_names = _typed("a_r", "a", maps["A"].registers, a_t) if a_t == "double" else ([], [
        f"a[{i}]" for i in range(maps["A"].registers)])
    b_decl, b_names = _typed("b_r", "b", maps["B"].registers, b_t) if b_t == "double" else ([], [
        f"b[{i}]" for i in range(maps["B"].registers)])
    nc, cw = maps["C"].registers, words(key, "C")
    code += a_decl + b_decl
    code.append(f"    const unsigned int* c_w = c_in + slot * {cw}ull;")
    c_decl, c_names = _typed("c_r", "c_w", nc, c_t)
    code += c_decl
    poison = {"float": f"__uint_as_float({POISON:#x}u)",
              "double": f"__hiloint2double({POISON:#x}, {POISON:#x})", "unsigned int": f"{POISON:#x}u"}[d_t]
    d_names = [f"d{i}" for i in range(maps["D"].registers)]
    code.append(f"    {d_t} " + ", ".join(f"{d} = {poison}" for d in d_names) + ";  // poisoned: an unwritten D shows")
    outputs = ", ".join(f'"+{CONSTRAINT[d_t]}"({d})' for d in d_names)
    inputs = ([f'"{CONSTRAINT[a_t]}"({x})' for x in a_names] + [f'"{CONSTRAINT[b_t]}"({x})' for x in b_names]
              + [f'"{CONSTRAINT[c_t]}"({x})' for x in c_names] + (['"r"(e)'] if key.sparse else []))
    inputs = ", ".join(inputs)
    counts = [len(d_names), len(a_names), len(b_names), len(c_names)] + ([1] if key.sparse else [])
    at, texts = 0, []
    for c in counts:
        texts.append("{" + ", ".join(f"%{at + i}" for i in range(c)) + "}" if c > 1 or len(texts) < 4
                     else f"%{at}")
        at += c
    dw = words(key, "D")
    out = [f"    unsigned int* d_w = d_out + slot * {dw}ull;"]
    k = 0
    for d in d_names:
        for w in _to_words(d, d_t):
            out.append(f"    d_w[{k}] = {w};")
            k += 1
    for op in ("a", "b"):
        n = words(key, op.upper())
        out.append(f"    for (int i = 0; i < {n}; ++i) {op}_out[slot * {n}ull + i] = {op}[i];")
    return "\n".join(code), outputs, inputs, texts, "\n".join(out), at


def dispatch(key: forms.KernelKey, outputs: str, inputs: str, texts: list[str], selector_operand: int,
             only_variant: int | None = None) -> str:
    """One asm statement issuing the form the selector names: a uniform branch to one block per variant (with
    `only_variant`, that variant's block alone: the other indices issue nothing)."""
    sel = f"%{selector_operand}"
    lines = [".reg .pred v;"]
    vs = [(i, f) for i, f in enumerate(forms.variants(key)) if only_variant is None or i == only_variant]
    for i, _ in vs:
        lines += [f"setp.eq.u32 v, {sel}, {i};", f"@v bra.uni TC_VARIANT_{i};"]
    lines.append("bra.uni TC_DONE;")
    for i, f in vs:
        ops = ", ".join(texts[:4]) + (f", {texts[4]}, {f.selector:#x}" if key.sparse else "")
        lines += [f"TC_VARIANT_{i}:  // {f.describe()}", f"{f.instruction()} {ops};", "bra.uni TC_DONE;"]
    lines.append("TC_DONE:")
    body = "\n".join(f'        "{ln}\\n"' for ln in lines)
    return (f'    asm volatile("{{\\n"\n{body}\n        "}}\\n"\n        : {outputs}\n'
            f'        : {inputs}, "r"(p.variant) : "memory");')


def store_code(key: forms.KernelKey) -> str:
    """The stmatrix store of D (kernels of store.stores_d keys; nothing for the others, whose source stays as it
    was): st_in's store index picks one of store.STORE_MOVES (0: none), each lane hands its row address, the store
    writes D's registers (.x4: then C's) into the case's tile in the window, and the warp copies the whole tile out
    to st_out, the bytes the store should not touch included."""
    if not store.stores_d(key):
        return ""
    regs = ["d0", "d1", "c_w[0]", "c_w[1]"]
    lines = ["", "    // stmatrix: D (.x4: D and C) into the case's tile, the tile then copied out whole",
             f"    const unsigned int* st = st_in + (unsigned long long)blockIdx.x * {ST_ARGS}ull;",
             "    const unsigned int st_row = window + st[lane];", "    (void)st_row;"]
    for i, move in enumerate(store.STORE_MOVES):
        ops = "{" + ", ".join(f"%{j + 1}" for j in range(move.num)) + "}"
        ins = ", ".join(f'"r"({r})' for r in regs[:move.num])
        lines.append(f"    {'if' if i == 0 else 'else if'} (st[32] == {i + 1}u) "
                     f'{{ asm volatile("{move.instruction()} [%0], {ops};" :: "r"(st_row), {ins} : "memory"); }}')
    lines += ["    __syncwarp();",
              "    if (st[32] != 0u) {",
              "        const uint4* st_src = reinterpret_cast<const uint4*>(smem_raw + (window - raw) + st[33]);",
              f"        uint4* st_dst = reinterpret_cast<uint4*>(st_out + (unsigned long long)blockIdx.x * "
              f"{ST_BYTES // 4}ull);",
              "#pragma unroll 1",
              "        for (unsigned int i = lane; i < st[34] / 16u; i += 32u) st_dst[i] = st_src[i];",
              "    }"]
    return "\n".join(lines)


def source(key: forms.KernelKey, only_variant: int | None = None, name: str | None = None) -> str:
    """The kernel of one key, with every variant (or one: the SASS of each form apart, read by
    tests/test_mma_sync_family.py), named `name` (the key's by default)."""
    code, outputs, inputs, texts, stores, n_ops = asm_parts(key)
    st = store.stores_d(key)
    return kernels.fill(kernels.template("mma_sync.cu", HERE), KERNEL_NAME=name or key.name, A_WORDS=words(key, "A"),
                        B_WORDS=words(key, "B"), A_LOAD=load_code(key, "A"), B_LOAD=load_code(key, "B"),
                        OPERANDS=code, MMA_DISPATCH=dispatch(key, outputs, inputs, texts, n_ops, only_variant),
                        STORES=stores, ST_STORE=store_code(key),
                        ST_IN_PARAM="\n                const unsigned int* __restrict__ st_in," if st else "",
                        ST_OUT_PARAM=", unsigned int* __restrict__ st_out" if st else "")


# ------------------------------------------------------------------------------------------------ the SASS

def sass_expected(form: forms.MmaForm) -> tuple[tuple[str, str], ...]:
    """What ptxas (NVRTC 13.5) makes of one form on sm_90a, read off cubins of one form each (tests/
    test_mma_sync_family.py compiles a sample of forms alone, `source(key, only_variant=i)`, and checks them):
    ('op', SASS opcode) for each tensor-core instruction, ('call', routine) for a form sm_90a has no datapath for,
    which ptxas emulates in a subroutine it calls: m8n8k4 .f16 (`__cuda_sm_8x_mma_*`, as on sm_80), every s4/u4
    form (`__cuda_sm_9x_mma_sub_byte_internal_*`) and .b1 .xor.popc (`__cuda_sm_9x_mma_bit_internal_xor_*`).
    e4m3/e5m2 run as two f16 HMMAs of half the K each, after conversions."""
    m, n, k = form.mnk
    sat = "_satfinite" if form.satfinite else ""
    if form.shape is forms.Shape.M8N8K4 and form.atype == "f16":
        return (("call", f"__cuda_sm_8x_mma_{form.alayout.value}_{form.blayout.value}_{form.dtype}_f16_f16_"
                         f"{form.ctype}"),)
    if form.atype in forms.I4_TYPES:
        sel = f"_{form.selector}" if form.sparse and len(forms.selectors(form.shape, form.atype)) > 1 else ""
        return (("call", f"__cuda_sm_9x_mma_sub_byte_internal_{'sparse_' if form.sparse else ''}{form.shape.value}_"
                         f"{form.atype}_{form.btype}{sat}{sel}"),)
    if form.bitop is forms.BitOp.XOR_POPC:
        return (("call", f"__cuda_sm_9x_mma_bit_internal_xor_{form.shape.value}"),)
    if form.bitop is forms.BitOp.AND_POPC:
        return (("op", f"BMMA.{m}{n}{k}.AND.POPC"),)
    if form.atype == "f64":
        return (("op", f"DMMA.{m}x{n}x{k}"),)
    sp = ".SP" if form.sparse else ""
    if form.atype in forms.I8_TYPES:
        return (("op", f"IMMA{sp}.{m}{n}{k}.{form.atype.upper()}.{form.btype.upper()}"
                       + (".SAT" if form.satfinite else "")),)
    if form.atype in forms.F8_TYPES:  # converted to f16 and issued as two HMMAs of half the K
        return (("op", f"HMMA{sp}.{m}{n}{k // 2}.{form.dtype.upper()}"),) * 2
    t = {"f16": "", "bf16": ".BF16", "tf32": ".TF32"}[form.atype]
    return (("op", f"HMMA{sp}.{m}{n}{k}.{form.dtype.upper()}{t}"),)


TENSOR_OPCODE = r"[HIDB]MMA(\..*)?"
EMULATION_CALL = r"CALL(\..*)?"


def ldsm_opcode(num: int, trans: bool, store_: bool = False) -> str:
    """ldmatrix's SASS: LDSM.16.M88 (.x1), LDSM.16.M88.2, LDSM.16.M88.4; MT88 with .trans; stmatrix's the same
    with STSM."""
    return f"{'STSM' if store_ else 'LDSM'}.16.{'MT88' if trans else 'M88'}" + (f".{num}" if num > 1 else "")


def sass_check(key: forms.KernelKey) -> SassCheck:
    """What the kernel's SASS must show: each variant's tensor-core instructions and no other (exact counts, summed
    over its variants: a dropped variant shows), and one LDSM per ldmatrix path it has (.trans: MT88)."""
    per_item: Counter = Counter()
    for f in forms.variants(key):
        per_item.update(sass_expected(f))
    ops = {o: n for (kind, o), n in per_item.items() if kind == "op"}
    calls = {c: n for (kind, c), n in per_item.items() if kind == "call"}
    rules = [SassRule(re.escape(op), f"{op} of the variants that issue it", count=n) for op, n in sorted(ops.items())]
    rules.append(SassRule(TENSOR_OPCODE, f"{sum(ops.values())} tensor-core instructions of its "
                          f"{len(forms.variants(key))} variants, and no other", count=sum(ops.values())))
    # a form sm_90a emulates: one call of its routine a variant (the routine's own code is no instruction of ours)
    rules += [SassRule(EMULATION_CALL, f"a call of ptxas's {c} (emulated on sm_90a)", count=n,
                       operands=re.escape(c) + r"\)") for c, n in sorted(calls.items())]
    rules.append(SassRule(EMULATION_CALL, f"{sum(calls.values())} emulation calls, and no other call",
                          count=sum(calls.values())))
    ldsm: Counter = Counter()
    for operand in ("A", "B"):
        frag = operand_maps(key)[operand]
        for path in ldmatrix_paths(key)[operand]:
            trans = path == LD_PATH["ldmatrix.trans"]
            ldsm[(frag.registers, trans)] += 1
    rules += [SassRule(re.escape(ldsm_opcode(num, trans)), f"{ldsm_opcode(num, trans)}: the kernel's ldmatrix .x{num}"
                       + (" .trans" if trans else ""), count=n) for (num, trans), n in sorted(ldsm.items())]
    rules.append(SassRule(r"LDSM(\..*)?", "no ldmatrix beyond the kernel's own", count=sum(ldsm.values())))
    if store.stores_d(key):  # one STSM per stmatrix form the kernel stores D with
        rules += [SassRule(re.escape(ldsm_opcode(m.num, m.trans, True)), f"{ldsm_opcode(m.num, m.trans, True)}: the "
                           f"kernel's stmatrix .x{m.num}" + (" .trans" if m.trans else ""), count=1)
                  for m in store.STORE_MOVES]
    rules.append(SassRule(r"STSM(\..*)?", "no stmatrix beyond the kernel's own",
                          count=len(store.STORE_MOVES) if store.stores_d(key) else 0))
    return SassCheck("sm_90a", tuple(rules), function=key.name)


# ------------------------------------------------------------------------------------------------ the launch

def pack(preps: list[Prepared]) -> LaunchInput:
    """One launch of prepared cases (of one kernel): images, params, A/B/C/metadata words, ldmatrix row addresses;
    D, A and B come back poisoned wherever the kernel did not write."""
    n = len(preps)
    key = preps[0].case.key
    aw, bw, cw, dw = (words(key, x) for x in "ABCD")
    params = np.zeros(n, PARAMS_DTYPE)
    sizes = np.array([p.image.size for p in preps], dtype=np.int64)
    if sizes.max() > MAX_IMAGE:
        raise ValueError(f"{preps[int(sizes.argmax())].case.id}: image of {sizes.max()} bytes exceeds {MAX_IMAGE}")
    params["image_offset"] = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    params["image_bytes"] = sizes
    params["variant"] = [p.launch_variant for p in preps]
    params["a_path"] = [p.a_path for p in preps]
    params["b_path"] = [p.b_path for p in preps]
    inputs = {"a_in": np.stack([p.a_words for p in preps]).reshape(n, THREADS, aw),
              "b_in": np.stack([p.b_words for p in preps]).reshape(n, THREADS, bw),
              "c_in": np.stack([p.c_words for p in preps]).reshape(n, THREADS, cw),
              "e_in": np.stack([p.e_words for p in preps]).reshape(n, THREADS),
              "ld_rows": np.stack([p.ld_rows for p in preps]).reshape(n, THREADS, 2)}
    outputs = {name: OutputSpec((THREADS, w), "uint32", POISON) for name, w in (("d_out", dw), ("a_out", aw),
                                                                                ("b_out", bw))}
    if store.stores_d(key):  # the stmatrix kernels' st_in (after ld_rows) and st_out (last), as their source has
        inputs["st_in"] = np.stack([p.st_in if p.st_in is not None else np.zeros(ST_ARGS, np.uint32)
                                    for p in preps]).astype(np.uint32)
        outputs["st_out"] = OutputSpec((ST_BYTES // 4,), "uint32", POISON)
    return LaunchInput(np.concatenate([p.image for p in preps]), params, inputs, outputs, 1, THREADS)
