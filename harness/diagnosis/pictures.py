"""Pictures of address maps in the style of the PTX ISA's layout figures: the tile's elements as a grid
(rows = MN index, columns = K index), each numbered by the 16-byte chunk of shared memory it sits in and
coloured by that chunk's slot in a 128-byte row (address bits 4-6), so a swizzle shows as the familiar
permuted colour bands. A comparison draws the model's map and
the map the hardware read side by side, with wrongly read elements outlined."""
from __future__ import annotations

import functools
import time
from functools import lru_cache

import numpy as np

from harness.spec import layouts


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


DRAWN = {"seconds": 0.0}  # what this process has spent drawing (matplotlib's import with the first): a sweep's
# timing says it (pictures_s), beside its diagnosis's whole time


def counted(draw):
    """`draw`, a function that draws a picture, its seconds added to DRAWN."""
    @functools.wraps(draw)
    def drawing(*args, **kwargs):
        t = time.perf_counter()
        try:
            return draw(*args, **kwargs)
        finally:
            DRAWN["seconds"] += time.perf_counter() - t
    return drawing


DPI = 110
CELL_IN = 0.3  # inches a side per element when labelled: 3-digit labels at >= 10 pixels
LABEL_MAX = 128  # rows or cols beyond which elements are coloured only (the labels would not be legible)


MIN_LABEL_PT = 4.0  # a label that must be smaller to fit its cell is not drawn (colours only)


def _label_size(rows: int, cols: int, lo: int, hi: int, cell_in: float) -> float:
    """Font size (points) that fits the widest label into a cell `cell_in` inches wide (at most 10)."""
    digits = max(len(str(lo)), len(str(hi)), 1)
    return min(10.0, cell_in * 72 / (0.62 * digits + 0.4))


def _legend(ax) -> None:
    """Colour key: address bits 4-6, the 16-byte slot of a 128-byte row."""
    from matplotlib.patches import Patch
    cmap = pyplot().get_cmap("Set2")
    handles = [Patch(facecolor=cmap(s / 8.0), edgecolor="grey", label=f"{s} (bytes {16 * s}-{16 * s + 15})")
               for s in range(8)]
    ax.legend(handles=handles, title="address bits 4-6:\n16-byte slot\nof a 128-byte row", loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=9, title_fontsize=9, frameon=False)


LABELS_GID = "cell labels"


@lru_cache(maxsize=4096)
def label_outline(text: str, size: float):
    """`text`'s glyph outlines at `size` points, centred on (0, 0), in points."""
    from matplotlib.textpath import TextPath
    from matplotlib.font_manager import FontProperties
    from matplotlib.transforms import Affine2D
    path = TextPath((0, 0), text, prop=FontProperties(size=size))
    # the outline's control points bound it: its exact extents (Path.get_extents solves each curve) took 4 ms a label
    (x0, y0), (x1, y1) = path.vertices.min(axis=0), path.vertices.max(axis=0)
    return path.transformed(Affine2D().translate(-(x0 + x1) / 2, -(y0 + y1) / 2))


def cell_labels(ax, values: np.ndarray, size: float):
    """Every cell's number, centred on the cell, as one collection of glyph outlines (its gid LABELS_GID), drawn in
    one pass. As a text artist per cell, laid out and drawn one by one, a comparison of two 64 x 16 tiles took 3.4-4.1 s
    and a 64 x 64 layout 4.9-7.4 s, most of a planted bug's diagnosis (the CPU note 2026-11-27 pictures.txt in
    docs/performance.md)."""
    from matplotlib.collections import PathCollection
    from matplotlib.transforms import Affine2D
    rows, cols = values.shape
    r, c = np.indices((rows, cols))
    labels = PathCollection([label_outline(str(int(v)), size) for v in values.ravel()],
                            offsets=np.column_stack([c.ravel(), r.ravel()]), offset_transform=ax.transData,
                            # glyphs in points, scaled at draw time by the figure's dpi (savefig's, where it sets one)
                            transform=Affine2D().scale(1 / 72) + ax.figure.dpi_scale_trans,
                            facecolors="black", edgecolors="none", gid=LABELS_GID,
                            zorder=3)  # a text's: above the outlines of wrongly read cells, as the labels were
    labels.set_in_layout(False)
    return labels


