"""`python -m harness report`: a README's tables generated from results files, and drift between the two caught.
(results/README.md itself carries the baselines table of tools/results_readme.py: tests/test_docs.py.)"""
import json
from pathlib import Path

import pytest

from harness import cli
from harness.cli.common import DEFAULT_RESULTS_DIR
from harness.records import report, results

ROOT = Path(__file__).resolve().parent.parent / "results"


def test_every_committed_sweep_file_is_tabled_whole():
    text = report.render(ROOT)
    assert report.problems(text) == [] and text.count("| **all** |") == len(report.sweep_files(ROOT))


def test_a_changed_results_file_is_drift(tmp_path):
    run = tmp_path / "run1"
    run.mkdir()
    lines = [{"type": "environment", "schema": 1, "gpu": "NVIDIA H100 80GB HBM3"},
             {"type": "case", "id": "m64n8k16-f16.f32.f16.f16-SS-A:K/none-B:K/32B", "family": "wgmma",
              "kernel": "wgmma_f16_m64n8k16_f32_SS", "status": "pass"},
             {"type": "case", "id": "m64n8k16-f16.f32.f16.f16-SS-A:K/none-B:K/32B-neg_wrong-swizzle-B",
              "family": "wgmma", "kernel": "wgmma_f16_m64n8k16_f32_SS", "status": "pass", "control": "wrong-swizzle"},
             {"type": "summary", "cases": 2}]
    f = run / "sweep.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in lines))
    readme = tmp_path / "README.md"
    readme.write_text("# runs\n\nprose\n")
    assert cli.main(["report", str(tmp_path), "--update", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("# runs\n\nprose\n") and "| wgmma | f16 | f32 | SS | 2 | 2 | 1 | 1 |" in text
    assert cli.main(["report", str(tmp_path), "--check", str(readme)]) == 0
    lines[1]["status"] = "fail"
    f.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert cli.main(["report", str(tmp_path), "--check", str(readme)]) == 1


def test_the_sweeps_a_user_ran_into_the_scratch_folder_are_not_tabled(tmp_path):
    """`python -m harness sweep` (the README's first command) writes results/scratch/sweep-<time>.jsonl; the tables
    are of the committed results files, so a checkout where it ran still matches results/README.md."""
    assert DEFAULT_RESULTS_DIR.name == report.SCRATCH and DEFAULT_RESULTS_DIR.parent.name == ROOT.name
    committed, scratch = tmp_path / "2026-01-01-h100", tmp_path / report.SCRATCH
    for d in (committed, scratch):
        d.mkdir()
        (d / "sweep-1.jsonl").write_text(json.dumps({"type": "environment", "schema": 1}) + "\n" + json.dumps(
            {"type": "case", "id": "x", "family": "wgmma", "kernel": "wgmma_f16_m64n8k16_f32_SS", "status": "pass"})
            + "\n" + json.dumps({"type": "summary", "cases": 1}) + "\n")
    assert report.sweep_files(tmp_path) == [committed / "sweep-1.jsonl"]
    readme = tmp_path / "README.md"
    readme.write_text("# runs\n")
    assert cli.main(["report", str(tmp_path), "--update", str(readme)]) == 0
    assert "2026-01-01-h100/sweep-1.jsonl" in readme.read_text() and "scratch" not in readme.read_text()


def test_sparse_and_sequence_kernels_are_tabled_by_their_kind_accumulator_and_a_source():
    def row(family, kernel):
        return report.row_key({"family": family, "kernel": kernel, "id": "x"})
    assert row("wgmma_sp", "wgmma_sp_tf32_m64n8k16_f32_RS") == ("wgmma_sp", "tf32", "f32", "RS")
    assert row("wgmma_seq", "wgmmaseq_f8_m64n32k32x4_kloop_add_f32_SS") == ("wgmma_seq", "f8", "f32", "SS")
    assert row("wgmma", "wgmma_s8_m64n8k32_s32_SS") == ("wgmma", "s8", "s32", "SS")


def test_a_results_files_memo_is_kept_by_the_files_bytes_and_the_code(monkeypatch, tmp_path):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    data, code = tmp_path / "sweep.jsonl", tmp_path / "code.py"
    data.write_text("a\n")
    code.write_text("v = 1\n")
    computed = []

    def compute():
        computed.append(data.read_text())
        return [data.read_text(), len(computed)]

    def memo(what="what"):
        return results.memo_by_content(data, what, (code,), compute)

    assert memo() == ["a\n", 1] and memo() == ["a\n", 1] and len(computed) == 1  # kept
    data.write_text("b\n")
    assert memo() == ["b\n", 2]  # other bytes
    code.write_text("v = 2\n")
    assert memo() == ["b\n", 3] and memo() == ["b\n", 3]  # other code
    assert memo("something else") == ["b\n", 4]  # another question of the same file
    for kept in (tmp_path / "cache" / "results-memo").iterdir():
        kept.write_text("{not json")
    assert memo() == ["b\n", 5] and memo() == ["b\n", 5]  # a damaged entry is computed again, and replaced

    def appended_meanwhile():  # a sweep still writing the file: what was read is not what was hashed
        with data.open("a") as fh:
            fh.write("more\n")
        return compute()

    assert results.memo_by_content(data, "appending", (code,), appended_meanwhile) == ["b\nmore\n", 6]
    data.write_text("b\n")  # the bytes hashed before the append: nothing read after it was kept under them
    assert memo("appending") == ["b\n", 7]


def test_a_results_files_memo_keeps_nothing_that_raised_and_needs_no_cache(monkeypatch, tmp_path):
    data = tmp_path / "sweep.jsonl"
    data.write_text("a\n")
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    calls = []

    def fails():
        calls.append(1)
        raise results.ResultsFileError("bad")

    for _ in range(2):
        with pytest.raises(results.ResultsFileError):
            results.memo_by_content(data, "what", (), fails)
    assert len(calls) == 2
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "a-file"))  # no cache directory can be made there
    assert results.memo_by_content(data, "what", (), lambda: 7) == 7
    with pytest.raises(results.ResultsFileError):  # nor can a missing file be hashed: compute() names it
        results.memo_by_content(tmp_path / "missing.jsonl", "what", (), fails)
