"""What GPU (if any) is present, and which arch's cases it can run.

Nothing here raises when there is no GPU or no driver: callers get None and a one-line reason.
"""
from __future__ import annotations

from functools import lru_cache

ARCH_OF_CC = {(9, 0): "sm_90a", (10, 0): "sm_100a", (10, 3): "sm_103a"}


@lru_cache(maxsize=None)
def device_info() -> dict | None:
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
        props = cp.cuda.runtime.getDeviceProperties(0)
        cc = (props["major"], props["minor"])
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        uuid = props.get("uuid", b"")
        uuid = "GPU-" + bytes(uuid).hex() if isinstance(uuid, (bytes, bytearray)) and uuid else ""
        return {"name": name, "compute_capability": f"{cc[0]}.{cc[1]}", "arch": ARCH_OF_CC.get(cc),
                "uuid": uuid, "multiprocessors": props["multiProcessorCount"],
                "driver": cp.cuda.runtime.driverGetVersion(), "runtime": cp.cuda.runtime.runtimeGetVersion()}
    except Exception:  # no driver, no device, no CuPy build for it: all mean "no GPU here"
        return None


def present_arch() -> str | None:
    info = device_info()
    return info["arch"] if info else None


def skip_reason(arch: str) -> str | None:
    """None when a GPU of `arch` is here, else why its cases cannot run."""
    info = device_info()
    if info is None:
        return f"needs a {arch} GPU; none is visible (no CUDA device or driver)"
    if info["arch"] != arch:
        return f"needs a {arch} GPU; this is {info['name']} (compute capability {info['compute_capability']})"
    return None
