"""Address diagnosis that recovers the map (harness/diagnosis/address_fit.py) on the simulated wgmma device: the
device misreads a descriptor field (the issue's plants, seen from the other side) or reads every element through a
random invertible affine map of its (row, k) bits, and the diagnosis must name exactly that."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.diagnosis import address_fit, affine
from harness.families.wgmma import addresses, probe as diagnose
from harness.families.wgmma import cases as C, forms
from harness.spec import layouts
from tests.simulated import misreading_probe as MR, smem, wgmma_device

pytestmark = pytest.mark.cute

SS = forms.KernelKey("f16", 64, "f32", "SS")
CASES = C.cases_for_key(SS, ("exact",), False)


class InProcess:
    def run(self, cubin_path, name, launch, timeout):
        return wgmma_device.run(cubin_path, name, launch)


def _case(major: str, swizzle: str, base_offset: int = 0):
    if base_offset:
        from harness.experiments import probes
        (_, cs), = probes.work("base-offset")
        return next(c for c in cs if c.b.layout.major == major and c.b.layout.swizzle == swizzle
                    and c.b.layout.base_offset == base_offset)
    return next(c for c in CASES if c.b.layout.major == major and c.b.layout.swizzle == swizzle
                and c.b.layout.start == 0 and c.a.layout.swizzle == "none")


def _diagnose(case):
    recs = diagnose.diagnose([case], lambda k: f"/nonexistent/simulated/{k.name}.cubin", InProcess(), 30)
    return {r["operand"]: r for r in recs}


@pytest.fixture
def hooks():
    yield wgmma_device
    wgmma_device.MISREAD_DESC.clear()
    wgmma_device.MISREAD_INDEX.clear()


def test_faithful_device_reads_as_the_model(hooks):
    recs = _diagnose(_case("K", "128B"))
    assert all(r["status"] == "pass" for r in recs.values()), [r["summary"] for r in recs.values()]


# (major, swizzle, base offset, what the device does to B's decoded descriptor, the words the diagnosis must say)
PLANTS = [
    ("K", "128B", 0, lambda d: {**d, "sbo": d["sbo"] + 16}, ["SBO 1040, model 1024"]),
    ("K", "none", 0, lambda d: {**d, "sbo": d["sbo"] + 16}, ["SBO 272, model 256"]),
    ("K", "64B", 0, lambda d: {**d, "swizzle": "128B"},
     ["swizzle XORs bits 7-9 into 4-6 (Swizzle<3,4,3>, 128B), model XORs bits 7-8 into 4-5 (Swizzle<2,4,3>, 64B)"]),
    ("MN", "128B", 3, lambda d: {**d, "base_offset": -d["base_offset"] & 7}, ["base offset 5, model 3"]),
    ("MN", "64B", 0, lambda d: {**d, "lbo": d["lbo"] + 512}, ["LBO {lbo+512}, model {lbo}"]),
]


@pytest.mark.parametrize("major,swizzle,bo,misread,words", PLANTS,
                         ids=["sbo+16-128B", "sbo+16-none", "64B-as-128B", "base-offset-sign", "lbo+512"])
def test_a_misread_descriptor_field_is_named(hooks, major, swizzle, bo, misread, words):
    case = _case(major, swizzle, bo)
    hooks.MISREAD_DESC["B"] = misread
    recs = _diagnose(case)
    b = recs["B"]
    lbo = addresses.setup_of(case).b.desc_layout.lbo
    words = [w.replace("{lbo+512}", str(lbo + 512)).replace("{lbo}", str(lbo)) for w in words]
    assert b["status"] == "fail" and b["recovered"]["field_differences"] == words, b.get("vs_model")
    assert b["summary"].startswith(b["vs_model"]) and "the hardware's layout is" in b["summary"]
    # the recovered terms are the device's: its descriptor fields after the misreading
    st = addresses.setup_of(case)
    d = misread(smem.decode_wgmma(st.b.desc))
    got = b["recovered"]["hardware_terms"]
    assert (got["swizzle"], got["sbo"], got["start"]) == (d["swizzle"], d["sbo"], d["start"])
    assert recs["A"]["status"] == "pass"  # the other operand is not blamed


def test_model_with_base_offset_sign_flipped_is_named(monkeypatch, hooks):
    """The issue's plant, in the model: its swizzle adds the base offset. The hardware's map decomposes to the
    descriptor's base offset, the model's map to the negated one, and the sentence says the model's map is not
    its own descriptor's."""
    orig = layouts.swizzle_address

    def flipped(addr, swizzle, base_offset=0):
        return orig(addr, swizzle, -base_offset & 7)
    monkeypatch.setattr(layouts, "swizzle_address", flipped)
    layouts.element_bit_addresses.cache_clear()
    try:
        recs = _diagnose(_case("MN", "128B", 3))
    finally:
        monkeypatch.undo()
        layouts.element_bit_addresses.cache_clear()
    b = recs["B"]
    assert b["recovered"]["field_differences"] == ["base offset 3, model 5"], b["summary"]
    assert "the model's map is not its own descriptor's (base offset 5, descriptor 3)" in b["summary"]


