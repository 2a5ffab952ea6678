"""The reference and the diff on the CPU: a correct device passes, every kind of wrong device fails.

The correct device is tests/independent_device.py, written from the PTX ISA text: it shares neither the
harness's reference arithmetic nor its fragment model, so a bug in either fails these tests (the mutation run,
tests/mutations/run.py, plants such bugs)."""
import numpy as np
import pytest

import independent_device

from harness.families.wgmma import cases, readback as diff, reference, forms as wgmma
from harness.spec import fragments
from harness.families.wgmma.reference import POISON


def perfect_registers(prep):
    key = prep.case.key
    vals = prep.expected if prep.tolerance is None else reference.round_to_accumulator(prep.case, prep.expected)
    return fragments.gather_registers(fragments.wgmma_d_fragment(key.n, key.dtype),
                                      reference.acc_bits(key.dtype, vals))


KEYS = [wgmma.KernelKey("f16", 16, "f32", "SS"), wgmma.KernelKey("f16", 24, "f16", "RS"),
        wgmma.KernelKey("tf32", 8, "f32", "SS"), wgmma.KernelKey("f8", 32, "f16", "SS"),
        wgmma.KernelKey("s8", 48, "s32", "RS"), wgmma.KernelKey("b1", 16, "s32", "SS")]


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.name)
def test_an_independent_correct_device_passes_every_positive_case(key):
    positives = [c for c in cases.cases_for_key(key, ("exact", "normal")) if not c.control]
    assert {c.data for c in positives} >= {"exact"}
    for case in positives:
        prep = reference.prepare(case)
        rec = diff.diff(prep, independent_device.device_registers(prep))
        assert rec["status"] == "pass", rec


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.name)
def test_the_independent_device_and_the_model_agree_on_the_registers_of_exact_cases(key):
    """expected_regs (the model's registers a correct device returns) against the independent device's."""
    for case in [c for c in cases.cases_for_key(key, ("exact",)) if not c.control][:20]:
        prep = reference.prepare(case)
        assert np.array_equal(prep.expected_regs, independent_device.device_registers(prep)), case.id


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.name)
def test_one_wrong_register_is_reported_with_thread_register_row_col(key):
    case = next(c for c in cases.cases_for_key(key) if not c.control)
    prep = reference.prepare(case)
    regs = perfect_registers(prep)
    regs[37, 1] ^= 0x00010000 if key.dtype == "f16" else 0x1
    rec = diff.diff(prep, regs)
    assert rec["status"] == "fail" and rec["mismatches"] >= 1
    m = rec["first_mismatches"][0]
    assert m["thread"] == 37 and m["register"] == 1
    frag = fragments.wgmma_d_fragment(key.n, key.dtype)
    assert (m["row"], m["col"]) in set(zip(frag.row[37].tolist(), frag.col[37].tolist()))


def test_an_unwritten_register_fails():
    key = KEYS[0]
    prep = reference.prepare(cases.cases_for_key(key)[0])
    regs = perfect_registers(prep)
    regs[0, 0] = POISON
    rec = diff.diff(prep, regs)
    assert rec["status"] == "fail" and rec["unwritten_registers"] == 1


def test_a_device_that_ignores_the_swizzle_is_caught():
    """Simulate hardware that reads B as if unswizzled: the model's D differs from what it would produce."""
    key = wgmma.KernelKey("f16", 64, "f32", "SS")
    case = next(c for c in cases.cases_for_key(key)
                if not c.control and c.b.layout.swizzle == "128B" and c.b.layout.major == "K" and not c.b.scenario)
    prep = reference.prepare(case)
    wrong = case.b.layout.moved(swizzle="none", lbo=128, sbo=1024)
    bogus = cases.Case(key, case.variant_index, case.a, cases.Operand("", case.b.layout, wrong),
                       case.scale_d, "exact", "wrong-swizzle")
    regs = perfect_registers(reference.prepare(bogus))  # what such hardware would return
    assert diff.diff(prep, regs)["status"] == "fail"


def test_every_negative_control_is_predicted_to_differ():
    for key in KEYS + [wgmma.KernelKey("f16", 8, "f16", "RS"), wgmma.KernelKey("b1", 8, "s32", "SS")]:
        controls = [c for c in cases.cases_for_key(key) if c.control]
        assert {c.control.split("@")[0] for c in controls} == set(cases.CONTROLS)
        for c in controls:
            prep = reference.prepare(c)
            assert not np.array_equal(prep.expected, prep.intended), c.id


def test_exact_inputs_are_exact():
    """prepare() raises if a value pool could round in the accumulator; exercise the widest forms."""
    for key in [wgmma.KernelKey("f16", 256, "f16", "SS"), wgmma.KernelKey("f8", 256, "f16", "RS")]:
        for c in cases.cases_for_key(key)[:10]:
            reference.prepare(c)


def test_saturation_and_wrap_of_s32():
    key = wgmma.KernelKey("s8", 16, "s32", "SS")
    ovf = [c for c in cases.cases_for_key(key) if c.extra == "ovf"]
    assert {c.variant.satfinite for c in ovf} == {True, False}
    for c in ovf:
        prep = reference.prepare(c)
        raw = prep.a_vals @ prep.b_vals.T + prep.c_vals
        assert (np.abs(raw) > 2 ** 31 - 1).any(), "the ovf inputs must overflow somewhere"
        if c.variant.satfinite:
            assert prep.expected.max() <= 2 ** 31 - 1 and (prep.expected == 2 ** 31 - 1).any() | (
                prep.expected == -2 ** 31).any()
        else:
            assert not np.array_equal(prep.expected, np.clip(raw, -2 ** 31, 2 ** 31 - 1))


