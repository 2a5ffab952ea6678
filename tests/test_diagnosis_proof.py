"""benchmarks/diagnosis_proof.py rehearsed on the simulated wgmma device: every plant (the issue's and random ones
drawn from a seed) is named by its recovered map, nothing else is blamed, and bad arguments are refused."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.cute  # the simulated device reads its layouts from CuTe DSL


def test_every_plant_is_named_on_the_simulated_device(tmp_path):
    out = tmp_path / "proof.jsonl"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "diagnosis_proof.py"), "--simulated", "--seed", "3",
                        "--random", "1", "--max-cases", "16", "--out", str(out)], capture_output=True, text=True,
                       timeout=240, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "seed 3" in p.stdout
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0] == {"seed": 3, "random": 1, "simulated": True}
    plants = {r["plant"]: r for r in lines[1:]}
    assert set(plants) >= {"baseline", "baseline-base-offset", "base-offset-sign", "sbo+16", "sbo+16-rs", "64B-as-128B",
                           "d-rowhalf-colpair", "a-rowhalf-khalf", "random-d-0", "random-a-0", "random-b-0"}
    for name, r in plants.items():
        assert r["named"], r
        if not name.startswith("baseline"):
            assert r["failing"] > 0 and r["blamed"] == [r["expected_operand"]], r
    assert "SBO" in plants["sbo+16"]["sentence"] and "model" in plants["sbo+16"]["sentence"]


def test_bad_arguments_exit_2_before_anything_runs(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "diagnosis_proof.py"), "--simulated", "--random",
                        "-1", "--out", str(tmp_path / "x.jsonl")], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert p.returncode == 2 and "--random must be >= 0" in p.stderr and not (tmp_path / "x.jsonl").exists()
