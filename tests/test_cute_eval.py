"""tests/cute_eval.py: a layout evaluated from its shape and stride equals the layout called point by point, and
one whose calls disagree with its shape and stride is refused (the CuTe oracles lean on both)."""
import numpy as np
import pytest

import cute_eval


def crd(idx: int, shape):
    """CuTe's idx2crd, written out recursively: colexicographic, the last mode takes what is left."""
    if not isinstance(shape, tuple):
        return idx
    out = []
    for n, s in enumerate(shape):
        size = int(np.prod(cute_eval.flatten(s)))
        out.append(crd(idx if n == len(shape) - 1 else idx % size, s))
        idx //= size
    return tuple(out)


def inner(c, stride) -> int:
    return sum(inner(x, d) for x, d in zip(c, stride)) if isinstance(c, tuple) else c * stride


class Layout:
    """A rank-2 layout called the way the DSL's is: layout((i, j))."""

    def __init__(self, shape, stride, lie_at=None):
        self.shape, self.stride, self.lie_at, self.calls = shape, stride, lie_at, 0

    def __call__(self, ij):
        self.calls += 1
        i, j = ij
        v = inner(crd(i, self.shape[0]), self.stride[0]) + inner(crd(j, self.shape[1]), self.stride[1])
        return v + 1 if ij == self.lie_at else v

    def __str__(self):
        return f"{self.shape}:{self.stride}"


LAYOUTS = [((128, 256), (65536, 1)), (((16, 4), 64), ((65536, 2097152), 1)),
           (((4, 8, 4), (2, 2, 32)), ((128, 1, 16), (64, 8, 512))), ((8, (2, 3)), (3, (24, 1)))]


@pytest.mark.parametrize("shape,stride", LAYOUTS, ids=str)
def test_offsets_are_the_layouts_own_values_at_every_point(shape, stride):
    lay = Layout(shape, stride)
    rows, cols = (int(np.prod(cute_eval.flatten(s))) for s in shape)
    got = cute_eval.offsets(lay, rows, cols)
    want = np.array([[lay((i, j)) for j in range(cols)] for i in range(rows)])
    assert np.array_equal(got, want)


def test_a_layout_whose_calls_disagree_at_a_sampled_point_is_refused():
    lay = Layout(((4, 8, 4), (2, 2, 32)), ((128, 1, 16), (64, 8, 512)), lie_at=(127, 127))  # the last corner
    with pytest.raises(AssertionError, match=r"at \(127, 127\)"):
        cute_eval.offsets(lay, 128, 128)


def test_a_layout_whose_calls_use_other_strides_than_it_reports_is_refused():
    """Two column strides swapped between what the layout reports and what its calls compute: wrong at half the
    points, none of them a corner; the basis coordinates find it."""
    class Swapped(Layout):
        def __call__(self, ij):
            self.calls += 1
            i, j = ij
            return inner(crd(i, self.shape[0]), self.stride[0]) + inner(crd(j, self.shape[1]), (8, 64, 512))
    lay = Swapped(((4, 8, 4), (8, 8, 2)), ((128, 1, 16), (64, 8, 512)))
    with pytest.raises(AssertionError, match="the DSL gives"):
        cute_eval.offsets(lay, 128, 128)


def test_strides_that_are_not_integers_are_evaluated_point_by_point():
    class Called:  # a stride the evaluator does not know (as CuTe's scaled basis): only calls answer
        shape, stride = (4, 3), (object(), 4)

        def __call__(self, ij):
            return ij[0] * 7 + ij[1]
    assert cute_eval.offsets(Called(), 4, 3).tolist() == [[i * 7 + j for j in range(3)] for i in range(4)]


@pytest.mark.parametrize("corner", [(0, 0), (0, 63), (63, 0), (63, 63)])
def test_every_corner_is_asked_of_the_layout(corner):
    lay = Layout((64, 64), (1, 64), lie_at=corner)
    with pytest.raises(AssertionError, match=rf"at \({corner[0]}, {corner[1]}\)"):
        cute_eval.offsets(lay, 64, 64)
    assert lay.calls < 64 * 64 // 4  # a sample, not every point
