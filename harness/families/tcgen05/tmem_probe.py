"""Tensor Memory probe for tcgen05: which CTA / TMEM lane / column holds which element of D.

Two launches' worth of the case's own kernel (one case each: one CTA, or the pair of a cta_group::2 form), C = 0
(enable-input-d 0), the zero-column mask off, every scale factor 1 (block-scaled kinds):
    row pass:  A[m, k] = digit_k(m),  B[n, k] = w_k           ->  D[m, n] = m
    col pass:  A[m, k] = w_k,         B[n, k] = digit_k(n)    ->  D[m, n] = n
(code_digits of harness/diagnosis/digits.py: binary digits, or base-4 digits for the 4/6-bit types,
whose weights stop at 4). The operands are placed by reference.prepare with these chosen values, exactly where
the model writes a case's operands -- each CTA's half of a pair, 4/6-bit packing, A in Tensor Memory, the
scale-factor tiles --, so the probe covers every form the sweep has: cta_group::1 and ::2, .ws, every kind
(block-scaled included), every type. The raw cells read back ([CTA, 128 lanes, columns], a few columns more than
the case's) say, cell by cell, which (row, col) the hardware put there, without going through the data-path
model; the record solves the cells for the GF(2) map element (row, col) -> (half, column, lane, CTA) the hardware
used, compares it with datapaths.d_position's and names the place bits whose sources differ; a data path of the
ISA, or a single change of one, that places D exactly like the hardware did is added as its name. (C passed through with A = 0 would not do: C is stored into and D
read from the same cells, so every cell reads back its own C whatever the data path is.)

The probe trusts that A and B are read where the model writes them (the address probe, probe.py, checks that) and,
for the block-scaled kinds, only that a factor of 1 multiplies by 1 (every byte of both scale-factor tiles is 1).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from harness.diagnosis import single_edit  # the catalogue's words name common recovered placements
from harness.diagnosis.digits import code_digits, exact_power_cap
from harness.contract import ranges
from harness.families.tcgen05 import datapaths, reference as R
from harness.families.tcgen05.cases import TcCase
from harness.spec import desc_tcgen05, descriptors, dtypes, layouts

MAX_TMEM_COLS = 512
EXTRA_COLS = 8  # columns read back past the case's (and past N), so D written too far right is still seen
CATALOGUE = ("the ISA's data paths D, F, A, B, E, G, and single changes of one: lane quarters reversed, rows +8, "
             "column pairs, f16 half, the pair's CTAs exchanged, N split over the pair, .ws column halves / "
             "interleaving")


# ---------------------------------------------------------------------------------------------------- jobs

def probe_case(c: TcCase) -> TcCase:
    """The case with C off, no zero-column mask and no control: what the probes launch."""
    return replace(c, scale_d=0, zero_mask=None, control="")


def digit_plan(atype: str, btype: str, nvalues: int, k: int) -> tuple[int, int]:
    """(digit base, largest weight) with which `nvalues` row / column numbers fit in K: both operands hold the
    digits of one pass and the weights of the other, so both types must hold each exactly."""
    cap = min(exact_power_cap(atype), exact_power_cap(btype))
    for base in (2, 4):
        exact = all(dtypes.get(t).from_bits(dtypes.get(t).to_bits(np.arange(base, dtype=np.float64))).tolist()
                    == list(range(base)) for t in (atype, btype))
        if not exact or base > 2 * cap:
            continue
        try:
            code_digits(atype, nvalues, k, base, cap)
            return base, cap
        except ValueError:
            continue
    raise ValueError(f"{atype} x {btype}: {nvalues} row / column numbers do not fit K = {k} in digits both types "
                     "hold exactly")


def unit_scales(c: TcCase) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Scale-factor codes of 1 for every row of A and column of B (None, None for kinds without block scaling)."""
    if not c.form.block_scaled:
        return None, None
    one = datapaths.SF_ONE[c.idesc().scale_type]
    blocks = datapaths.sf_blocks(c.form)
    return np.full((c.m, blocks), one), np.full((c.n, blocks), one)


def scale_tile_starts(prep: R.TcPrepared, arch: str) -> list[tuple[int, int]]:
    """Per CTA, where its A and B scale-factor tiles start in its image: the start fields of the descriptors the
    kernel's tcgen05.cp reads them through."""
    return [tuple(desc_tcgen05.decode_tcgen05_smem_desc(int(p[f"sf_desc_{w}"]), arch)["fields"]["start_address"]
                  for w in ("a", "b")) for p in prep.params]


