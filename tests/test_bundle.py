"""Repro bundles (harness/records/bundle.py) from a sweep on a simulated GPU that faults one planted case: the
manifest validates against MANIFEST_SCHEMA and its hashes are the files'; the bundle holds the source, PTX, cubin
and SASS, the versions, a standalone .cu that nvcc builds, and the failing case's launch, which is the very launch
that faulted (the simulated fault, planted by the case's fingerprint, fires on the launch rebuilt from the bundle's
files); the passing cases get nothing; `sweep --bundle` refuses a path that is a file before anything runs."""
import hashlib
import json
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness import plan
from harness.plan import Plan
from harness.records import bundle
from harness.records.schema_check import errors
from harness.contract import LaunchInput, OutputSpec
from tests import cli_in_process
from tests.run import simsweep
from tests.simulated import fake_gpus
from tests.simulated.sim_common import fingerprint


def read_launch(cdir: Path, like: LaunchInput) -> LaunchInput:
    """The launch a bundle's case folder describes (launch.txt and its buffers), as the standalone launcher reads
    it: the params' bytes viewed with the family's record type (`like`'s)."""
    lines = [ln.split() for ln in (cdir / "launch.txt").read_text().splitlines()]
    head = {ln[0]: int(ln[1]) for ln in lines if ln[0] in ("ctas", "threads", "smem")}
    bufs = {ln[1]: np.fromfile(cdir / ln[2], np.uint8) for ln in lines if ln[0] == "buffer"}
    outs = {ln[1]: (int(ln[2]), int(ln[3]), ln[4]) for ln in lines if ln[0] == "output"}
    inputs = {k: bufs[k].view(v.dtype).reshape(v.shape) for k, v in like.inputs.items()}
    out_specs = {}
    for name, spec in like.outputs.items():
        elem, count, fill = outs[name]
        dt = np.dtype(spec.dtype)
        assert (elem, count, fill) == (dt.itemsize, head["ctas"] * int(np.prod(spec.shape)),
                                       np.full(1, spec.fill, dt).tobytes().hex())
        out_specs[name] = OutputSpec(spec.shape, spec.dtype, spec.fill)
    inp = LaunchInput(bufs["images"], bufs["params"].view(like.params.dtype), inputs, out_specs, like.ctas_per_case,
                      head["threads"], like.extra_smem)
    assert (inp.ctas, inp.smem) == (head["ctas"], head["smem"])
    return inp


