"""Sparse-metadata probe for wgmma.mma_async.sp: which nibble of which thread's metadata register the tensor core
took each chunk of A's metadata from, recovered from the data alone and compared with harness.spec.sparsity.

Every nibble i of every thread t (a *place*, numbered t * 8 + i) holds, pass after pass, the digits of its own
number, each digit coded as one legal metadata value (2:4: the six increasing index pairs; tf32's 1:2: its two
values). A's stored elements of every chunk are 1 (the first) and 2 (the second), B is one-hot, B[n, k] = 1 iff
k == s*N + n (sub-pass s), C = 0, so D[m, s*N + n] = A_expanded[m, k]: for every row and chunk, which position got
1 and which 2 -- the metadata value the tensor core used for it, so the digit, so after every pass the place it
came from. The data names its own place: nothing here goes through the model's metadata map, which is only what
the recovered map is compared with (harness/diagnosis/bitmaps.py).

The probe trusts A's and B's layouts and D's fragment (the dense family's address and fragment probes check them).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from harness.diagnosis import bitmaps
from harness.spec import dtypes, fragments, layouts, sparsity

WARPGROUP, NIBBLES = 128, 8
PLACES = WARPGROUP * NIBBLES


def _digit_plan(fmt: sparsity.SparseFormat) -> tuple[tuple[int, ...], int]:
    """(legal values coding digits 0..base-1, passes)."""
    values = sparsity.legal_nibbles(fmt, ordered_only=True)
    base, passes = len(values), 1
    while base ** passes < PLACES:
        passes += 1
    return values, passes


def plain_case(key):
    """An ordinary (no control, exact) case of the key whose variant has sparsity selector 0, A in the layout the
    plan draws first: the probe rewrites its image, metadata and C."""
    from harness.families.wgmma_sp import cases as SC
    cs = [c for c in SC.cases_for_key(key, ("exact",), False) if not c.control and c.variant.selector == 0]
    if not cs:
        raise ValueError(f"{key.name}: no ordinary case with sparsity selector 0 to probe the metadata with")
    return cs[0]


def probe_jobs(key) -> list:
    """Prepared CTAs (wgmma_sp reference.Prepared), pass-major then sub-pass."""
    from harness.families.wgmma_sp import reference as SR
    case = plain_case(key)
    base = SR.prepare(case)
    v = case.variant
    fmt = sparsity.format_of(v.atype)
    values, passes = _digit_plan(fmt)
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    M, N, K, KP = sparsity.M, key.n, key.k, key.packed_k
    packed = np.broadcast_to((np.arange(KP) % fmt.stored + 1).astype(np.float64), (M, KP))
    image = base.image.copy()
    if base.a_layout is not None:
        layouts.write_image(base.a_layout, at.to_bits(packed), image)
        a_regs = base.a_regs
    else:  # A in registers: the packed tile through the dense A fragment (the probe trusts it)
        a_regs = fragments.gather_registers(fragments.wgmma_a_fragment(v.atype), at.to_bits(packed))
    place = np.arange(PLACES).reshape(WARPGROUP, NIBBLES)
    c_regs = np.zeros_like(base.c_regs)
    jobs = []
    for p in range(passes):
        nib = np.asarray(values, np.uint64)[(place // len(values) ** p) % len(values)]
        e_regs = (nib << (4 * np.arange(NIBBLES, dtype=np.uint64))[None, :]).sum(axis=1).astype(np.uint32)
        for s in range(-(-K // N)):
            img = image.copy()
            hot = (np.arange(K)[None, :] == s * N + np.arange(N)[:, None]).astype(np.float64)
            layouts.write_image(base.b_layout, bt.to_bits(hot), img)
            jobs.append(replace(base, image=img, a_regs=a_regs, c_regs=c_regs, e_regs=e_regs, expected=None,
                                expected_regs=None, tolerance=None))
    return jobs


def observe(key, d_values: np.ndarray) -> np.ndarray:
    """D values of the jobs [jobs, 64, N] -> the place (t * 8 + i) each (row, chunk) took its metadata from; -1
    where the products name no legal value."""
    case = plain_case(key)
    v = case.variant
    fmt = sparsity.format_of(v.atype)
    values, passes = _digit_plan(fmt)
    M, N, K = sparsity.M, key.n, key.k
    sub = -(-K // N)
    sign = v.scale_a * v.scale_b
    d = np.asarray(d_values, np.float64).reshape(passes, sub, M, N) * sign
    chunks = K // fmt.chunk
    out = np.zeros((M, chunks), np.int64)
    bad = np.zeros((M, chunks), bool)
    index = {val: i for i, val in enumerate(values)}
    for p in range(passes):
        a = np.zeros((M, K))
        for s in range(sub):
            ks = s * N + np.arange(N)
            ok = ks < K
            a[:, ks[ok]] = d[p, s][:, ok]
        a = np.rint(np.nan_to_num(a, nan=-1)).reshape(M, chunks, fmt.chunk).astype(np.int64)
        first = np.argmax(a == 1, axis=2)
        if fmt.stored == 1:
            good = (a == 1).sum(axis=2) == 1
            val = np.where(first == 0, sparsity.nibble(fmt, (0,)), sparsity.nibble(fmt, (1,)))
        else:
            second = np.argmax(a == 2, axis=2)
            good = ((a == 1).sum(axis=2) == 1) & ((a == 2).sum(axis=2) == 1) & ((a == 0).sum(axis=2) == 2)
            val = first | (second << 2)
        digit = np.vectorize(lambda x: index.get(int(x), -1))(val)
        bad |= ~good | (digit < 0)
        out += np.where(digit >= 0, digit, 0) * len(values) ** p
    return np.where(bad | (out >= PLACES), -1, out)


def coding(chunks: int) -> bitmaps.Coding:
    return bitmaps.Coding((("row", sparsity.M), ("chunk", chunks)), (("nibble", NIBBLES), ("lane", 32), ("warp", 4)))


def model_places(atype: str, selector: int) -> np.ndarray:
    """The place each (row, chunk) takes its metadata from, by harness.spec.sparsity."""
    fmt = sparsity.format_of(atype)
    row, chunk = sparsity.metadata_map(atype, selector)
    out = -np.ones((sparsity.M, fmt.chunks), np.int64)
    t, i = np.nonzero(row >= 0)
    out[row[t, i], chunk[t, i]] = t * NIBBLES + i
    return out


def _map(cd, places: np.ndarray):
    r, c = np.meshgrid(np.arange(places.shape[0]), np.arange(places.shape[1]), indexing="ij")
    ok = places >= 0
    p = np.where(ok, places, 0)
    return bitmaps.recover(cd, cd.places(r, c), p, ok) if ok.any() else None


def record(cid: str, key, observed: np.ndarray) -> dict:
    case = plain_case(key)
    v = case.variant
    model = model_places(v.atype, v.selector)
    cd = coding(model.shape[1])
    wrong = observed != model
    rec = {"type": "diagnosis", "id": cid, "operand": "metadata", "probe": "sparse-metadata", "kernel": key.name,
           "elements": int(wrong.size), "wrong": int(wrong.sum())}
    if not wrong.any():
        rec.update(status="pass", summary=f"metadata: every chunk of A took its indices from the thread and nibble "
                                          f"the model's metadata map gives ({v.atype}, selector {v.selector})")
        return rec
    from harness.contract import ranges
    rows, chunks = np.nonzero(wrong)
    rec.update(rows=ranges(np.unique(rows)), cols=ranges(np.unique(chunks)))
    hw = _map(cd, observed)
    if hw is None:
        rec.update(status="inconclusive", summary="metadata: no chunk's products named a legal metadata value (A, B "
                                                  "or D was read elsewhere than the model says: see the address and "
                                                  "fragment records)")
        return rec
    rec["status"] = "fail"
    sentence = bitmaps.record_maps(rec, "metadata", hw, _map(cd, model),
                                   f"{rec['wrong']} of {wrong.size} chunks take their indices from elsewhere, rows "
                                   f"{rec['rows']}, chunks {rec['cols']}")
    rec.update(explanation=sentence, summary=sentence)
    if (observed < 0).any():
        rec["summary"] += f"; {int((observed < 0).sum())} chunks named no legal value"
    return rec


def diagnose(cases, cubin_path, worker, timeout: float = 30.0) -> list[dict]:
    """'sparse-metadata' records for the (not control) cases of one wgmma_sp kernel: one probe launch per key."""
    from harness.families.wgmma.readback import decode_launch
    from harness.families.wgmma_sp import kernel as SK
    from harness.contract import LaunchFailed
    out, by_key = [], {}
    for c in cases:
        by_key.setdefault(c.key, []).append(c)
    for key, cs in by_key.items():
        try:
            jobs = probe_jobs(key)
            regs = worker.run(str(cubin_path), key.name, SK.pack(jobs), timeout)["d_out"]
        except LaunchFailed as e:
            out += [{"type": "diagnosis", "id": c.id, "operand": "metadata", "probe": "sparse-metadata",
                     "status": e.status, "error": str(e)} for c in cs]
            continue
        except (ValueError, layouts.LayoutError) as e:
            out += [{"type": "diagnosis", "id": c.id, "operand": "metadata", "probe": "sparse-metadata",
                     "status": "not-probed", "summary": str(e)} for c in cs]
            continue
        observed = observe(key, decode_launch(key, regs)[0])
        out += [record(c.id, key, observed) for c in cs]
    return out