def _affine_case():
    """A case whose A and B maps are both affine (power-of-two strides, no start that carries into them)."""
    for c in CASES:
        st_ = addresses.setup_of(c)
        if all(isinstance(affine.solve(np.arange(op.addr.size), op.addr.T.ravel()), affine.AffineMap)
               for op in (st_.a, st_.b)):
            return c
    raise AssertionError("no wgmma f16 n64 case has affine A and B maps")


AFFINE_CASE = _affine_case()


def _unit_table(addr: np.ndarray) -> tuple[list[int], int]:
    """The planted map read straight off its table: constant at (0, 0), column per row and k bit."""
    rows, cols = addr.shape
    rb, kb = (rows - 1).bit_length(), (cols - 1).bit_length()
    c = int(addr[0, 0])
    columns = [int(addr[1 << i, 0]) ^ c for i in range(rb)] + [int(addr[0, 1 << i]) ^ c for i in range(kb)]
    return columns, c


@settings(max_examples=5, deadline=None)
@given(st.sampled_from(["A", "B"]), st.integers(0, 2 ** 32 - 1))
def test_random_affine_misreadings_are_recovered_exactly(which, seed):
    """The device reads element [r, k] where the descriptor puts element Q(r, k), Q a random invertible affine map
    of the 10 index bits: the recovered GF(2) map is exactly the planted one and only that operand is blamed."""
    case = AFFINE_CASE
    st_ = addresses.setup_of(case)
    op = st_.a if which == "A" else st_.b
    rows, cols = op.addr.shape
    rb = (rows - 1).bit_length()
    q, c = MR.random_invertible(rb + (cols - 1).bit_length(), np.random.default_rng(seed))

    def index(r_, k_):
        i = MR.apply(q, c, np.arange(r_)[:, None] | (np.arange(k_)[None, :] << rb))
        return i & ((1 << rb) - 1), i >> rb
    assert isinstance(affine.solve(np.arange(rows * cols), op.addr.T.ravel()), affine.AffineMap)  # precondition
    wgmma_device.MISREAD_INDEX[which] = index
    try:
        recs = _diagnose(case)
    finally:
        wgmma_device.MISREAD_INDEX.clear()
    r, k = index(rows, cols)
    planted = op.addr[r, k]  # what the device read, from the true (model) table
    columns, const = _unit_table(planted - (planted.min() & ~7))  # the map is of offsets from the lowest
    rec = recs[which]
    hw = rec["recovered"]["hardware_map"]
    assert hw["columns"] == columns and hw["constant"] == const
    assert rec["status"] == "fail" and "the hardware's map is" in rec["summary"]
    assert all(x["status"] == "pass" for o, x in recs.items() if o != which), [x["summary"] for x in recs.values()]


def test_a_non_affine_misreading_gets_a_four_element_witness(hooks):
    """Two elements of B exchanged: no descriptor and no affine map reads like this; the record says which four
    elements prove it."""
    case = _case("K", "128B")

    def index(r_, k_):
        r = np.broadcast_to(np.arange(r_)[:, None], (r_, k_)).copy()
        k = np.broadcast_to(np.arange(k_)[None, :], (r_, k_)).copy()
        r[5, 3], r[9, 3] = 9, 5
        return r, k
    hooks.MISREAD_INDEX["B"] = index
    b = _diagnose(case)["B"]
    assert b["recovered"]["hardware_map"].get("not_affine"), b["summary"]
    w = affine.NotAffine(tuple(b["recovered"]["hardware_map"]["witness_inputs"]),
                         tuple(b["recovered"]["hardware_map"]["witness_outputs"]))
    assert w.holds() and len(w.inputs) == 4
    assert "not affine" in b["summary"] and "no descriptor" in b["summary"]


