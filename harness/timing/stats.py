"""Samples -> summaries; the timing record; comparing two bench files with their measured noise.

Latency samples are the per-repetition clocks (issue to wait) of every kept launch; throughput samples are one
value per launch: the median over SMs of (FLOP issued on the SM) / (cycles from the first CTA's start to the
last CTA's end on that SM), each SM's clock64 read on that SM.

Noise. A metric's spread is 1.4826 x its median absolute deviation (the standard deviation of normal noise,
not inflated by the odd interrupted repetition), never below the measurement's resolution (1 clock for a
latency). `compare` reports a slowdown where
    latency:     new median > old median + k * max(old spread, new spread)
    throughput:  new median < old median - k * max(old spread, new spread)
with k = 3 unless told otherwise.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

K_DEFAULT = 3.0
LATENCY_RESOLUTION = 1.0  # clocks


class BenchFileError(ValueError):
    pass


def summary(samples) -> dict:
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("no samples")
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med)))
    return {"n": int(x.size), "min": float(x.min()), "median": med, "max": float(x.max()),
            "mean": float(x.mean()), "stdev": float(x.std(ddof=1)) if x.size > 1 else 0.0,
            "mad": mad, "p10": float(np.percentile(x, 10)), "p90": float(np.percentile(x, 90))}


def spread(s: dict, resolution: float = 0.0) -> float:
    return max(1.4826 * s["mad"], resolution)


def latency_samples(words: np.ndarray, reps: int) -> tuple[np.ndarray, np.ndarray]:
    """(issue-to-wait clocks, empty clock64 pair clocks), every kept launch: words [launches, 2 * reps]."""
    w = np.asarray(words, dtype=np.uint64).reshape(len(words), 2, reps)
    if not w[:, 0].any():
        raise ValueError("the latency kernel wrote no clocks")
    return w[:, 0].astype(np.int64).ravel(), w[:, 1].astype(np.int64).ravel()


def throughput_launch(words: np.ndarray, flop_per_cta: int) -> dict:
    """One launch's [CTAs x 5] words (smid, clock0, clock1, ns0, ns1) -> per-SM FLOP/clk and the clock."""
    w = np.asarray(words, dtype=np.uint64).reshape(-1, 5).astype(np.int64)
    if (w[:, 2] == 0).any():
        raise ValueError(f"{int((w[:, 2] == 0).sum())} CTAs wrote no clocks")
    rates = []
    for sm in np.unique(w[:, 0]):
        on = w[w[:, 0] == sm]
        cycles = int(on[:, 2].max() - on[:, 1].min())
        rates.append(len(on) * flop_per_cta / max(cycles, 1))
    ns = np.maximum(w[:, 4] - w[:, 3], 1)
    mhz = (w[:, 2] - w[:, 1]) / ns * 1e3
    return {"sm_median": float(np.median(rates)), "sm_min": float(np.min(rates)), "sms": len(rates),
            "clock_mhz": float(np.median(mhz)), "cycles_median": float(np.median(w[:, 2] - w[:, 1]))}


def timing_record(form, arch: str, status: str, **fields) -> dict:
    rec = {"type": "timing", "id": form.id, "family": form.family, "arch": arch, "status": status,
           "module": form.module_name, **form.facets(), "flop_per_instr": form.flop,
           "peak_flop_per_clk_sm": form.peak()}
    if "arch" in form.facets():
        rec["arch"] = form.facets()["arch"]
    ref = form.reference()
    if ref:
        rec["reference"] = ref
    rec.update(fields)
    return rec


# ---------------------------------------------------------------------------------------------------- files

def load(path) -> tuple[dict, dict[str, dict]]:
    """(environment, {form id: timing record}); BenchFileError for anything that is not a bench file."""
    path = Path(path)
    if not path.is_file():
        raise BenchFileError(f"{path}: no such bench file")
    env, recs = None, {}
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise BenchFileError(f"{path}:{n}: not JSON Lines") from None
            if not isinstance(rec, dict):
                raise BenchFileError(f"{path}:{n}: not a record")
            if env is None:
                if rec.get("type") != "environment":
                    raise BenchFileError(f"{path}: the first line is not an environment record")
                env = rec
            elif rec.get("type") == "timing":
                if "id" not in rec or "status" not in rec:
                    raise BenchFileError(f"{path}:{n}: a timing record without id or status")
                recs[rec["id"]] = rec
    if env is None:
        raise BenchFileError(f"{path}: empty")
    if not recs:
        raise BenchFileError(f"{path}: no timing records (is this a bench file?)")
    return env, recs


def _metric_rows(fid: str, old: dict, new: dict, k: float) -> list[dict]:
    rows = []
    for metric, worse_if_higher, res in (("latency", True, LATENCY_RESOLUTION), ("throughput", False, 0.0)):
        o, n = old.get(metric), new.get(metric)
        if not o or not n:
            continue
        noise = max(spread(o, res), spread(n, res))
        delta = n["median"] - o["median"]
        slower = delta if worse_if_higher else -delta
        rows.append({"id": fid, "metric": metric, "unit": o.get("unit", ""), "old": o["median"],
                     "new": n["median"], "delta": delta, "noise": noise, "k": k,
                     "slowdown": slower > k * noise, "speedup": -slower > k * noise})
    return rows


def compare(old_path, new_path, k: float = K_DEFAULT) -> dict:
    if not k > 0:
        raise BenchFileError(f"k = {k}: give a positive multiple of the noise")
    old_env, old = load(old_path)
    new_env, new = load(new_path)
    rows, not_compared = [], []
    for fid in sorted(set(old) & set(new)):
        o, n = old[fid], new[fid]
        if o["status"] != "ok" or n["status"] != "ok":
            not_compared.append({"id": fid, "old": o["status"], "new": n["status"]})
            continue
        rows.extend(_metric_rows(fid, o, n, k))
    return {"old": str(old_path), "new": str(new_path), "old_gpu": old_env.get("gpu"),
            "new_gpu": new_env.get("gpu"), "k": k, "rows": rows,
            "slowdowns": [r for r in rows if r["slowdown"]], "speedups": [r for r in rows if r["speedup"]],
            "not_compared": not_compared, "only_old": sorted(set(old) - set(new)),
            "only_new": sorted(set(new) - set(old))}


def render_compare(rep: dict) -> str:
    lines = [f"bench compare: {rep['old']} ({rep['old_gpu']}) -> {rep['new']} ({rep['new_gpu']}); "
             f"slowdown = beyond {rep['k']:g} x max(old, new) spread"]
    for title, key in (("SLOWER", "slowdowns"), ("faster", "speedups")):
        for r in rep[key]:
            lines.append(f"  {title:<6} {r['id']:<58} {r['metric']:<10} {r['old']:>10.2f} -> {r['new']:>10.2f} "
                         f"{r['unit']} (delta {r['delta']:+.2f}, noise {r['noise']:.2f})")
    for r in rep["not_compared"]:
        lines.append(f"  not compared: {r['id']} (old {r['old']}, new {r['new']})")
    if rep["only_old"]:
        lines.append(f"  only in old: {len(rep['only_old'])} forms, e.g. {rep['only_old'][0]}")
    if rep["only_new"]:
        lines.append(f"  only in new: {len(rep['only_new'])} forms, e.g. {rep['only_new'][0]}")
    n_forms = len({r['id'] for r in rep["rows"]})
    lines.append(f"{len(rep['slowdowns'])} slowdowns, {len(rep['speedups'])} speedups beyond the noise "
                 f"over {len(rep['rows'])} metrics of {n_forms} forms")
    return "\n".join(lines)
