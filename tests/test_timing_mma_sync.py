"""The bench's mma.sync forms (issue 58) on the CPU: every timing module compiles for sm_90a and its SASS holds the
form's instructions per loop iteration (harness.timing.bench.mma_sync_sass_problems; planted listings show each
rule refusing what it should), the form list covers every type kind, the jobs, and `bench` on a machine without
a GPU (every form recorded not-run) and through a stand-in H100 (the rows in the table beside wgmma's, the
latency per mma of the chain). `-m gpu` times them on an sm_90a GPU."""
import json

import pytest

from harness.cli import main
from harness.families.mma_sync import forms as MS, kernel as mma_sync_kernel
from harness.run import gpu, sass
from harness.timing import bench, forms as F, source as S

FORMS = F.mma_sync_default()


@pytest.fixture(scope="module")
def compiled():
    # the default cache: warm after the first run (full-optimization NVRTC, ~1.5 s for the 11 modules cold)
    return bench.compile_modules(FORMS, workers=2)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.id)
def test_timing_module_compiles_with_the_forms_mma_per_iteration(form, compiled):
    comp = compiled[(form.module_name, "sm_90a")]
    assert comp.error is None, comp.error
    data = comp.cubin_path.read_bytes()
    assert sass.listing_of(sass.content_digest(data), data)[0] == "sm_90a"
    assert bench.sass_problems(form, comp) == []


def test_the_loops_hold_the_expected_instruction_counts(compiled):
    """What the rules were checked against, in numbers: per throughput iteration CHAINS mma (e4m3: two HMMA each,
    with its conversions; s4: a call each of ptxas's routine, which issues IMMA), per latency repetition LAT_CHAIN."""
    for f in FORMS:
        fns = sass.functions(str(compiled[(f.module_name, "sm_90a")].cubin_path))
        per_mma = len(mma_sync_kernel.sass_expected(f.form))
        for entry, n in (("_tput", S.MMA_SYNC_CHAINS), ("_lat", S.MMA_SYNC_LAT_CHAIN)):
            body, problems = bench._mma_sync_loop(fns[f.module_name + entry], entry)
            assert not problems
            tensor = sum(bool(bench.MMA_SYNC_TENSOR.fullmatch(i.opcode)) for i in body)
            calls = sum(i.opcode.startswith("CALL") for i in body)
            assert (tensor, calls) == ((0, n) if f.kind == "i4" else (n * per_mma, 0)), (f.id, entry)
        if f.atype == "e4m3":  # every mma converts all of A (4 registers) and B (2): 12 F2FP, none hoisted
            body, _ = bench._mma_sync_loop(fns[f.module_name + "_tput"], "_tput")
            assert sum(i.opcode.startswith("F2FP") for i in body) == 12 * S.MMA_SYNC_CHAINS


# ---------------------------------------------------------------------------------------------------- planted

MMA = "HMMA.16816.F32.BF16"
BF16 = next(f for f in FORMS if f.atype == "bf16")


def _ins(text: str) -> sass.Instruction:
    op, _, operands = text.strip().partition(" ")
    return sass.Instruction(op, operands.strip())


def _fns(tput_body: list[str], lat_body: list[str]) -> dict:
    """A module of the bf16 form whose loops are these (the loop branches back to its first instruction)."""
    def function(body):
        ins = [_ins("S2R R0, SR_TID.X")] + [_ins(x) for x in body]
        return tuple(ins + [_ins(f"BRA {hex(16)}"), _ins("EXIT")])
    return {f"{BF16.module_name}_tput": function(tput_body), f"{BF16.module_name}_lat": function(lat_body)}


def _tput(n=S.MMA_SYNC_CHAINS):
    return [f"{MMA} R{8 + 4 * c}, R4, R2, R{8 + 4 * c}" for c in range(n)]


def _lat(n=S.MMA_SYNC_LAT_CHAIN, acc=lambda i: 12):
    return (["CS2R R20, SR_CLOCKLO"] + [f"{MMA} R{acc(i + 1)}, R8, R4, R{acc(i)}" for i in range(n)]
            + ["CS2R R22, SR_CLOCKLO", "CS2R R24, SR_CLOCKLO", "CS2R R26, SR_CLOCKLO"])


