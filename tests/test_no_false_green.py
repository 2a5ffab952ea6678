"""No false green: every verdict is earned.

* Start-up tells three states apart (harness/run/gpu.py), with CUDA stood in for by monkeypatching: no GPU
  (every case not-run with the reason, exit 3), a GPU of another arch (not-run with the reason, exit 3), a GPU
  present but unusable (every case `error` with the message, exit 4).
* Every sweep writes its results file (environment, one record per case, summary), however little ran, and
  the summary counts the negative controls apart from the ordinary cases.
* compare: lost coverage is a regression unless accepted; a failure of a case never checked before is one.
* merge, fleet semantics: a failure anywhere is a failure; a pass with no failure elsewhere is a pass; not-run
  only where nothing ran the case; an unusable GPU's `error` is no verdict but is not hidden either.
"""
import pytest

from harness import cli, plan
from harness.enums import ExitCode, Status
from harness.records import compare, merge, results
from harness.run import gpu
from test_compare import FAIL, case, write

SWEEP = ["sweep", "--family", "wgmma", "--kind", "b1", "--n", "8", "--jobs", "2"]


class CudaError(RuntimeError):
    def __init__(self, status, name):
        self.status = status
        super().__init__(f"{name}: simulated")


class FakeRuntime:
    def __init__(self, count=0, count_error=None, props=None, props_error=None):
        self.count, self.count_error, self.props, self.props_error = count, count_error, props, props_error

    def getDeviceCount(self):
        if self.count_error:
            raise self.count_error
        return self.count

    def getDeviceProperties(self, i):
        if self.props_error:
            raise self.props_error
        return self.props

    def driverGetVersion(self):
        return 13000

    def runtimeGetVersion(self):
        return 13000


@pytest.fixture
def cuda(monkeypatch):
    """cuda(runtime, smi=[...]): stand in for CUDA and nvidia-smi for this test."""
    def install(runtime, smi=()):
        monkeypatch.setattr(gpu, "_runtime", lambda: runtime)
        monkeypatch.setattr(gpu, "_nvidia_smi_gpus", lambda: list(smi))
        gpu.reset()
    yield install
    gpu.reset()


def _planned():
    return {c.id: c for _, cs in plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,))).work
            for c in cs}


