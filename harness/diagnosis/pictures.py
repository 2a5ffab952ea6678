"""Pictures of address maps in the style of the PTX ISA's layout figures: the tile's elements as a grid
(rows = MN index, columns = K index), each numbered by the 16-byte chunk of shared memory it sits in and
coloured by that chunk's slot in a 128-byte row (address bits 4-6), so a swizzle shows as the familiar
permuted colour bands. A comparison draws the model's map and
the map the hardware read side by side, with wrongly read elements outlined."""
from __future__ import annotations

import numpy as np

from harness.spec import layouts


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def draw_chunks(ax, chunk: np.ndarray, lo: int, title: str, wrong: np.ndarray | None = None, label_max: int = 64):
    rows, cols = chunk.shape
    rel = chunk - lo
    # colour = address bits 4-6 (which 16-byte slot of a 128-byte row): swizzles show as permuted colours
    colours = _plt().get_cmap("Set2")((chunk % 8) / 8.0)
    ax.imshow(colours, interpolation="nearest", aspect="auto")
    if rows * cols <= label_max * 64:
        size = max(3, min(8, 300 // max(rows, cols)))
        for r in range(rows):
            for c in range(cols):
                ax.text(c, r, str(int(rel[r, c])), ha="center", va="center", fontsize=size)
    if wrong is not None and wrong.any():
        rr, cc = np.nonzero(wrong)
        ax.scatter(cc, rr, s=max(4, 2400 // max(rows, cols)), facecolors="none", edgecolors="red", linewidths=1.2,
                   marker="s")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("k (K index)")
    ax.set_ylabel("row (MN index)")


def layout_png(lay: layouts.SmemLayout, path) -> None:
    """One canonical layout: element [mn, k] labelled with its 16-byte chunk (relative to the lowest)."""
    plt = _plt()
    chunk = layouts.chunk_index(lay)
    rows, cols = chunk.shape
    fig, ax = plt.subplots(figsize=(max(4, min(24, cols * 0.35 + 2)), max(3, min(24, rows * 0.3 + 1.5))))
    draw_chunks(ax, chunk, int(chunk.min()), f"{layouts.describe_tile(lay)}\n16-byte chunk of each element "
                                       f"(relative to byte {int(chunk.min()) * 16})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def comparison_png(expected_bits: np.ndarray, observed_bits: np.ndarray, path, title: str) -> None:
    """Expected vs observed address map of one operand, chunks relative to the expected map's lowest."""
    plt = _plt()
    exp, obs = np.asarray(expected_bits) >> 7, np.asarray(observed_bits) >> 7  # bit address -> 16-byte chunk
    lo = int(exp.min())
    rows, cols = exp.shape
    w = max(4, min(18, cols * 0.3 + 2))
    fig, axes = plt.subplots(1, 2, figsize=(2 * w, max(3, min(20, rows * 0.25 + 2))))
    wrong = exp != obs
    draw_chunks(axes[0], exp, lo, "expected (layout model)")
    draw_chunks(axes[1], obs, lo, f"observed (hardware): {int(wrong.sum())} elements elsewhere", wrong)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