def test_decompose_inverts_the_model_on_every_planned_layout():
    """Every layout the wgmma plan places decomposes back into its own terms (this module's reading of the
    canonical layouts agrees with the model's on all of them)."""
    seen = set()
    for c in CASES:
        st_ = addresses.setup_of(c)
        for op in (st_.a, st_.b):
            if op is None or op.desc_layout in seen:
                continue
            seen.add(op.desc_layout)
            t = address_fit.terms_of(op.desc_layout, op.desc_layout.bits)
            assert np.array_equal(t.bit_addresses(), layouts.element_bit_addresses(op.desc_layout))
            got = address_fit.decompose(layouts.element_bit_addresses(op.desc_layout), t.bits, t)
            assert got is not None and not address_fit.field_differences(got, t), layouts.describe_tile(op.desc_layout)


def test_cute_notation():
    t = address_fit.Terms("K", "128B", 16, 64, 16, 16, 1024, 0, 0)
    assert t.cute() == "Swizzle<3,4,3> o ((8,8),(8,2)):((64,512),(1,8)) @ 0 B, base offset 0"
    assert address_fit.Terms("MN", "none", 16, 64, 16, 1024, 128, 0, 0).cute() == \
        "((8,8),(8,2)):((1,64),(8,512)) @ 0 B"


# ------------------------------------------------------------------------------------ both operands misread at once

SW_128B_AS_64B = ("swizzle XORs bits 7-8 into 4-5 (Swizzle<2,4,3>, 64B), model XORs bits 7-9 into 4-6 "
                  "(Swizzle<3,4,3>, 128B)")
# what the device does to one operand's decoded descriptor, and the words its record must say (from its layout)
FIELD_PLANTS = {
    "sbo+16": (lambda d: {**d, "sbo": d["sbo"] + 16}, lambda lay: [f"SBO {lay.sbo + 16}, model {lay.sbo}"]),
    "lbo+512": (lambda d: {**d, "lbo": d["lbo"] + 512}, lambda lay: [f"LBO {lay.lbo + 512}, model {lay.lbo}"]),
    "start-1024": (lambda d: {**d, "start": d["start"] - 1024},
                   lambda lay: [f"start {lay.start - 1024}, model {lay.start}"]),
    "128B-as-64B": (lambda d: {**d, "swizzle": "64B" if d["swizzle"] == "128B" else d["swizzle"]},
                    lambda lay: [SW_128B_AS_64B]),
}


def _pair(a: tuple[str, str], b: tuple[str, str]):
    """The case with A and B in these (major-ness, swizzle) layouts, both at the start of their tiles: the plan packs
    B right after A, so an A read past its tile's end reads B's tile."""
    return next(c for c in CASES if (c.a.layout.major, c.a.layout.swizzle) == a
                and (c.b.layout.major, c.b.layout.swizzle) == b and c.a.layout.start == 0 and c.b.layout.start == 0)


def _named(rec: dict, words: list[str], which: str) -> None:
    assert rec["status"] == "fail" and rec["recovered"]["field_differences"] == words, rec["summary"]
    assert rec["summary"].startswith(f"{which} addresses: the hardware's layout is"), rec["summary"]


# (A's layout, A's plant, B's layout, B's plant)
TWO_PLANTS = [(("K", "64B"), "sbo+16", ("K", "128B"), "128B-as-64B"),
              (("MN", "64B"), "lbo+512", ("K", "none"), "sbo+16"),
              (("K", "128B"), "128B-as-64B", ("MN", "64B"), "lbo+512")]


