"""The command line's desc, idesc, zmask and layout are shells over harness.api: for a grid of inputs each prints
what the API answers, serialized (--json) and exits 1 exactly where the API names a broken rule; and a bug planted
in the API function shows in the command's output, so the command does not compute the answer itself."""
import json
from dataclasses import asdict

import numpy as np
import pytest

from harness import api
from tests.cli_in_process import run

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker


def cli_json(*argv):
    out = run(*map(str, argv), "--json")
    assert out.stderr == "" and out.returncode in (0, 1), (argv, out.returncode, out.stderr)
    return out.returncode, json.loads(out.stdout)


def decoded(dec: api.Decoded, **named) -> dict:
    """The API's answer as the command prints it: a refused value with its fields as given, a decoded one after
    what it names (its arch, its kind)."""
    body = {"value": dec.value, "fields": dec.fields, "problems": list(dec.problems)}
    return json.loads(json.dumps(body if dec.refused else {**named, **body}))


def exit_status(dec: api.Decoded) -> int:
    return 1 if dec.problems else 0


# ---------------------------------------------------------------------------------------------------- desc

SMEM_FIELDS = [(1024, 16, 1024, "128B", 0), (8, 16, 16, "none", 0), (0, 16, 1 << 18, "none", 0),
               (1024, 4096, 1024, "128B", 0), (0, 16, 16, "none", 1), (2048, 16, 512, "64B", 3),
               (0, 16, 1024, "128B_base32b", 0), (0, 256, 128, "32B", 0)]
OPERANDS = [(None, None), ("tf32", "MN"), ("tf32", None), ("f16", "MN"), ("f8f6f4", "K")]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_desc_encode_prints_what_the_api_validates(arch):
    for start, lbo, sbo, swizzle, base in SMEM_FIELDS:
        for lbo_mode in ("relative", "absolute") if arch != "sm_90a" else ("relative",):
            for kind, major in OPERANDS if arch != "sm_90a" else OPERANDS[:1]:
                argv = ["desc", "--arch", arch, "--start", start, "--lbo", lbo, "--sbo", sbo, "--swizzle", swizzle,
                        "--base-offset", base, "--lbo-mode", lbo_mode]
                argv += ["--kind", kind] if kind else []
                argv += ["--major", major] if major else []
                want = api.validate_smem_descriptor(
                    api.SmemDescriptor(arch, start, lbo, sbo, swizzle, base, lbo_mode), kind, major)
                assert cli_json(*argv) == (exit_status(want), decoded(want, arch=arch)), argv


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_desc_decode_prints_what_the_api_decodes(arch):
    for value in (0, 0x4000004000010040, 0x4000404000010040, 0x7000000000000000, 1 << 46, 0x2010404000010040,
                  0x6010404000010040, (1 << 64) - 1):
        for kind, major in OPERANDS if arch != "sm_90a" else OPERANDS[:1]:
            argv = ["desc", "--arch", arch, "--decode", hex(value)]
            argv += ["--kind", kind] if kind else []
            argv += ["--major", major] if major else []
            want = api.decode_smem_descriptor(value, arch, kind, major)
            assert cli_json(*argv) == (exit_status(want), decoded(want, arch=arch)), argv


# ---------------------------------------------------------------------------------------------------- idesc

INSTR = [("f16", "bf16", 128, 256, []), ("f16", "f16", 128, 12, []), ("tf32", "tf32", 64, 64, ["--transpose-b"]),
         ("tf32", "tf32", 128, 64, ["--transpose-a"]), ("i8", "s8", 64, 128, []), ("i8", "u8", 128, 40, []),
         ("f8f6f4", "e4m3", 128, 24, ["--transpose-b"]), ("mxf4nvf4", "e2m1", 128, 128, ["--k96"]),
         ("mxf4", "e2m1", 128, 64, ["--cta-group", "2"]), ("f16", "f16", 64, 128, ["--ws", "--max-shift", "2"]),
         ("f16", "f16", 64, 128, ["--max-shift", "2"]), ("f16", "f16", 1000, 8, []), ("f16", "zz", 128, 64, []),
         ("mxf8f6f4", "e2m3", 256, 128, ["--cta-group", "2", "--scale-type", "ue8m0"]),
         ("i8", "s8", 128, 64, ["--sparse", "--sparsity-selector", "1"])]
FLAGS = {"--transpose-a": "transpose_a", "--transpose-b": "transpose_b", "--k96": "k96", "--ws": "ws",
         "--sparse": "sparse"}
VALUED = {"--cta-group": ("cta_group", int), "--max-shift": ("max_shift", int), "--scale-type": ("scale_type", str),
          "--sparsity-selector": ("sparsity_selector", int)}


