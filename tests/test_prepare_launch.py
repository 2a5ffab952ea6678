"""What a launch prepares (`prepare_all`) is, case by case, what each case prepared alone is, and the shortcuts it
takes (exact values and their encodings from a table of the pool's, a successor table for the sparse decoy) draw
and give what the plain functions do, from the same stream."""
import dataclasses

import numpy as np
import pytest

from harness import registry
from harness.families.wgmma import cases as dense_cases, forms as dense_forms, reference as dense
from harness.families.wgmma_sp import cases as sp_cases, forms as sp_forms, reference as sp
from harness.spec import dtypes, sparsity


def same(x, y) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and dense.same_bits(x, y)
    return x == y


DENSE_KEYS = [dense_forms.KernelKey("f16", 24, "f16", "RS"), dense_forms.KernelKey("tf32", 64, "f32", "SS"),
              dense_forms.KernelKey("f8", 16, "f32", "SS"), dense_forms.KernelKey("s8", 8, "s32", "RS"),
              dense_forms.KernelKey("b1", 16, "s32", "SS")]


def sparse_keys():
    keys = sp_forms.all_kernel_keys()
    return [next(k for k in keys if k.kind == kind) for kind in ("f16", "tf32", "f8", "s8")]


@pytest.mark.parametrize("module,key", [(dense, k) for k in DENSE_KEYS] + [(sp, k) for k in sparse_keys()],
                         ids=lambda x: getattr(x, "name", getattr(x, "__name__", str(x))).split(".")[-1])
def test_a_launchs_preparation_is_each_cases_alone(module, key):
    """Every field of every case (exact and normal data, controls, RS registers, sparse metadata) to the bit."""
    cs = (dense_cases if module is dense else sp_cases).cases_for_key(key, ("exact", "normal"), True)
    assert any(c.control for c in cs) and (key.kind in ("s8", "b1") or any(c.data == "normal" for c in cs))
    together = module.prepare_all(cs)
    for case, prep in zip(cs, together):
        alone = module.prepare(case)
        for f in dataclasses.fields(alone):
            assert same(getattr(prep, f.name), getattr(alone, f.name)), (case.id, f.name)


# (the drawing with bits, the plain draw it stands for, types): a dense operand, and a sparse A's stored elements
DRAWS = [(dense.draw_operand, dense.draw_values, ["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1"]),
         (sp.draw_packed_operand, sp.draw_packed, ["f16", "tf32", "e4m3", "s8", "u8"])]


@pytest.mark.parametrize("with_bits,plain,name", [(w, p, n) for w, p, names in DRAWS for n in names],
                         ids=lambda x: getattr(x, "__name__", x))
@pytest.mark.parametrize("mode", ["exact", "normal"])
def test_an_operand_drawn_with_its_bits_is_the_plain_draw_encoded(with_bits, plain, name, mode):
    """Every type in either mode (the planner gives integer and b1 operands exact data only, but the drawing with
    bits must not give anything else than the plain draw where it would), the stream left where the plain one
    leaves it."""
    t = dtypes.get(name)
    for seed in range(4):
        mine, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        bits, values = with_bits(mine, t, (64, 16), mode)
        drawn = plain(theirs, t, (64, 16), mode)
        assert dense.same_bits(bits, t.to_bits(drawn)) and dense.same_bits(values, t.from_bits(t.to_bits(drawn)))
        assert mine.integers(0, 1 << 30) == theirs.integers(0, 1 << 30)


@pytest.mark.parametrize("atype", sorted(sparsity.FORMATS))
def test_the_decoy_metadata_moves_each_legal_value_to_the_next_increasing_pair(atype):
    """other_pattern: each legal value to the next of the increasing pairs (a decreasing pair to the first), as
    the text of its docstring says, worked here from the list of legal values; an illegal value is refused."""
    fmt = sparsity.format_of(atype)
    ordered = list(sparsity.legal_nibbles(fmt, ordered_only=True))
    legal = list(sparsity.legal_nibbles(fmt))
    want = [ordered[(ordered.index(v) + 1) % len(ordered)] if v in ordered else ordered[0] for v in legal]
    got = sp.other_pattern(fmt, np.array(legal * 2).reshape(2, -1))
    assert got.dtype == np.int64 and got.tolist() == [want, want]
    assert all(g != v for g, v in zip(want, legal))
    illegal = next(v for v in range(16) if v not in legal)
    with pytest.raises(KeyError):
        sp.other_pattern(fmt, np.array([[legal[0], illegal]]))


@pytest.mark.parametrize("family,key", [("wgmma", DENSE_KEYS[0]), ("wgmma", DENSE_KEYS[1]), ("wgmma_sp", sparse_keys()[0]),
                                        ("wgmma_sp", sparse_keys()[2])],
                         ids=lambda x: getattr(x, "name", x))
def test_a_launch_prepared_in_parts_is_the_launch_prepared_whole(family, key):
    """The family's prepare (reference.prepared_in_parts, a launch packed PREPARE_PART cases at a time) gives the
    launch and the expectations of its cases prepared and packed all at once, to the bit."""
    fam = registry.get(family)
    kernel = fam.kernel_of(key)
    cs = fam.kernel_cases(kernel)
    assert len(cs) > dense.PREPARE_PART and len(cs) % dense.PREPARE_PART  # several parts, the last one short
    launch, slim = fam.prepare(kernel, cs)
    whole = fam.module("reference").prepare_all(cs)
    want = fam.module("kernel").pack(whole)
    for got, ref in [(launch.images, want.images), (launch.params, want.params),
                     *[(launch.inputs[k], want.inputs[k]) for k in want.inputs]]:
        assert dense.same_bits(got, ref)
    assert list(launch.inputs) == list(want.inputs) and launch.outputs == want.outputs
    for mine, theirs in zip(slim, [p.slim() for p in whole], strict=True):
        for f in dataclasses.fields(theirs):
            assert same(getattr(mine, f.name), getattr(theirs, f.name)), (mine.case.id, f.name)