@pytest.mark.parametrize("a_lay,a_plant,b_lay,b_plant", TWO_PLANTS, ids=[f"A-{p[1]}-B-{p[3]}" for p in TWO_PLANTS])
def test_two_operands_misread_each_named_for_its_own(hooks, a_lay, a_plant, b_lay, b_plant):
    """The device misreads one field of A's descriptor and another of B's. Neither first probe can be trusted (each
    put the other's one-hot where the model, not the hardware, reads it): B is probed in the RS form, A with B's
    one-hot where that probe saw B read, and each record names exactly its own operand's field."""
    case = _pair(a_lay, b_lay)
    st_ = addresses.setup_of(case)
    hooks.MISREAD_DESC["A"], words_a = FIELD_PLANTS[a_plant][0], FIELD_PLANTS[a_plant][1](st_.a.desc_layout)
    hooks.MISREAD_DESC["B"], words_b = FIELD_PLANTS[b_plant][0], FIELD_PLANTS[b_plant][1](st_.b.desc_layout)
    recs = _diagnose(case)
    _named(recs["A"], words_a, "A")
    _named(recs["B"], words_b, "B")
    for which, op in (("A", st_.a), ("B", st_.b)):  # the recovered terms are the device's misread fields
        d = hooks.MISREAD_DESC[which](smem.decode_wgmma(op.desc))
        got = recs[which]["recovered"]["hardware_terms"]
        used = ("swizzle", "sbo", "start") + (("lbo",) if got["major"] == "MN" or got["swizzle"] == "none" else ())
        assert {f: got[f] for f in used} == {f: d[f] for f in used}, which  # a K-major swizzled tile has no LBO
    rs = "wgmma_f16_m64n64k16_f32_RS"
    assert f"B was probed in the {rs} form" in recs["B"]["note"], recs["B"].get("note")
    assert f"A was probed with B's one-hot where the hardware was seen to read B in the {rs} form" in \
        recs["A"]["note"], recs["A"].get("note")


SHARED_PLANTS = {
    # the encoder writes SBO 16 bytes long (the plant), for every descriptor it encodes
    "sbo+16": (lambda lay: (lay.start, lay.lbo, lay.sbo + 16, lay.swizzle, lay.base_offset),
               lambda lay: [f"SBO {lay.sbo + 16}, model {lay.sbo}"]),
    # the encoder's swizzle codes of 64B and 128B exchanged
    "64B<->128B": (lambda lay: (lay.start, lay.lbo, lay.sbo, {"64B": "128B", "128B": "64B"}.get(lay.swizzle,
                                                                                                lay.swizzle),
                                lay.base_offset),
                   lambda lay: [SW_128B_AS_64B]),
}


@pytest.mark.parametrize("plant,a_lay,b_lay", [("sbo+16", ("K", "128B"), ("K", "128B")),
                                               ("sbo+16", ("MN", "128B"), ("K", "64B")),
                                               ("64B<->128B", ("K", "128B"), ("K", "128B"))])
def test_one_encoder_bug_in_both_operands_is_named_for_each(monkeypatch, hooks, plant, a_lay, b_lay):
    """One planted bug in the descriptor encoder both operands go through: the device reads what the descriptors
    say, the model what the layouts mean, and each operand's record names the field for that operand."""
    from harness.families.wgmma import kernel as wk
    from harness.spec import desc_wgmma
    fields, words = SHARED_PLANTS[plant]
    monkeypatch.setattr(wk, "encode_desc", lambda lay: desc_wgmma.encode_wgmma_desc(*fields(lay)))
    case = _pair(a_lay, b_lay)
    st_ = addresses.setup_of(case)
    recs = _diagnose(case)
    _named(recs["A"], words(st_.a.desc_layout), "A")
    _named(recs["B"], words(st_.b.desc_layout), "B")


# (operand planted, its plant, A's layout, B's layout, probed apart or None: either): the two-plant cases with one
# plant each, and two where the plant's reads reach into the other operand's tile (A read past its end, B from before
# its start), so that the second look cannot clear the operand without a plant and the operands are probed apart
ONE_PLANT = [(w, a_p if w == "A" else b_p, a, b, None) for a, a_p, b, b_p in TWO_PLANTS for w in "AB"] + [
    ("A", "sbo+16", ("K", "128B"), ("K", "64B"), True), ("B", "start-1024", ("K", "128B"), ("K", "64B"), True)]


