"""What GPU (if any) is present, and which arch's cases it can run.

Start-up tells three states apart (`state()`):
  * no GPU: CUDA says there is no device or no driver, and nvidia-smi lists none (a CPU machine, CI):
    every case is recorded not-run with the reason;
  * a usable GPU (of some compute capability: a case needs a GPU that runs its kernel's arch, harness.enums.runs_on,
    else it is not-run with the reason);
  * a GPU present but unusable: CUDA fails with anything but "no device / no driver" (getDeviceCount or
    getDeviceProperties raise), or nvidia-smi lists GPUs while CUDA finds none. The sweep then records every
    case as `error` with the message and exits 4: an unusable GPU must not look like "nothing to run here".
Nothing here raises: callers get None, a count of 0 or a one-line reason.
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache

from harness.enums import Arch, runs_on

# CUDA runtime errors that mean "no GPU here" rather than "a GPU that does not work"
NO_DEVICE_ERRORS = {100: "cudaErrorNoDevice", 35: "cudaErrorInsufficientDriver"}


def _runtime():
    """CuPy's CUDA runtime module (cupy.cuda.runtime is this one), without the rest of CuPy: `import cupy` was 0.2 s
    of a warm sweep's start-up on an H100 node, in a process that launches nothing (bench13 in
    docs/performance.md). The one place this module touches CUDA; tests replace it."""
    from cupy_backends.cuda.api import runtime
    return runtime


# Modules through which a process calls CUDA: CuPy (this module's _runtime, the GPU workers' launches) and
# cuda-python's driver and runtime bindings (NVRTC's bindings make no CUDA call).
CUDA_MODULES = ("cupy", "cupy_backends", "cuda.bindings.driver", "cuda.bindings.runtime", "cuda.core")


def cuda_untouched() -> bool:
    """No CUDA call can have been made in this process (none of CUDA_MODULES imported): a process forked now may
    start CUDA of its own. Once CUDA is initialised, a forked child must not use it."""
    return not any(name == m or name.startswith(m + ".") for name in sys.modules for m in CUDA_MODULES)


def _nvidia_smi_gpus() -> list[str]:
    """The GPUs nvidia-smi lists ('GPU 0: NVIDIA H100 ...'), [] when it is absent or lists none."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except Exception:
        return []
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip().startswith("GPU ")] \
        if out.returncode == 0 else []


def _is_no_device(e: BaseException) -> bool:
    status = getattr(e, "status", None)
    return status in NO_DEVICE_ERRORS or any(name in str(e) for name in NO_DEVICE_ERRORS.values())


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip()


@dataclass(frozen=True)
class GpuState:
    kind: str  # "none", "usable" or "unusable"
    count: int = 0  # devices CUDA lists (0 unless usable)
    infos: tuple = ()  # device_info of each, when usable
    reason: str | None = None  # why none / why unusable

    @property
    def unusable(self) -> bool:
        return self.kind == "unusable"


def _driver():
    """cuda.bindings' driver API module: where the GPU's UUID is read whole (`uuid_of`); tests replace it."""
    from cuda.bindings import driver
    return driver


def uuid_text(raw: bytes) -> str:
    """A GPU's 16 UUID bytes as nvidia-smi and DCGM write them: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx."""
    if len(raw) != 16:
        raise ValueError(f"a GPU UUID is 16 bytes, not {len(raw)}")
    h = bytes(raw).hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid_of(index: int, props: dict) -> str:
    """The UUID of CUDA device `index`, whole (uuid_text). Read from the driver API (cuDeviceGetUuid_v2, else
    cuDeviceGetUuid: 16 bytes, NULs and all); CuPy's getDeviceProperties hands the same field over as a C string,
    cut at its first NUL byte ("GPU-c460" was a committed record's whole UUID), so it is used only where it has all
    16 bytes. '' where neither has: an unknown UUID, never a wrong one."""
    try:
        drv = _driver()
        (err,) = drv.cuInit(0)
        if int(err) == 0:
            err, dev = drv.cuDeviceGet(index)
            if int(err) == 0:
                get = getattr(drv, "cuDeviceGetUuid_v2", None) or drv.cuDeviceGetUuid
                err, uu = get(dev)
                raw = bytes(uu.bytes) if int(err) == 0 else b""
                if len(raw) == 16:
                    return uuid_text(raw)
    except Exception:  # noqa: BLE001 (no cuda.bindings, no driver: CuPy's copy, where whole)
        pass
    raw = props.get("uuid", b"")
    if isinstance(raw, (bytes, bytearray)) and len(raw) == 16:
        return uuid_text(bytes(raw))
    return ""


def _info(rt, index: int) -> dict:
    props = rt.getDeviceProperties(index)
    cc = (props["major"], props["minor"])
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    uuid = uuid_of(index, props)
    # "arch" names the GPU in words (doctor, bench): the first of the vocabulary's archs that runs on it, or None;
    # which kernels it runs is asked of its compute capability (runs)
    return {"index": index, "name": name, "compute_capability": f"{cc[0]}.{cc[1]}",
            "arch": next((str(a) for a in Arch if a.runs_on(f"{cc[0]}.{cc[1]}")), None),
            "uuid": uuid, "multiprocessors": props["multiProcessorCount"],
            "driver": rt.driverGetVersion(), "runtime": rt.runtimeGetVersion()}


