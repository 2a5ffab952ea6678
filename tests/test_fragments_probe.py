"""Fragment probes (harness/families/wgmma/fragments_probe.py) against the simulated wgmma device, whose register
fragments come from CuTe DSL (tests/simulated/oracle_cache.py), not from harness.spec.fragments. Each edit of the
catalogue is planted in the *model* (the device stays right), and the diagnosis must name it."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.families.wgmma import fragments_probe as FP
from harness.families import wgmma as wgmma_family
from harness.families.wgmma import cases as C, forms, readback
from harness.spec import fragments
from tests.simulated import wgmma_device

pytestmark = pytest.mark.cute  # the simulated GPUs read their layouts from CuTe DSL

SS = forms.KernelKey("f16", 64, "f32", "SS")
RS = forms.KernelKey("f16", 64, "f16", "RS")
RS8 = forms.KernelKey("s8", 32, "s32", "RS")


class InProcess:
    """A GPU worker that runs the simulated device in this process (the model's plant stays out of it: the
    device reads its fragments from the CuTe DSL cache)."""
    def run(self, cubin_path, name, launch, timeout):
        return wgmma_device.run(cubin_path, name, launch)


def _clear():
    for f in (fragments.wgmma_d_fragment, fragments.wgmma_a_fragment, readback._d_owner, readback._d_gather):
        if hasattr(f, "cache_clear"):
            f.cache_clear()


def plant(monkeypatch, edit: FP.Edit):
    """The model's fragment becomes edit(true fragment), cached lookups cleared."""
    orig = fragments.wgmma_d_fragment if edit.operand == "D" else fragments.wgmma_a_fragment
    _clear()

    def edited(*args):
        f = orig(*args)
        slots = (FP.Slots("D", f.row.shape[1], f.bits, f.regs_per_thread))
        row, col = edit.apply(FP.as_slots(f, slots))
        return fragments.Fragment(row, col, f.reg, f.shift, f.bits, f.regs_per_thread)
    monkeypatch.setattr(fragments, "wgmma_d_fragment" if edit.operand == "D" else "wgmma_a_fragment", edited)
    _clear()


@pytest.fixture(autouse=True)
def _fresh_caches():
    _clear()
    yield
    _clear()


def diagnose(key):
    return FP.diagnose([_Named(key)], lambda k: f"/nonexistent/simulated/{k.name}.cubin", InProcess(), 30)


class _Named:
    def __init__(self, key):
        self.key, self.id, self.control = key, f"probe-{key.name}", ""


def test_faithful_model_passes_both_probes():
    for key in (SS, RS, RS8):
        recs = diagnose(key)
        assert {r["probe"] for r in recs} == ({"accumulator"} if key.a_src == "SS" else {"accumulator", "a-registers"})
        assert all(r["status"] == "pass" and r["wrong"] == 0 for r in recs), recs


def _cases():
    out = []
    for key in (SS, RS):
        out += [(key, e) for e in FP.edits("D", FP.d_slots(key))]
    for key in (RS, RS8):
        at = forms.variants(key)[0].atype
        out += [(key, e) for e in FP.edits("A", FP.a_slots(at))]
    return out


@pytest.mark.parametrize("key,edit", _cases(), ids=lambda x: x.id if isinstance(x, FP.Edit) else x.name)
def test_planted_edit_is_named(monkeypatch, key, edit):
    plant(monkeypatch, edit)
    recs = diagnose(key)
    named = [r for r in recs if r.get("edit") == edit.id or edit.id in r.get("equivalent_edits", [])]
    assert named, [r["summary"] for r in recs]
    r = named[0]
    assert r["status"] == "fail" and r["operand"] == edit.operand and r["wrong"] > 0
    assert r["explanation"] in r["summary"]
    others = [x for x in recs if x is not r]
    assert all(x["status"] == "pass" for x in others), [x["summary"] for x in others]


def test_summary_words_for_the_issue_examples(monkeypatch):
    d = next(e for e in FP.edits("D", FP.d_slots(SS)) if e.id == "D:slots^2")
    plant(monkeypatch, d)
    r = diagnose(SS)[0]
    assert "D registers 0-1 and 2-3 of every thread exchanged" in r["summary"]
    assert "rows r and r+8 swapped" in r["summary"]
    monkeypatch.undo()
    _clear()
    a = next(e for e in FP.edits("A", FP.a_slots("f16")) if e.id == "A:slots^4")
    plant(monkeypatch, a)
    r = next(x for x in diagnose(RS) if x["probe"] == "a-registers")
    assert "A registers 0-1 and 2-3 of every thread exchanged" in r["summary"] and "k and k+8 swapped" in r["summary"]


