"""The benchmarks that need no GPU run here, so that they do not rot between the GPU sessions that use them."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench(script: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def report_of(script: str, out: Path, *args) -> dict:
    """The family `wgmma`'s entry of the JSON the benchmark wrote, after it exited 0."""
    proc = bench(script, "--out", out, *args, "--family", "wgmma")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(out.read_text())["families"]["wgmma"]


def test_bench_host_measures_the_host_side_of_a_sweep(tmp_path):
    r = report_of("bench_host.py", tmp_path / "bench-host.json", "--kernels", 2)
    assert r["kernels"] == 2 and r["cases"] > 0 and r["prepare_ms_per_case"] > 0 and r["spool_read_ms_per_case"] > 0


def test_bench_host_refuses_an_unknown_family(tmp_path):
    proc = bench("bench_host.py", "--out", tmp_path / "x", "--family", "nope")
    assert proc.returncode != 0 and "unknown family 'nope'" in proc.stderr and not (tmp_path / "x").exists()


def test_bench_nvrtc_times_a_kernel_with_all_its_variants_and_with_one(tmp_path):
    r = report_of("bench_nvrtc.py", tmp_path / "bench-nvrtc.json", "--kernels", 1)
    assert r["kernels"] == 1 and r["s_per_kernel"] > 0 and r["one_variant_s_per_kernel"] > 0
