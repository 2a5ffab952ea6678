"""What GPU (if any) is present, and which arch's cases it can run.

Nothing here raises when there is no GPU or no driver: callers get None and a one-line reason.
"""
from __future__ import annotations

from functools import lru_cache

ARCH_OF_CC = {(9, 0): "sm_90a", (10, 0): "sm_100a", (10, 3): "sm_103a"}


@lru_cache(maxsize=None)
def device_count() -> int:
    try:
        import cupy as cp
        return cp.cuda.runtime.getDeviceCount()
    except Exception:  # no driver, no device, no CuPy build for it: all mean "no GPU here"
        return 0


@lru_cache(maxsize=None)
def device_info(index: int = 0) -> dict | None:
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() <= index:
            return None
        props = cp.cuda.runtime.getDeviceProperties(index)
        cc = (props["major"], props["minor"])
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        uuid = props.get("uuid", b"")
        uuid = "GPU-" + bytes(uuid).hex() if isinstance(uuid, (bytes, bytearray)) and uuid else ""
        return {"index": index, "name": name, "compute_capability": f"{cc[0]}.{cc[1]}", "arch": ARCH_OF_CC.get(cc),
                "uuid": uuid, "multiprocessors": props["multiProcessorCount"],
                "driver": cp.cuda.runtime.driverGetVersion(), "runtime": cp.cuda.runtime.runtimeGetVersion()}
    except Exception:  # no driver, no device, no CuPy build for it: all mean "no GPU here"
        return None


def skip_reason(*archs: str) -> str | None:
    """None when a GPU of one of `archs` is here, else why their cases cannot run."""
    infos = [device_info(i) for i in range(device_count())]
    if any(i and i["arch"] in archs for i in infos):
        return None
    info = infos[0] if infos else None
    want = " or ".join(map(str, archs))
    if info is None:
        return f"needs a {want} GPU; none is visible (no CUDA device or driver)"
    return f"needs a {want} GPU; this is {info['name']} (compute capability {info['compute_capability']})"


class GpuSelectionError(ValueError):
    pass


def select(spec: str, arch: str) -> list[int]:
    """Device indices for `--gpus`: 'all' (every visible GPU of the arch), a count 'N' (the first N), or a
    comma list '0,2'. Indices are CUDA's, after CUDA_VISIBLE_DEVICES (so under Slurm, the job's GPUs)."""
    n = device_count()
    spec = spec.strip()
    if spec == "all":
        idx = list(range(n))
    elif spec.isdigit():
        if int(spec) < 1:
            raise GpuSelectionError("--gpus: give at least one GPU")
        if int(spec) > n:
            raise GpuSelectionError(f"--gpus {spec}: only {n} GPU(s) visible")
        idx = list(range(int(spec)))
    else:
        try:
            idx = [int(x) for x in spec.split(",")]
        except ValueError:
            raise GpuSelectionError(f"--gpus {spec!r}: use 'all', a count, or a comma list such as 0,1") from None
        bad = [i for i in idx if not 0 <= i < n]
        if bad:
            raise GpuSelectionError(f"--gpus: no GPU {bad[0]} ({n} visible)")
        if len(set(idx)) != len(idx):
            raise GpuSelectionError("--gpus: a GPU is listed twice")
    return [i for i in idx if (device_info(i) or {}).get("arch") == arch]