@pytest.mark.parametrize("which,plant,a_lay,b_lay,apart", ONE_PLANT,
                         ids=[f"{p[0]}-{p[1]}-{p[2][0]}{p[2][1]}-{p[3][0]}{p[3][1]}" for p in ONE_PLANT])
def test_one_operand_misread_leaves_the_other_reading_as_the_model(hooks, which, plant, a_lay, b_lay, apart):
    """The negative control of the two-plant tests: one operand planted. It alone is named; the other reads as the
    model (after the second look, or probed apart)."""
    case = _pair(a_lay, b_lay)
    st_ = addresses.setup_of(case)
    hooks.MISREAD_DESC[which] = FIELD_PLANTS[plant][0]
    recs = _diagnose(case)
    _named(recs[which], FIELD_PLANTS[plant][1]((st_.a if which == "A" else st_.b).desc_layout), which)
    other = recs["B" if which == "A" else "A"]
    assert other["status"] == "pass" and other["reads_as_model"] and other["wrong"] == 0, other["summary"]
    assert "recovered" not in other
    if apart is not None:  # the path the diagnosis took, where the case was chosen for it
        assert other.get("note", "").startswith("A and B both read other than the model says") == apart, other


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1))
def test_random_affine_misreadings_of_both_operands_are_recovered_exactly(seed_a, seed_b):
    """A and B each read through its own random invertible affine map of its index bits: each operand's recovered
    map is exactly its own plant."""
    case = AFFINE_CASE
    st_ = addresses.setup_of(case)
    planted = {}
    for which, seed in (("A", seed_a), ("B", seed_b)):
        op = st_.a if which == "A" else st_.b
        rows, cols = op.addr.shape
        rb = (rows - 1).bit_length()
        q, c = MR.random_invertible(rb + (cols - 1).bit_length(), np.random.default_rng(seed))

        def index(r_, k_, q=q, c=c, rb=rb):
            i = MR.apply(q, c, np.arange(r_)[:, None] | (np.arange(k_)[None, :] << rb))
            return i & ((1 << rb) - 1), i >> rb
        wgmma_device.MISREAD_INDEX[which] = index
        r, k = index(rows, cols)
        planted[which] = op.addr[r, k]
    try:
        recs = _diagnose(case)
    finally:
        wgmma_device.MISREAD_INDEX.clear()
    for which, table in planted.items():
        columns, const = _unit_table(table - (table.min() & ~7))
        hw = recs[which]["recovered"]["hardware_map"]
        assert recs[which]["status"] == "fail" and hw["columns"] == columns and hw["constant"] == const, which
        assert np.array_equal(np.array(recs[which]["observed_bytes"]), table >> 3), which


class _NoRegistersForm(InProcess):
    def run(self, cubin_path, name, launch, timeout):
        from harness.contract import LaunchFailed
        if name.endswith("_RS"):
            raise LaunchFailed("fault", f"{name}: simulated fault")
        return super().run(cubin_path, name, launch, timeout)


def _uncompiled(key):
    from harness.contract import CompileError
    if key.a_src == "RS":
        raise CompileError(key.name, "sm_90a", "error: simulated")
    return f"/nonexistent/simulated/{key.name}.cubin"


@pytest.mark.parametrize("cubin_of,worker,why", [
    (lambda k: f"/nonexistent/simulated/{k.name}.cubin", _NoRegistersForm(),
     "(wgmma_f16_m64n64k16_f32_RS: simulated fault)"),
    (_uncompiled, InProcess(), "(its kernel did not compile: ")], ids=["fault", "compile-error"])
def test_operands_that_cannot_be_probed_apart_are_not_blamed(hooks, cubin_of, worker, why):
    """Both operands misread and the RS form's probe cannot run (it faults, or its kernel does not compile): neither
    first probe is trusted, so neither operand is failed on it; both records say why they are inconclusive."""
    case = _pair(("K", "64B"), ("K", "128B"))
    hooks.MISREAD_DESC["A"], hooks.MISREAD_DESC["B"] = FIELD_PLANTS["sbo+16"][0], FIELD_PLANTS["128B-as-64B"][0]
    recs = {r["operand"]: r for r in diagnose.diagnose([case], cubin_of, worker, 30)}
    for which in "AB":
        assert recs[which]["status"] == "inconclusive", recs[which]["summary"]
        assert recs[which]["summary"].startswith(
            "A and B both read other than the model says, so neither first probe's one-hot surely sat where the "
            "hardware read it, and the probe of B in the wgmma_f16_m64n64k16_f32_RS form failed " + why), \
            recs[which]["summary"]