def test_planted_listings_each_refused_with_the_reason():
    assert bench.mma_sync_sass_problems(BF16, _fns(_tput(), _lat())) == []
    # a renamed accumulator is still a chain (ptxas does that with DMMA)
    assert bench.mma_sync_sass_problems(BF16, _fns(_tput(), _lat(acc=lambda i: 12 + 4 * (i % 2)))) == []
    cases = {
        "hoisted": (_tput(0) + ["FADD R8, R8, R40"], _lat(), "0 loops issue mma, not 1"),
        "ends too soon": (_tput(), _lat()[:-3], "reads the clock 1 times"),
        "one short": (_tput(S.MMA_SYNC_CHAINS - 1), _lat(), "per iteration, not {'HMMA.16816.F32.BF16': 8}"),
        "dependent": (_tput()[:-1] + [f"{MMA} R40, R4, R2, R8"], _lat(), "waits for another's D"),
        "not a chain": (_tput(), _lat()[:6] + [f"{MMA} R16, R8, R4, R16"] + _lat()[7:], "does not take the one before's D"),
        "outside the clocks": (_tput(), _lat() + [f"{MMA} R12, R8, R4, R12"], "outside the timed chain"),
    }
    for name, (tput, lat, reason) in cases.items():
        problems = bench.mma_sync_sass_problems(BF16, _fns(tput, lat))
        assert any(reason in p for p in problems), (name, problems)
    no_loop = {k: tuple(i for i in v if i.opcode != "BRA") for k, v in _fns(_tput(), _lat()).items()}
    assert "0 loops issue mma" in bench.mma_sync_sass_problems(BF16, no_loop)[0]


def test_a_module_that_is_not_the_forms_is_refused(compiled, monkeypatch):
    """(compile_many may build several forms' kernels into one module: a form none of them is, here m16n8k8.)"""
    other = F.MmaSyncTiming(MS.MmaForm("m16n8k8", "f32", "f16", "f16", "f32"))
    comp = compiled[(BF16.module_name, "sm_90a")]
    assert any("is not in the module" in p for p in bench.sass_problems(other, comp))
    monkeypatch.setattr(mma_sync_kernel, "sass_expected", lambda form: (("op", "HMMA.16816.F32"),))  # f16's, planted
    assert any("per iteration, not {'HMMA.16816.F32': 8}" in p for p in bench.sass_problems(BF16, comp))


# ---------------------------------------------------------------------------------------------------- forms, jobs

def test_the_forms_cover_every_type_kind():
    assert {f.kind for f in FORMS} == {"f16", "tf32", "i8", "f8", "i4", "b1", "f64"}
    shapes = {(f.form.shape.value, f.atype, f.dtype, f.sparse) for f in FORMS}
    assert {("m16n8k16", "f16", "f16", False), ("m16n8k16", "f16", "f32", False), ("m16n8k16", "bf16", "f32", False),
            ("m16n8k8", "tf32", "f32", False), ("m16n8k32", "s8", "s32", False), ("m16n8k32", "e4m3", "f32", False),
            ("m16n8k64", "s4", "s32", False), ("m16n8k256", "b1", "s32", False), ("m16n8k16", "f64", "f64", False),
            ("m16n8k32", "f16", "f32", True)} <= shapes
    assert next(f for f in FORMS if f.atype == "b1").form.bitop.value == "and.popc"
    s4 = next(f for f in FORMS if f.atype == "s4")
    assert mma_sync_kernel.sass_expected(s4.form)[0][0] == "call"  # emulated by ptxas on sm_90a
    assert len({f.id for f in FORMS}) == len({f.module_name for f in FORMS}) == len(FORMS)
    assert all(f.peak() is None for f in FORMS if f.kind in ("i4", "b1", "f64"))
    assert next(f for f in FORMS if f.sparse).peak() == 2 * F.H100_PEAK_PER_CLK_SM["f16"]
    assert all(f.facets()["peak_basis"] == F.MMA_SYNC_PEAK_BASIS for f in FORMS)
    assert FORMS[0] in F.all_default() and F.select(F.all_default(), families=["mma_sync"]) == FORMS


@pytest.mark.parametrize("form", [BF16, next(f for f in FORMS if f.sparse), next(f for f in FORMS if f.kind == "f64")],
                         ids=lambda f: f.id)
