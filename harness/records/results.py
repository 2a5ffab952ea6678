"""Results files: JSON Lines, one record per line, appended as each batch finishes.

Line 1 is {"type": "environment", ...}; then {"type": "case", ...} per case; a run that finishes writes a
last {"type": "summary", ...}. A run killed part way keeps every case it finished.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
import subprocess
from pathlib import Path

SCHEMA = 1


def environment(devices: list[int] | None = None, seed_note: str = "per-case seeds: crc32 of the case id") -> dict:
    """What a run ran on; `devices` are the GPU indices the run used (default: GPU 0)."""
    from harness import __version__
    from harness.run import compile as nvrtc, gpu
    env = {"type": "environment", "schema": SCHEMA, "harness": __version__,
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "host": socket.gethostname(), "python": platform.python_version(), "seed": seed_note}
    for mod in ("numpy", "ml_dtypes", "cupy"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception as e:  # record why rather than fail the run
            env[mod] = f"unavailable ({type(e).__name__})"
    try:
        env["nvrtc"] = nvrtc.nvrtc_version()
    except Exception as e:
        env["nvrtc"] = f"unavailable ({type(e).__name__})"
    env["ptxas"] = _ptxas_version()
    devices = devices or [0]
    info = gpu.device_info(devices[0])
    if info:
        env["gpu"] = info["name"]
        env["gpu_uuid"] = info["uuid"]
        env["compute_capability"] = info["compute_capability"]
        env["cuda_driver_api"] = info["driver"]
        env["cuda_runtime"] = info["runtime"]
        env["driver"] = _nvidia_smi_driver()
        env["gpus"] = [{k: d[k] for k in ("index", "name", "uuid", "compute_capability")}
                       for d in map(gpu.device_info, devices) if d]
    else:
        env["gpu"] = None
    return env


def _ptxas_version() -> str | None:
    """ptxas on PATH, where present (NVRTC carries its own; this is the toolkit's)."""
    try:
        out = subprocess.run(["ptxas", "--version"], capture_output=True, text=True, timeout=20)
        lines = [ln for ln in out.stdout.splitlines() if "release" in ln]
        return lines[-1].strip() if lines else None
    except Exception:
        return None


def _nvidia_smi_driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except Exception:
        return None


class ResultsWriter:
    def __init__(self, path: Path, env: dict | None = None, resume: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists():
            self._fh = open(self.path, "a")
        else:
            self._fh = open(self.path, "w")
            self.write(env or environment())

    def write(self, record: dict) -> None:
        self._fh.write(json.dumps(record, sort_keys=False) + "\n")

    def write_cases(self, records) -> None:
        for r in records:
            self.write({"type": "case", **r})
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self, summary: dict | None = None) -> None:
        if summary is not None:
            self.write({"type": "summary", **summary})
        self._fh.close()


class ResultsFileError(ValueError):
    pass


def load(path: Path) -> tuple[dict, dict[str, dict], dict | None]:
    """(environment, {case id: record}, summary or None); a clear error if it is not a results file."""
    path = Path(path)
    if not path.is_file():
        raise ResultsFileError(f"{path}: no such results file")
    env, cases, summary = None, {}, None
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise ResultsFileError(f"{path}:{n}: not JSON Lines (is this a harness results file?)") from None
            t = rec.get("type")
            if n == 1 and t != "environment":
                raise ResultsFileError(f"{path}: first line is not an environment record")
            if t == "environment":
                env = rec
            elif t == "case":
                cases[rec["id"]] = rec
            elif t == "summary":
                summary = rec
            elif t == "diagnosis" and rec.get("id") in cases:
                cases[rec["id"]].setdefault("diagnosis", []).append(rec)
    if env is None:
        raise ResultsFileError(f"{path}: empty")
    if env.get("schema") != SCHEMA:
        raise ResultsFileError(f"{path}: schema {env.get('schema')} is not this harness's schema {SCHEMA}")
    return env, cases, summary