def test_case_ids_are_unique_and_readable():
    ids = [c.id for k in wgmma.all_kernel_keys(n_values=(8, 128)) for c in cases.cases_for_key(k)]
    assert len(ids) == len(set(ids))
    # every swizzle x major-ness of A meets every one of B at the rich N values
    assert any(i.startswith("m64n128k16-f32.bf16.bf16-SS-A:K/128B-B:MN/64B") for i in ids)
    for a in ("K/none", "K/32B", "MN/64B", "MN/128B"):
        for b in ("K/128B", "MN/none", "MN/32B"):
            assert any(i.startswith("m64n128k16-") and f"-A:{a}-B:{b}" in i for i in ids), (a, b)


@pytest.mark.parametrize("key,variant,msg", [
    (wgmma.KernelKey("tf32", 8, "f32", "SS"), wgmma.Variant("tf32", "tf32", trans_a=1), "K-major only"),
    (wgmma.KernelKey("f8", 8, "f32", "SS"), wgmma.Variant("e4m3", "e5m2", trans_b=1), "K-major only"),
    (wgmma.KernelKey("f16", 8, "f32", "RS"), wgmma.Variant("f16", "f16", trans_a=1), "no major-ness"),
    (wgmma.KernelKey("s8", 8, "s32", "SS"), wgmma.Variant("s8", "u8", scale_a=-1), "no imm-scale"),
    (wgmma.KernelKey("f16", 8, "f16", "SS"), wgmma.Variant("bf16", "bf16"), "accumulate into f32 only"),
    (wgmma.KernelKey("f16", 8, "f32", "SS"), wgmma.Variant("f16", "bf16"), "same type"),
    (wgmma.KernelKey("f8", 8, "f32", "SS"), wgmma.Variant("s8", "s8"), "takes A of type"),
    (wgmma.KernelKey("f16", 8, "f32", "SS"), wgmma.Variant("f16", "f16", satfinite=True), "s8/u8 forms only"),
    (wgmma.KernelKey("s8", 40, "s32", "SS"), wgmma.Variant("s8", "s8"), "N = 40 is not legal"),
    (wgmma.KernelKey("tf32", 8, "f16", "SS"), wgmma.Variant("tf32", "tf32"), "accumulates into f32"),
])
def test_illegal_instruction_forms_are_refused(key, variant, msg):
    with pytest.raises(ValueError, match=msg):
        wgmma.validate_variant(key, variant)


def test_variant_index_is_the_switch_position():
    key = wgmma.KernelKey("f16", 64, "f32", "SS")
    for i, v in enumerate(wgmma.variants(key)):
        assert wgmma.variant_index(key, v) == i


@pytest.mark.parametrize("shape", [(64, 16), (7,), (3, 5)])
def test_pick_draws_what_rng_choice_draws_and_leaves_the_stream_where_it_does(shape):
    """The reference draws its exact values with `pick`; its docstring says it draws what rng.choice draws (the
    values of every committed run were drawn with rng.choice)."""
    pool = reference.EXACT_POOL["e4m3"]
    for seed in range(20):
        mine, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        assert np.array_equal(reference.pick(mine, pool, shape), theirs.choice(pool, size=shape))
        assert mine.integers(0, 1 << 30) == theirs.integers(0, 1 << 30)


@pytest.mark.parametrize("dtype", ["f32", "f16", "s32"])
def test_the_rounded_bits_are_the_encoding_of_the_rounded_values(dtype):
    """expectations packs the registers from the bits a product was rounded through, not from encoding the
    rounded values again: the two must be the same bits (a -0.0 included)."""
    case = next(c for c in cases.cases_for_key(wgmma.KernelKey("s8" if dtype == "s32" else "f16", 16, dtype, "SS"),
                                              ("exact",)) if not c.control)
    d = np.random.default_rng(1).integers(-2000, 2000, size=(64, 16)).astype(np.float64)
    d[0, 0] = -0.0
    if dtype == "s32":
        d = d.astype(np.int64)
    values, bits = reference.rounded(case, d)
    assert bits.dtype == {"s32": np.uint64, "f32": np.uint32, "f16": np.uint16}[dtype]  # a float's in its own width
    assert np.array_equal(bits.astype(np.uint64), reference.acc_bits(dtype, values))


def test_a_positive_case_reads_back_from_its_image_what_was_written():
    """The reference takes a positive case's operands as written, not read back through the descriptor's layout
    (the same layout): its image must hold them there, read through the layout model, in a sample of every kind of
    kernel (a write and a read that disagree, say one byte order against the other, are caught here too)."""
    from harness import plan as planning
    from harness.spec import dtypes, layouts
    work = planning.make(planning.Selection(families=("wgmma",)), {"wgmma": "sm_90a"}, None, cache=True).work
    checked = 0
    for kernel, cs in work[::9]:
        for case in [c for c in cs if not c.control][:6]:
            prep = reference.prepare(case)
            v = case.variant
            reads = [(prep.b_layout, dtypes.get(v.btype), prep.b_vals)]
            if case.a is not None:
                reads.append((prep.a_layout, dtypes.get(v.atype), prep.a_vals))
            for lay, t, written in reads:
                with np.errstate(invalid="ignore", over="ignore"):
                    got = t.from_bits(layouts.read_image(lay, prep.image))
                assert reference.same_bits(got, written), (case.id, lay)
                checked += 1
    assert checked > 100


def test_pick_refuses_a_pool_rng_choice_would_draw_rows_from():
    with pytest.raises(ValueError, match="1-D"):
        reference.pick(np.random.default_rng(0), np.zeros((3, 2)), (4,))
