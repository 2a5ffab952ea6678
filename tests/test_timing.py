"""The bench (`python -m harness bench`) on the CPU: every timing kernel compiles for its arch with the
expected tensor-core SASS (a representative subset here; `bench` checks every module it compiles), the launch jobs (images,
descriptors, loop sizing), the statistics, the records and `bench compare` (a planted slowdown beyond the
spread is reported, one inside it is not, bad input exits 2), and a whole bench run through a GpuWorker with a
stand-in backend (tests/simulated/timing_device.py). `-m gpu` times a few forms on a real H100/H200."""
import dataclasses
import json

import numpy as np
import pytest

from harness.cli import main
from harness.run import compile as C, gpu, sass
from harness.spec import desc_tcgen05, desc_wgmma, idesc as idesc_spec
from harness.timing import bench, forms as F, source as S, stats

SERIALIZED = "wgmma.mma_async instructions are serialized"


def check_module(f, compiled: C.Compiled, arch: str):
    assert compiled.error is None, compiled.error
    # a module's NVRTC log is its kernels' together: ptxas names the function it warns about
    serialized = [ln for ln in compiled.log.splitlines() if SERIALIZED in ln and f.module_name in ln]
    assert not serialized, f"{f.module_name}: ptxas serialized the wgmma pipeline:\n{compiled.log}"
    data = compiled.cubin_path.read_bytes()
    assert sass.listing_of(sass.content_digest(data), data)[0] == arch
    assert bench.sass_problems(f, compiled) == []


REPRESENTATIVE = [
    F.WgmmaTiming("bf16", "bf16", "f32", 256, "SS"),
    F.WgmmaTiming("e4m3", "e4m3", "f16", 128, "RS"),
    F.Tcgen05Timing(128, "SS", 1, "sm_100a"),
    F.Tcgen05Timing(256, "TS", 2, "sm_103a"),
]


