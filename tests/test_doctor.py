"""`python -m harness doctor`: the environment named whole, its coverage by CI and the committed runs, one line per
problem with its fix, and the README's tested matrix made from the same sources."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import doctor, environments
from tests import cli_in_process

ROOT = Path(__file__).resolve().parent.parent


def test_the_command_names_every_part_of_the_environment():
    """A fresh process, as a user runs it: the interpreter, NVRTC, cuda-bindings, CuPy, driver and GPUs are named."""
    proc = subprocess.run([sys.executable, "-m", "harness", "doctor"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode in (0, 4), proc.stderr
    for word in ("interpreter", "NVRTC", "cuda-bindings", "cupy-cuda13x", "driver", "covered by CI"):
        assert word in proc.stdout, (word, proc.stdout)
    assert ("GPU 0" in proc.stdout) or ("GPUs           none" in proc.stdout)
    assert proc.stdout.strip().splitlines()[-1].endswith("problem(s)")
    assert proc.returncode == (4 if "problem: " in proc.stdout else 0)


def test_json_carries_the_facts_and_the_problems():
    proc = cli_in_process.run("doctor", "--json")
    rep = json.loads(proc.stdout)
    assert rep["facts"]["python"] and "cuda-bindings" in rep["facts"] and "nvrtc" in rep["facts"]
    assert isinstance(rep["problems"], list) and set(rep["covered_by_ci"]) == {"python", "nvrtc", "cuda-bindings", "gpu"}


@pytest.mark.parametrize("plant, expect", [
    ("old-bindings", "cuda-bindings 12.9.0 is older than the lowest tested"),
    ("no-bindings", "cuda-bindings is not installed"),
    ("python", "Python 3.9.18 is not one the harness supports"),
    ("no-nvrtc", "no usable NVRTC"),
    ("interpreter", "shared b' ' was overwritten"),
    ("no-nvdisasm", "nvdisasm (the SASS check's disassembler) is not installed"),
])
def test_each_problem_is_one_line_with_its_fix_and_exit_4(plant, expect, monkeypatch):
    real = doctor._distribution
    if plant == "old-bindings":
        monkeypatch.setattr(doctor, "_distribution", lambda d: "12.9.0" if d == "cuda-bindings" else real(d))
    elif plant == "no-bindings":
        monkeypatch.setattr(doctor, "_distribution", lambda d: None if d == "cuda-bindings" else real(d))
    elif plant == "python":
        monkeypatch.setattr(doctor.platform, "python_version", lambda: "3.9.18")
    elif plant == "no-nvrtc":
        from harness.run import toolchain

        def missing():
            raise RuntimeError("libnvrtc.so.13: cannot open shared object file")
        monkeypatch.setattr(toolchain, "default", missing)
    elif plant == "interpreter":
        monkeypatch.setattr(doctor, "interpreter_whole", lambda: False)
    elif plant == "no-nvdisasm":  # cuda-toolkit 13.0's wheels bring none (the stock GPU image's)
        _no_nvdisasm(monkeypatch)
    proc = cli_in_process.run("doctor")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("problem: ")]
    assert proc.returncode == 4, proc.stdout
    assert any(expect in ln and "; fix: " in ln for ln in lines), proc.stdout


def _no_nvdisasm(monkeypatch):
    from harness.run import sass

    def missing():
        raise sass.NvdisasmMissing(sass.NVDISASM_MISSING)
    monkeypatch.setattr(sass, "nvdisasm_path", missing)


def test_a_sweep_without_nvdisasm_is_one_line_and_exit_2_before_any_compile(monkeypatch, tmp_path):
    from harness.run import compile as nvrtc, sass
    _no_nvdisasm(monkeypatch)
    compiled = []
    monkeypatch.setattr(nvrtc, "compile_many", lambda *a, **k: compiled.append(a) or [])
    proc = cli_in_process.run("sweep", "--kind", "tf32", "--n", "8", "--out", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2 and not compiled, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"sweep: {sass.NVDISASM_MISSING}"


def _results(tmp_path, **env) -> Path:
    root = tmp_path / "results"
    (root / "run1").mkdir(parents=True)
    record = {"type": "environment", "schema": 3, "gpu": "NVIDIA H100 80GB HBM3", "python": "3.12.3",
              "nvrtc": "13.0", "nvrtc_build": "13.0.88", "cuda_bindings": "13.3.1", "driver": "580.159.04", **env}
    (root / "run1" / "sweep.jsonl").write_text(json.dumps(record) + "\n")
    return root


FACTS = {"python": "3.12.3", "nvrtc": "13.0", "cuda-bindings": "13.3.1", "driver": "580.159.04",
         "gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}


def test_a_committed_run_of_the_same_environment_covers_it(tmp_path):
    ci, matches, nearest = doctor.coverage(FACTS, doctor.committed_runs(_results(tmp_path)))
    assert matches == ["results/run1/sweep.jsonl"] and nearest is None
    assert ci == {"python": True, "nvrtc": True, "cuda-bindings": True, "gpu": False}


def test_the_nearest_run_names_each_difference(tmp_path):
    runs = doctor.committed_runs(_results(tmp_path, driver="575.51.03", gpu="NVIDIA H200"))
    _, matches, nearest = doctor.coverage(FACTS, runs)
    assert not matches
    assert nearest == {"run": "results/run1/sweep.jsonl",
                       "differs": {"driver": ["580.159.04", "575.51.03"], "gpu": ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]}}


def test_ci_covers_only_what_environments_declares():
    ci, _, _ = doctor.coverage(dict(FACTS, python="3.9.1", nvrtc="12.6", **{"cuda-bindings": "12.9.0"}), [])
    assert ci == {"python": False, "nvrtc": False, "cuda-bindings": False, "gpu": False}
    assert environments.NVRTC_VERSIONS[0] in doctor.matrix_markdown()


def test_the_readme_carries_the_tested_matrix_as_generated():
    text = (ROOT / "README.md").read_text()
    block = doctor.matrix_in(text)
    assert block is not None, "README.md has no tested-matrix block (python -m harness doctor --matrix makes it)"
    assert block == doctor.matrix_markdown(), "README.md's tested matrix has drifted: python -m harness doctor --matrix"
