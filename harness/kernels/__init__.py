"""The CUDA templates (package data) and how their {{...}} parts are filled in."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def template(name: str) -> str:
    return (KERNEL_DIR / name).read_text()


def fill(text: str, **parts: str) -> str:
    parts.setdefault("SMEM_WINDOW", template("smem_window.cuh"))
    parts.setdefault("DEVICE_HELPERS", template("device_helpers.cuh"))
    for k, v in parts.items():
        text = text.replace("{{" + k + "}}", str(v))
    if "{{" in text:
        raise ValueError(f"unfilled template part in kernel source: {text[text.index('{{'):][:40]}")
    return text


def smoke_source() -> str:
    return template("smoke.cu")