def with_unit_tiles(prep: R.TcPrepared, arch: str) -> R.TcPrepared:
    """Every byte of every scale-factor tile the code of 1, so that a factor read from anywhere in them is 1."""
    if not prep.case.form.block_scaled:
        return prep
    one = datapaths.SF_ONE[prep.case.idesc().scale_type]
    images = [img.copy() for img in prep.images]
    for img, starts in zip(images, scale_tile_starts(prep, arch)):
        for start in starts:
            img[start:start + datapaths.SF_TILE_BYTES] = one
    return replace(prep, images=images)


def widened(prep: R.TcPrepared, cols: int) -> R.TcPrepared:
    """The same launch reading back `cols` Tensor Memory columns (the extra ones stored as zeros)."""
    tm = np.zeros(prep.tmem_in.shape[:2] + (cols,), np.uint32)
    tm[..., :prep.read_cols] = prep.tmem_in
    return replace(prep, tmem_in=tm, read_cols=cols)


def read_cols_of(prep: R.TcPrepared) -> int:
    return min(MAX_TMEM_COLS, -(-(max(prep.read_cols, prep.case.n) + EXTRA_COLS) // 8) * 8)


# the shift forms move A's rows (.ashift) or D's lanes (tcgen05.shift) by one, and leave a row the ISA does not define
SHIFT_NOT_PROBED = (".ashift / tcgen05.shift move A's rows or D's lanes by one and leave a row the ISA does not "
                    "define, while the probes read their numbers through the unshifted data paths: not probed")


def jobs_of(c: TcCase, arch: str = "sm_100a") -> list[R.TcPrepared]:
    """The row and the col pass of one case, as TcPrepared jobs of its own kernel."""
    if c.form.sparse:  # the coded operands are dense A values; a sparse A is K/2 stored values placed by metadata
        raise ValueError(f"{c.id}: the D probe chooses dense A values; a sparse form's A (stored compressed, placed "
                         "by its metadata) is not probed")
    if c.form.variant in ("ashift", "shift_down"):
        raise ValueError(f"{c.id}: {SHIFT_NOT_PROBED}")
    pc = probe_case(c)
    m, n, k = pc.m, pc.n, pc.k
    base, cap = digit_plan(c.atype, c.btype, max(m, n), k)
    wa, da = code_digits(c.atype, m, k, base, cap)
    wb, db = code_digits(c.btype, n, k, base, cap)
    sfa, sfb = unit_scales(pc)
    out = []
    for a, b in ((da(np.arange(m)), np.broadcast_to(wa, (n, k)).copy()),
                 (np.broadcast_to(wb, (m, k)).copy(), db(np.arange(n)))):
        prep = with_unit_tiles(R.prepare(pc, arch, R.ChosenOperands(a, b, sfa, sfb)), arch)
        out.append(widened(prep, read_cols_of(prep)))
    return out


# ---------------------------------------------------------------------------------------------------- observation

def _cell_values(dtype: str, cells: np.ndarray, half: int = 0) -> np.ndarray:
    cells = np.asarray(cells, np.uint64)
    with np.errstate(invalid="ignore"):
        if dtype == "f16":
            v = dtypes.get("f16").from_bits((cells >> np.uint64(16 * half)) & np.uint64(0xFFFF))
        elif dtype == "s32":
            s = cells.astype(np.int64)
            v = np.where(s >= 1 << 31, s - (1 << 32), s).astype(np.float64)
        else:
            v = dtypes.get("f32").from_bits(cells)
    v = np.where(np.isfinite(v) & (v == np.rint(v)), v, -1)
    return np.where(cells == np.uint64(R.POISON), -1, v).astype(np.int64)


def observe(dtype: str, row_cells: np.ndarray, col_cells: np.ndarray):
    """Raw cells of the two passes [CTAs, 128, cols] -> {half: (row, col) per cell}, -1 where nothing decodes."""
    halves = (0, 1) if dtype == "f16" else (0,)
    return {h: (_cell_values(dtype, row_cells, h), _cell_values(dtype, col_cells, h)) for h in halves}


def matches(obs, pos, m: int, n: int) -> bool:
    """Does the placement pos = (cta, lane, column, half) [m, n] hold exactly what the probe read back?"""
    cta, lane, col, half = pos
    ctas, lanes, cols = obs[0][0].shape
    if (cta.min() < 0 or cta.max() >= ctas or lane.min() < 0 or lane.max() >= lanes or col.min() < 0
            or col.max() >= cols or not set(np.unique(half).tolist()) <= set(obs)):
        return False
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    for h in np.unique(half):
        sel = half == h
        orow, ocol = obs[int(h)]
        at = (cta[sel], lane[sel], col[sel])
        if not (np.array_equal(orow[at], r[sel]) and np.array_equal(ocol[at], c[sel])):
            return False
    return True


# ---------------------------------------------------------------------------------------------------- catalogue

def candidates(m: int, n: int, dtype: str, cta_group: int = 1, ws: bool = False) -> list[single_edit.Hypothesis]:
    """The ISA's data paths and single changes of them, each a Hypothesis whose prediction is (cta, lane, column,
    half) [m, n]; written out here, not taken from the model, so that the explanation does not lean on what it
    checks. A path is offered where its rows fit 128 lanes; a placement that leaves the cells read back never
    matches."""
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    z = np.zeros_like(r)
    paths = [("D", "data path D (lane = row)", (z, r, c)),
             ("F", "data path F (rows 16 per 32-lane quarter)", (z, 32 * (r // 16) + r % 16, c))]
    if m <= 64 and n % 2 == 0:
        paths.append(("E", "data path E (.ws M=64: column halves on lanes +64)",
                      (z, r + 64 * (c // (n // 2)), c % (n // 2))))
    if m <= 32 and n % 4 == 0:
        paths.append(("G", "data path G (.ws M=32: column quarters on lanes +32)",
                      (z, r + 32 * (c // (n // 4)), c % (n // 4))))
    if cta_group == 2 and m == 256:
        paths.append(("A", "data path A (M=256 pair: 128 rows per CTA)", (r // 128, r % 128, c)))
    if cta_group == 2 and m <= 128 and n % 2 == 0:
        paths.append(("B", "data path B (M=128 pair: 64 rows per CTA, column halves on lanes +64)",
                      (r // 64, r % 64 + 64 * (c // (n // 2)), c % (n // 2))))
    out = [single_edit.Hypothesis(f"path-{p}", what, (cta, lane, col, z)) for p, what, (cta, lane, col) in paths]
    named = {p: (what, pos) for p, what, pos in paths}
    # changes particular to one path
    if "B" in named:
        out.append(single_edit.Hypothesis("pair-by-columns", "the pair split by columns (CTA c // (N/2) holds every "
                                          "row of its columns)", (c // (n // 2), r, c % (n // 2), z)))
    if "E" in named:
        what, (cta, lane, col) = named["E"]
        out.append(single_edit.Hypothesis("E:halves-reversed", f"{what} with the column halves in reverse order",
                                          (cta, r + 64 * (1 - c // (n // 2)), col, z)))
        out.append(single_edit.Hypothesis("E:interleaved", f"{what} with even / odd columns on lanes +0 / +64",
                                          (cta, r + 64 * (c % 2), c // 2, z)))
    if "G" in named:
        what, (cta, lane, col) = named["G"]
        out.append(single_edit.Hypothesis("G:interleaved", f"{what} with columns interleaved over the four lane "
                                          "quarters (column c on quarter c % 4)", (cta, r + 32 * (c % 4), c // 4, z)))
    # changes any path may suffer
    for p, what, (cta, lane, col) in paths:
        out.append(single_edit.Hypothesis(f"{p}:quarters-reversed", f"{what} with the 32-lane quarters in reverse "
                                          "order", (cta, 32 * (3 - lane // 32) + lane % 32, col, z)))
        out.append(single_edit.Hypothesis(f"{p}:columns^1", f"{what} with columns c and c+1 exchanged",
                                          (cta, lane, col ^ 1, z)))
        out.append(single_edit.Hypothesis(f"{p}:rows^8", f"{what} with rows r and r+8 exchanged",
                                          (cta, lane ^ 8, col, z)))
        if dtype == "f16":
            out.append(single_edit.Hypothesis(f"{p}:high-half", f"{what} with f16 values in the high half of each "
                                              "cell", (cta, lane, col, z + 1)))
        if cta_group == 2:
            out.append(single_edit.Hypothesis(f"{p}:ctas-exchanged", f"{what} with the pair's CTAs exchanged",
                                              (1 - cta, lane, col, z)))
    return out


def model_position(c: TcCase):
    cta, lane, col, half = datapaths.d_position(c.m, c.n, c.form.cta_group, c.form.ws, c.dtype)
    return cta, lane, col, half


def placement(c: TcCase, rec: dict | None):
    """(cta, lane, column, half) [m, n] of D: the placement a 'tmem-d' record named for the hardware, else the
    model's (other probes decode D through it)."""
    name = (rec or {}).get("explanation")
    if name:
        for h in candidates(c.m, c.n, c.dtype, c.form.cta_group, c.form.ws):
            if h.words == name:
                return h.prediction
    return model_position(c)


# ---------------------------------------------------------------------------------------------------- maps

def coding(c: TcCase, cols: int):
    """An element (row, col) of D -> its place (half of the cell for f16, TMEM column, lane, CTA of the pair)."""
    from harness.diagnosis import bitmaps
    place = ((("half", 2),) if c.dtype == "f16" else ()) + (("column", cols), ("lane", 128))
    place += (("cta", 2),) if c.form.cta_group == 2 else ()
    return bitmaps.Coding((("row", c.m), ("col", c.n)), place)


def _places(c: TcCase, cd, cta, lane, col, half):
    vals = ([half] if c.dtype == "f16" else []) + [col, lane] + ([cta] if c.form.cta_group == 2 else [])
    return cd.elements(*vals)


def recovered_map(c: TcCase, obs, cols: int):
    """The map element -> place the hardware used, read off the cells (each names the element it holds), over
    every element seen; an element seen in two cells makes it no function (a two-cell witness)."""
    from harness.diagnosis import bitmaps
    cd = coding(c, cols)
    elems, places = [], []
    for h, (row, col_) in obs.items():
        ctas, lanes, ncols = row.shape
        cta, lane, colx = np.meshgrid(np.arange(ctas), np.arange(lanes), np.arange(ncols), indexing="ij")
        ok = (row >= 0) & (row < c.m) & (col_ >= 0) & (col_ < c.n) & (colx < cols)
        elems.append(cd.places(row[ok], col_[ok]))
        places.append(_places(c, cd, cta[ok], lane[ok], colx[ok], np.full(int(ok.sum()), h)))
    e, p = np.concatenate(elems), np.concatenate(places)
    if not e.size:
        return None
    return bitmaps.recover(cd, e, p)


def model_map(c: TcCase, cols: int):
    from harness.diagnosis import bitmaps
    cd = coding(c, cols)
    cta, lane, col, half = model_position(c)
    r, k = np.meshgrid(np.arange(c.m), np.arange(c.n), indexing="ij")
    return bitmaps.recover(cd, cd.places(r, k), _places(c, cd, cta, lane, col, half))


# ---------------------------------------------------------------------------------------------------- record

def record(c: TcCase, tmem: np.ndarray, png_dir: Path | None = None) -> dict:
    """tmem: raw cells of the two passes [2, CTAs, 128, cols] -> a 'diagnosis' record with probe 'tmem-d'."""
    m, n, cg = c.m, c.n, c.form.cta_group
    tmem = np.asarray(tmem)
    obs = observe(c.dtype, tmem[0], tmem[1])
    cta, lane, col, half = model_position(c)
    r, k = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    at = (cta, lane, col)
    orow = np.where(half == 0, obs[0][0][at], obs.get(1, obs[0])[0][at])
    ocol = np.where(half == 0, obs[0][1][at], obs.get(1, obs[0])[1][at])
    wrong = (orow != r) | (ocol != k)
    form = f"M={m}, N={n}" + (", cta_group::2" if cg == 2 else "") + (", .ws" if c.form.ws else "")
    rec = {"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "D", "probe": "tmem-d",
           "elements": int(wrong.size), "wrong": int(wrong.sum())}
    if not wrong.any():
        rec.update(status="pass", summary=f"D: every element sits in the {'CTA / ' if cg == 2 else ''}TMEM lane / "
                                          f"column the data-path model gives ({form})")
        return rec
    rows, cols = np.nonzero(wrong)
    rec["first"] = [{"row": int(a), "col": int(b), **({"model_cta": int(cta[a, b])} if cg == 2 else {}),
                     "model_lane": int(lane[a, b]), "model_column": int(col[a, b]),
                     "found_there": [int(orow[a, b]), int(ocol[a, b])]} for a, b in list(zip(rows, cols))[:6]]
    rec["rows"], rec["cols"] = ranges(np.unique(rows)), ranges(np.unique(cols))
    cands = candidates(m, n, c.dtype, cg, c.form.ws)
    named = single_edit.reproducing(cands, lambda pos: matches(obs, pos, m, n))
    model = (cta, lane, col, half)
    model_is = [h.words for h in cands if all(np.array_equal(x, y) for x, y in zip(h.prediction, model))]
    rec["status"] = "fail"
    if named:
        rec.update(edit=named[0].id, equivalent_edits=[h.id for h in named[1:]])
    rec["explanation"] = named[0].words if named else None
    rec["model_is"] = model_is[0] if model_is else None
    # the map the hardware used, read off the cells (each names its element), beside the model's
    from harness.diagnosis import bitmaps
    cols_seen = obs[0][0].shape[2]
    width = max(cols_seen, int(col.max()) + 1)
    hw = recovered_map(c, obs, width)
    differ = f"{rec['wrong']} of {wrong.size} elements elsewhere, rows {rec['rows']}, cols {rec['cols']}; {form}"
    sentence = bitmaps.record_maps(rec, "D placement", hw, model_map(c, width), differ,
                                   unnamed="no cell read back names an element of D")
    rec["summary"] = sentence + (
        (f"; that is, the hardware places D exactly as {named[0].words}" if named else "")
        + (f"; the model places it as {model_is[0]}" if model_is else ""))
    if png_dir is not None:
        rec["png"] = _png(c, obs, model, rec, Path(png_dir))
    return rec


def _png(c: TcCase, obs, model, rec: dict, png_dir: Path) -> str:
    """Expected vs observed (row, col) of every Tensor Memory cell, the CTAs' lanes one after the other."""
    from harness.diagnosis.pictures import safe_name, wrap_text
    cta, lane, col, half = model
    ctas, lanes, cols = obs[0][0].shape
    mrow = -np.ones((ctas, lanes, cols), np.int64)
    mcol = mrow.copy()
    r, k = np.meshgrid(np.arange(c.m), np.arange(c.n), indexing="ij")
    low = half == 0
    mrow[cta[low], lane[low], col[low]] = r[low]
    mcol[cta[low], lane[low], col[low]] = k[low]
    path = png_dir / f"{safe_name(c.id)}-tmem-d.png"
    try:
        from harness.diagnosis import pictures
        png_dir.mkdir(parents=True, exist_ok=True)
        pictures.ownership_png((mrow.reshape(-1, cols), mcol.reshape(-1, cols)),
                               (obs[0][0].reshape(-1, cols), obs[0][1].reshape(-1, cols)), path,
                               f"{c.id}  tmem-d probe\n{wrap_text(rec['summary'])}", colword="D col",
                               rowword="D row", xlabel="TMEM column", unit="cells",
                               ylabel="TMEM lane" + (" (CTA r: r*128 + lane)" if ctas > 1 else ""))
        return str(path)
    except ImportError as e:
        return f"not drawn: {e}"


# ---------------------------------------------------------------------------------------------------- diagnose

def diagnose(kernel, cases, cubin_path, worker, timeout: float = 30.0, png_dir=None, max_png: int = 8) -> list[dict]:
    """'tmem-d' records for (failing, not control) cases of one kernel; not-probed where the digits do not fit
    or the case cannot be prepared with chosen operands."""
    from harness.families.tcgen05 import kernel as tk
    from harness.contract import LaunchFailed
    out, plan, jobs = [], [], []
    for c in cases:
        try:
            js = jobs_of(c, str(kernel.arch))
        except (ValueError, layouts.LayoutError, descriptors.DescriptorError) as e:
            out.append({"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "D", "probe": "tmem-d",
                        "status": "not-probed", "summary": str(e)})
            continue
        plan.append((c, len(jobs)))
        jobs += js
    if not jobs:
        return out
    try:
        res = worker.run(str(cubin_path), kernel.name, tk.pack(jobs), timeout)
    except LaunchFailed as e:
        return out + [{"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "D", "probe": "tmem-d",
                       "status": e.status, "error": str(e)} for c, _ in plan]
    cg = kernel.form.cta_group
    tm, status = np.asarray(res["tmem_out"]), np.asarray(res["status"])
    pngs = 0
    for c, first in plan:
        ctas = slice(first * cg, (first + 2) * cg)
        if np.any(status[ctas]):
            out.append({"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "D", "probe": "tmem-d",
                        "status": "timeout", "error": "a probe CTA's MMA never completed within the spin limit"})
            continue
        cols = jobs[first].read_cols
        raw = tm[ctas, :, :cols].reshape(2, cg, 128, cols)
        rec = record(c, raw, png_dir if png_dir is not None and pngs < max_png else None)
        pngs += str(rec.get("png", "")).endswith(".png")
        out.append(rec)
    return out
