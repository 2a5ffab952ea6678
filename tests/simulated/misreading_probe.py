"""Random affine misreadings for the simulated devices: the simulated hardware reads an index map that is a random
invertible GF(2) affine map composed with the true one, so a probe must recover a map nobody listed.

`random_invertible(n, rng)` draws the bit matrix and constant; `compose` applies it to a (row, col) table; the
expected hardware map is then read straight off the planted table at the zero place and the unit places (no
solver involved), and the whole table is checked against it."""
from __future__ import annotations

import numpy as np


def random_invertible(n: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """(matrix [n, n] of 0/1, constant) with the matrix invertible over GF(2); never the identity with constant 0."""
    while True:
        m = rng.integers(0, 2, size=(n, n), dtype=np.int64)
        c = int(rng.integers(0, 1 << n)) if n else 0
        if _rank(m) == n and (c or not np.array_equal(m, np.eye(n, dtype=np.int64))):
            return m, c


def _rank(m: np.ndarray) -> int:
    rows = [int("".join(map(str, r[::-1])), 2) if r.size else 0 for r in m]
    rank = 0
    for bit in range(m.shape[1]):
        piv = next((i for i in range(rank, len(rows)) if rows[i] >> bit & 1), None)
        if piv is None:
            continue
        rows[rank], rows[piv] = rows[piv], rows[rank]
        for i in range(len(rows)):
            if i != rank and rows[i] >> bit & 1:
                rows[i] ^= rows[rank]
        rank += 1
    return rank


def apply(matrix: np.ndarray, const: int, x: np.ndarray) -> np.ndarray:
    """y = matrix x ^ const on the low n bits of x (bit j of y = XOR_i matrix[j, i] x_i)."""
    n = matrix.shape[0]
    x = np.asarray(x, np.int64)
    y = np.full(x.shape, const, np.int64)
    for j in range(n):
        for i in range(n):
            if matrix[j, i]:
                y ^= ((x >> i) & 1) << j
    return y


def compose(row: np.ndarray, col: np.ndarray, row_bits: int, matrix: np.ndarray, const: int):
    """(row, col) of a table after the element-side misreading: (row | col << row_bits) -> matrix . ^ const."""
    y = apply(matrix, const, np.asarray(row, np.int64) | (np.asarray(col, np.int64) << row_bits))
    return y & ((1 << row_bits) - 1), y >> row_bits
