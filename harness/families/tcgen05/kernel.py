"""The tcgen05 kernel: its CUDA source (kernels/tcgen05.cu filled in per form) and a launch of prepared cases
(one CTA, or a cluster of two for cta_group::2, per case)."""
from __future__ import annotations

import numpy as np

from harness import kernels
from harness.families.tcgen05 import forms
from harness.families.tcgen05.reference import POISON, TcPrepared
from harness.run.launch import LaunchInput, OutputSpec

PARAMS_DTYPE = np.dtype([(k, "<u8") for k in ("image_offset", "desc_a", "desc_b", "zero_mask", "sf_desc_a",
                                             "sf_desc_b")] +
                        [(k, "<u4") for k in ("image_bytes", "idesc", "alloc_cols", "read_cols", "enable_input_d",
                                              "a_tmem_col", "a_tmem_cols", "sf_col_a", "sf_col_b", "spin_limit",
                                              "sp_meta_col", "sp_meta_cols")])
assert PARAMS_DTYPE.itemsize == 96
SPIN_LIMIT = 1 << 22  # mbarrier polls (tens of milliseconds) before a case reports that its MMA never completed
STATUS_UNSET = 2  # the kernel writes 0 (the MMA completed) or 1 (it did not within the spin limit)


def source(form: forms.Form) -> str:
    forms.validate_form(form)
    pair = form.cta_group == 2
    cluster_sync = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");\n'
                    '    asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");')
    leader = "cluster_rank() == 0u"  # the even CTA of the pair issues the pair's MMA
    return kernels.fill(kernels.template("tcgen05.cu"),
                KERNEL_NAME=form.name,
                CTA_GROUP=form.cta_group,
                CLUSTER_ATTR="__cluster_dims__(2, 1, 1)" if pair else "",
                CTA_SYNC=cluster_sync if pair else "__syncthreads();",
                ISSUER=leader if pair else "true",
                MMA=forms.mma_statement(form),
                SCALE_COPY=forms.scale_copy(form),
                COMMIT=forms.commit(form))




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
    return LaunchInput(np.concatenate(images), params, {"tmem_in": tmem_in},
                       {"tmem_out": OutputSpec((128, read_cols), "uint32", POISON),
                        "status": OutputSpec((), "uint32", STATUS_UNSET)},
                       ctas_per_case=preps[0].case.form.cta_group, extra_smem=64)