def instr_descriptor(kind, ab, m, n, extra) -> api.InstrDescriptor:
    """The descriptor an idesc command line names, built here from the flags without the command line's code."""
    kw = {FLAGS[f]: True for f in extra if f in FLAGS}
    kw.update({VALUED[f][0]: VALUED[f][1](v) for f, v in zip(extra, extra[1:]) if f in VALUED})
    return api.InstrDescriptor(kind, ab, ab, api.default_accumulator_dtype(kind), m, n, **kw)


@pytest.mark.parametrize("kind, ab, m, n, extra", INSTR)
def test_idesc_encode_prints_what_the_api_validates(kind, ab, m, n, extra):
    d = instr_descriptor(kind, ab, m, n, extra)
    for arch in (None, "sm_100a", "sm_103a"):
        for sw_a, sw_b in ((None, None), ("128B", "32B"), ("128B_base32b", "none")):
            argv = ["idesc", "--kind", kind, "--atype", ab, "--btype", ab, "--m", m, "--n", n, *extra]
            argv += ["--arch", arch] if arch else []
            argv += ["--swizzle-a", sw_a, "--swizzle-b", sw_b] if sw_a else []
            want = api.validate_instr_descriptor(d, arch, sw_a, sw_b)
            assert cli_json(*argv) == (exit_status(want), decoded(want, kind=kind)), argv


@pytest.mark.parametrize("kind", ["f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"])
def test_idesc_decode_prints_what_the_api_decodes(kind):
    for value in (0, 0x08100010, 0x08400010, 0x380, 0x08410490, 0x08C01400, 0x04200490, 0xFFFFFFFF):
        for cta_group, ws, arch, scale_vec, sw_a, sw_b in (
                (None, None, None, None, None, None), (2, None, "sm_103a", None, "64B", None),
                (None, True, None, None, None, "128B_base32b"), (1, None, "sm_100a", "2X", None, None)):
            argv = ["idesc", "--kind", kind, "--decode", hex(value)]
            for flag, v in (("--cta-group", cta_group), ("--arch", arch), ("--scale-vec", scale_vec),
                            ("--swizzle-a", sw_a), ("--swizzle-b", sw_b)):
                argv += [flag, v] if v is not None else []
            argv += ["--ws"] if ws else []
            want = api.decode_instr_descriptor(value, kind, cta_group, ws, arch, scale_vec or "", sw_a, sw_b)
            assert cli_json(*argv) == (exit_status(want), decoded(want, kind=kind)), argv


# ---------------------------------------------------------------------------------------------------- zmask

def zmask_json(z: api.ZeroColumnMask, m: int, n: int) -> dict:
    zero = api.zero_columns(z, m, n)
    return json.loads(json.dumps({
        "value": f"0x{api.encode_zero_column_mask(z):016x}", "fields": asdict(z), "m": m, "n": n,
        "mask_lsb_first": "".join("1" if j in zero else "0" for j in range(n)), "zero_columns": zero,
        "b_columns_used_from": z.column_shift}))


