"""tcgen05.mma forms (sm_100a, sm_103a): which kernels exist, and the instruction text of each.

A form is what must be compiled in: the .kind, the CTA group, .ws, sparsity (tcgen05.mma.sp takes the metadata's
Tensor Memory address as an operand), where A comes from (shared memory or Tensor Memory) and, for the block-scaled
kinds, the scale-vector size. Everything else (M, N, element types,
transposes, negation, scale-factor ids) is in the 32-bit instruction descriptor, a runtime value, so one
kernel per form serves every case of it.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.spec import idesc

ARCHS = ("sm_100a", "sm_103a")
# The qualifiers of the plain (f16 / tf32) tcgen05.mma beyond the kind and CTA group (PTX ISA 9.7.16.10.9), each a form
# of its own (they are compiled in): name -> what it issues.
VARIANTS = {
    "sid": "the scale-input-d immediate (SCALE_INPUT_D): D = A*B + D * 2^-scale-input-d",
    "dol": "the disable-output-lane mask (4 words a CTA, from the case's parameters): masked lanes keep their D",
    "dol_sid": "both, as CUTLASS's SM100_MMA_F16BF16_SS_SCALED issues them (mask, then the immediate)",
    "ca_fill_lastuse": "collector::a::fill, then collector::a::lastuse naming A 16 bytes on (only the collector "
                       "holds A)",
    "ca_fill_use_lastuse": "collector::a::fill, ::use, ::lastuse, the later two naming A 16 bytes on",
    "ca_discard": "collector::a::discard (A read from shared memory, the collector not kept)",
    "ashift": ".ashift (A from Tensor Memory): compiled and SASS-checked, no model (cases.VARIANT_OPEN)",
    "shift_down": "tcgen05.shift.cta_group::1.down of D after the MMA: compiled and SASS-checked, no model",
}
SCALE_INPUT_D = 2  # the immediate the scale-input-d forms carry (0..15)
# kind -> scale-vector qualifier of the block-scaled MMA (PTX ISA 9.7.16.10.x: 1X for mxf8f6f4, 2X for mxf4,
# 4X for mxf4nvf4 with 16-element blocks)
SCALE_VEC = {"mxf8f6f4": "scale_vec::1X", "mxf4": "scale_vec::2X", "mxf4nvf4": "scale_vec::4X"}
PLAIN_KINDS = ("tf32", "f16", "f8f6f4", "i8")


@dataclass(frozen=True)
class Form:
    kind: str
    cta_group: int = 1
    ws: bool = False
    a_src: str = "SS"  # 'SS': A and B from shared memory; 'TS': A from Tensor Memory
    sparse: bool = False  # tcgen05.mma.sp / .ws.sp: A is 50% structured-sparse, K doubles
    # compiled with ptxas's Tensor Memory access check (-g-tmem-access-check) where the toolchain has it, and launched
    # with all of an SM's shared memory, so that its CTA never shares an SM with another: the form of the
    # column-beyond-the-allocation observation (cases.OBSERVATIONS), which could otherwise touch a neighbour's TMEM
    tmem_check: bool = False
    variant: str = ""  # a qualifier form (VARIANTS): '' for the plain instruction

    @property
    def name(self) -> str:
        return (f"tcgen05_{self.kind}_cg{self.cta_group}{'_ws' if self.ws else ''}{'_sp' if self.sparse else ''}"
                f"{'_tmemcheck' if self.tmem_check else ''}{'_' + self.variant if self.variant else ''}_{self.a_src}")

    @property
    def mmas(self) -> int:
        """MMAs the kernel issues: a collector form's fill, use(s) and last use each issue one."""
        return len(self.variant.split("_")) - 1 if self.variant.startswith("ca_") else 1

    @property
    def block_scaled(self) -> bool:
        return self.kind in idesc.BLOCK_SCALED


