"""results/README.md's tables are generated from the committed results files; this fails when they drift apart
(regenerate with `python -m harness report results/ --update results/README.md`)."""
import json
from pathlib import Path

from harness import cli
from harness.records import report

ROOT = Path(__file__).resolve().parent.parent / "results"


def test_results_readme_tables_match_the_committed_results_files():
    assert report.check(ROOT / "README.md", ROOT), \
        "results/README.md drifted: python -m harness report results/ --update results/README.md"


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


def test_sparse_and_sequence_kernels_are_tabled_by_their_kind_accumulator_and_a_source():
    def row(family, kernel):
        return report.row_key({"family": family, "kernel": kernel, "id": "x"})
    assert row("wgmma_sp", "wgmma_sp_tf32_m64n8k16_f32_RS") == ("wgmma_sp", "tf32", "f32", "RS")
    assert row("wgmma_seq", "wgmmaseq_f8_m64n32k32x4_kloop_add_f32_SS") == ("wgmma_seq", "f8", "f32", "SS")
    assert row("wgmma", "wgmma_s8_m64n8k32_s32_SS") == ("wgmma", "s8", "s32", "SS")
