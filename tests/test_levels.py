"""Fleet level 1 (harness/levels.py) over the whole plan: it covers every form, swizzle and major-ness of every
family (checked against what the PTX ISA says each family has, not only against the sampler's own reading of the
cases), holds a negative control a family, is small, and is the same every time; the sweep records its level."""
import json

import pytest

from harness import levels, plan, registry
from harness.records.schema_check import errors
from tests import cli_in_process

SWIZZLES = {"none", "32B", "64B", "128B"}  # wgmma's four modes (PTX ISA 9.7.15.5.1.2)
TCGEN05_SWIZZLES = SWIZZLES | {"128B_base32b"}  # tcgen05 adds 128-byte swizzle with 32-byte atomicity (9.7.16.3)
# mma_sync's ldmatrix tiles: 16-byte rows unswizzled, CuTe's Swizzle of 32-, 64- and 128-byte rows; held by rows or
# by columns
MMA_SYNC_TILES = {"pad16", "sw32", "sw64", "sw128"}


@pytest.fixture(scope="module")
def full():
    return plan.make(plan.Selection(), None, cache=True)


@pytest.fixture(scope="module")
def level1(full):
    return levels.sample(full, 1)


def _spelled(case, op):
    """(swizzle, major) of operand op ('a', 'b') as each family spells it, read here without the sampler."""
    obj = getattr(case, op, None)
    if hasattr(obj, "layout"):  # wgmma, wgmma_sp: an Operand with its SmemLayout (RS's A: none)
        return (obj.layout.swizzle, obj.layout.major) if obj.layout is not None else None
    if hasattr(obj, "swizzle"):  # wgmma_seq: a SeqTile; mma_sync: a Load (from registers: none)
        return (obj.swizzle, obj.major) if obj.swizzle is not None else None
    if hasattr(case, f"swizzle_{op}"):  # tcgen05
        return getattr(case, f"swizzle_{op}"), getattr(case, f"major_{op}")
    return None


def _seen(p, family):
    out = {"forms": set(), "A": set(), "B": set(), "majors": set(), "controls": 0}
    fam = registry.get(family)
    for k, cases in p.work:
        if str(k.family) != family:
            continue
        for c in cases:
            if fam.facets_of(c)["control"]:
                out["controls"] += 1
                continue
            out["forms"].add(levels.form_of(k))
            for op in ("a", "b"):
                s = _spelled(c, op)
                if s:
                    out[op.upper()].add(str(s[0]))
                    out["majors"].add((op, str(s[1])))
    return out


@pytest.mark.parametrize("family", list(registry.registry()))
def test_level_1_covers_every_form_swizzle_and_major_of_each_family(family, full, level1):
    whole, sample = _seen(full, family), _seen(level1, family)
    assert sample["forms"] == whole["forms"] and len(whole["forms"]) > 1
    want = {"tcgen05": TCGEN05_SWIZZLES, "mma_sync": MMA_SYNC_TILES}.get(family, SWIZZLES)
    for op in ("A", "B"):
        assert sample[op] == whole[op] == want, op
    majors = ("rows", "cols") if family == "mma_sync" else ("K", "MN")
    assert sample["majors"] == whole["majors"] == {(op, m) for op in "ab" for m in majors}
    assert sample["controls"] >= 1


def test_level_1_is_small_and_made_of_the_plans_own_cases_in_its_order(full, level1):
    # mma_sync's 46 kernels are a form each (37 sm_90a, 9 sm_120a): about a third of the sample's kernels
    assert level1.cases <= 250 and len(level1.work) <= 150
    assert level1.cases * 100 < full.cases
    index = {k.name: (i, {c.id for c in cs}) for i, (k, cs) in enumerate(full.work)}
    positions = [index[k.name][0] for k, _ in level1.work]
    assert positions == sorted(positions)
    assert all({c.id for c in cs} <= index[k.name][1] for k, cs in level1.work)
    names = {k.name for k, _ in level1.work}
    assert {k.name for k in level1.compile_only} <= names and level1.notes[-1].startswith("level 1:")


def test_level_1_is_the_same_every_time(full, level1):
    again = levels.sample(plan.make(plan.Selection(), None, cache=True), 1)
    assert [(k.name, [c.id for c in cs]) for k, cs in again.work] == \
           [(k.name, [c.id for c in cs]) for k, cs in level1.work]


def test_level_3_is_the_full_sweep_and_no_other_level_exists(full):
    assert levels.sample(full, 3) is full
    with pytest.raises(ValueError, match="--level 2"):
        levels.sample(full, 2)


def test_the_sweep_records_its_level(tmp_path):
    out = tmp_path / "l1.jsonl"
    r = cli_in_process.run("sweep", "--family", "wgmma_seq", "--level", "1", "--out", out)
    assert r.returncode in (0, 3), r.stderr  # 3: no GPU here, every case recorded not run
    recs = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert recs[0]["level"] == 1
    cases = [x for x in recs if x["type"] == "case"]
    sample = levels.sample(plan.make(plan.Selection(families=("wgmma_seq",)), None, cache=True), 1)
    assert len(cases) == sample.cases < 40
    schema = json.loads((plan.Path(__file__).resolve().parent.parent / "docs" / "results-schema.json").read_text())
    assert [e for x in recs for e in errors(x, schema)] == []
    assert cli_in_process.run("sweep", "--level", "2", "--out", tmp_path / "x.jsonl").returncode == 2


def test_level_1_leaves_out_the_families_no_gpu_here_runs_and_says_so(full, level1):
    hopper = levels.sample(full, 1, {"wgmma", "wgmma_sp", "wgmma_seq", "mma_sync"})  # an H100 node
    assert {str(k.family) for k, _ in hopper.work} == {"wgmma", "wgmma_sp", "wgmma_seq", "mma_sync"}
    assert not any(str(k.family) == "tcgen05" for k in hopper.compile_only)
    n_tc = sum(len(cs) for k, cs in level1.work if str(k.family) == "tcgen05")
    assert f"level 1: tcgen05 left out: no GPU here runs it ({n_tc} cases of the sample)" in hopper.notes
    assert hopper.cases == level1.cases - n_tc
    # no GPU at all (a CPU machine): every family stays, to be compiled and recorded not run
    assert [k.name for k, _ in levels.sample(full, 1, set()).work] == [k.name for k, _ in level1.work]
