"""Just enough CuTe layout algebra to evaluate the layouts the spec writes in CuTe notation.

    "Swizzle<1,4,3> o ((8,2),(4,4)):((8,64),(1,4))"

A layout maps a coordinate to an offset: each mode's integer coordinate is split colexicographically over
its (possibly nested) shape and dotted with the strides. Row = mode 0, column = mode 1. The swizzle is
returned separately because it acts on byte addresses, not on element offsets.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    shape: tuple
    stride: tuple

    def __call__(self, *coord: int) -> int:
        return sum(_mode(c, sh, st) for c, sh, st in zip(coord, self.shape, self.stride))

    def size(self, mode: int) -> int:
        return _size(self.shape[mode])


def _size(shape) -> int:
    if isinstance(shape, int):
        return shape
    n = 1
    for s in shape:
        n *= _size(s)
    return n


def _mode(coord: int, shape, stride) -> int:
    if isinstance(shape, int):
        return coord * stride
    total = 0
    for sh, st in zip(shape, stride):  # colexicographic: the first sub-mode varies fastest
        n = _size(sh)
        total += _mode(coord % n, sh, st)
        coord //= n
    return total


def parse(text: str) -> tuple[tuple[int, int, int] | None, Layout]:
    """'Swizzle<B,M,S> o shape:stride' -> ((B, M, S) or None, Layout)."""
    swizzle = None
    m = re.match(r"\s*Swizzle\s*<\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*>\s*o\s*(.*)$", text)
    if m:
        swizzle = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        text = m.group(4)
    shape_text, stride_text = text.split(":")
    shape, stride = ast.literal_eval(shape_text.strip()), ast.literal_eval(stride_text.strip())
    return swizzle, Layout(shape, stride)


def apply_swizzle(addr: int, bms: tuple[int, int, int] | None) -> int:
    if not bms or bms[0] == 0:
        return addr
    b, m, s = bms
    mask = ((1 << b) - 1) << (m + s)
    return addr ^ ((addr & mask) >> s)


def spec_addresses(text: str, element_bytes: int):
    """Byte offset of every element [row, col] of a layout the spec writes in CuTe notation (in elements),
    swizzled as bytes."""
    import numpy as np
    swz, lay = parse(text)
    return np.array([[apply_swizzle(lay(r, c) * element_bytes, swz) for c in range(lay.size(1))]
                     for r in range(lay.size(0))], dtype=np.int64)
