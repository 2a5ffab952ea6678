"""The tap's proof on an H100 (issue 57): tap_wgmma_sbo (tests/tap_kernels.py) runs with the tilelang#2593 class of
SBO bug and without it. The tap flags the buggy kernel with the exact field and value (B's SBO 512, intended 1024)
and passes the fixed one; D confirms both: the fixed kernel's D is A x B^T exactly, the buggy kernel's is A times
B as the finding says the tensor core reads it (the layout model with SBO 512), not A x B^T."""
import numpy as np
import pytest

from harness import tap
from tests import tap_kernels as K

pytestmark = pytest.mark.gpu("sm_90a")


def test_the_fixed_kernel_passes_and_computes_a_times_b():
    recs, d, a, b, _ = K.run_wgmma(fixed=True)
    assert [(r.tag, r.count) for r in recs] == [(K.TAG_A, 1), (K.TAG_B, 1)]  # one record per warpgroup
    assert tap.check(recs, K.wgmma_declarations()) == []
    assert np.array_equal(d, a.astype(np.float32) @ b.astype(np.float32).T)


def test_the_buggy_kernel_is_flagged_with_the_exact_field_and_value():
    recs, d, a, b, img_b = K.run_wgmma(fixed=False)
    (f,) = tap.check(recs, K.wgmma_declarations())
    assert (f.tag, f.name, f.field, f.got, f.want) == (K.TAG_B, "B", "SBO", 512, 1024)
    assert "rows 8-23" in f.message
    want = a.astype(np.float32) @ b.astype(np.float32).T
    predicted = a.astype(np.float32) @ K.misread_b(img_b, 512).astype(np.float32).T
    assert not np.array_equal(d, want)
    assert np.array_equal(d, predicted)  # the misread the finding names is the one the hardware made
    assert np.array_equal(d[:, :8], want[:, :8])  # B's rows 0-7 are where the layout puts them
