"""Every value of a rank-2 CuTe DSL layout at once, from the shape and stride CuTe gives it.

Calling a DSL layout costs ~50 us a point (a traced call), and the oracles ask for tens of thousands of points a
layout (a 128 x 256 Tensor Memory fragment: 1.6 s), which made CuTe DSL's answers the longest part of CI. A layout
is a function of its shape and stride alone: coordinate (i, j) is split colexicographically over mode 0's and mode
1's (flattened) shapes and the digits weighted by their strides. `offsets` does that with numpy, and then asks the
DSL itself at `SAMPLES` points spread over the whole domain (corners included); one that differs raises, so an
evaluator that misread CuTe's convention cannot stand in for it. A layout whose strides are not plain integers
(none of the oracles' today) is evaluated point by point by the DSL.
"""
from __future__ import annotations

import numpy as np

SAMPLES = 257  # points per layout also asked of the DSL: every corner, then spread over the domain


def _flat(t) -> list:
    return [x for e in t for x in _flat(e)] if isinstance(t, tuple) else [t]


def _mode_offsets(shape, stride, extent: int) -> np.ndarray | None:
    """Offsets of coordinates 0 .. extent-1 of one mode (split colexicographically over its shape), or None if
    a shape or stride is not an integer."""
    shapes, strides = _flat(shape), _flat(stride)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in shapes + strides):
        return None
    c = np.arange(extent, dtype=np.int64)
    out = np.zeros(extent, dtype=np.int64)
    for n, (s, d) in enumerate(zip(shapes, strides)):
        last = n == len(shapes) - 1  # as CuTe's idx2crd: the last digit takes what is left
        out += (c if last else c % s) * d
        c = c // s
    return out


def offsets(layout, rows: int, cols: int) -> np.ndarray:
    """[rows, cols] of int(layout((i, j))), checked against the DSL at SAMPLES points."""
    shape, stride = layout.shape, layout.stride
    per_mode = None
    if isinstance(shape, tuple) and len(shape) == 2:
        m0 = _mode_offsets(shape[0], stride[0], rows)
        m1 = _mode_offsets(shape[1], stride[1], cols)
        if m0 is not None and m1 is not None:
            per_mode = m0[:, None] + m1[None, :]
    if per_mode is None:
        return np.array([[int(layout((i, j))) for j in range(cols)] for i in range(rows)], dtype=np.int64)
    flat = np.unique(np.concatenate([np.array([0, cols - 1, (rows - 1) * cols, rows * cols - 1]),
                                     np.linspace(0, rows * cols - 1, SAMPLES, dtype=np.int64)]))
    for p in flat:
        i, j = divmod(int(p), cols)
        if int(layout((i, j))) != int(per_mode[i, j]):
            raise AssertionError(f"evaluating {layout} from its shape and stride gives {int(per_mode[i, j])} at "
                                 f"({i}, {j}); the DSL gives {int(layout((i, j)))}")
    return per_mode
