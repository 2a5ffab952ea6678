"""What both simulated devices share: the fault plan, the launch log, and a CTA's fingerprint.

Fault plan: TC_SIM_FAULTS="kernel:cta:mode,..." plants `mode` ('trap', 'hang' or 'misaligned') in a CTA of a
kernel ('*' for any kernel). `cta` is the CTA's index in the launch, or '#' + the CTA's fingerprint
(`fingerprint`: crc32 of its shared-memory image and parameters, independent of where the CTA sits in a
launch), so that a fault follows its case through bisection.
Launch log: with TC_SIM_LOG=path every launch appends one JSON line {"kernel", "pid", "device",
"fingerprints"} (tests count launches per case from it).
"""
from __future__ import annotations

import json
import os
import time
import zlib

import numpy as np

from harness.contract import LaunchInput

_DEVICE = [None]


def use_device(index: int) -> None:
    _DEVICE[0] = index


# params that depend on the launch a CTA is in, not on the CTA (tcgen05 sizes TMEM for the widest case)
LAUNCH_FIELDS = ("image_offset", "read_cols", "alloc_cols")


def fingerprint(inp: LaunchInput, cta: int) -> str:
    """crc32 of a CTA's image, its launch-independent params and its inputs (trailing zero columns
    trimmed): the same in every launch that holds the CTA's case."""
    p = inp.params[cta]
    off, size = int(p["image_offset"]), int(p["image_bytes"])
    h = zlib.crc32(inp.images[off:off + size].tobytes())
    for name in p.dtype.names:
        if name not in LAUNCH_FIELDS:
            h = zlib.crc32(f"{name}={int(p[name])};".encode(), h)
    for name in sorted(inp.inputs):
        a = np.ascontiguousarray(inp.inputs[name][cta])
        if a.ndim >= 1 and a.shape[-1]:
            nz = np.flatnonzero(a.reshape(-1, a.shape[-1]).any(axis=0))
            a = np.ascontiguousarray(a[..., :nz[-1] + 1] if nz.size else a[..., :0])
        h = zlib.crc32(name.encode() + a.tobytes(), h)
    return f"{h:08x}"


def planted(kernel_name: str, inp: LaunchInput) -> dict[int, str]:
    """CTA index -> fault mode, from TC_SIM_FAULTS."""
    spec = os.environ.get("TC_SIM_FAULTS", "").strip()
    out: dict[int, str] = {}
    if not spec:
        return out
    prints = None
    for item in spec.split(","):
        name, cta, mode = item.strip().rsplit(":", 2)
        if name not in ("*", kernel_name):
            continue
        if cta.startswith("#"):
            prints = prints or [fingerprint(inp, i) for i in range(inp.ctas)]
            out.update({i: mode for i, f in enumerate(prints) if f == cta[1:]})
        elif int(cta) < inp.ctas:
            out[int(cta)] = mode
    return out


def fault(modes) -> None:
    """Behave like the hardware for planted faults: any trap or misaligned access poisons the whole launch
    (a sticky error, raised like CuPy would); a hang never returns."""
    modes = set(modes)
    if "trap" in modes:
        raise RuntimeError("CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure (simulated trap)")
    if "misaligned" in modes:
        raise RuntimeError("CUDARuntimeError: cudaErrorMisalignedAddress: misaligned address (simulated)")
    if "hang" in modes:
        while True:
            time.sleep(3600)


def log_launch(kernel_name: str, inp: LaunchInput) -> None:
    path = os.environ.get("TC_SIM_LOG")
    if not path:
        return
    rec = {"kernel": kernel_name, "pid": os.getpid(), "device": _DEVICE[0],
           "fingerprints": [fingerprint(inp, i) for i in range(inp.ctas)]}
    with open(path, "a") as fh:  # one short line per write: appends from several processes stay whole
        fh.write(json.dumps(rec) + "\n")


def read_log(path) -> list[dict]:
    try:
        with open(path) as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []
