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
    "ca_fill_lastuse": "collector::a::fill, then collector::a::lastuse, naming A 16 bytes on (SS: only the "
                       "collector holds A) or the same A (TS)",
    "ca_fill_use_lastuse": "collector::a::fill, ::use, ::lastuse, the later two naming A 16 bytes on (SS) or the "
                           "same A (TS)",
    "ca_discard": "collector::a::discard (A read from memory, the collector not kept)",
    "ashift": ".ashift (A from Tensor Memory, M = 128): D's row r is A's row r - 1 times B; row 0 not checked",
    "shift_down": "tcgen05.shift.cta_group::1.down of D after the MMA: lanes 1-31 of D's first 8 columns take the "
                  "lane above; lane 0 not checked",
}
# The A collector with A in Tensor Memory (the TS collector forms): allowed. PTX ISA 9.7.16.10.9.1 (tcgen05.mma),
# syntax 3 (convolution MMA): 'tcgen05.mma.cta_group.kind{.ashift}.collector_usage [d-tmem], [a-tmem], b-desc, ...'
# takes .collector_usage with [a-tmem]; 9.7.16.10.9.2's example issues '.collector::a:fill [taddr2], [taddr1], ...' (A
# in Tensor Memory). The one restriction (9.7.16.10.9.1): 'It is illegal to specify either of .collector::a::use or
# .collector::a::fill along with .ashift' (ptxas: "Modifier '.collector::a::fill' cannot be combined with modifier
# '.ashift'"). CUTLASS's SM100 atoms issue no collector qualifier at all.
COLLECTOR_OPS = ("fill", "use", "lastuse", "discard")
COLLECTOR_NOT_WITH_ASHIFT = ("fill", "use")


def collector_allowed(op: str, a_src: str, ashift: bool = False) -> str | None:
    """Why collector::a::<op> may not be issued with A from `a_src` ('SS' / 'TS') and .ashift (None: it may)."""
    if op not in COLLECTOR_OPS:
        return f"collector::a::{op} is not a collector operation ({', '.join(COLLECTOR_OPS)})"
    if a_src not in ("SS", "TS"):
        return "A source is SS or TS"
    if ashift and a_src != "TS":
        return ".ashift takes A from Tensor Memory"
    if ashift and op in COLLECTOR_NOT_WITH_ASHIFT:
        return (f"collector::a::{op} with .ashift: PTX ISA 9.7.16.10.9.1 'It is illegal to specify either of "
                ".collector::a::use or .collector::a::fill along with .ashift'")
    return None


# sm_103a's K = 96 shape of the 4-bit block-scaled kinds: PTX ISA 9.7.16.2.1.1 (Target ISA Note) 'K = 96 is only
# supported for ... sm_103a'; Table 54 (9.7.16.10.7.1): .block16 with .kind::mxf4nvf4 at K = 96 takes scale_A M x 6,
# .block32 with .kind::mxf4 / .kind::mxf4nvf4 M x 3; the .scale_vec::NX spellings alias .blockN only 'when K = 64 or
# 128' (9.7.16.10.9.1), so a K = 96 form issues .block16 / .block32. K = 96 itself is bit 31 of the instruction
# descriptor (a runtime value); the qualifier is compiled in, so each (kind, block) is a form. CUTLASS's SM103 atoms
# (cute/arch/mma_sm100_umma.hpp, SM103_MXF4_ULTRA_SS_VS / _2x1SM_SS_VS) issue kind::mxf4nvf4 .block16 (VS = 16) and
# .block32 (VS = 32, e2m1 with ue8m0 only); kind::mxf4 .block32 is the ISA's alone (CUTLASS has no atom for it).
K96_BLOCKS = (("mxf4nvf4", 16), ("mxf4nvf4", 32), ("mxf4", 32))
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
    k96_block: int = 0  # sm_103a's K = 96 (K96_BLOCKS): the .blockN it issues (16 or 32); 0: the kind's own K

    @property
    def name(self) -> str:
        return (f"tcgen05_{self.kind}_cg{self.cta_group}{'_ws' if self.ws else ''}{'_sp' if self.sparse else ''}"
                f"{f'_k96b{self.k96_block}' if self.k96_block else ''}"
                f"{'_tmemcheck' if self.tmem_check else ''}{'_' + self.variant if self.variant else ''}_{self.a_src}")

    @property
    def sf_vec(self) -> int:
        """Block-scaled kinds: elements of K one scale factor spans (0 for the others): scale_vec::1X / 2X (block32)
        32, scale_vec::4X (block16) 16, or the K = 96 form's .blockN."""
        if not self.block_scaled:
            return 0
        return self.k96_block or (16 if self.kind == "mxf4nvf4" else 32)

    @property
    def scale_type(self) -> str:
        """The factors' type: ue4m3 for 16-element blocks of kind::mxf4nvf4 (NVFP4), ue8m0 otherwise (PTX ISA
        Table 55: block32 takes ue8m0 only)."""
        return "ue4m3" if self.kind == "mxf4nvf4" and self.sf_vec == 16 else "ue8m0"

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
        if f.variant.startswith("ca_"):
            if f.cta_group != 1:
                raise ValueError("the collector forms are one-CTA forms")
            for op in f.variant[3:].split("_"):
                why = collector_allowed(op, f.a_src)
                if why:
                    raise ValueError(why)
        if f.variant in ("ashift", "shift_down") and f.cta_group != 1:
            raise ValueError("the shift forms are one-CTA forms")
        if f.variant == "shift_down" and f.a_src != "SS":
            raise ValueError("the tcgen05.shift form is an SS form")
    if f.k96_block:
        if (f.kind, f.k96_block) not in K96_BLOCKS:
            raise ValueError(f"K = 96 takes .block16 with kind::mxf4nvf4 or .block32 with kind::mxf4 / mxf4nvf4 "
                             f"(PTX ISA Table 54), not .block{f.k96_block} with kind::{f.kind}")
        if f.sparse or f.ws or f.a_src != "SS" or f.variant or f.tmem_check:
            raise ValueError("the K = 96 forms are dense SS forms (K = 96 is a dense shape; A in shared memory, "
                             "as CUTLASS's SM103 atoms take it)")
    return f