def test_family_diagnose_adds_fragment_records_and_a_picture(monkeypatch, tmp_path):
    d = next(e for e in FP.edits("D", FP.d_slots(SS)) if e.id == "D:slots^2")
    plant(monkeypatch, d)
    case = next(c for c in C.cases_for_key(SS, ("exact",), False) if c.a.layout.swizzle == "none")
    from harness.families.wgmma import reference
    prep = reference.prepare(case)
    from harness.families.wgmma import kernel as wk
    out = wgmma_device.run("x", SS.name, wk.pack([prep]))["d_out"]
    rec = readback.diff_launch([prep.slim()], out)[0]
    assert rec["status"] == "fail"  # the planted model makes an ordinary case fail
    recs = wgmma_family.FAMILY.diagnose(wgmma_family.FAMILY.kernel_of(SS), [case],
                                        f"/nonexistent/simulated/{SS.name}.cubin", InProcess(), 30, tmp_path)
    acc = [r for r in recs if r.get("probe") == "accumulator"]
    assert acc and acc[0]["edit"] == "D:slots^2" and acc[0]["png"].endswith(".png")
    assert (tmp_path / acc[0]["png"].split("/")[-1]).exists()


def _mutated(name: str):
    """harness/spec/fragments.py with one of tests/mutations/run.py's fragment mutations applied, as a module."""
    import importlib.util
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent / "mutations"))
    try:
        from run import MUTATIONS
    finally:
        sys.path.pop(0)
    _, _, old, new = next(m for m in MUTATIONS if m[0] == name)
    src = Path(fragments.__file__).read_text()
    assert src.count(old) == 1
    spec = importlib.util.spec_from_loader(f"mutated_{name}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up
    exec(compile(src.replace(old, new), f"<{name}>", "exec"), mod.__dict__)
    return mod


MUTATED = [  # the mutation run's fragment bugs, as written there, and what the diagnosis must name
    ("wgmma_d_register_pairs_swapped", SS, "wgmma_d_fragment", "D:slots^2", "rows r and r+8 swapped"),
    ("wgmma_d_f16_halves_swapped", RS, "wgmma_d_fragment", "D:slots^1", "16-bit halves of every D register"),
    ("wgmma_a_k_halves_swapped", RS, "wgmma_a_fragment", "A:slots^4", "k and k+8 swapped"),
    ("wgmma_a_8bit_k_halves_swapped", RS8, "wgmma_a_fragment", "A:slots^8", "k and k+16 swapped"),
]


@pytest.mark.parametrize("name,key,fn,edit,words", MUTATED, ids=[m[0] for m in MUTATED])
def test_the_mutation_runs_fragment_bugs_are_named(monkeypatch, name, key, fn, edit, words):
    monkeypatch.setattr(fragments, fn, getattr(_mutated(name), fn))
    _clear()
    recs = diagnose(key)
    r = next(r for r in recs if r["status"] == "fail")
    assert r["edit"] == edit and words in r["summary"], r["summary"]


def test_a_fragment_outside_the_catalogue_is_named_by_its_bits(monkeypatch):
    """tf32 A rows chosen by the K half (two slots claim one element): no edit of the catalogue is this, and the
    recovered map still names it -- row bit 3 comes from register bit 0, the model takes it from register bit 1."""
    monkeypatch.setattr(fragments, "wgmma_a_fragment", getattr(_mutated("wgmma_a_tf32_rows_by_k"), "wgmma_a_fragment"))
    _clear()
    recs = diagnose(forms.KernelKey("tf32", 16, "f32", "RS"))
    bad = [r for r in recs if r["status"] != "pass"]
    assert [r["operand"] for r in bad] == ["A"], [r["summary"] for r in recs]  # D is not blamed
    assert bad[0]["roles"] == ["row bit 3 comes from register bit 0; the model takes it from register bit 1"]
    assert "the hardware's map is row bit 3 = register bit 0; the model's is row bit 3 = register bit 1" in \
        bad[0]["summary"]
    assert "edit" not in bad[0]


def _device_misreads(monkeypatch, operand: str, key, seed: int):
    """The simulated device's D (or A) fragment becomes Q o (true fragment), Q a random invertible affine map on
    the element's (row, col) bits; returns the planted (row, col) table by slot."""
    from tests.simulated import misreading_probe as MR
    rng = np.random.default_rng(seed)
    v = forms.variants(key)[0]
    cols = key.n if operand == "D" else key.k
    n = 6 + (cols - 1).bit_length()
    q, c = MR.random_invertible(n, rng)
    if operand == "D":
        orig = wgmma_device.d_layout.__wrapped__

        def planted(acc, n_):
            reg, shift, row, col = orig(acc, n_)
            return (reg, shift, *MR.compose(row, col, 6, q, c))
        monkeypatch.setattr(wgmma_device, "d_layout", planted)
        slots = FP.d_slots(key)
        reg, shift, row, col = planted(key.dtype, key.n)
    else:
        orig = wgmma_device.a_layout.__wrapped__

        def planted(atype):
            reg, shift, row, col = orig(atype)
            return (reg, shift, *MR.compose(row, col, 6, q, c))
        monkeypatch.setattr(wgmma_device, "a_layout", planted)
        slots = FP.a_slots(v.atype)
        reg, shift, row, col = planted(v.atype)
    e = reg * slots.per_reg + shift // slots.width  # the device's (register, shift) -> slot number
    trow, tcol = np.zeros((128, slots.elements), np.int64), np.zeros((128, slots.elements), np.int64)
    t = np.broadcast_to(np.arange(128)[:, None], e.shape)
    trow[t, e], tcol[t, e] = row, col
    return slots, cols, (trow, tcol)


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([("D", SS), ("D", RS), ("A", RS), ("A", RS8)]), st.integers(0, 2 ** 32 - 1))
def test_random_affine_misreadings_of_the_device_are_recovered_exactly(which, seed):
    """The simulated device reads its fragment through a random invertible affine map: the probe recovers that
    map exactly (checked against the planted table directly: its value at place 0 and at every unit place), blames
    only the operand misread, and the sentence names a differing bit."""
    operand, key = which
    with pytest.MonkeyPatch.context() as mp:
        _clear()
        slots, cols, table = _device_misreads(mp, operand, key, seed)
        recs = diagnose(key)
    cd = FP.coding(slots, cols)
    places = np.arange(len(cd.in_names))
    t = np.arange(128)
    # the planted map, read at place 0 and the unit places, as (row | col << 6)
    flat = table[0] + (table[1] << 6)
    code = (t[:, None] % 32) + ((t[:, None] // 32) << 5) + (np.arange(slots.elements)[None, :] << 7)
    at = {int(p): int(y) for p, y in zip(code.ravel(), flat.ravel())}
    const = at[0]
    columns = [at[1 << i] ^ const for i in places]
    rec = next(r for r in recs if r["operand"] == operand)
    hw = rec["hardware_map"]
    assert hw["columns"] == columns and hw["constant"] == const, (hw, columns, const)
    assert rec["status"] == "fail" and rec["roles"] and rec["roles"][0].split(" comes from ")[0] in rec["summary"]
    others = [r for r in recs if r is not rec]
    assert all(r["status"] == "pass" for r in others), [r["summary"] for r in others]


def _swap_slot_bits(e: np.ndarray, i: int, j: int) -> np.ndarray:
    bi, bj = (e >> i) & 1, (e >> j) & 1
    return e ^ ((bi ^ bj) << i) ^ ((bi ^ bj) << j)


def plant_bit_swap(monkeypatch, operand: str, i: int, j: int):
    """The model's fragment with slot bits i and j exchanged (slot e holds what slot swap(e) holds): a bit
    permutation, which no XOR edit of the catalogue is."""
    name = "wgmma_d_fragment" if operand == "D" else "wgmma_a_fragment"
    orig = getattr(fragments, name)
    _clear()

    def edited(*args):
        f = orig(*args)
        row, col = FP.as_slots(f, FP.Slots(operand, f.row.shape[1], f.bits, f.regs_per_thread))
        e = _swap_slot_bits(np.arange(row.shape[1]), i, j)
        row, col = row[:, e], col[:, e]
        slot = f.reg * (32 // f.bits) + f.shift // f.bits
        t = np.arange(128)[:, None]
        return fragments.Fragment(row[t, slot], col[t, slot], f.reg, f.shift, f.bits, f.regs_per_thread)
    monkeypatch.setattr(fragments, name, edited)
    _clear()


# the issue's two fragment plants: D (f32) with the row-half (slot bit 1) and column-pair (slot bit 0) bits
# exchanged; A (k16) with the row-half (slot bit 1) and k-half (slot bit 2) bits exchanged
ISSUE_PLANTS = [("D", SS, 0, 1, ["row bit 3 comes from register bit 1; the model takes it from register bit 0",
                                 "col bit 0 comes from register bit 0; the model takes it from register bit 1"]),
                ("A", RS, 1, 2, ["row bit 3 comes from register bit 0; the model takes it from register bit 1",
                                 "k bit 3 comes from register bit 1; the model takes it from register bit 0"])]


@pytest.mark.parametrize("operand,key,i,j,roles", ISSUE_PLANTS, ids=["D-row-half-col-pair", "A-row-half-k-half"])
def test_issue_fragment_plants_blame_only_the_fragment(monkeypatch, operand, key, i, j, roles):
    """An ordinary case fails under the plant; the family's diagnosis names the fragment's bits and passes every
    shared-memory operand (the address probe decodes through the fragments the hardware was seen to use)."""
    plant_bit_swap(monkeypatch, operand, i, j)
    from harness.families.wgmma import kernel as wk, reference
    case = next(c for c in C.cases_for_key(key, ("exact",), False))
    prep = reference.prepare(case)
    out = wgmma_device.run("x", key.name, wk.pack([prep]))["d_out"]
    assert readback.diff_launch([prep.slim()], out)[0]["status"] == "fail"
    recs = wgmma_family.FAMILY.diagnose(wgmma_family.FAMILY.kernel_of(key), [case],
                                        f"/nonexistent/simulated/{key.name}.cubin", InProcess(), 30, None)
    bad = [r for r in recs if r["status"] != "pass"]
    assert [r["operand"] for r in bad] == [operand], [r["summary"] for r in recs]
    assert bad[0]["roles"] == roles, bad[0]["roles"]
    assert "edit" not in bad[0]  # outside the catalogue, named by its bits
    assert all(not r.get("caveat") for r in recs)
