"""CUTLASS's C++ headers as an oracle: build a small host program against them with g++, run it, read JSON.

The `nvidia-cutlass` wheel ships CUTLASS's headers (cutlass_library/source/include); with the CUDA toolkit's
`include` and `include/cccl` folders they compile for the host, so NVIDIA's own descriptor builders and CuTe
layouts can print the values the project's models must reproduce. A program is built once per source text and
kept in the compile cache; `skip_reason()` says in one line why the oracle cannot run on this machine.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).parent


@lru_cache(maxsize=None)
def include_dirs() -> tuple[str, ...] | None:
    try:
        import cutlass_library
    except ImportError:
        return None
    cutlass_inc = Path(cutlass_library.__file__).parent / "source" / "include"
    cuda = None
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda", "/usr/local/cuda-13.0"):
        if root and (Path(root) / "include" / "cuda_runtime_api.h").exists():
            cuda = Path(root)
            break
    if cuda is None:  # the CUDA runtime headers of the nvidia-cuda-runtime wheel (cuda-toolkit[cudart]) do too
        try:
            import nvidia.cuda_runtime as rt
            base = Path(list(rt.__path__)[0])
            if (base / "include" / "cuda_runtime_api.h").exists():
                cuda = base
        except ImportError:
            pass
    if not (cutlass_inc / "cute").is_dir() or cuda is None:
        return None
    dirs = [str(cutlass_inc), str(cuda / "include")]
    if (cuda / "include" / "cccl").is_dir():
        dirs.append(str(cuda / "include" / "cccl"))
    return tuple(dirs)


def skip_reason() -> str | None:
    if shutil.which("g++") is None:
        return "no host C++ compiler (g++) to build the CUTLASS oracle"
    if include_dirs() is None:
        return "CUTLASS headers (nvidia-cutlass wheel) or CUDA toolkit headers not found"
    return None


def cache_dir() -> Path:
    root = Path(os.environ.get("TC_HARNESS_CACHE", Path.home() / ".cache" / "tc-harness"))
    d = root / "cutlass-oracle"
    d.mkdir(parents=True, exist_ok=True)
    return d


def util_include_dir() -> str:
    """CUTLASS's tools/util/include (the host reference GEMMs), shipped next to include/ in the wheel."""
    return str(Path(include_dirs()[0]).parent / "tools" / "util" / "include")


# Programs built against CUTLASS's host utilities (tools/util/include): cutlass/numeric_conversion.h names device
# intrinsics (__dp4a, __byte_perm, __hfma2) in templates a host program never instantiates; -fpermissive lets g++
# accept those unresolved names instead of refusing the header.
UTIL_PROGRAMS = {"cutlass_blockscaled_gemm.cpp"}


def build(source_name: str) -> Path:
    """Compile tests/oracles/<source_name> (cached by source text and include folders); returns the binary."""
    src = (HERE / source_name).read_text()
    incs = include_dirs()
    flags = ["-fpermissive"] if source_name in UTIL_PROGRAMS else []
    if flags:
        incs = (*incs, util_include_dir())
    key = hashlib.sha256((src + "\0" + "\0".join(incs)).encode()).hexdigest()[:16]
    exe = cache_dir() / f"{Path(source_name).stem}-{key}"
    if not exe.exists():
        tmp = exe.with_name(f"{exe.name}.tmp{os.getpid()}")  # pytest -n: two workers may build it at once
        cmd = ["g++", "-std=c++17", "-O1", "-w", *flags, *[f"-I{d}" for d in incs], str(HERE / source_name), "-o",
               str(tmp)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"building {source_name} against CUTLASS failed:\n{r.stderr[-4000:]}")
        tmp.replace(exe)
    return exe


def run_json(source_name: str, *args: str):
    """Build and run a program; its stdout is one JSON document."""
    exe = build(source_name)
    r = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{source_name} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout)
