"""The CUDA headers every kernel shares (package data, at the bottom layer) and how a template's {{...}} parts are
filled in. Each kernel's own template lives beside the code that fills it: a family's in its subpackage
(harness/families/wgmma/wgmma.cu, ...), the timing bench's in harness/timing/."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def template(name: str, folder: Path = KERNEL_DIR) -> str:
    """The text of template `name` in `folder` (by default this one's shared headers)."""
    return (Path(folder) / name).read_text()


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