def _sweep(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    code = cli.main(SWEEP + ["--out", str(out)])
    env, recs, summary = results.load(out)  # the file is written whatever happened
    assert set(recs) == set(_planned()) and summary is not None and summary["unaccounted"] == 0
    return code, env, recs, summary, capsys.readouterr().out


def test_no_gpu_every_case_not_run_with_reason_exit_3(tmp_path, capsys, cuda):
    cuda(FakeRuntime(count_error=CudaError(100, "cudaErrorNoDevice")))
    assert gpu.state().kind == "none" and gpu.unusable() is None and gpu.device_count() == 0
    code, env, recs, summary, _ = _sweep(tmp_path, capsys)
    assert code == ExitCode.NOTHING_RAN == 3
    assert {r["status"] for r in recs.values()} == {"not-run"}
    assert all("none is visible" in r["reason"] for r in recs.values())
    assert env["gpu"] is None and env["gpu_state"] == "none" and summary["ran"] == 0


def test_gpu_of_another_arch_every_case_not_run_with_reason_exit_3(tmp_path, capsys, cuda):
    a100 = {"name": b"NVIDIA A100-SXM4-80GB", "major": 8, "minor": 0, "uuid": b"\x01" * 16,
            "multiProcessorCount": 108}
    cuda(FakeRuntime(count=1, props=a100))
    assert gpu.state().kind == "usable" and gpu.device_info(0)["arch"] is None
    code, env, recs, summary, _ = _sweep(tmp_path, capsys)
    assert code == ExitCode.NOTHING_RAN
    assert {r["status"] for r in recs.values()} == {"not-run"}
    assert all("this is NVIDIA A100-SXM4-80GB (compute capability 8.0)" in r["reason"] for r in recs.values())


@pytest.mark.parametrize("runtime, smi, says", [
    (FakeRuntime(count_error=CudaError(999, "cudaErrorUnknown")), (), "cudaGetDeviceCount failed"),
    (FakeRuntime(count=1, props_error=CudaError(46, "cudaErrorDevicesUnavailable")), (),
     "cudaGetDeviceProperties(0) failed"),
    (FakeRuntime(count_error=CudaError(35, "cudaErrorInsufficientDriver")), ("GPU 0: NVIDIA H100 80GB HBM3",),
     "nvidia-smi lists 1 GPU(s)"),
    (FakeRuntime(count=0), ("GPU 0: NVIDIA H100 80GB HBM3",), "CUDA finds none"),
], ids=["count-raises", "properties-raise", "smi-lists-driver-too-old", "smi-lists-cuda-none"])
def test_unusable_gpu_every_case_error_with_the_message_exit_4(tmp_path, capsys, cuda, runtime, smi, says,
                                                               monkeypatch):
    from harness.run import compile as nvrtc
    monkeypatch.setattr(nvrtc, "compile_many", lambda *a, **k: pytest.fail("compiled with an unusable GPU"))
    cuda(runtime, smi)
    assert gpu.state().kind == "unusable" and says in gpu.unusable() and gpu.device_count() == 0
    code, env, recs, summary, out = _sweep(tmp_path, capsys)
    assert code == ExitCode.ENVIRONMENT == 4
    assert {r["status"] for r in recs.values()} == {Status.ERROR}
    assert all(says in r["error"] for r in recs.values())
    assert says in summary["environment_error"] and summary["error"] == len(recs) and summary["ran"] == 0
    assert env["gpu_state"] == "unusable" and says in env["gpu_error"]


def test_the_summary_counts_negative_controls_apart(tmp_path, capsys, cuda):
    cuda(FakeRuntime(count_error=CudaError(100, "cudaErrorNoDevice")))
    _, _, recs, summary, _ = _sweep(tmp_path, capsys)
    planned = _planned()
    controls = sum(bool(c.control) for c in planned.values())
    assert controls and controls < len(planned)
    assert summary["controls"] == {"not-run": controls}
    assert summary["ordinary"] == {"not-run": len(planned) - controls}


def test_exit_codes_of_a_sweep_summary():
    from harness.sweep import exit_code
    assert exit_code({"pass": 5, "ran": 5, "not-run": 3}) == ExitCode.OK
    assert exit_code({"pass": 5, "fail": 1, "ran": 6}) == ExitCode.FAILED
    assert exit_code({"compile-error": 2, "not-run": 3, "ran": 0}) == ExitCode.FAILED
    assert exit_code({"not-run": 3, "ran": 0}) == ExitCode.NOTHING_RAN
    assert exit_code({"error": 3, "ran": 0, "environment_error": "x"}) == ExitCode.ENVIRONMENT


# ---------------------------------------------------------------------------------------------------- compare

def test_lost_coverage_is_a_regression_unless_accepted(tmp_path):
    old = write(tmp_path / "old.jsonl", {}, [case("a"), case("b"), case("c")])
    new = write(tmp_path / "new.jsonl", {}, [case("a"), case("b", "not-run", reason="needs a sm_90a GPU")])
    strict = compare.compare(old, new)
    assert strict["regressed"] and strict["missing_in_new"] == ["c"] and strict["no_longer_run"][0]["id"] == "b"
    lenient = compare.compare(old, new, accept_lost_coverage=True)
    assert not lenient["regressed"] and "lost coverage accepted" in lenient["notes"][0]
    assert cli.main(["compare", str(old), str(new)]) == 1
    assert cli.main(["compare", str(old), str(new), "--accept-lost-coverage"]) == 0
    # accepting lost coverage accepts nothing else
    worse = write(tmp_path / "worse.jsonl", {}, [case("a", "fail", **FAIL)])
    assert cli.main(["compare", str(old), str(worse), "--accept-lost-coverage"]) == 1


def test_a_failure_of_a_case_never_checked_before_is_a_regression(tmp_path):
    """An H100 baseline records tcgen05 not-run; a B200 run where it fails must not compare as 'no regression'."""
    old = write(tmp_path / "old.jsonl", {}, [case("a"), case("t", "not-run", reason="needs sm_100a")])
    new = write(tmp_path / "new.jsonl", {}, [case("a"), case("t", "fault", error="illegal instruction"),
                                             case("u", "fail", **FAIL), case("v")])
    r = compare.compare(old, new, accept_lost_coverage=True)
    assert r["regressed"] and {f["id"] for f in r["failing_unchecked_before"]} == {"t", "u"}
    assert "failing, unchecked before" in compare.render(r)


def test_a_gpu_that_became_unusable_is_a_regression_even_accepting_lost_coverage(tmp_path):
    old = write(tmp_path / "old.jsonl", {}, [case("a")])
    new = write(tmp_path / "new.jsonl", {}, [case("a", "error", error="GPU unusable: cudaErrorUnknown")])
    r = compare.compare(old, new, accept_lost_coverage=True)
    assert r["regressed"] and r["newly_failing"][0]["status"] == "error"


# ---------------------------------------------------------------------------------------------------- merge

def test_merge_fleet_semantics(tmp_path):
    n0 = write(tmp_path / "n0.jsonl", {"host": "n0"}, [
        case("fail-anywhere"), case("pass-only"), case("run-nowhere", "not-run", reason="x"),
        case("pass-and-not-run"), case("fault-and-not-run", "not-run", reason="x"), case("error-and-pass", "error")])
    n1 = write(tmp_path / "n1.jsonl", {"host": "n1"}, [
        case("fail-anywhere", "fail", **FAIL), case("pass-only"), case("run-nowhere", "not-run", reason="y"),
        case("pass-and-not-run", "not-run", reason="y"), case("fault-and-not-run", "fault", error="e"),
        case("error-and-pass")])
    n2 = write(tmp_path / "n2.jsonl", {"host": "n2"}, [case("fail-anywhere"), case("only-here", "not-run")])
    env, cases, summary, dis = merge.merge([n0, n1, n2])
    status = {cid: r["status"] for cid, r in cases.items()}
    assert status == {"fail-anywhere": "fail", "pass-only": "pass", "run-nowhere": "not-run",
                      "pass-and-not-run": "pass", "fault-and-not-run": "fault", "error-and-pass": "pass",
                      "only-here": "not-run"}
    assert [d["id"] for d in dis] == ["fail-anywhere"]  # not-run and error are no verdict: no disagreement
    assert cases["fail-anywhere"]["source"]["host"] == "n1"
    assert merge.exit_code(summary, dis) == ExitCode.FAILED


def test_merge_exit_codes(tmp_path):
    ok = write(tmp_path / "ok.jsonl", {}, [case("a"), case("b", "not-run")])
    nothing = write(tmp_path / "none.jsonl", {}, [case("a", "not-run"), case("b", "not-run")])
    broken = write(tmp_path / "broken.jsonl", {"gpu_error": "cudaErrorUnknown"}, [case("a", "error")])
    out = tmp_path / "m.jsonl"
    assert cli.main(["merge", str(ok), "--out", str(out)]) == ExitCode.OK  # a single file merges
    assert cli.main(["merge", str(nothing), "--out", str(out)]) == ExitCode.NOTHING_RAN
    assert cli.main(["merge", str(broken), "--out", str(out)]) == ExitCode.ENVIRONMENT
    _, cases, summary, dis = merge.merge([ok, broken])
    assert cases["a"]["status"] == "pass" and summary["environment_errors"][0]["error"] == "cudaErrorUnknown"
    assert merge.exit_code(summary, dis) == ExitCode.ENVIRONMENT  # a broken node is not hidden by the others


def test_a_filter_that_does_not_apply_drops_the_family_with_a_note_in_the_summary(tmp_path, capsys, cuda):
    cuda(FakeRuntime(count_error=CudaError(100, "cudaErrorNoDevice")))
    out = tmp_path / "r.jsonl"
    code = cli.main(["sweep", "--cta-group", "1", "--kind", "f16", "--n", "8", "--a-src", "SS", "--match", "m64n8k16-f16.f32.f16.f16-cg1",
                     "--jobs", "2", "--out", str(out)])
    _, recs, summary = results.load(out)
    assert code == ExitCode.NOTHING_RAN and recs and {r["family"] for r in recs.values()} == {"tcgen05"}
    assert any(n.startswith("wgmma: left out") and "cta_group" in n for n in summary["notes"])