@pytest.fixture(scope="module")
def compiled_subset(tmp_path_factory):
    import os
    old = os.environ.get("TC_HARNESS_CACHE")
    os.environ["TC_HARNESS_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        return bench.compile_modules(REPRESENTATIVE, workers=2)
    finally:
        if old is None:
            del os.environ["TC_HARNESS_CACHE"]
        else:
            os.environ["TC_HARNESS_CACHE"] = old


@pytest.mark.parametrize("form", REPRESENTATIVE, ids=lambda f: f.id)
def test_timing_module_compiles_with_its_tensor_core_sass(form, compiled_subset):
    arch = form.archs[0]
    check_module(form, compiled_subset[(form.module_name, arch)], arch)


def test_a_module_that_is_not_the_forms_is_refused_with_the_reason(compiled_subset, monkeypatch):
    """bench checks each module's SASS before timing it: another form's module, or a module lacking the form's
    instruction (a planted wrong opcode), is refused with the reason."""
    bf16 = REPRESENTATIVE[0]
    comp = compiled_subset[(bf16.module_name, "sm_90a")]
    other = dataclasses.replace(bf16, n=128)
    assert any("is not in the module" in p for p in bench.sass_problems(other, comp))
    monkeypatch.setattr(bench, "sass_opcode", lambda f: "HGMMA.64x128x16.F32.BF16")
    (problem, *_) = bench.sass_problems(bf16, comp)
    assert "issues no HGMMA.64x128x16.F32.BF16" in problem and "HGMMA.64x256x16.F32.BF16" in problem


def _listing(text: str) -> list:
    return [sass.Instruction(*(line.strip().split(" ", 1) + [""])[:2]) for line in text.strip().splitlines()]


def test_mmas_with_only_nops_between_them_count_as_back_to_back():
    """NVRTC 13.0 (on the H100 node, the 2026-11-23 bench in docs/performance.md) put a NOP between the
    MMAs of the throughput loop; they still pipeline. A wait between MMAs serializes them and is refused."""
    mma = "HGMMA.64x256x16.F32.BF16 R24, gdesc[UR16], R24, UP0"
    nvrtc_13_0 = f"WARPGROUP.ARRIVE\nNOP\n{mma}\nNOP\n{mma}\nNOP\n{mma}\nNOP\n{mma}\nWARPGROUP.DEPBAR.LE gsb0, 0x1"
    nvrtc_13_5 = f"WARPGROUP.ARRIVE\n{mma}\n{mma}\n{mma}\n{mma}\nWARPGROUP.DEPBAR.LE gsb0, 0x1"
    serialized = f"{mma}\nWARPGROUP.DEPBAR.LE gsb0, 0x0\n{mma}\nWARPGROUP.DEPBAR.LE gsb0, 0x0\n{mma}"
    assert bench.longest_mma_run(_listing(nvrtc_13_0)) == 4 == bench.longest_mma_run(_listing(nvrtc_13_5))
    assert bench.longest_mma_run(_listing(serialized)) == 1
    assert bench.longest_mma_run(_listing(f"{mma}\nIADD3 R0, R0, 0x1, RZ\n{mma}")) == 1


# ---------------------------------------------------------------------------------------------------- forms, jobs

def test_default_set_covers_every_kind_n_source_and_the_bf16_swizzles():
    fs = F.wgmma_default()
    assert {f.kind for f in fs} == {"f16", "tf32", "f8", "s8", "b1"}
    assert {(f.n, f.a_src) for f in fs} == {(n, s) for n in (64, 128, 256) for s in ("SS", "RS")}
    assert {f.swizzle for f in fs if f.atype == "bf16" and f.n == 256} == {"128B", "64B", "32B", "none"}
    assert all(f.swizzle == "128B" for f in fs if not (f.atype == "bf16" and f.n == 256))
    assert len({f.id for f in fs}) == len(fs)
    tc = F.tcgen05_default()
    assert {(f.n, f.a_src, f.cta_group, f.arch) for f in tc} == {
        (n, s, cg, a) for n in (64, 128, 256) for s in ("SS", "TS") for cg in (1, 2) for a in ("sm_100a", "sm_103a")}


def test_published_tcgen05_latencies_are_attached_as_references():
    refs = {f.n: f.reference()["latency_clk"] for f in F.tcgen05_default(("sm_100a",)) if f.reference()}
    assert refs == {64: 168, 128: 200, 256: 264}
    r = F.Tcgen05Timing(256, "SS", 1).reference()
    assert "published figure" in r["source"] and r["gpu"] == "B200"
    assert F.Tcgen05Timing(256, "TS", 1).reference() is None


def test_filters():
    fs = F.all_default()
    assert all(f.n == 64 and f.kind == "tf32" for f in F.select(fs, kinds=["tf32"], n_values=[64]))
    assert len(F.select(fs, kinds=["bf16"], n_values=[256], families=["wgmma"])) == 8
    assert F.select(fs, match="SS.64B") == [F.WgmmaTiming("bf16", "bf16", "f32", 256, "SS", "64B")]


@pytest.mark.parametrize("swizzle,ksteps", [("128B", [0, 2, 4, 6]), ("64B", [0, 2, 0, 2]), ("32B", [0] * 4),
                                            ("none", [0] * 4)])
def test_wgmma_jobs_descriptors_and_ksteps(swizzle, ksteps):
    f = F.WgmmaTiming("bf16", "bf16", "f32", 256, "SS", swizzle)
    lat, tput = S.jobs(f, 132)
    for job in (lat, tput):
        assert list(job.params["kstep"][0]) == ksteps
        a = desc_wgmma.decode_wgmma_desc(int(job.params["desc_a"][0]))
        b = desc_wgmma.decode_wgmma_desc(int(job.params["desc_b"][0]))
        assert not a["problems"] and not b["problems"]
        assert a["fields"]["swizzle"] == b["fields"]["swizzle"] == swizzle
        assert a["fields"]["start_address"] == 0 and b["fields"]["start_address"] % 1024 == 0
        assert job.image.size == job.params["image_bytes"][0] and job.image.size % 16 == 0
        assert job.image.any()
    row = {"128B": 128, "64B": 64, "32B": 32, "none": 32}[swizzle]
    assert lat.image.size == 64 * row + 256 * row  # A (64 rows), B (256 rows), one K tile each
    assert lat.grid == 1 and lat.block == 128 and lat.out_words == 2 * S.LAT_REPS
    assert tput.grid == 132 and tput.block == 128 * S.CONSUMER_WGS and tput.smem > 228 * 1024 // 2
    # one launch is about TARGET_CYCLES at the datasheet rate
    cycles = tput.meta["flop_per_cta"] / F.BF16_PEAK_H100
    assert 0.9 * S.TARGET_CYCLES <= cycles <= 1.1 * S.TARGET_CYCLES


def test_rs_job_has_no_a_descriptor_and_tcgen05_jobs_encode_their_shape():
    lat, _ = S.jobs(F.WgmmaTiming("s8", "s8", "s32", 64, "RS"), 132)
    assert lat.params["desc_a"][0] == 0
    f = F.Tcgen05Timing(256, "SS", 2, "sm_100a")
    lat, tput = S.jobs(f, 148)
    idesc = idesc_spec.decode_idesc(int(lat.params["idesc"][0]), "f16")
    assert not idesc["problems"]
    assert idesc["fields"]["n"] == 256 and idesc["fields"]["m"] == 256
    assert desc_tcgen05.decode_tcgen05_smem_desc(int(lat.params["desc_b"][0]))["fields"]["swizzle"] == "128B"
    assert lat.grid == 2 and tput.grid == 148 and tput.meta["ctas_per_group"] == 2
    t = S.jobs(F.Tcgen05Timing(64, "TS", 1, "sm_103a"), 148)[0]
    assert t.params["a_tmem_cols"][0] == 8 and t.params["a_tmem_col"][0] >= 256


# ---------------------------------------------------------------------------------------------------- stats

def test_summary_and_spread():
    s = stats.summary([10, 10, 11, 10, 50])
    assert (s["min"], s["median"], s["max"], s["n"]) == (10, 10, 50, 5)
    assert stats.spread(s) == 0 and stats.spread(s, 1.0) == 1.0  # the outlier does not inflate the noise
    assert s["stdev"] > 15


def test_throughput_per_sm_from_clocks():
    # SM 0 ran two CTAs back to back, SM 1 one: per-SM rate is FLOP on the SM over its span
    w = np.array([[0, 100, 1100, 0, 500], [0, 1100, 2100, 500, 1000], [1, 0, 2000, 0, 1000]], np.uint64)
    r = stats.throughput_launch(w, 4000)
    assert r["sms"] == 2 and r["sm_min"] == pytest.approx(2.0) and r["sm_median"] == pytest.approx(3.0)
    assert r["clock_mhz"] == pytest.approx(2000)
    with pytest.raises(ValueError):
        stats.throughput_launch(np.zeros((2, 5), np.uint64), 1)


def test_latency_samples_split_the_two_rows():
    words = np.array([[130, 131, 2, 2], [129, 130, 3, 2]], np.uint64)
    lat, over = stats.latency_samples(words, 2)
    assert list(lat) == [130, 131, 129, 130] and list(over) == [2, 2, 3, 2]


# ---------------------------------------------------------------------------------------------------- compare

def _bench_file(path, lat_med=130.0, lat_mad=1.0, tput_med=3900.0, tput_mad=5.0, extra=()):
    f = F.WgmmaTiming("bf16", "bf16", "f32", 256, "SS")
    rec = stats.timing_record(f, "sm_90a", "ok",
                              latency={"unit": "clk", "n": 1536, "min": lat_med - 2, "median": lat_med,
                                       "max": lat_med + 40, "mean": lat_med, "stdev": 4.0, "mad": lat_mad},
                              throughput={"unit": "FLOP/clk/SM", "n": 10, "min": tput_med - 10, "median": tput_med,
                                          "max": tput_med + 10, "mean": tput_med, "stdev": 6.0, "mad": tput_mad})
    lines = [{"type": "environment", "schema": 1, "gpu": "NVIDIA H100 80GB HBM3"}, rec, *extra,
             {"type": "summary", "forms": 1}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def test_compare_reports_a_slowdown_beyond_the_spread_and_not_one_inside(tmp_path, capsys):
    old = _bench_file(tmp_path / "old.jsonl")
    # latency: noise = max(1.4826 * 1, 1 clk) = 1.48; k = 3 -> 4.45 clocks
    inside = _bench_file(tmp_path / "inside.jsonl", lat_med=134.0, tput_med=3890.0)  # 10 < 3 * 7.4
    beyond_lat = _bench_file(tmp_path / "lat.jsonl", lat_med=135.0)
    beyond_tput = _bench_file(tmp_path / "tput.jsonl", tput_med=3870.0)  # 30 > 3 * 7.41
    faster = _bench_file(tmp_path / "fast.jsonl", lat_med=120.0, tput_med=4000.0)
    assert main(["bench", "compare", old, inside]) == 0
    assert "0 slowdowns" in capsys.readouterr().out
    assert main(["bench", "compare", old, beyond_lat]) == 1
    out = capsys.readouterr().out
    assert "SLOWER" in out and "latency" in out and "wgmma.m64n256k16.f32.bf16.bf16.SS.128B" in out
    assert main(["bench", "compare", old, beyond_tput]) == 1
    assert "throughput" in capsys.readouterr().out
    assert main(["bench", "compare", old, faster]) == 0
    assert "faster" in capsys.readouterr().out
    # a wider spread in the new run widens the band
    noisy = _bench_file(tmp_path / "noisy.jsonl", lat_med=135.0, lat_mad=2.0)
    assert main(["bench", "compare", old, noisy]) == 0
    # k is the user's
    assert main(["bench", "compare", old, inside, "--k", "1"]) == 1
    rep = stats.compare(old, beyond_lat)
    assert [r["metric"] for r in rep["slowdowns"]] == ["latency"]


def test_compare_skips_forms_not_run_on_either_side(tmp_path, capsys):
    old = _bench_file(tmp_path / "old.jsonl")
    nr = stats.timing_record(F.Tcgen05Timing(64, "SS"), "sm_100a", "not-run", reason="needs sm_100a")
    new = _bench_file(tmp_path / "new.jsonl", extra=[nr])
    assert main(["bench", "compare", old, new]) == 0
    assert "only in new: 1 forms" in capsys.readouterr().out


@pytest.mark.parametrize("content", ["", "not json\n", '{"type": "timing", "id": "x", "status": "ok"}\n',
                                     '{"type": "environment"}\n', '{"type": "environment"}\n[1, 2]\n'])
def test_compare_bad_input_exits_2(tmp_path, capsys, content):
    good = _bench_file(tmp_path / "good.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    assert main(["bench", "compare", good, str(bad)]) == 2
    assert main(["bench", "compare", str(bad), good]) == 2
    assert capsys.readouterr().err.strip()


def test_compare_missing_file_and_bad_k_exit_2(tmp_path, capsys):
    good = _bench_file(tmp_path / "good.jsonl")
    assert main(["bench", "compare", good, str(tmp_path / "absent.jsonl")]) == 2
    assert main(["bench", "compare", good, good, "--k", "0"]) == 2
    assert main(["bench", "compare", good]) == 2
    assert main(["bench", "--n", "7"]) == 2  # no form matches
    assert main(["bench", "--timeout", "0", "--list"]) == 2


def test_a_refused_bench_names_its_command_once(capsys):
    """`bench: what is wrong`, as every command says it (the command was once prefixed twice)."""
    assert main(["bench", "--n", "7"]) == 2
    assert capsys.readouterr().err == "bench: no timed form matches these filters (--list shows them all)\n"
    assert main(["bench", "--timeout", "0", "--list"]) == 2
    assert main(["bench", "--gpu", "-1", "--list"]) == 2
    assert capsys.readouterr().err.splitlines() == ["bench: --timeout must be positive seconds",
                                                    "bench: --gpu is a device index (0, 1, ...)"]


# ---------------------------------------------------------------------------------------------------- a whole run

@pytest.fixture
def tiny_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))


def test_bench_without_a_gpu_records_every_form_not_run(tmp_path, monkeypatch, tiny_cache):
    monkeypatch.setattr(gpu, "device_info", lambda index=0: None)
    fs = [F.WgmmaTiming("tf32", "tf32", "f32", 64, "SS"), F.Tcgen05Timing(64, "SS", 1, "sm_100a")]
    res = bench.run(fs, tmp_path / "b.jsonl", log=lambda m: None)
    lines = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "environment" and lines[-1]["type"] == "summary"
    assert [r["status"] for r in lines[1:-1]] == ["not-run", "not-run"]
    assert all(r["reason"] == "no GPU visible" for r in lines[1:-1])
    assert lines[2]["reference"]["latency_clk"] == 168
    assert bench.exit_code(res["summary"]) == 0
    assert "2 forms not run" in bench.table(res["records"])


def test_bench_through_a_gpu_worker_with_a_stand_in_h100(tmp_path, monkeypatch, tiny_cache, capsys):
    fake = {"index": 0, "name": "stand-in H100", "compute_capability": "9.0", "arch": "sm_90a", "uuid": "",
            "multiprocessors": 132, "driver": 0, "runtime": 0}
    monkeypatch.setattr(gpu, "device_info", lambda index=0: fake)
    monkeypatch.setattr(bench, "BACKEND", "tests.simulated.timing_device")
    fs = [F.WgmmaTiming("tf32", "tf32", "f32", 64, "SS"), F.WgmmaTiming("tf32", "tf32", "f32", 64, "RS"),
          F.Tcgen05Timing(64, "SS", 1, "sm_100a")]
    res = bench.run(fs, tmp_path / "h100.jsonl", log=lambda m: None, backend="tests.simulated.timing_device")
    recs = res["records"]
    assert [r["status"] for r in recs] == ["ok", "ok", "not-run"]
    assert "needs sm_100a" in recs[2]["reason"]
    r = recs[0]
    assert r["latency"]["median"] == pytest.approx(132, abs=2) and r["latency"]["n"] == S.LAT_REPS * S.LAT_LAUNCHES
    assert r["throughput"]["median"] == pytest.approx(3900, rel=0.01) and r["throughput"]["n"] == S.TPUT_LAUNCHES
    assert r["sm_clock_mhz_measured"] == pytest.approx(1755, rel=0.01)
    assert r["pct_of_kind_peak"] == pytest.approx(100 * 3900 / 2048, rel=0.01)
    assert r["pct_of_bf16_4096"] == pytest.approx(100 * 3900 / 4096, rel=0.01)
    env = json.loads((tmp_path / "h100.jsonl").read_text().splitlines()[0])
    assert env["type"] == "environment" and env["bench"]["multiprocessors"] == 132
    t = bench.table(recs)
    assert "wgmma.m64n8" not in t and "tf32" in t and "1 forms not run" in t
    # the same run again compares clean against itself
    res2 = bench.run(fs, tmp_path / "again.jsonl", log=lambda m: None, backend="tests.simulated.timing_device")
    assert bench.exit_code(res2["summary"]) == 0
    assert main(["bench", "compare", str(tmp_path / "h100.jsonl"), str(tmp_path / "again.jsonl")]) == 0


# ---------------------------------------------------------------------------------------------------- GPU

@pytest.mark.gpu
def test_bf16_throughput_on_an_h100_or_h200(tmp_path):
    reason = gpu.skip_reason("sm_90a")
    if reason:
        pytest.skip(reason)
    fs = [F.WgmmaTiming("bf16", "bf16", "f32", 256, "SS"), F.WgmmaTiming("bf16", "bf16", "f32", 64, "RS")]
    res = bench.run(fs, tmp_path / "gpu.jsonl", log=print)
    print(bench.table(res["records"]))
    best = res["records"][0]
    assert best["status"] == "ok", best.get("reason")
    assert best["pct_of_bf16_4096"] >= 90, bench.row(best)
    assert 50 < best["latency"]["min"] < 1000
