"""Tensor Memory probe for tcgen05: which TMEM lane / column holds which element of D.

Two CTAs of the case's own kernel, C = 0 (enable-input-d 0), A and B where their descriptors (or, for A of a TS
form, the TMEM model) say the tensor core reads them:
    row pass:  A[m, k] = digit_k(m),  B[n, k] = w_k           ->  D[m, n] = m
    col pass:  A[m, k] = w_k,         B[n, k] = digit_k(n)    ->  D[m, n] = n
(the digits of harness/diagnosis/fragments_probe.py). The raw cells read back ([128 lanes, columns]) say, cell
by cell, which (row, col) the hardware put there, without going through the data-path model; the record compares
that with datapaths.d_position and names the data path / change that places D exactly like the hardware did.
(C passed through with A = 0 would not do: C is stored into and D read from the same cells, so every cell reads
back its own C whatever the data path is.)

Covers what probe.py covers (cta_group::1 without .ws, kinds tf32, f16, f8f6f4 8-bit, i8).
"""
from __future__ import annotations


import numpy as np

from harness.diagnosis.fragments_probe import code_digits
from harness.families.base import ranges
from harness.families.tcgen05 import datapaths, probe as P, reference as R
from harness.spec import dtypes, layouts


def jobs_of(st: P.Setup) -> list:
    """The row and the col pass of one case (probe.Setup) as TcPrepared jobs."""
    c = st.case
    at, bt = dtypes.get(st.a.dtype), dtypes.get(st.b.dtype)
    m, n, k = st.m, st.n, st.k
    cap_t = "s8" if "s8" in (c.atype, c.btype) else c.atype  # weights must fit both operand types
    wa, da = code_digits(cap_t, m, k)
    wb, db = code_digits(cap_t, n, k)
    out = []
    for a_vals, b_vals in ((da(np.arange(m)), np.broadcast_to(wa, (n, k))),
                           (np.broadcast_to(wb, (m, k)), db(np.arange(n)))):
        img = np.zeros(st.size, np.uint8)
        tm = np.zeros((128, st.read_cols), np.uint32)
        if isinstance(st.a, P.TmemOperand):
            P._tmem_write(tm, st.a, at.to_bits(a_vals))
        else:
            layouts.write_bits(img, st.a.read_addr.ravel(), at.to_bits(a_vals).ravel(),
                               dtypes.get(st.a.layout.dtype).bits)
        layouts.write_bits(img, st.b.read_addr.ravel(), bt.to_bits(np.asarray(b_vals)).ravel(),
                           dtypes.get(st.b.layout.dtype).bits)
        out.append(R.TcPrepared(st.probe_case, [img], [dict(st.params)], tm[None], None, st.read_cols))
    return out


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


