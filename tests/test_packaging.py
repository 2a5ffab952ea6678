"""A non-editable install works: the wheel carries the kernels (package data), and the CLI runs from outside
the checkout with the installed package, not the source tree, from inside a venv too (.ci/run runs the tests in one)."""
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _builds_here() -> bool:
    """setuptools >= 64 (pyproject's build requirement) and its bdist_wheel: its own from 70.1, else `wheel`'s."""
    try:
        version = tuple(int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return version >= (70, 1) or (version >= (64,) and importlib.util.find_spec("wheel") is not None)


def test_wheel_installs_and_every_command_runs_outside_the_checkout(tmp_path):
    if importlib.util.find_spec("pip") is None:  # e.g. a uv-made environment on a GPU node; CI must build it
        (pytest.fail if os.environ.get("CI") else pytest.skip)(
            f"pip is not installed in this Python ({sys.executable}): no wheel can be built here")
    wheels = tmp_path / "wheels"
    # with the build backend already here, build with it (no download: GPU nodes are often offline); else pip's
    # isolated build fetches it, as in a fresh CI environment
    offline = ["--no-build-isolation"] if _builds_here() else []
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *offline, "-w",
                            str(wheels), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheels.glob("tensor_core_harness-*.whl")
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    # every CUDA template of the package, the shared headers and those beside their family's or the bench's code
    templates = {p.relative_to(ROOT).as_posix() for p in (ROOT / "harness").rglob("*") if p.suffix in (".cu", ".cuh")}
    assert {"harness/families/wgmma/wgmma.cu", "harness/kernels/smem_window.cuh"} <= templates
    assert templates <= set(names), sorted(templates - set(names))
    # the wheel installed into a folder of its own, which this interpreter reads first (PYTHONPATH), its
    # dependencies as this environment has them. Not a nested venv reaching this environment's packages through a
    # .pth file: cuda.pathfinder looks for the NVIDIA libraries (libnvrtc) in the site-packages folders of the
    # Python that runs (site.getsitepackages()), not in folders a .pth adds, so where this Python is a venv whose
    # base interpreter has no CUDA wheels (a user's venv, CI's) the nested one could not load NVRTC
    installed = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(installed), str(wheel)], check=True, capture_output=True, timeout=600)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(installed)  # before site-packages, where this checkout's editable install may be
    py = sys.executable
    work = tmp_path / "elsewhere"
    work.mkdir()

    def cli(*args):
        return subprocess.run([py, "-m", "harness", *args], cwd=work, capture_output=True, text=True, timeout=600,
                              env=env)

    where = subprocess.run([py, "-c", "import harness; print(harness.__file__)"], cwd=work, capture_output=True,
                           text=True, check=True, env=env).stdout.strip()
    assert where == str(installed / "harness" / "__init__.py") and str(ROOT) not in where
    assert cli("desc", "--arch", "sm_90a", "--start", "1024", "--lbo", "16", "--sbo", "1024", "--swizzle",
               "128B").returncode == 0
    assert cli("idesc", "--kind", "f16", "--atype", "bf16", "--btype", "bf16", "--dtype", "f32", "--m", "128",
               "--n", "256").returncode == 0
    assert cli("layout", "--major", "K", "--swizzle", "128B", "--dtype", "bf16", "--rows", "8", "--cols", "64",
               "--lbo", "16", "--sbo", "1024").returncode == 0
    out = cli("sweep", "--family", "tcgen05", "--kind", "f16", "--cta-group", "1", "--a-src", "SS",
              "--out", str(work / "r.jsonl"))
    # exit 3 (ExitCode.NOTHING_RAN) where no Blackwell GPU is, every case recorded as not run; 0 on a B200/B300
    assert out.returncode in (0, 3), out.stderr[-2000:]
    assert (work / "r.jsonl").exists() and "not run" in out.stdout
