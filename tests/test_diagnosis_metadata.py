"""The sparse-metadata probe (harness/families/wgmma_sp/metadata_probe.py) on the simulated wgmma_sp device, whose metadata
map is CUTLASS's ELayout (tests/simulated/wgmma_sp_device.py), not harness.spec.sparsity's: the faithful device reads
as the model, and a random invertible affine misreading of which chunk each nibble describes is recovered exactly."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.families.wgmma_sp import metadata_probe as MP
from harness.families import wgmma_sp
from harness.families.wgmma_sp import forms
from harness.spec import sparsity
from tests.simulated import misreading_probe as MR, wgmma_sp_device

pytestmark = pytest.mark.cute

KEYS = [forms.KernelKey("f16", 32, "f32", "SS"), forms.KernelKey("tf32", 16, "f32", "SS"),
        forms.KernelKey("s8", 64, "s32", "SS"), forms.KernelKey("f16", 16, "f32", "RS")]


class InProcess:
    def run(self, cubin_path, name, launch, timeout):
        return wgmma_sp_device.run(cubin_path, name, launch)


class _Named:
    def __init__(self, key):
        self.key, self.id, self.control = key, f"probe-{key.name}", ""


def _diagnose(key):
    return wgmma_sp.FAMILY.diagnose(wgmma_sp.FAMILY.kernel_of(key), [_Named(key)], "/nonexistent/x.cubin",
                                    InProcess(), 30, None)


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.name)
def test_the_faithful_device_reads_metadata_as_the_model(key):
    r, = _diagnose(key)
    assert r["status"] == "pass" and r["wrong"] == 0, r


@settings(max_examples=4, deadline=None)
@given(st.sampled_from(KEYS[:3]), st.integers(0, 2 ** 32 - 1))
def test_random_affine_misreadings_of_the_metadata_are_recovered_exactly(key, seed):
    """The device's value v of thread t describes chunk Q(row, chunk) instead of (row, chunk), Q a random invertible
    affine map of the 6 row and 3-4 chunk bits: the recovered map (element -> place) is exactly the planted one, read
    straight off the planted table at the zero and unit elements."""
    fmt = sparsity.format_of(forms.variants(key)[0].atype)
    cb = (fmt.chunks - 1).bit_length()
    q, c = MR.random_invertible(6 + cb, np.random.default_rng(seed))
    per = fmt.chunk

    def misread(k, row, col):
        r2, c2 = MR.compose(row, col // per, 6, q, c)
        return r2, c2 * per + col % per
    wgmma_sp_device.MISREAD_META = misread
    try:
        r, = _diagnose(key)
        row, col = misread(key.k, *wgmma_sp_device.element_of(key.k))
    finally:
        wgmma_sp_device.MISREAD_META = None
    # the planted table: element (row, chunk) -> place t * 8 + nibble, for the threads selector 0 reads
    nvals = row.shape[1]
    per_nibble = nvals // 8
    place = {}
    lane_q = np.arange(128) % 4
    readers = (lane_q // 2 == 0) if key.k in (32, 16) else np.ones(128, bool)
    for t in np.flatnonzero(readers):
        for v in range(0, nvals, per):
            place[(int(row[t, v]), int(col[t, v]) // per)] = t * 8 + v // per_nibble
    const = place[(0, 0)]
    columns = [place[(1 << i, 0)] ^ const for i in range(6)] + [place[(0, 1 << j)] ^ const for j in range(cb)]
    hw = r["hardware_map"]
    assert r["status"] == "fail" and hw["columns"] == columns and hw["constant"] == const, (hw["map"], columns)
    assert r["roles"] and r["summary"].startswith("metadata: the hardware's map is")