def candidates(m: int, n: int, dtype: str):
    """(what, (lane, column, half) [m, n]) of data paths and plausible changes, written out here (not from the
    model) so that the explanation does not lean on what it checks."""
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    z = np.zeros_like(r)
    out = [("data path D (lane = row)", (r, c, z)),
           ("data path F (rows 16 per 32-lane quarter)", (32 * (r // 16) + r % 16, c, z))]
    if m <= 64:
        out.append(("data path E (.ws M=64: column halves on lanes +64)", (r + 64 * (c // (n // 2)), c % (n // 2), z)))
    if m <= 32 and n >= 4:
        out.append(("data path G (.ws M=32: column quarters on lanes +32)",
                    (r + 32 * (c // (n // 4)), c % (n // 4), z)))
    base = out[:2] if m == 128 else out[1:2] if m == 64 else out
    for what, (lane, col, half) in list(base):
        out.append((f"{what} with the 32-lane quarters in reverse order", (32 * (3 - lane // 32) + lane % 32, col, half)))
        out.append((f"{what} with columns c and c+1 exchanged", (lane, col ^ 1, half)))
        out.append((f"{what} with rows r and r+8 exchanged", (lane ^ 8, col, half)))
        if dtype == "f16":
            out.append((f"{what} with f16 values in the high half of each cell", (lane, col, half + 1)))
    return out


def observe(dtype: str, row_cells: np.ndarray, col_cells: np.ndarray):
    """Raw cells of the two passes [128, cols] -> (row, col) per cell and per half, -1 where nothing decodes."""
    halves = (0, 1) if dtype == "f16" else (0,)
    return {h: (_cell_values(dtype, row_cells, h), _cell_values(dtype, col_cells, h)) for h in halves}


def matches(obs, pos, m: int, n: int) -> bool:
    lane, col, half = pos
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    if lane.max() >= 128 or lane.min() < 0 or col.min() < 0 or col.max() >= obs[0][0].shape[1] or half.max() not in obs:
        return False
    ok = True
    for h in np.unique(half):
        sel = half == h
        orow, ocol = obs[int(h)]
        ok &= bool(np.array_equal(orow[lane[sel], col[sel]], r[sel]) and np.array_equal(ocol[lane[sel], col[sel]], c[sel]))
    return ok


def record(c, st: P.Setup, tmem: np.ndarray) -> dict:
    """tmem: raw cells of the two passes [2, 128, read_cols] -> a 'diagnosis' record with probe 'tmem-d'."""
    m, n = st.m, st.n
    obs = observe(c.dtype, tmem[0], tmem[1])
    _, lane, col, half = datapaths.d_position(m, n, 1, False, c.dtype)
    r, k = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    orow = np.where(half == 0, obs[0][0][lane, col], obs.get(1, obs[0])[0][lane, col])
    ocol = np.where(half == 0, obs[0][1][lane, col], obs.get(1, obs[0])[1][lane, col])
    wrong = (orow != r) | (ocol != k)
    rec = {"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "D", "probe": "tmem-d",
           "elements": int(wrong.size), "wrong": int(wrong.sum())}
    if not wrong.any():
        rec.update(status="pass", summary=f"D: every element sits in the TMEM lane / column the data-path model gives "
                                          f"(M={m}, N={n})")
        return rec
    rows, cols = np.nonzero(wrong)
    rec["first"] = [{"row": int(a), "col": int(b), "model_lane": int(lane[a, b]), "model_column": int(col[a, b]),
                     "found_there": [int(orow[a, b]), int(ocol[a, b])]} for a, b in list(zip(rows, cols))[:6]]
    rec["rows"], rec["cols"] = ranges(np.unique(rows)), ranges(np.unique(cols))
    cands = candidates(m, n, c.dtype)
    named = [what for what, pos in cands if matches(obs, pos, m, n)]
    model_is = [what for what, (cl, cc, ch) in cands
                if np.array_equal(cl, lane) and np.array_equal(cc, col) and np.array_equal(ch, half)]
    rec["status"] = "fail"
    rec["explanation"] = named[0] if named else None
    rec["model_is"] = model_is[0] if model_is else None
    rec["summary"] = (f"D rows {rec['rows']} (cols {rec['cols']}): {rec['wrong']} of {wrong.size} elements are not in the "
                      f"TMEM cell the data-path model gives; "
                      + (f"the hardware places D exactly as {named[0]}" if named else
                         "no data path or nearby change (lane quarters, rows +8, column pairs, f16 half) places it "
                         "like this")
                      + (f"; the model places it as {model_is[0]}" if model_is else ""))
    return rec


def diagnose(kernel, cases, cubin_path, worker, timeout: float = 30.0) -> list[dict]:
    """'tmem-d' records for failing cases, not-probed where probe.py's setup refuses the case."""
    from harness.families.tcgen05 import kernel as tk
    from harness.run.worker import LaunchFailed
    out, plan, jobs = [], [], []
    for c in cases:
        try:
            st = P.setup_of(c, str(kernel.arch))
            if st.a is None or st.b is None:
                raise P.NotProbed("an operand is not modelled: " + "; ".join(r for _, r in st.skipped))
            js = jobs_of(st)
        except (P.NotProbed, ValueError, layouts.LayoutError) as e:
            out.append({"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "D", "probe": "tmem-d",
                        "status": "not-probed", "summary": str(e)})
            continue
        plan.append((c, st, len(jobs)))
        jobs += js
    if not jobs:
        return out
    try:
        res = worker.run(str(cubin_path), kernel.name, tk.pack(jobs), timeout)
    except LaunchFailed as e:
        return out + [{"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "D", "probe": "tmem-d",
                       "status": e.status, "error": str(e)} for c, _, _ in plan]
    for c, st, first in plan:
        out.append(record(c, st, np.asarray(res["tmem_out"])[first:first + 2, :, :st.read_cols]))
    return out
