"""mma_sync's stmatrix stores of D (harness/families/mma_sync/store.py) on the CPU: which kernels store and with
which forms and tiles, the expected tile checked against D written into the tile directly (no stmatrix model in
the oracle), the launch on the simulated device (every store passes, the wrong-swizzle control is caught as
predicted), devices whose store goes wrong (named byte by byte on the tile, D itself still right), and the SASS
rule's count of STSM."""
from __future__ import annotations

import numpy as np
import pytest

from harness.families.mma_sync import FAMILY, cases as C, forms as F, kernel as K, reference as R, store as S
from harness.families.mma_sync.ldmatrix import ROW_SWIZZLES, SmemTile
from tests.run import simsweep
from tests.simulated import mma_sync_device

STORING = [k for k in F.all_kernel_keys() if S.stores_d(k)]


def _store_cases(key):
    return [c for c in C.cases_for_key(key) if c.st.num]


def test_the_storing_kernels_store_every_form_into_every_tile_width():
    assert [k.name for k in STORING] == [
        "mmasync_m16n8k8_f16_f16_dense", "mmasync_m16n8k16_f16_f16_dense", "mmasync_m16n8k16_f8_f16_dense",
        "mmasync_m16n8k32_f8_f16_dense", "mmasync_m16n8k16_f16_f16_sp", "mmasync_m16n8k32_f16_f16_sp"]
    seen = set()
    for k in STORING:
        plain = [c.st for c in _store_cases(k) if not c.control]
        assert sorted((s.num, s.trans) for s in plain) == sorted((m.num, m.trans) for m in S.STORE_MOVES), k.name
        seen |= {(s.num, s.trans, s.row_bytes) for s in plain}
        controls = [c for c in _store_cases(k) if c.control]
        assert [(c.control, c.operand, c.st.tag) for c in controls] == [("wrong-swizzle", "D", "st-x4-sw128")]
    # every form into every width its stored rows fit (x4 non-trans and .trans rows are 32 bytes: no 16 unpadded)
    assert seen == {(m.num, m.trans, rb) for m in S.STORE_MOVES for rb in C.ROW_BYTES}
    with pytest.raises(ValueError, match="no stmatrix fragment"):
        C.Case(F.KernelKey("m16n8k16", "f16", "f32", "f32", False), 0, st=C.Store(2, False, 64))


def _direct_tile(case, prep):
    """The tile as D (and C, .x4) written straight into it at the tile's addresses: element (r, c) of the stored
    matrix at storage (r, c), or (c, r) with .trans; the junk around it as the image had it."""
    key, st = case.key, case.st
    maps = C.operand_maps(key)
    d = R.unpack(maps["D"], prep.expected["D"])[0]
    c = R.unpack(maps["C"], prep.c_words)[0]
    stored = {1: d[:8], 2: d, 4: np.concatenate([d, c], axis=1)}[st.num]
    storage = stored.T if st.trans else stored
    base = int(prep.st_in[33])
    t = R.store_tile(case, base)
    image = prep.image.copy()
    r, u = np.indices(storage.shape)
    addr = t.tile.address(t.row0 + r, t.col0 + u)
    image[addr] = (storage & 0xFF).astype(np.uint8)
    image[addr + 1] = (storage >> np.uint64(8)).astype(np.uint8)
    size = int(prep.st_in[34])
    return image[base:base + size]