@pytest.fixture(scope="module")
def faulted(tmp_path_factory):
    """A simulated sweep of four s8 cases, the second planted to trap, and its bundle."""
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("bundle")
    p = plan.make(plan.Selection(families=("wgmma",), kinds=("s8",), n_values=(8,), a_srcs=("SS",)),
                  {"wgmma": "sm_90a"})
    kernel, cases = p.work[0]
    cases = cases[:4]
    simsweep.warm_wgmma_oracle(Plan([(kernel, cases)]))
    planted = simsweep.case_fingerprint(kernel, cases[1])
    mp.setenv("TC_SIM_FAULTS", f"{kernel.name}:#{planted}:trap")
    fake_gpus.install(mp, ["sm_90a"])
    try:
        summary, recs, _, _ = simsweep.sweep(Plan([(kernel, cases)]), tmp / "r.jsonl")
    finally:
        mp.undo()
    manifest = bundle.write(tmp / "r.jsonl", tmp / "bundle")
    return tmp / "bundle", manifest, kernel, cases, recs, planted


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_only_the_failing_case_is_bundled_and_the_manifest_validates(faulted):
    root, manifest, kernel, cases, recs, _ = faulted
    assert [r["status"] for r in recs.values()].count("fault") == 1
    assert errors(manifest, bundle.MANIFEST_SCHEMA) == [] and manifest["problems"] == []
    assert json.loads((root / "manifest.json").read_text()) == manifest
    (k,) = manifest["kernels"]
    assert (k["kernel"], k["arch"]) == (kernel.name, "sm_90a")
    assert [(c["id"], c["status"]) for c in k["cases"]] == [(cases[1].id, "fault")]
    assert {"kernel.cu", "kernel.ptx", "kernel.cubin", "kernel.sass", "repro.cu", "run.sh", "check.py"} <= set(k["files"])
    for f in [*k["files"].values(), *k["cases"][0]["files"].values()]:
        data = (root / f["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["bytes"]
    versions = json.loads((root / "versions.json").read_text())
    assert {"nvrtc", "nvrtc_build", "ptxas", "driver", "cuda_driver_api", "gpu", "nvcc", "bundle_nvrtc_build"} <= set(versions)


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_the_bundle_holds_the_sweeps_source_ptx_and_sass(faulted):
    root, manifest, kernel, *_ = faulted
    from harness import registry
    kdir = root / kernel.name
    assert (kdir / "kernel.cu").read_text() == registry.get(kernel.family).source(kernel)
    assert f".entry {kernel.name}" in (kdir / "kernel.ptx").read_text()
    assert "GMMA" in (kdir / "kernel.sass").read_text()
    assert (kdir / "kernel.cubin").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_the_bundled_launch_is_the_one_that_faulted(faulted):
    root, manifest, kernel, cases, _, planted = faulted
    from harness import registry
    like, _ = registry.get(kernel.family).prepare(kernel, [cases[1]])
    inp = read_launch(root / manifest["kernels"][0]["cases"][0]["dir"], like)
    assert fingerprint(inp, 0) == planted  # the simulated fault is planted on exactly this launch's CTA
    assert np.array_equal(inp.images, like.images) and inp.params.tobytes() == like.params.tobytes()
    kernel_again, expectations, outputs = pickle.loads(
        (root / manifest["kernels"][0]["cases"][0]["dir"] / "expect.pkl").read_bytes())
    assert kernel_again == kernel and set(outputs) == set(like.outputs)


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_the_standalone_repro_builds_with_nvcc(faulted):
    root, manifest, kernel, *_ = faulted
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed here")
    k = manifest["kernels"][0]
    out = subprocess.run(k["nvcc"].split(), cwd=root / k["dir"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    usage = subprocess.run(["./repro"], cwd=root / k["dir"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "usage" in usage.stderr  # no GPU needed to refuse bad input


def test_a_run_without_failures_bundles_nothing(tmp_path):
    env = {"type": "environment", "schema": 3, "date": "2026-12-06T10:00:00+00:00"}
    rec = {"type": "case", "id": "x", "family": "wgmma", "kernel": "k", "arch": "sm_90a", "status": "pass"}
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(env) + "\n" + json.dumps(rec) + "\n")
    m = bundle.write(f, tmp_path / "b")
    assert m["kernels"] == [] and errors(m, bundle.MANIFEST_SCHEMA) == []


def test_a_case_not_in_todays_plan_is_a_problem_not_dropped(tmp_path):
    env = {"type": "environment", "schema": 3, "date": "2026-12-06T10:00:00+00:00"}
    rec = {"type": "case", "id": "gone", "family": "wgmma", "kernel": "wgmma_nope", "arch": "sm_90a", "status": "fail"}
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(env) + "\n" + json.dumps(rec) + "\n")
    m = bundle.write(f, tmp_path / "b")
    assert m["kernels"] == [] and m["problems"] == ["wgmma_nope: not a kernel of today's wgmma plan for sm_90a"]


def test_sweep_bundle_refuses_a_file_before_running(tmp_path):
    f = tmp_path / "taken"
    f.write_text("x")
    r = cli_in_process.run("sweep", "--family", "wgmma_seq", "--out", tmp_path / "r.jsonl", "--bundle", f)
    assert r.returncode == 2 and "--bundle" in r.stderr and not (tmp_path / "r.jsonl").exists()


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_the_bundle_command_and_the_sweep_hook(faulted, tmp_path):
    root, manifest, *_ = faulted
    results_file = root.parent / "r.jsonl"
    r = cli_in_process.run("bundle", results_file, "--out", tmp_path / "b")
    assert r.returncode == 0 and "repro bundle: 1 failing cases of 1 kernels" in r.stdout
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["kernels"][0]["cases"][0]["id"] == \
        manifest["kernels"][0]["cases"][0]["id"]
    assert cli_in_process.run("bundle", tmp_path / "missing.jsonl", "--out", tmp_path / "c").returncode == 2
    # the sweep on this machine: nothing fails (no GPU), so the bundle is empty, and says so
    r = cli_in_process.run("sweep", "--family", "wgmma_seq", "--level", "1", "--out", tmp_path / "s.jsonl",
                           "--bundle", tmp_path / "sb")
    assert r.returncode in (0, 3) and "repro bundle: 0 failing cases" in r.stdout


def test_the_published_manifest_schema_is_the_one_the_code_checks():
    root = Path(__file__).resolve().parent.parent
    assert json.loads((root / "docs" / "bundle-manifest.schema.json").read_text()) == bundle.MANIFEST_SCHEMA


def test_the_bundles_check_gives_the_record_the_sweep_gave_unsettled_included(tmp_path):
    """A bundle's check.py diffs the case's outputs as the sweep did: its record carries what every record of the
    case carries (contract.case_keys), so a case whose expected value rests on an unsettled reading (a sparse case
    with decreasing 2:4 indices) says so there too. Outputs all zero: the case fails, exit 1."""
    import os
    import sys
    from harness import registry
    p = plan.make(plan.Selection(families=("wgmma_sp",), kinds=("s8",), n_values=(8,)), {"wgmma_sp": "sm_90a"})
    kernel, case = next((k, c) for k, cs in p.work for c in cs if c.unsettled and not c.control)
    inp, expectations = registry.get(kernel.family).prepare(kernel, [case])
    outputs = {}
    for name, spec in inp.outputs.items():
        dt = np.dtype(spec.dtype)
        outputs[name] = (dt.str, (inp.ctas, *spec.shape))
        np.zeros((inp.ctas, *spec.shape), dt).tofile(tmp_path / f"out_{name}.bin")
    (tmp_path / "expect.pkl").write_bytes(pickle.dumps((kernel, expectations, outputs)))
    (tmp_path / "check.py").write_text(bundle._CHECK_PY)
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(tmp_path)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(root)), timeout=300)
    assert r.returncode == 1, r.stderr
    rec = json.loads(r.stdout)
    assert rec["id"] == case.id and rec["status"] == "fail" and rec["unsettled"] == case.unsettled
    assert rec["facets"]["kind"] == "s8"