@lru_cache(maxsize=None)
def state() -> GpuState:
    """Which of the three start-up states this machine is in (asked once per process)."""
    try:
        rt = _runtime()
    except Exception as e:  # no CuPy (or no CUDA build of it): a GPU only if nvidia-smi says one is here. (A CuPy
        # whose runtime module loads but whose rest is broken fails in the GPU workers: every launch is an `error`)
        listed = _nvidia_smi_gpus()
        if listed:
            return GpuState("unusable", reason=f"nvidia-smi lists {len(listed)} GPU(s) ({listed[0]}) but CuPy's "
                                               f"CUDA runtime cannot be imported: {_describe(e)}")
        return GpuState("none", reason=f"no CUDA device or driver (CuPy unavailable: {_describe(e)})")
    try:
        n = rt.getDeviceCount()
    except Exception as e:
        if not _is_no_device(e):
            return GpuState("unusable", reason=f"cudaGetDeviceCount failed: {_describe(e)}")
        listed = _nvidia_smi_gpus()
        if listed:
            return GpuState("unusable", reason=f"nvidia-smi lists {len(listed)} GPU(s) ({listed[0]}) but CUDA "
                                               f"finds none: {_describe(e)}")
        return GpuState("none", reason=f"no CUDA device or driver ({_describe(e)})")
    if n == 0:
        listed = _nvidia_smi_gpus()
        if listed:
            return GpuState("unusable", reason=f"nvidia-smi lists {len(listed)} GPU(s) ({listed[0]}) but CUDA "
                                               f"finds none")
        return GpuState("none", reason="no CUDA device")
    infos = []
    for i in range(n):
        try:
            infos.append(_info(rt, i))
        except Exception as e:
            return GpuState("unusable", reason=f"cudaGetDeviceProperties({i}) failed: {_describe(e)}")
    return GpuState("usable", n, tuple(infos))


def reset() -> None:
    """Forget what was found (tests that stand in for CUDA call this)."""
    state.cache_clear()
    device_count.cache_clear()
    device_info.cache_clear()


def unusable() -> str | None:
    """Why the GPU that is here cannot be used; None when there is none or it works."""
    st = state()
    return st.reason if st.unusable else None


@lru_cache(maxsize=None)
def device_count() -> int:
    """Usable devices; 0 when there is none, and when the one there is is unusable (see `unusable`)."""
    return state().count


@lru_cache(maxsize=None)
def device_info(index: int = 0) -> dict | None:
    st = state()
    return dict(st.infos[index]) if 0 <= index < st.count else None


def runs(index: int, arch, ptx: bool = False) -> bool:
    """Whether GPU `index` (is here and) runs a kernel built for `arch`: as a cubin, or with `ptx` as PTX the
    driver's JIT compiles (harness.enums.runs_on, of its compute capability)."""
    info = device_info(index)
    return info is not None and runs_on(arch, info["compute_capability"], ptx)


def skip_reason(*archs: str, ptx: bool = False) -> str | None:
    """None when a GPU that runs one of `archs` is here, else why their cases cannot run."""
    if any(runs(i, a, ptx) for i in range(device_count()) for a in archs):
        return None
    info = device_info(0) if device_count() else None
    want = " or ".join(map(str, archs))
    if info is None:
        return f"needs a {want} GPU; none is visible (no CUDA device or driver)"
    return f"needs a {want} GPU; this is {info['name']} (compute capability {info['compute_capability']})"


class GpuSelectionError(ValueError):
    pass


GPUS_HELP = ("'all' (every visible GPU), device indices such as 0 or 0,1, or count:N (the first N visible); "
             "indices count within CUDA_VISIBLE_DEVICES")


def parse_gpus(spec: str) -> tuple[str, object]:
    """`--gpus` as ('all', None), ('count', N) or ('indices', [i, ...]); GpuSelectionError for anything else.
    A bare number is a device index (`--gpus 2` is GPU 2, never "two GPUs"): a count is spelled count:N."""
    text = spec.strip()
    if text == "all":
        return "all", None
    if text.startswith("count:"):
        n = text[len("count:"):].strip()
        if not n.isdigit() or int(n) < 1:
            raise GpuSelectionError(f"--gpus {spec!r}: count:N needs a whole number N of at least 1, e.g. count:2")
        return "count", int(n)
    parts = [x.strip() for x in text.split(",")]
    if not text or not all(x.isdigit() for x in parts):
        raise GpuSelectionError(f"--gpus {spec!r}: use 'all', device indices such as 0 or 0,1, or count:N")
    idx = [int(x) for x in parts]
    if len(set(idx)) != len(idx):
        raise GpuSelectionError(f"--gpus {spec}: a GPU is listed twice")
    return "indices", idx


def visible_devices() -> str | None:
    """CUDA_VISIBLE_DEVICES as set for this process (None when unset). CUDA applies it before the harness sees a
    device, so every index here is a position in that list; the environment record keeps it."""
    import os
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def chosen(spec: str) -> list[int]:
    """Every device index `--gpus` names, whatever its arch; GpuSelectionError for a GPU that is not there."""
    n = device_count()
    how, val = parse_gpus(spec)
    where = f" (CUDA_VISIBLE_DEVICES={visible_devices()})" if visible_devices() is not None else ""
    if how == "all":
        return list(range(n))
    if how == "count":
        if val > n:
            raise GpuSelectionError(f"--gpus {spec}: only {n} GPU(s) visible{where}")
        return list(range(val))
    bad = [i for i in val if not 0 <= i < n]
    if bad:
        raise GpuSelectionError(f"--gpus {spec}: no GPU {bad[0]} ({n} visible{where}, numbered 0..{n - 1})"
                                if n else f"--gpus {spec}: no GPU {bad[0]} (none visible{where})")
    return val


def select(spec: str, arch: str, ptx: bool = False) -> list[int]:
    """Device indices for `--gpus` that run one arch (`runs`): 'all' (every visible GPU that runs it), indices '2'
    or '0,2', or 'count:N' (the first N visible). Indices are CUDA's, after CUDA_VISIBLE_DEVICES (under Slurm, the
    job's GPUs)."""
    return [i for i in chosen(spec) if runs(i, arch, ptx)]