class _InStorm(InProcess):
    """A storm's suspect probed through the sweep's guard (engine.NoRelaunch), as the family sees it: a device that
    names the storm (contract.Device.fault_storm)."""
    fault_storm = "a fault storm: 4 of the 8 launches of wgmma on sm_90a answered had failed"


def _family_diagnose(case, device, monkeypatch, also=()):
    """The wgmma family's diagnosis of `case` (and the cases `also`) on `device`: the records of `case` by operand,
    and the fragment probe's runs; with `also`, the others' records too."""
    from harness.families import wgmma as family
    from harness.families.wgmma import fragments_probe
    ran, run = [], fragments_probe.run
    monkeypatch.setattr(fragments_probe, "run", lambda key, *a: ran.append(key) or run(key, *a))
    recs = family.FAMILY.diagnose(family.FAMILY.kernel_of(SS), [case, *also],
                                  f"/nonexistent/simulated/{SS.name}.cubin", device, 30, None)
    mine = {r["operand"]: r for r in recs if r["id"] == case.id}
    return (mine, ran, [r for r in recs if r["id"] != case.id]) if also else (mine, ran)


def test_in_a_fault_storm_addresses_read_astray_skip_the_fragment_probe(hooks, monkeypatch):
    """In a fault storm the address probes go first: where they find an operand read other than the model says, the
    fragment probe is not run (register fragments decide no address, so they cannot explain a fault, and its probe
    would most likely fault, at a second's cost); the D record says so, and the address record that it was decoded
    through the model's fragments. Outside a storm the same case runs the fragment probe first."""
    case = _case("K", "128B")
    hooks.MISREAD_DESC["B"] = PLANTS[0][3]
    recs, ran = _family_diagnose(case, _InStorm(), monkeypatch)
    assert ran == [] and recs["D"]["status"] == "not-probed", recs["D"]
    assert recs["D"]["summary"].startswith(f"accumulator probe not run: {_InStorm.fault_storm}; the B address probe: "
                                           f"{recs['B']['summary']}. Register fragments decide no address")
    assert recs["B"]["status"] == "fail" and recs["B"]["recovered"]["field_differences"] == PLANTS[0][4]
    assert "the fragment probe was not run (a fault storm)" in recs["B"]["caveat"] and "caveat" not in recs["A"]
    recs, ran = _family_diagnose(case, InProcess(), monkeypatch)
    assert ran == [SS] and recs["D"]["probe"] == "accumulator" and recs["D"]["status"] != "not-probed"
    assert "caveat" not in recs["B"]
    assert recs["B"]["recovered"]["field_differences"] == PLANTS[0][4]


def test_in_a_fault_storm_addresses_as_modelled_leave_the_fragment_probe_to_run(hooks, monkeypatch):
    """A storm's suspect whose addresses all read as the model says: its failure is unexplained, so the fragment
    probe runs after the address probes."""
    recs, ran = _family_diagnose(_case("K", "128B"), _InStorm(), monkeypatch)
    assert ran == [SS] and recs["D"]["status"] == "pass" and recs["A"]["status"] == recs["B"]["status"] == "pass"


def test_in_a_fault_storm_a_control_gets_no_fragment_record_nor_caveat(hooks, monkeypatch):
    """A negative control gets no fragment probe, in a storm or not: in a storm its address records, read astray or
    not, carry no caveat about one, and no D record is made for it."""
    control = next(c for c in C.cases_for_key(SS, ("exact",), True) if c.control)
    hooks.MISREAD_DESC["B"] = PLANTS[0][3]
    recs, _, others = _family_diagnose(_case("K", "128B"), _InStorm(), monkeypatch, also=[control])
    assert recs["D"]["status"] == "not-probed" and others and {r["id"] for r in others} == {control.id}
    assert all(r["operand"] != "D" and "caveat" not in r for r in others), others