def draw_chunks(ax, chunk: np.ndarray, lo: int, title: str, wrong: np.ndarray | None = None,
          cell_in: float = CELL_IN):
    rows, cols = chunk.shape
    rel = chunk - lo
    # colour = address bits 4-6 (which 16-byte slot of a 128-byte row): swizzles show as permuted colours
    colours = pyplot().get_cmap("Set2")((chunk % 8) / 8.0)
    ax.imshow(colours, interpolation="nearest", aspect="auto")
    size = _label_size(rows, cols, int(rel.min()), int(rel.max()), cell_in)
    # labels that would overlap are not drawn: illegible (and, when each was an artist of its own, a Tensor Memory
    # picture's 21,000 took 9 s to render)
    if rows <= LABEL_MAX and cols <= LABEL_MAX and size >= MIN_LABEL_PT:
        ax.add_collection(cell_labels(ax, rel, size), autolim=False)
    if wrong is not None and wrong.any():
        rr, cc = np.nonzero(wrong)
        ax.scatter(cc, rr, s=max(4, 2400 // max(rows, cols)), facecolors="none", edgecolors="red", linewidths=1.2,
                   marker="s")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("k (K index)")
    ax.set_ylabel("row (MN index)")


def _cell_in(rows: int, cols: int) -> float:
    """Inches per element: CELL_IN while labels are drawn, smaller (colours only) for very large tiles."""
    return CELL_IN if max(rows, cols) <= LABEL_MAX else max(0.05, 40 / max(rows, cols))


def layout_figure(lay: layouts.SmemLayout, chunk: np.ndarray):
    """The figure `layout_png` saves: element [mn, k] labelled with its 16-byte chunk (`chunk`, the address map's
    address >> 4, drawn relative to the lowest), coloured by address bits 4-6, with the colour key beside it."""
    plt = pyplot()
    chunk = np.asarray(chunk)
    rows, cols = chunk.shape
    cell = _cell_in(rows, cols)
    legend_in = 2.6
    w, h = max(3.0, cols * cell) + 1.2, max(2.5, rows * cell) + 1.4
    fig = plt.figure(figsize=(w + legend_in, h))
    ax = fig.add_axes([0.9 / (w + legend_in), 0.8 / h, (w - 1.2) / (w + legend_in), (h - 1.4) / h])
    draw_chunks(ax, chunk, int(chunk.min()), f"{layouts.describe_tile(lay)}\n16-byte chunk of each element "
                                       f"(relative to byte {int(chunk.min()) * 16})", cell_in=cell)
    _legend(ax)
    return fig


def layout_png(lay: layouts.SmemLayout, chunk: np.ndarray, path) -> None:
    """One canonical layout, the 16-byte chunk of each of its elements (harness.api.address_map's), to a PNG file
    written under exactly the name given."""
    plt = pyplot()
    fig = layout_figure(lay, chunk)
    try:
        fig.savefig(path, dpi=DPI, format="png")
    finally:
        plt.close(fig)


@counted
def comparison_png(expected_bits: np.ndarray, observed_bits: np.ndarray, path, title: str) -> None:
    """Expected vs observed address map of one operand, chunks relative to the expected map's lowest."""
    plt = pyplot()
    exp, obs = np.asarray(expected_bits) >> 7, np.asarray(observed_bits) >> 7  # bit address -> 16-byte chunk
    lo = int(exp.min())
    rows, cols = exp.shape
    w = max(4, min(18, cols * 0.3 + 2))
    fig, axes = plt.subplots(1, 2, figsize=(2 * w, max(3, min(20, rows * 0.25 + 2))))
    wrong = exp != obs
    draw_chunks(axes[0], exp, lo, "expected (layout model)", cell_in=w / max(cols, 1))
    draw_chunks(axes[1], obs, lo, f"observed (hardware): {int(wrong.sum())} elements elsewhere", wrong,
          cell_in=w / max(cols, 1))
    _legend(axes[1])
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@counted
def ownership_png(model, observed, path, title: str, per_reg: int = 1, colword: str = "col",
                  rowword: str = "row", xlabel: str | None = None,
                  ylabel: str = "thread (warp = thread // 32)", unit: str = "slots") -> None:
    """Ownership, expected (model) vs observed (hardware): for every place on the y axis (a thread; a Tensor
    Memory lane) and x axis (a register slot; a column) the two things it holds (row and column / k of the
    element; where a scale factor came from), as four heat maps; places that differ are outlined."""
    plt = pyplot()
    (mr, mc), (orow, ocol) = (np.asarray(a) for a in model), (np.asarray(a) for a in observed)
    wrong = (mr != orow) | (mc != ocol)
    threads, slots = mr.shape
    if xlabel is None:
        xlabel = f"register slot ({per_reg} per register)" if per_reg > 1 else "register"
    fig, axes = plt.subplots(1, 4, figsize=(min(40, 4 * max(3.0, slots * 0.12 + 1.5)), 9), sharey=True)
    for ax, data, what in ((axes[0], mr, f"{rowword}, model"), (axes[1], orow, f"{rowword}, observed"),
                           (axes[2], mc, f"{colword}, model"), (axes[3], ocol, f"{colword}, observed")):
        im = ax.imshow(data, interpolation="nearest", aspect="auto", cmap="viridis")
        if "observed" in what and wrong.any() and wrong.mean() <= 0.25:  # outlines would hide a mass change
            rr, cc = np.nonzero(wrong)
            ax.scatter(cc, rr, s=6, facecolors="none", edgecolors="red", linewidths=0.6, marker="s")
        ax.set_title(what + (f" ({int(wrong.sum())} {unit} differ)" if "observed" in what else ""), fontsize=9)
        ax.set_xlabel(xlabel)
        fig.colorbar(im, ax=ax, fraction=0.05)
    axes[0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def safe_name(text: str) -> str:
    """A picture's file name made of `text` (a case id, an operand)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:150]


def wrap_text(text: str, width: int = 150) -> str:
    """A picture's caption, wrapped."""
    import textwrap
    return "\n".join(textwrap.wrap(text, width))