@pytest.mark.parametrize("key", STORING, ids=lambda k: k.name)
def test_the_expected_tile_is_d_written_into_the_tile_directly(key):
    for case in _store_cases(key):
        prep = R.prepare(case)
        size = int(prep.st_in[34])
        got = prep.st_expected.view(np.uint8)
        if case.control:  # the right store is the intended tile; the predicted misread differs from it
            assert np.array_equal(prep.st_intended.view(np.uint8)[:size], _direct_tile(case, prep))
            assert not np.array_equal(got[:size], _direct_tile(case, prep))
        else:
            assert np.array_equal(got[:size], _direct_tile(case, prep)), case.id
        assert (prep.st_expected[size // 4:] == R.POISON).all()  # nothing past the tile is written


def run_on_sim(kernel, cases):
    return {r["id"]: r for r in simsweep.in_process(kernel, cases, mma_sync_device.run)}


def test_every_store_passes_and_the_control_is_caught_as_predicted_on_the_simulated_device():
    for key in STORING:
        kernel = FAMILY.kernel_of(key)
        cases = _store_cases(key)
        recs = run_on_sim(kernel, cases)
        for c in cases:
            r = recs[c.id]
            assert r["status"] == "pass" and r["st_mismatched_bytes"] == 0 and r["d_store"] == c.st.tag, r
            if c.control:
                assert r["caught"] and r["matches_model_prediction"], r


def test_a_device_storing_with_another_swizzle_is_named_on_the_tile_and_d_stays_right(monkeypatch):
    """The device's stmatrix writes each row where the 64-byte swizzle puts it, into a 128-byte tile."""
    key = STORING[1]
    real = mma_sync_device._store

    def swizzled(st_in, d_words, c_words, image, st_out):
        st_in = st_in.copy()
        st_in[:32] = ROW_SWIZZLES[64](ROW_SWIZZLES[128](st_in[:32].astype(np.int64)))
        real(st_in, d_words, c_words, image, st_out)
    monkeypatch.setattr(mma_sync_device, "_store", swizzled)
    cases = [c for c in _store_cases(key) if c.st.row_bytes == 128]
    recs = run_on_sim(FAMILY.kernel_of(key), cases)
    for c in cases:
        r = recs[c.id]
        if c.control:  # its addresses are the 64-byte swizzle's: the plant's second XOR undoes the first, and the
            # store lands where the right one would: the control says it could not fail
            assert r["status"] == "fail" and not r["caught"] and "could not fail" in r["why"], r
            continue
        # D's registers are right (only the tile is named); the first differing byte is named by tile row and byte
        assert r["status"] == "fail" and r["bad_operands"] == "D-tile" and r["st_mismatched_bytes"] > 0, r
        first = r["st_first_mismatches"][0]
        assert first["operand"] == "D-tile" and 0 <= first["col"] < 128 and r["st_bad_rows"]


def test_a_device_storing_c_before_d_is_caught():
    """.x4 with its register pairs in the other order: the tile's [D | C] comes out [C | D]."""
    key = STORING[0]
    case = next(c for c in _store_cases(key) if c.st.num == 4 and not c.control)
    prep = R.prepare(case)
    launch = K.pack([prep])
    out = mma_sync_device.run("x", key.name, launch)
    st_in = launch.inputs["st_in"][0]
    image = launch.images.copy()
    regs = S.registers(4, out["d_out"][0], launch.inputs["c_in"][0])[:, [2, 3, 0, 1]]
    from harness.families.mma_sync.ldmatrix import stmatrix
    stmatrix(S.STORE_MOVES[int(st_in[32]) - 1], st_in[:32].astype(np.int64), regs, image)
    base, size = int(st_in[33]), int(st_in[34])
    out["st_out"][0][:size // 4] = image[base:base + size].view(np.uint32)
    r = FAMILY.readback(FAMILY.kernel_of(key), [prep.slim()], out)[0]
    assert r["status"] == "fail" and r["st_mismatched_bytes"] > 0 and r["bad_operands"] == "D-tile"


def test_each_storing_kernel_asks_its_sass_for_each_stmatrix_form_once_and_the_others_for_none():
    for key in F.all_kernel_keys():
        rules = {r.opcode: r.count for r in K.sass_check(key).rules if "STSM" in r.opcode}
        if S.stores_d(key):
            want = {K.ldsm_opcode(m.num, m.trans, True).replace(".", "\\."): 1 for m in S.STORE_MOVES}
            assert rules == {**want, r"STSM(\..*)?": 6}, key.name
        else:
            assert rules == {r"STSM(\..*)?": 0}, key.name
