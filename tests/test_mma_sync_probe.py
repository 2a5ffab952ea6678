"""mma_sync's recovered-map diagnosis (harness/families/mma_sync/probe.py) against the simulated sm_90a device
(tests/simulated/mma_sync_device.py), which misreads through random GF(2) affine maps drawn from a seed: D's
placement, A's and B's loads (from global memory and by ldmatrix), and ldmatrix's addresses. Each map is recovered
exactly (checked against the planted table read at the zero place and the unit places, no solver involved), named
in the operand it is in and in no other; a misread no affine map gives is named by its witness."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from harness.diagnosis import affine
from harness.families.mma_sync import FAMILY, forms as F, probe as P, reference as R
from harness.families.mma_sync.cases import operand_maps
from harness.families.mma_sync.ldmatrix import Swizzle
from tests.simulated import mma_sync_device as dev
from tests.simulated.misreading_probe import apply, compose, random_invertible

F16 = F.KernelKey("m16n8k16", "f16", "f32", "f32", False)  # A and B by ldmatrix (rows / cols, .trans) or registers
I8SP = F.KernelKey("m16n8k32", "i8", "s32", "s32", True)  # sparse, 8-bit elements: two passes of the load probe
B1 = F.KernelKey("m16n8k128", "b1", "s32", "s32", False)  # 1-bit elements, .and.popc, unary digits
QUADS = F.KernelKey("m8n8k4", "f16", "f32", "f32", False)  # four MMAs a warp: the instance is coded too
F64 = F.KernelKey("m16n8k8", "f64", "f64", "f64", False)  # 64-bit registers
SEED = 20260611  # every plant's bit matrix is drawn from this and the test's own parameters


class InProcess:
    def run(self, cubin_path, name, launch, timeout):
        return dev.run(cubin_path, name, launch)


@pytest.fixture(autouse=True)
def faithful_device(monkeypatch):
    monkeypatch.setattr(dev, "element_misread", {})
    monkeypatch.setattr(dev, "address_misread", {})


def _cases(key, want):
    return [c for c in FAMILY.kernel_cases(FAMILY.kernel_of(key)) if want(c)]


def diagnose(key, cases, png_dir=None):
    return FAMILY.diagnose(FAMILY.kernel_of(key), cases, f"/nonexistent/simulated/{key.name}.cubin", InProcess(), 30,
                           png_dir)


def _rng(*parts) -> np.random.Generator:
    return np.random.default_rng([SEED, *(zlib.crc32(str(p).encode()) for p in parts)])


def plant_elements(operand: str, key, seed: int):
    """The device's operand misread through (row, col) -> Q (row, col) ^ c, Q random invertible; returns the
    planted hardware table (row, col, instance) per slot."""
    fm = operand_maps(key)["D" if operand == "D" else operand]
    rb, cb = (fm.rows - 1).bit_length(), (fm.cols - 1).bit_length()
    q, c = random_invertible(rb + cb, _rng(operand, key.name, seed))

    def f(row, col):
        return compose(row, col, rb, q, c)
    dev.element_misread[operand] = f
    row, col, inst = fm.table
    r, cc = f(row, col)
    return r, cc, inst


def expected_map(fm, operand, table) -> tuple[list[int], int]:
    """(columns, constant) of the planted table, read at place 0 and at every unit place."""
    at = dict(zip(P.places(fm, operand).ravel().tolist(), P.element_codes(fm, operand, *table).ravel().tolist()))
    const = at[0]
    return [at[1 << i] ^ const for i in range(len(P.coding(fm, operand).in_names))], const


def by(recs, case_id=None):
    return {r["operand"]: r for r in recs if case_id is None or r["id"] == case_id}


# ---------------------------------------------------------------------------------------------------- faithful

@pytest.mark.parametrize("key", [F16, I8SP, B1, QUADS, F64], ids=lambda k: k.name)
def test_a_faithful_device_passes_every_probe(key):
    cs = _cases(key, lambda c: True)
    sample = [c for c in cs if not c.control][:2] + [c for c in cs if c.a.via == "ldmatrix" or c.b.via == "ldmatrix"
                                                     ][:2] + [c for c in cs if c.control][:2]
    recs = diagnose(key, sample)
    assert len(recs) == 3 * len(sample)
    assert all(r["status"] == "pass" for r in recs), [r["summary"] for r in recs if r["status"] != "pass"]
    assert all(r["replays_case"] for r in recs if r["operand"] == "D")


def test_a_control_reads_as_the_model_predicts_and_says_how_it_differs_from_the_tile():
    c = _cases(F16, lambda c: c.control == "wrong-swizzle")[0]
    a = by(diagnose(F16, [c]))["A"]
    assert a["status"] == "pass" and a["reads_as_model"] and not a["reads_as_intended"]
    assert "the tile was read with Swizzle<2,4,3>, the case built it with Swizzle<3,4,3>" in a["summary"]


# ---------------------------------------------------------------------------------------------------- random plants

PLANTS = [("D", F16), ("D", I8SP), ("D", QUADS), ("A", F16), ("A", B1), ("B", F16), ("B", I8SP), ("A", F64)]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("operand,key", PLANTS, ids=[f"{o}-{k.name}" for o, k in PLANTS])
def test_a_random_affine_misread_is_recovered_exactly_and_named_in_its_operand_alone(operand, key, seed):
    table = plant_elements(operand, key, seed)
    case = _cases(key, lambda c: not c.control and c.a.via == "regs" and c.b.via == "regs")[0]
    recs = by(diagnose(key, [case]))
    fm = operand_maps(key)[operand]
    rec = recs[operand]
    columns, const = expected_map(fm, operand, table)
    assert rec["status"] == "fail" and rec["hardware_map"]["columns"] == columns, (rec["hardware_map"], columns)
    assert rec["hardware_map"]["constant"] == const
    assert rec["roles"] and rec["roles"][0].split(" comes from ")[0] in rec["summary"]
    assert rec["summary"].startswith("D fragment" if operand == "D" else f"{operand} as loaded")
    others = [r for op, r in recs.items() if op != operand]
    assert all(r["status"] == "pass" for r in others), [r["summary"] for r in others]
    assert recs["D"]["replays_case"] is True  # the recovered maps reproduce the case's own D registers


def test_an_operand_misloaded_by_ldmatrix_is_named_on_its_ldmatrix_record():
    table = plant_elements("B", F16, 7)
    case = _cases(F16, lambda c: not c.control and c.b.via == "ldmatrix" and c.a.via == "ldmatrix")[0]
    recs = by(diagnose(F16, [case]))
    fm = operand_maps(F16)["B"]
    columns, const = expected_map(fm, "B", table)
    b = recs["B"]
    assert b["probe"] == "ldmatrix" and b["status"] == "fail" and not b["reads_as_model"]
    assert (b["hardware_map"]["columns"], b["hardware_map"]["constant"]) == (columns, const)
    assert recs["A"]["status"] == recs["D"]["status"] == "pass"


@pytest.mark.parametrize("seed", range(3))
def test_a_random_affine_misread_of_ldmatrix_addresses_is_recovered_on_the_bits_the_probe_determines(seed):
    """The device's ldmatrix reads every address of A with bits 4-9 (the 16-byte chunk and the rows a swizzle
    reads) through a random invertible affine map: the map from each element's tile offset to the address read,
    the plant composed with the tile's Swizzle<3,4,3>, is recovered column for column."""
    q, c = random_invertible(6, _rng("addresses", seed))
    mask = 0x3F << 4

    def f(addr):
        return (addr & ~mask) | (apply(q, c, (addr >> 4) & 0x3F) << 4)
    dev.address_misread["A"] = f
    case = _cases(F16, lambda x: not x.control and x.a.via == "ldmatrix" and x.a.row_bytes == 128)[0]
    recs = by(diagnose(F16, [case]))
    a = recs["A"]
    assert a["probe"] == "ldmatrix" and a["status"] == "fail" and not a["reads_as_model"]
    hw = a["address_map"]
    bits = len(hw["columns"])
    built = R.tiles_of(case)["A"].tile.swizzle

    def planted(x):
        return int(f(built(np.array([x])))[0])
    determined = [x for part in a["address_bits_determined"].split(",") for x in (
        range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))]
    # the block's units, its 32-byte half of the row, and all of its 16 rows (3 to 18 of the tile, pitch 128)
    assert set(range(1, 5)) | set(range(7, 12)) <= set(determined), a["address_bits_determined"]
    assert [hw["columns"][i] for i in determined] == [planted(1 << i) ^ planted(0) for i in determined]
    st = P.ldmatrix_setups(case, R.prepare(case))[0]
    offsets = P.tile_addresses(st, Swizzle(0, 4, 3))
    got = affine.AffineMap(bits, bits, tuple(hw["columns"]), hw["constant"])
    assert np.array_equal(got(offsets), f(built(offsets)))  # and it gives every address the probe saw read
    assert a["address_roles"] and a["address_roles"][0].split(" comes from ")[0] in a["summary"]
    assert recs["D"]["status"] == recs["B"]["status"] == "pass", [recs[o]["summary"] for o in "DB"]


