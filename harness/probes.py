"""Targeted experiments on what the spec leaves open, built from ordinary cases.

`base_offset_work()`: every matrix base offset 0..7 with tiles starting at each 128-byte row of a swizzle
pattern (on and off its boundary), for each swizzle mode and major-ness of B. Each case's image is written
with the model (the row phase taken from address bits 7.. is shifted back by the base offset), so a case passes
exactly when the hardware's base offset does what the model says for that (start, base offset) pair. The spec
itself only states the value for a pattern that starts at `start` (base offset = (start >> 7) & 7).
"""
from __future__ import annotations

from . import layouts, wgmma
from .cases import Case, Operand, operand_scenarios, _operand

PROBES = ("base-offset",)


def base_offset_work(n: int = 64) -> list[tuple[wgmma.KernelKey, list[Case]]]:
    key = wgmma.KernelKey("f16", n, "f32", "SS")
    vs = wgmma.variants(key)
    a = _operand(*next(s for s in operand_scenarios("f16", 64, 16, ("K",)) if s[1].swizzle == "none" and not s[0]))
    out = []
    for major in ("K", "MN"):
        vi = next(i for i, v in enumerate(vs) if v.trans_b == (major == "MN") and not v.trans_a
                  and v.scale_a == v.scale_b == 1 and v.atype == "f16")
        for sw in ("32B", "64B", "128B"):
            lbo, sbo = layouts.packed_strides(major, sw, "f16", n, 16)
            for start in range(0, layouts.PATTERN_BYTES[sw], 128):
                for bo in range(8):
                    lay = layouts.SmemLayout(major, sw, "f16", n, 16, lbo, sbo, start, bo)
                    b = Operand(f"+start{start}bo{bo}", lay, lay)
                    out.append(Case(key, vi, a, b, 0, "exact"))
    return [(key, out)]


def work(name: str):
    if name == "base-offset":
        return base_offset_work()
    raise ValueError(f"unknown probe {name!r}; one of {', '.join(PROBES)}")
