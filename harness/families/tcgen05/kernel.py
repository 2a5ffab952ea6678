"""The tcgen05 kernel: its CUDA source (tcgen05.cu, beside it, filled in per form) and a launch of prepared cases
(one CTA, or a cluster of two for cta_group::2, per case)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness import kernels
from harness.contract import WINDOW_SLACK, IfAccepted, LaunchInput, OutputSpec, SassCheck, SassRule
from harness.families.tcgen05 import forms
from harness.families.tcgen05.reference import POISON, TcPrepared

HERE = Path(__file__).resolve().parent  # the kernel's template sits beside this module

PARAMS_DTYPE = np.dtype([(k, "<u8") for k in ("image_offset", "desc_a", "desc_b", "zero_mask", "sf_desc_a",
                                             "sf_desc_b")] +
                        [(k, "<u4") for k in ("image_bytes", "idesc", "alloc_cols", "read_cols", "enable_input_d",
                                              "a_tmem_col", "a_tmem_cols", "sf_col_a", "sf_col_b", "spin_limit",
                                              "sp_meta_col", "sp_meta_cols")] +
                        [(f"lane_mask{i}", "<u4") for i in range(8)])  # the kernel's lane_mask[8]
assert PARAMS_DTYPE.itemsize == 128
SPIN_LIMIT = 1 << 22  # mbarrier polls (tens of milliseconds) before a case reports that its MMA never completed
STATUS_UNSET = 2  # the kernel writes 0 (the MMA completed) or 1 (it did not within the spin limit)


# ptxas's Tensor Memory access check: it makes a TMEM access outside the allocation a reported error at run time
# (NVIDIA documents no other runtime check). NVRTC passes it on with -Xptxas; a toolchain whose ptxas lacks it
# ("Unknown option") compiles the form with TC_NO_TMEM_CHECK instead, and the kernel then skips the MMA and reports
# STATUS_NOT_OBSERVED, so the observation is recorded as not made rather than made unchecked.
TMEM_CHECK_OPTION = "-Xptxas=-g-tmem-access-check"
TMEM_CHECK = IfAccepted(TMEM_CHECK_OPTION, "sm_100a", ("-DTC_NO_TMEM_CHECK",))  # the compile options of such a form
STATUS_NOT_OBSERVED = 3
# dynamic shared memory of a TMEM-checked launch: an SM's whole per-block allowance (227 KiB on sm_100a / sm_103a),
# less the kernel's static shared memory, so no other CTA (every kernel of the harness uses shared memory) fits on
# its SM beside it
EXCLUSIVE_SMEM = 227 * 1024 - 64


def source(form: forms.Form) -> str:
    forms.validate_form(form)
    pair = form.cta_group == 2
    cluster_sync = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");\n'
                    '    asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");')
    leader = "cluster_rank() == 0u"  # the even CTA of the pair issues the pair's MMA
    return kernels.fill(kernels.template("tcgen05.cu", HERE),
                KERNEL_NAME=form.name,
                CTA_GROUP=form.cta_group,
                CLUSTER_ATTR="__cluster_dims__(2, 1, 1)" if pair else "",
                CTA_SYNC=cluster_sync if pair else "__syncthreads();",
                ISSUER=leader if pair else "true",
                MMA=forms.mma_statement(form),
                SCALE_COPY=forms.scale_copy(form),
                COMMIT=forms.commit(form))


# the tensor-core MMA's SASS mnemonic per kind (read off sm_100a cubins)
MNEMONIC = {"tf32": "UTCHMMA", "f16": "UTCHMMA", "f8f6f4": "UTCQMMA", "i8": "UTCIMMA", "mxf8f6f4": "UTCQMMA",
            "mxf4": "UTCOMMA", "mxf4nvf4": "UTCOMMA"}


def sass_check(form: forms.Form, arch: str) -> SassCheck:
    """What the kernel's SASS must show: exactly one tensor-core MMA, of the kind's mnemonic, .2CTA exactly for
    cta_group::2, .WS exactly for .ws, .4X (.BLOCK16 on sm_103a) exactly for 16-element scale blocks (mxf4nvf4's
    scale_vec::4X / .block16), A from Tensor Memory (TS) or a descriptor (SS); the tcgen05.ld read-back and
    tcgen05.st of C (LDTM, STTM); the tcgen05.cp copies of each scale-factor operand of a block-scaled kind
    (forms.scale_copies) and none otherwise (UTCCP); the commit's barrier arrive (UTCBAR, .2CTA.MULTICAST for a
    pair)."""
    mods = "".join([r"(?=.*\.2CTA)" if form.cta_group == 2 else r"(?!.*\.2CTA)",
                    r"(?=.*\.WS)" if form.ws else r"(?!.*\.WS)",
                    # scale_vec::4X and .block16: sm_100a listings spell it .4X, sm_103a listings .BLOCK16 (nvdisasm
                    # 13.5); .block32 (K = 96) is UTCOMMA without a suffix, as scale_vec::2X is
                    r"(?=.*\.(4X|BLOCK16)\b)" if form.sf_vec == 16 else r"(?!.*\.(4X|BLOCK16)\b)"])
    a_from = "Tensor Memory" if form.a_src == "TS" else "a shared-memory descriptor"
    n = form.mmas
    rules = [SassRule(r"UTC[A-Z]MMA(\.\S+)?", "one tensor-core MMA" if n == 1 else f"{n} tensor-core MMAs", count=n),
             SassRule(MNEMONIC[form.kind] + mods + r"(\.\S+)?",
                      f"{MNEMONIC[form.kind]} for .kind::{form.kind}"
                      f"{' .cta_group::2 (.2CTA)' if form.cta_group == 2 else ''}{' .ws (.WS)' if form.ws else ''}"
                      f" with A from {a_from}", count=n,
                      operands=r"^tmem\[" if form.a_src == "TS" else r"^gdesc\["),
             SassRule(r"LDTM(\.\S+)?", "tcgen05.ld of D"),
             SassRule(r"STTM(\.\S+)?", "tcgen05.st of C (and of A for TS)"),
             SassRule(r"UTCCP(\.\S+)?", "tcgen05.cp of each scale-factor operand" if form.block_scaled
                      else "no tcgen05.cp (no scale factors)", count=2 * forms.scale_copies(form)),
             SassRule(r"UTCBAR(\.\S+)?", "tcgen05.commit's barrier arrive")]
    if form.cta_group == 2:
        rules.append(SassRule(r"UTCBAR\.2CTA\.MULTICAST(\.\S+)?", "the pair's commit, multicast to both CTAs"))
    rules += variant_rules(form)
    return SassCheck(arch, tuple(rules), function=form.name)


# How each qualifier shows in the SASS (read off NVRTC 13.5 cubins for sm_100a and sm_103a alike): the A collector
# as suffixes of the A operand (fill .A_KEEP, use .A_REUSE.A_KEEP, lastuse .A_REUSE, discard none), .ashift as
# UTCHMMA.ASHIFT, scale-input-d as a trailing immediate, the disable-output-lane mask as a uniform register after
# the idesc, tcgen05.shift as UTCSHIFT.DOWN.
COLLECTOR_SASS = {"fill": r"\.A_KEEP,", "use": r"\.A_REUSE\.A_KEEP,", "lastuse": r"\.A_REUSE,", "discard": None}


def variant_rules(form: forms.Form) -> list[SassRule]:
    v, mma = form.variant, MNEMONIC[form.kind] + r"(\.\S+)?"
    plain_a = r"^(gdesc|tmem)\[\w+\],"  # an A operand without a collector suffix
    out = []
    if v.startswith("ca_"):
        steps = v[3:].split("_")
        for step in dict.fromkeys(steps):
            rx = COLLECTOR_SASS[step]
            if rx is None:
                out.append(SassRule(mma, "collector::a::discard: an A operand without a collector suffix", count=1,
                                    operands=plain_a))
            else:
                out.append(SassRule(mma, f"collector::a::{step} ({rx.strip(',').replace(chr(92), '')} on A)",
                                    count=steps.count(step), operands=r"^\w+\[\w+\]" + rx))
    elif form.mmas == 1:  # every other MMA reads A plainly, not through the collector
        out.append(SassRule(mma, "no collector suffix on A", count=1, operands=plain_a))
    if v in ("sid", "dol_sid"):
        out.append(SassRule(mma, f"the scale-input-d immediate {forms.SCALE_INPUT_D}", count=1,
                            operands=rf",\s*{forms.SCALE_INPUT_D:#x}\s*$"))
    elif form.kind in ("f16", "tf32") and not form.ws and not form.sparse:
        out.append(SassRule(mma, "no scale-input-d immediate", count=0, operands=r",\s*0x[0-9a-f]+\s*$"))
    if v in ("dol", "dol_sid"):
        out.append(SassRule(mma, "the disable-output-lane mask: a uniform register after the idesc", count=1,
                            operands=r"idesc\[\w+\],\s*UR\w+,"))
    elif form.kind in ("f16", "tf32") and not form.ws and not form.sparse:
        out.append(SassRule(mma, "no disable-output-lane mask", count=0, operands=r"idesc\[\w+\],\s*UR\w+,"))
    out.append(SassRule(r"UTCHMMA\.ASHIFT(\.\S+)?", ".ashift" if v == "ashift" else "no .ashift",
                        count=1 if v == "ashift" else 0))
    out.append(SassRule(r"UTCSHIFT(\.\S+)?", "tcgen05.shift.down" if v == "shift_down" else "no tcgen05.shift",
                        count=1 if v == "shift_down" else 0))
    return out


def pack(preps: list[TcPrepared]) -> LaunchInput:
    """One launch: every CTA's image and parameters, the Tensor Memory image stored before the MMA (C, and A
    for TS); out come every TMEM cell read back raw, poisoned first, and each CTA's status."""
    read_cols = max(p.read_cols for p in preps)
    alloc = max(32, 1 << (read_cols - 1).bit_length())
    images = [img for p in preps for img in p.images]
    params = np.zeros(len(images), PARAMS_DTYPE)
    sizes = np.array([i.size for i in images], np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tmem_in = np.zeros((len(images), 128, read_cols), np.uint32)
    j = 0
    for p in preps:
        for r, (img, prm) in enumerate(zip(p.images, p.params)):
            for k, v in prm.items():
                params[j][k] = v
            params[j]["image_offset"], params[j]["image_bytes"] = offsets[j], img.size
            params[j]["read_cols"], params[j]["spin_limit"] = read_cols, SPIN_LIMIT
            params[j]["alloc_cols"] = p.alloc_cols or alloc  # a control may allocate less than it uses
            tmem_in[j, :, :p.read_cols] = p.tmem_in[r]
            j += 1
    extra = 64
    if preps[0].case.form.tmem_check:  # alone on its SM (see EXCLUSIVE_SMEM)
        extra = max(64, EXCLUSIVE_SMEM - int(max(i.size for i in images)) - WINDOW_SLACK)
    return LaunchInput(np.concatenate(images), params, {"tmem_in": tmem_in},
                       {"tmem_out": OutputSpec((128, read_cols), "uint32", POISON),
                        "status": OutputSpec((), "uint32", STATUS_UNSET)},
                       ctas_per_case=preps[0].case.form.cta_group, extra_smem=extra)