def test_a_tile_read_with_another_swizzle_is_named_by_its_swizzle():
    """The device's ldmatrix reads the 128-byte-row tile as if it were swizzled for 64-byte rows."""
    built, read = Swizzle(3, 4, 3), Swizzle(2, 4, 3)
    dev.address_misread["A"] = lambda addr: read(built(addr))
    case = _cases(F16, lambda x: not x.control and x.a.via == "ldmatrix" and x.a.row_bytes == 128)[0]
    recs = by(diagnose(F16, [case]))
    a = recs["A"]
    assert a["status"] == "fail" and a["read_swizzle"] == "Swizzle<2,4,3>"
    assert "the tile was read with Swizzle<2,4,3>, the case built it with Swizzle<3,4,3>" in a["summary"]
    assert recs["D"]["status"] == recs["B"]["status"] == "pass"


# ---------------------------------------------------------------------------------------------------- not affine

def test_a_misread_no_affine_map_gives_is_named_by_its_witness(tmp_path):
    """D elements (0, 0) and (5, 3) exchanged: a bijection, not affine."""
    def f(row, col):
        a, b = (row == 0) & (col == 0), (row == 5) & (col == 3)
        return np.where(a, 5, np.where(b, 0, row)), np.where(a, 3, np.where(b, 0, col))
    dev.element_misread["D"] = f
    case = _cases(F16, lambda c: not c.control and c.a.via == "regs")[0]
    recs = by(diagnose(F16, [case], tmp_path))
    d = recs["D"]
    assert d["status"] == "fail" and d["wrong"] == 2
    assert "not affine" in d["summary"] and "no index map of bits reproduces it" in d["summary"]
    w = d["hardware_map"]
    assert w["not_affine"] and affine.NotAffine(tuple(w["witness_inputs"]), tuple(w["witness_outputs"])).holds()
    assert recs["A"]["status"] == recs["B"]["status"] == "pass"
    assert d["png"].endswith(".png") and (tmp_path / d["png"].split("/")[-1]).exists()