def variant_forms() -> list[Form]:
    """The qualifier forms: scale-input-d on f16 / tf32, one CTA and a pair, A from shared or Tensor Memory; the
    disable-output-lane mask on one CTA and a pair; the A collector's sequences; .ashift; tcgen05.shift."""
    out = [Form("f16", variant="sid"), Form("tf32", variant="sid"), Form("f16", a_src="TS", variant="sid"),
           Form("f16", 2, variant="sid"), Form("f16", variant="dol"), Form("f16", 2, variant="dol"),
           Form("f16", variant="dol_sid"), Form("f16", variant="ca_fill_lastuse"),
           Form("f16", variant="ca_fill_use_lastuse"), Form("f16", variant="ca_discard"),
           Form("f16", a_src="TS", variant="ca_fill_lastuse"), Form("f16", a_src="TS", variant="ca_fill_use_lastuse"),
           Form("f16", a_src="TS", variant="ca_discard"),
           Form("f16", a_src="TS", variant="ashift"), Form("f16", variant="shift_down")]
    return [validate_form(f) for f in out]


def k96_forms() -> list[Form]:
    """sm_103a's K = 96 forms (K96_BLOCKS): one CTA, and the pair (CUTLASS's SM103_MXF4_ULTRA_2x1SM_SS_VS) for the
    two kind::mxf4nvf4 blocks CUTLASS issues."""
    out = [Form(kind, 1, k96_block=b) for kind, b in K96_BLOCKS]
    out += [Form(kind, 2, k96_block=b) for kind, b in K96_BLOCKS if kind == "mxf4nvf4"]
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
        vec = f"block{f.k96_block}" if f.k96_block else SCALE_VEC[f.kind]
        instr = (f"tcgen05.mma{sp}.cta_group::{f.cta_group}.kind::{f.kind}.block_scale.{vec} "
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
        # the MMAs after the fill accumulate (predicate t). SS: they name A's descriptor 16 bytes on (%5, inside A's
        # own image, as the start+16 control reads it), A right again only if it comes from the collector (a reading:
        # cases.unsettled_reason). TS: they name the same [a-tmem], so whether the tensor core reuses the collector or
        # reloads A (PTX ISA 9.7.16.10: 'reuse is opportunistic') the ISA defines D
        later = "[%1]" if f.a_src == "TS" else "%5"
        out = [f"{head}.collector::a::{steps[0]} [%0], {a_op}, %2, %3, q;"]
        out += [f"{head}.collector::a::{s} [%0], {later}, %2, %3, t;" for s in steps[1:]]
        if len(steps) == 1:
            return out[0], inputs
        return (".reg .pred t;\\nsetp.eq.b32 t, 0, 0;\\n" + "\\n".join(out),
                inputs + ([] if f.a_src == "TS" else ['"l"(desc_a + 1ull)']))
    if v == "ashift":
        return f"{head}.ashift [%0], {a_op}, %2, %3, q;", inputs
    if v == "shift_down":
        return f"{head} [%0], {a_op}, %2, %3, q;\\ntcgen05.shift.cta_group::1.down [%0];", inputs
    raise ValueError(f"unknown qualifier form {v!r}")


def scale_copies(f: Form) -> int:
    """tcgen05.cp copies per scale-factor operand: one per 4 factors of a row (a 512-byte atom of CUTLASS's
    scale-factor layout, datapaths.sf_smem_offset), so two for K = 96 .block16's 6 factors."""
    from harness.families.tcgen05.datapaths import SF_PER_ATOM, sf_blocks
    return -(-sf_blocks(f) // SF_PER_ATOM) if f.block_scaled else 0


def scale_copy(f: Form) -> str:
    """Scale factors, shared memory -> Tensor Memory, as CUTLASS's block-scaled collectives copy them
    (SM100_UTCCP_4x32dp128bit_1cta/_2cta): 32 rows of 16 bytes, broadcast to all four 32-lane quarters, one copy
    per operand and 4 factors of a row (128 rows/columns of factors, 4 columns; a further atom 512 bytes on in shared
    memory, 4 columns on in Tensor Memory: datapaths.sf_tmem_position). Under cta_group::2 the leader CTA issues it
    for the pair."""
    if not f.block_scaled:
        return ""
    from harness.families.tcgen05.datapaths import SF_ATOM_BYTES, SF_PER_ATOM
    cp = f"tcgen05.cp.cta_group::{f.cta_group}.32x128b.warpx4"
    out = []
    for w in ("a", "b"):
        for t in range(scale_copies(f)):
            col, field = (f" + {SF_PER_ATOM * t}u", f" + {SF_ATOM_BYTES * t >> 4}ull") if t else ("", "")
            out.append(f'asm volatile("{cp} [%0], %1;\\n" :: "r"(sf{w}{col}), "l"(p.sf_desc_{w} + window_field{field})'
                       ' : "memory");')
    return "\n        ".join(out)


def commit(f: Form) -> str:
    if f.cta_group == 1:
        return ('asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\\n"'
                ' :: "r"(smem_u32(&mbar)) : "memory");')
    # the pair's MMA signals the mbarrier at the same offset in both CTAs of the cluster
    return ('asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64'
            ' [%0], %1;\\n" :: "r"(smem_u32(&mbar)), "h"((unsigned short)3) : "memory");')