@pytest.mark.parametrize("m", [32, 64, 128])
def test_zmask_prints_what_the_api_encodes_decodes_and_expands(m):
    ns = api.zero_mask_legal_n(m)
    for n in (ns[0], ns[len(ns) // 2], ns[-1]):
        for sc, fs, skip, use, shift, all_zero in (((0, 0, 0, 0), (0, 0, 0, 0), 0, 0, 0, False),
                                                   ((0, 1, 2, 1), (1, 1, 0, 0), 2, 3, 2, False),
                                                   ((5, 0, 7, 3), (0, 1, 0, 1), 1, 4, 16, False),
                                                   ((0, 0, 0, 0), (1, 0, 0, 0), 4, 3, 0, True)):
            z = api.ZeroColumnMask(sc, fs, not all_zero, skip, use, shift)
            argv = ["zmask", "--m", m, "--n", n, "--start-count", *sc, "--first-span", *fs, "--skip-span", skip,
                    "--use-span", use, "--shift", shift] + (["--all-zero"] if all_zero else [])
            assert cli_json(*argv) == (0, zmask_json(z, m, n)), argv
            value = api.encode_zero_column_mask(z)
            assert cli_json("zmask", "--m", m, "--n", n, "--decode", hex(value)) == (
                0, zmask_json(api.decode_zero_column_mask(value), m, n))


# ---------------------------------------------------------------------------------------------------- layout

@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B", "128B_base32b"])
def test_layout_prints_the_apis_address_map(major, swizzle):
    for dtype, rows, cols in (("bf16", 64, 16), ("e4m3", 32, 32), ("tf32", 16, 8), ("f16", 72, 16), ("s8", 8, 16)):
        try:
            packed = api.canonical_layout(dtype, major, swizzle, rows, cols)
        except api.LayoutError:
            continue
        for lbo, sbo, start, base in ((packed.lbo, packed.sbo, 0, 0), (packed.lbo * 2, packed.sbo * 2, 1040, 3)):
            if swizzle == "none" and base:
                continue
            m = api.address_map(api.canonical_layout(dtype, major, swizzle, rows, cols, lbo, sbo, start, base))
            want = {"layout": asdict(m.layout), "address": m.address.tolist(), "chunk": m.chunk.tolist(),
                    "footprint": list(m.footprint)}
            argv = ["layout", "--major", major, "--swizzle", swizzle, "--dtype", dtype, "--rows", rows, "--cols",
                    cols, "--lbo", lbo, "--sbo", sbo, "--start", start, "--base-offset", base]
            assert cli_json(*argv) == (0, want), argv


# ---------------------------------------------------------------------------------------------------- planted bugs

PLANT = "a planted rule"


def plant_problem(monkeypatch, name):
    """api.`name` answers with one more broken rule."""
    real = getattr(api, name)

    def planted(*a, **k):
        dec = real(*a, **k)
        return api.Decoded(dec.value, dec.fields, dec.problems + (PLANT,), dec.refused)
    monkeypatch.setattr(api, name, planted)


@pytest.mark.parametrize("name, argv", [
    ("validate_smem_descriptor", ["desc", "--arch", "sm_100a", "--start", "0", "--lbo", "16", "--sbo", "1024"]),
    ("decode_smem_descriptor", ["desc", "--arch", "sm_90a", "--decode", "0x4000004000010040"]),
    ("validate_instr_descriptor", ["idesc", "--kind", "f16", "--atype", "f16", "--btype", "f16", "--m", "128",
                                   "--n", "64"]),
    ("decode_instr_descriptor", ["idesc", "--kind", "f16", "--decode", "0x08100010"]),
])
def test_a_rule_planted_in_the_api_is_what_the_descriptor_commands_report(monkeypatch, name, argv):
    before = run(*argv)
    assert before.returncode == 0 and PLANT not in before.stdout, before
    plant_problem(monkeypatch, name)
    after = run(*argv)
    assert after.returncode == 1 and f"problem: {PLANT}" in after.stdout, after
    assert json.loads(run(*argv, "--json").stdout)["problems"][-1] == PLANT


def test_a_bug_planted_in_the_zero_mask_api_is_what_zmask_prints(monkeypatch):
    argv = ["zmask", "--m", "128", "--n", "16", "--skip-span", "2", "--use-span", "3", "--json"]
    assert json.loads(run(*argv).stdout)["mask_lsb_first"] == "0000111000011100"
    monkeypatch.setattr(api, "zero_columns", lambda z, m, n: [0])
    monkeypatch.setattr(api, "encode_zero_column_mask", lambda z: 0x1234)
    info = json.loads(run(*argv).stdout)
    assert (info["mask_lsb_first"], info["zero_columns"], info["value"]) == ("1" + "0" * 15, [0], f"0x{0x1234:016x}")
    monkeypatch.setattr(api, "zero_mask_legal_n", lambda m: [8, 24, 32])
    out = run(*argv)
    assert out.returncode == 2 and "legal N: 8, 24, 32)" in out.stderr, out


def test_a_bug_planted_in_the_layout_api_is_what_layout_prints(monkeypatch, tmp_path):
    argv = ["layout", "--major", "K", "--swizzle", "128B", "--dtype", "f16", "--rows", "8", "--cols", "64", "--lbo",
            "16", "--sbo", "1024"]
    real_map = api.address_map

    def shifted(layout):  # every element one 16-byte chunk further on
        m = real_map(layout)
        return api.AddressMap(m.layout, m.address + 16, m.bit, m.cute)
    good = json.loads(run(*argv, "--json").stdout)
    monkeypatch.setattr(api, "address_map", shifted)
    bad = json.loads(run(*argv, "--json").stdout)
    assert np.array_equal(np.array(bad["address"]), np.array(good["address"]) + 16)
    assert bad["footprint"] == [lo + 16 for lo in good["footprint"]]
    assert "relative to byte 16)" in run(*argv).stdout  # the picture is drawn from the API's map too
    drawn = []
    from harness.diagnosis import pictures
    monkeypatch.setattr(pictures, "layout_png", lambda lay, chunk, path: drawn.append(chunk))
    assert run(*argv, "--png", tmp_path / "t.png").returncode == 0
    assert np.array_equal(drawn[0], np.array(good["chunk"]) + 1)
    monkeypatch.setattr(api, "canonical_layout", lambda *a: (_ for _ in ()).throw(api.LayoutError("planted")))
    out = run(*argv)
    assert out.returncode == 2 and out.stderr == "layout: planted\n", out