def test_jobs(form):
    lat, tput = S.jobs(form, 132)
    ops = S.mma_sync_operands(form)
    assert lat.image.size == tput.image.size == 4 * 32 * (ops["A"][1] + ops["B"][1] + 1) == lat.params["image_bytes"][0]
    words = lat.image.view("<u4")
    assert (words[-32:] == (S.MMA_SYNC_METADATA if form.sparse else 0)).all() and words[:-32].any()
    assert (lat.grid, lat.block, lat.meta["latency_chain"]) == (1, 32, S.MMA_SYNC_LAT_CHAIN)
    assert (tput.grid, tput.block) == (132, 32 * S.MMA_SYNC_WARPS) and tput.smem > 228 * 1024 // 2
    per_iter = S.MMA_SYNC_WARPS * S.MMA_SYNC_CHAINS
    assert tput.meta["flop_per_cta"] == int(tput.params["iters"][0]) * per_iter * form.flop
    cycles = tput.meta["flop_per_cta"] / form.sizing_peak()  # about TARGET_CYCLES at the rate it is sized for
    assert 0.9 * S.TARGET_CYCLES <= cycles <= 1.1 * S.TARGET_CYCLES


# ---------------------------------------------------------------------------------------------------- the command

def test_bench_without_a_gpu_records_the_mma_sync_forms_not_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu, "device_info", lambda index=0: None)
    out = tmp_path / "b.jsonl"
    assert main(["bench", "--family", "mma_sync", "--match", "m16n8k16", "--out", str(out), "-q"]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    recs = lines[1:-1]
    assert [r["family"] for r in recs] == ["mma_sync"] * 4 and lines[-1]["forms"] == 4
    assert all(r["status"] == "not-run" and r["reason"] == "no GPU visible" for r in recs)
    assert recs[0]["peak_basis"] == F.MMA_SYNC_PEAK_BASIS
    assert "4 forms not run: no GPU visible" in capsys.readouterr().out
    assert main(["bench", "--family", "mma_sync", "--list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{len(FORMS)} forms"


def test_mma_sync_rows_beside_wgmmas_through_a_stand_in_h100(tmp_path, monkeypatch):
    fake = {"index": 0, "name": "stand-in H100", "compute_capability": "9.0", "arch": "sm_90a", "uuid": "",
            "multiprocessors": 132, "driver": 0, "runtime": 0}
    monkeypatch.setattr(gpu, "device_info", lambda index=0: fake)
    fs = [F.WgmmaTiming("tf32", "tf32", "f32", 64, "SS"), BF16, next(f for f in FORMS if f.kind == "f64")]
    res = bench.run(fs, tmp_path / "h100.jsonl", log=lambda m: None, backend="tests.simulated.timing_device")
    wg, mma, f64 = res["records"]
    assert [r["status"] for r in res["records"]] == ["ok"] * 3
    # the stand-in answers 164 clocks a repetition of the latency kernel: 64 chained mma
    assert mma["latency"]["chain"] == S.MMA_SYNC_LAT_CHAIN and wg["latency"]["chain"] == 1
    assert mma["latency"]["median"] == pytest.approx(164 / S.MMA_SYNC_LAT_CHAIN, abs=0.05)
    assert mma["throughput"]["mma_per_iter"] == S.MMA_SYNC_WARPS * S.MMA_SYNC_CHAINS
    assert mma["pct_of_kind_peak"] == pytest.approx(100 * 3900 / 4096, rel=0.01) and f64["pct_of_kind_peak"] is None
    table = bench.table(res["records"]).splitlines()
    assert table[0] == bench.HEADER and table[2] == bench.MMA_SYNC_HEADER and "%wgmma" in table[2]
    assert table[1].startswith(wg["id"]) and table[3].startswith(mma["id"]) and table[4].startswith(f64["id"])


# ---------------------------------------------------------------------------------------------------- GPU

@pytest.mark.gpu
def test_mma_sync_timing_on_an_sm_90a_gpu(tmp_path):
    reason = gpu.skip_reason("sm_90a")
    if reason:
        pytest.skip(reason)
    res = bench.run(FORMS, tmp_path / "gpu.jsonl", log=print)
    print(bench.table(res["records"]))
    for r in res["records"]:
        assert r["status"] == "ok", (r["id"], r.get("reason"))
        lat, tp = r["latency"], r["throughput"]
        # a repetition (the chain) is far longer than one mma; one mma takes a few clocks at least
        assert lat["min"] * lat["chain"] > 4 * lat["median"] and 2 < lat["min"] <= lat["median"] < 2000, bench.row(r)
        assert tp["median"] > 0 and tp["cycles_median"] > 0 and tp["sms"] == r["throughput"]["ctas"], bench.row(r)
        if r["peak_flop_per_clk_sm"]:  # mma.sync cannot beat the tensor cores' datasheet rate
            assert r["pct_of_kind_peak"] < 105, bench.row(r)