def validate_form(f: Form) -> Form:
    if f.kind not in idesc.KINDS:
        raise ValueError(f"unknown kind {f.kind!r}; one of {', '.join(idesc.KINDS)}")
    if f.cta_group not in (1, 2):
        raise ValueError("cta_group is 1 or 2")
    if f.ws and (f.cta_group != 1 or f.block_scaled):
        raise ValueError(".ws is valid with .cta_group::1 and the kinds tf32, f16, f8f6f4, i8 only")
    if f.a_src not in ("SS", "TS"):
        raise ValueError("A source is SS or TS")
    if f.tmem_check and (f.cta_group != 1 or f.ws or f.sparse or f.a_src != "SS" or f.block_scaled):
        raise ValueError("the TMEM-checked form is a plain one-CTA SS form")
    if f.variant:
        if f.variant not in VARIANTS:
            raise ValueError(f"unknown qualifier form {f.variant!r}; one of {', '.join(VARIANTS)}")
        if f.kind not in ("f16", "tf32") or f.ws or f.sparse or f.tmem_check:
            raise ValueError("the qualifier forms are dense kind::f16 / kind::tf32 forms without .ws")
        if (f.variant == "ashift") != (f.a_src == "TS") and f.variant in ("ashift",):
            raise ValueError(".ashift takes A from Tensor Memory (ptxas: 'Illegal modifier' otherwise)")
        if (f.variant.startswith("ca_") or f.variant == "shift_down") and (f.a_src != "SS" or f.cta_group != 1):
            raise ValueError("the collector and shift forms are one-CTA SS forms")
    return f


def variant_forms() -> list[Form]:
    """The qualifier forms: scale-input-d on f16 / tf32, one CTA and a pair, A from shared or Tensor Memory; the
    disable-output-lane mask on one CTA and a pair; the A collector's sequences; .ashift; tcgen05.shift."""
    out = [Form("f16", variant="sid"), Form("tf32", variant="sid"), Form("f16", a_src="TS", variant="sid"),
           Form("f16", 2, variant="sid"), Form("f16", variant="dol"), Form("f16", 2, variant="dol"),
           Form("f16", variant="dol_sid"), Form("f16", variant="ca_fill_lastuse"),
           Form("f16", variant="ca_fill_use_lastuse"), Form("f16", variant="ca_discard"),
           Form("f16", a_src="TS", variant="ashift"), Form("f16", variant="shift_down")]
    return [validate_form(f) for f in out]


def all_forms() -> list[Form]:
    """Every dense form, then every sparse one (PTX ISA 9.7.16.10.9.2, .4: each kind has .sp; .ws.sp for the kinds
    .ws takes)."""
    out = []
    for sparse in (False, True):
        for kind in idesc.KINDS:
            out.append(Form(kind, 1, sparse=sparse))
            out.append(Form(kind, 2, sparse=sparse))
            if kind in PLAIN_KINDS:
                out.append(Form(kind, 1, a_src="TS", sparse=sparse))
                out.append(Form(kind, 1, ws=True, sparse=sparse))
    return [validate_form(f) for f in out]


def mma_statement(f: Form) -> str:
    """The inline-asm statement issuing the MMA; operands: d_tmem, a (desc or tmem), desc_b, idesc,
    enable_input_d, then the zero-column mask (.ws) or the scale-factor TMEM addresses (block scaling), and last,
    for .sp, the metadata's TMEM address (written [sp-meta-tmem] between b-desc and idesc)."""
    a_op = "[%1]" if f.a_src == "TS" else "%1"
    a_in = '"r"(a_tmem)' if f.a_src == "TS" else '"l"(desc_a)'
    inputs = ['"r"(d_tmem)', a_in, '"l"(desc_b)', '"r"(p.idesc)', '"r"(p.enable_input_d)']
    sp = ".sp" if f.sparse else ""
    meta = f"[%{5 + (2 if f.block_scaled else 1 if f.ws else 0)}], " if f.sparse else ""
    if f.variant:
        instr, inputs = _variant_instr(f, a_op, inputs)
    elif f.block_scaled:
        instr = (f"tcgen05.mma{sp}.cta_group::{f.cta_group}.kind::{f.kind}.block_scale.{SCALE_VEC[f.kind]} "
                 f"[%0], {a_op}, %2, {meta}%3, [%5], [%6], q;")
        inputs += ['"r"(sfa)', '"r"(sfb)']
    elif f.ws:
        instr = f"tcgen05.mma.ws{sp}.cta_group::1.kind::{f.kind} [%0], {a_op}, %2, {meta}%3, q, %5;"
        inputs.append('"l"(p.zero_mask)')
    else:
        instr = f"tcgen05.mma{sp}.cta_group::{f.cta_group}.kind::{f.kind} [%0], {a_op}, %2, {meta}%3, q;"
    if f.sparse:
        inputs.append('"r"(sp_meta)')
    return (f'asm volatile("{{\\n.reg .pred q;\\nsetp.ne.b32 q, %4, 0;\\n{instr}\\n}}\\n"\n'
            f'            :: {", ".join(inputs)} : "memory");')


