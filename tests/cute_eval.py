"""Every value of a rank-2 CuTe DSL layout at once, from the shape and stride CuTe gives it.

Calling a DSL layout costs ~50 us a point (a traced call), and the oracles ask for tens of thousands of points a
layout (a 128 x 256 Tensor Memory fragment: 1.6 s), which made CuTe DSL's answers the longest part of CI. A layout
is a function of its shape and stride alone: coordinate (i, j) is split colexicographically over mode 0's and mode
1's (flattened) shapes and the digits weighted by their strides. `offsets` does that with numpy, and then asks the
DSL itself: at every basis coordinate (one digit of one mode at 1 and at its largest value, every other digit 0:
with integer strides these pin every stride the evaluation used), at the four corners, and at SAMPLES points drawn
at random (seeded) over the whole domain; one that differs raises, so an evaluator that misread CuTe's convention,
or a layout whose calls disagree with the shape and stride it reports, cannot stand in for the DSL. A layout whose
strides are not plain integers (none of the oracles' today) is evaluated point by point by the DSL.
"""
from __future__ import annotations

import numpy as np

# random points per layout also asked of the DSL, besides its basis coordinates and corners. The basis coordinates
# pin every stride; the random points look for calls that disagree away from them, and a disagreement at one point
# in ten escapes 64 of them with a chance of 0.1%. With 256, these calls were three quarters of the DSL's time: the
# simulated wgmma devices' 86 layouts took 8.4 CPU seconds on the CI-sized machine, 2.3 s with 64 (2026-11-27)
SAMPLES = 64


def flatten(t) -> list:
    """A (nested) CuTe shape or stride tuple as the flat list of its integers, innermost first."""
    return [x for e in t for x in flatten(e)] if isinstance(t, tuple) else [t]


def basis_coordinates(shape, extent: int) -> list[int]:
    """The coordinates of one mode below `extent` at which exactly one flattened digit is non-zero: 1 or its
    largest value (the last digit: up to what `extent` leaves)."""
    out, step = [], 1
    for n, s in enumerate(flatten(shape)):
        top = max(1, (extent - 1) // step) if n == len(flatten(shape)) - 1 else s - 1
        out += [step * v for v in {1, top} if 0 < step * v < extent]
        step *= s
    return out


def _mode_offsets(shape, stride, extent: int) -> np.ndarray | None:
    """Offsets of coordinates 0 .. extent-1 of one mode (split colexicographically over its shape), or None if
    a shape or stride is not an integer."""
    shapes, strides = flatten(shape), flatten(stride)
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
    """[rows, cols] of int(layout((i, j))), checked against the DSL at its basis coordinates, its corners and
    SAMPLES random points."""
    shape, stride = layout.shape, layout.stride
    per_mode = None
    if isinstance(shape, tuple) and len(shape) == 2:
        m0 = _mode_offsets(shape[0], stride[0], rows)
        m1 = _mode_offsets(shape[1], stride[1], cols)
        if m0 is not None and m1 is not None:
            per_mode = m0[:, None] + m1[None, :]
    if per_mode is None:
        return np.array([[int(layout((i, j))) for j in range(cols)] for i in range(rows)], dtype=np.int64)
    rng = np.random.default_rng(rows * 100003 + cols)
    points = {(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1)}
    points |= {(i, 0) for i in basis_coordinates(shape[0], rows)} | {(0, j) for j in basis_coordinates(shape[1], cols)}
    points |= set(zip(rng.integers(0, rows, SAMPLES).tolist(), rng.integers(0, cols, SAMPLES).tolist()))
    for i, j in sorted(points):
        if int(layout((i, j))) != int(per_mode[i, j]):
            raise AssertionError(f"evaluating {layout} from its shape and stride gives {int(per_mode[i, j])} at "
                                 f"({i}, {j}); the DSL gives {int(layout((i, j)))}")
    return per_mode
