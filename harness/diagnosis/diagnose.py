"""Diagnosis: run the address probe (addresses.py) for cases and explain what the tensor core read.

For each case and each shared-memory operand: the recovered address map is compared with the intended
layout's (what the engineer meant) and with the descriptor's (what the model says the hardware reads; the
same map unless the case is a negative control). A record says whether the hardware read what the model
says, and explains any difference from the intended layout; a PNG shows it.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from harness.diagnosis import addresses, explain
from harness.families.wgmma import readback as diff, kernel as launch
from harness.spec import layouts
from harness.run.worker import LaunchFailed


def diagnose(cases, cubin_of, worker, timeout: float = 30.0, png_dir: Path | None = None,
             max_png: int = 64, tables: dict | None = None) -> list[dict]:
    """Records of type 'diagnosis', one per (case, smem operand). cubin_of(key) -> cubin path. tables[key]:
    the (D, A) fragment tables the fragment probe saw the hardware use; the probe decodes D (and packs an RS
    form's A) through them, so a wrong fragment model is not read as a wrong address."""
    return diagnose_setups([(c.id, addresses.setup_of(c)) for c in cases], cubin_of, worker, timeout, png_dir,
                           max_png, tables)


def diagnose_setups(items, cubin_of, worker, timeout: float = 30.0, png_dir: Path | None = None,
                    max_png: int = 64, tables: dict | None = None) -> list[dict]:
    """As diagnose(), for (id, addresses.Setup) pairs (probes build setups the case model cannot express)."""
    tables = tables or {}
    by_key = defaultdict(list)
    for cid, st in items:
        by_key[st.key].append((cid, st))
    out, pngs = [], 0
    for key, cs in by_key.items():
        plan = []  # (case id, setup, operand, first job, job count)
        jobs = []
        for c, st in cs:
            for which in ("A", "B") if st.a is not None else ("B",):
                try:
                    js = addresses.probe_jobs(st, which, (tables.get(key) or (None, None))[1])
                except addresses.ProbeImpossible as e:
                    out.append({"type": "diagnosis", "id": c, "operand": which, "status": "not-probed",
                                "summary": str(e)})
                    continue
                plan.append((c, st, which, len(jobs), len(js)))
                jobs += js
        if not jobs:
            continue
        try:
            regs = worker.run(str(cubin_of(key)), key.name, launch.pack(jobs), timeout)["d_out"]
        except LaunchFailed as e:
            out += [{"type": "diagnosis", "id": c, "operand": which, "status": e.status, "error": str(e)}
                    for c, _, which, _, _ in plan]
            continue
        if tables.get(key) is not None:  # through the fragment the hardware was seen to use
            from harness.diagnosis.fragments_probe import decode_d
            values = decode_d(key, regs, tables[key][0])
        else:
            values = diff.decode_launch(key, regs)[0]
        for c, st, which, first, count in plan:
            op = st.a if which == "A" else st.b
            observed = addresses.recover(st, which, values[first:first + count])
            model = layouts.element_bit_addresses(op.desc_layout) if op.desc_layout is not None else op.addr
            why = explain.explain(op.addr, observed, op.layout, which)
            rec = {"type": "diagnosis", "id": c, "operand": which,
                   "status": "pass" if np.array_equal(observed, model) else "fail",
                   "reads_as_model": bool(np.array_equal(observed, model)),
                   "reads_as_intended": why["wrong"] == 0, **{k: v for k, v in why.items() if k != "operand"}}
            if not rec["reads_as_model"]:
                rec["vs_model"] = explain.explain(model, observed, op.desc_layout, which)["summary"]
                rec["observed_bytes"] = (observed >> 3).tolist()  # the whole map, for whoever digs further
            if png_dir is not None and why["wrong"] and pngs < max_png:
                png_dir.mkdir(parents=True, exist_ok=True)
                path = png_dir / f"{safe_name(c)}-{which}.png"
                try:
                    from harness.diagnosis import pictures
                    pictures.comparison_png(op.addr, observed, path, f"{c}  operand {which}\n{wrap_text(why['summary'])}")
                    rec["png"] = str(path)
                    pngs += 1
                except ImportError as e:  # a picture is a convenience; the record says why there is none
                    rec["png"] = f"not drawn: {e}"
            out.append(rec)
    return out


def safe_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:150]


def wrap_text(text: str, width: int = 150) -> str:
    import textwrap
    return "\n".join(textwrap.wrap(text, width))