def _variant_instr(f: Form, a_op: str, inputs: list[str]) -> tuple[str, list[str]]:
    """The statement text of a qualifier form (operands as mma_statement numbers them; the mask words follow)."""
    head = f"tcgen05.mma.cta_group::{f.cta_group}.kind::{f.kind}"
    v = f.variant
    if v == "sid":
        return f"{head} [%0], {a_op}, %2, %3, q, {SCALE_INPUT_D};", inputs
    if v in ("dol", "dol_sid"):
        words = 4 * f.cta_group  # one bit a Tensor Memory lane, 128 lanes a CTA
        masks = ", ".join(f"%{5 + i}" for i in range(words))
        tail = f", {SCALE_INPUT_D}" if v == "dol_sid" else ""
        return (f"{head} [%0], {a_op}, %2, %3, {{{masks}}}, q{tail};",
                inputs + [f'"r"(p.lane_mask[{i}])' for i in range(words)])
    if v.startswith("ca_"):
        steps = v[3:].split("_")
        # the MMAs after the fill accumulate (predicate t) and name A's descriptor 16 bytes on (%5, inside A's own
        # image, as the start+16 control reads it): A right again only if it comes from the collector
        out = [f"{head}.collector::a::{steps[0]} [%0], %1, %2, %3, q;"]
        out += [f"{head}.collector::a::{s} [%0], %5, %2, %3, t;" for s in steps[1:]]
        if len(steps) == 1:
            return out[0], inputs
        return (".reg .pred t;\\nsetp.eq.b32 t, 0, 0;\\n" + "\\n".join(out),
                inputs + ['"l"(desc_a + 1ull)'])
    if v == "ashift":
        return f"{head}.ashift [%0], {a_op}, %2, %3, q;", inputs
    if v == "shift_down":
        return f"{head} [%0], {a_op}, %2, %3, q;\\ntcgen05.shift.cta_group::1.down [%0];", inputs
    raise ValueError(f"unknown qualifier form {v!r}")


def scale_copy(f: Form) -> str:
    """Scale factors, shared memory -> Tensor Memory, as CUTLASS's block-scaled collectives copy them
    (SM100_UTCCP_4x32dp128bit_1cta/_2cta): 32 rows of 16 bytes, broadcast to all four 32-lane quarters, one copy
    per operand (128 rows/columns of factors, 4 columns). Under cta_group::2 the leader CTA issues it for the pair."""
    if not f.block_scaled:
        return ""
    cp = f"tcgen05.cp.cta_group::{f.cta_group}.32x128b.warpx4"
    return (f'asm volatile("{cp} [%0], %1;\\n" :: "r"(sfa), "l"(p.sf_desc_a + window_field) : "memory");\n'
            f'        asm volatile("{cp} [%0], %1;\\n" :: "r"(sfb), "l"(p.sf_desc_b + window_field) : "memory");')


def commit(f: Form) -> str:
    if f.cta_group == 1:
        return ('asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\\n"'
                ' :: "r"(smem_u32(&mbar)) : "memory");')
    # the pair's MMA signals the mbarrier at the same offset in both CTAs of the cluster
    return ('asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64'
            ' [%0], %1;\\n" :: "r"(smem_u32(&mbar)), "h"((unsigned short)3) : "memory");')
