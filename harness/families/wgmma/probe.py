"""wgmma's address probe: run it (addresses.py) for cases and explain what the tensor core read.

For each case and each shared-memory operand: the recovered address map is compared with the intended
layout's (what the engineer meant) and with the descriptor's (what the model says the hardware reads; the
same map unless the case is a negative control). A record says whether the hardware read what the model
says, and explains any difference from the intended layout; a PNG shows it.

Each operand's probe trusts the other's reads (its one-hot sits where the model says the other is read). Where
both operands read other than the model says, each is probed again with the other's one-hot where the hardware
was seen to read it (_second_look); where that clears neither, both may be misread, and they are probed apart
(_apart): B in the RS form of the instruction, where no A address enters its probe, then A with B's one-hot
where that probe saw B read. Each record then names its own operand's fields, never the other's.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from harness.contract import LaunchFailed
from harness.diagnosis import address_fit, explain
from harness.diagnosis.pictures import safe_name, wrap_text
from harness.families.wgmma import addresses, readback as diff, kernel as launch
from harness.spec import dtypes, layouts


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
        todo = [(c, st, which) for c, st in cs for which in (("A", "B") if st.a is not None else ("B",))]
        seen, errors = _observe(key, todo, cubin_of, worker, timeout, tables)
        out += errors
        seen.update(_second_look(key, cs, seen, cubin_of, worker, timeout, tables))
        apart, unsure = _apart(key, cs, seen, cubin_of, worker, timeout, tables)
        seen.update(apart)
        for (c, which), (st, observed, note) in seen.items():
            op = st.a if which == "A" else st.b
            model = layouts.element_bit_addresses(op.desc_layout) if op.desc_layout is not None else op.addr
            why = explain.explain(op.addr, observed, op.layout, which)
            same = bool(np.array_equal(observed, model))
            rec = {"type": "diagnosis", "id": c, "operand": which,
                   "status": "pass" if same else "fail",
                   "reads_as_model": same,
                   "reads_as_intended": why["wrong"] == 0, **{k: v for k, v in why.items() if k != "operand"}}
            if not same:  # the map the hardware used, recovered from the data, beside the model's
                bits = dtypes.get(op.dtype).bits
                desc = address_fit.terms_of(op.desc_layout, bits) if op.desc_layout is not None else None
                reading = address_fit.read(observed, model, bits, f"{which} addresses", descriptor=desc)
                rec["recovered"] = reading.as_dict()
                rec["vs_model"] = reading.sentence
                if np.array_equal(model, op.addr):  # an ordinary case: the one sentence is the recovered map's
                    rec["summary"] = reading.sentence + (f" (known as: {why['observed_change']})"
                                                         if why.get("observed_change") else "")
                rec["observed_bytes"] = (observed >> 3).tolist()  # the whole map, for whoever digs further
            if note:
                rec["note"] = note
            if (c, which) in unsure:  # its probe's one-hot may not have been where the hardware read the other
                rec.update(status="inconclusive", summary=f"{unsure[(c, which)]}; {rec['summary']}")
            if png_dir is not None and why["wrong"] and pngs < max_png:
                png_dir.mkdir(parents=True, exist_ok=True)
                path = png_dir / f"{safe_name(c)}-{which}.png"
                try:
                    from harness.diagnosis import pictures
                    pictures.comparison_png(op.addr, observed, path, f"{c}  operand {which}\n{wrap_text(rec['summary'])}")
                    rec["png"] = str(path)
                    pngs += 1
                except ImportError as e:  # a picture is a convenience; the record says why there is none
                    rec["png"] = f"not drawn: {e}"
            out.append(rec)
    return out


def _model(op) -> np.ndarray:
    return layouts.element_bit_addresses(op.desc_layout) if op.desc_layout is not None else op.addr


def _observe(key, todo, cubin_of, worker, timeout, tables):
    """One launch probing every (case id, setup, operand) of `todo`: ({(id, operand): (setup, observed bit
    addresses, note)}, records of what could not be probed or launched)."""
    plan, jobs, errors = [], [], []
    for c, st, which in todo:
        try:
            js = addresses.probe_jobs(st, which, (tables.get(key) or (None, None))[1])
        except addresses.ProbeImpossible as e:
            errors.append({"type": "diagnosis", "id": c, "operand": which, "status": "not-probed",
                           "summary": str(e)})
            continue
        plan.append((c, st, which, len(jobs), len(js)))
        jobs += js
    if not jobs:
        return {}, errors
    try:
        regs = worker.run(str(cubin_of(key)), key.name, launch.pack(jobs), timeout)["d_out"]
    except LaunchFailed as e:
        return {}, errors + [{"type": "diagnosis", "id": c, "operand": which, "status": e.status, "error": str(e)}
                             for c, _, which, _, _ in plan]
    if tables.get(key) is not None:  # through the fragment the hardware was seen to use
        from harness.families.wgmma.fragments_probe import decode_d
        values = decode_d(key, regs, tables[key][0])
    else:
        values = diff.decode_launch(key, regs)[0]
    return {(c, which): (st, addresses.recover(st, which, values[first:first + count]), None)
            for c, st, which, first, count in plan}, errors


def _second_look(key, cs, seen, cubin_of, worker, timeout, tables) -> dict:
    """Where both shared-memory operands of a case read other than the model says, one of them may only look
    wrong: its probe put the other's one-hot where the model (not the hardware) reads it. Each is probed again
    with the other's one-hot where the hardware was seen to read it; an operand that then reads as the model is
    right, and only the other is blamed."""
    again = []
    for c, st in cs:
        if st.a is None or any((c, w) not in seen for w in "AB"):
            continue
        if any(np.array_equal(seen[(c, w)][1], _model(st.a if w == "A" else st.b)) for w in "AB"):
            continue
        for which, other in (("A", "B"), ("B", "A")):
            op = st.b if other == "B" else st.a
            where = seen[(c, other)][1]
            bits = dtypes.get(op.dtype).bits
            if not _placeable(where, bits, st.size):
                continue  # not a place a one-hot can be written: that probe itself read garbage
            placed = replace(op, addr=seen[(c, other)][1], desc_layout=None)  # read_addr: where it was seen
            again.append((c, replace(st, **{other.lower(): placed}), which))
    if not again:
        return {}
    got, _ = _observe(key, again, cubin_of, worker, timeout, tables)
    out = {}
    for (c, which), (st2, observed, _) in got.items():
        st = next(s for cid, s in cs if cid == c)
        if np.array_equal(observed, _model(st.a if which == "A" else st.b)):
            other = "B" if which == "A" else "A"
            out[(c, which)] = (st, observed, f"probed again with {other}'s one-hot where the hardware was seen to "
                                             f"read {other}: reads as the model")
    return out


def _placeable(where: np.ndarray, bits: int, size: int) -> bool:
    """Can a one-hot be written where the hardware was seen to read an operand: every element at its own place,
    all inside the probe's image and slack?"""
    return bool(where.min() >= 0 and where.max() + bits <= 8 * (size + addresses.SLACK_BYTES)
                and np.unique(where // bits).size == where.size)


def _apart(key, cs, seen, cubin_of, worker, timeout, tables) -> tuple[dict, dict]:
    """Where both shared-memory operands of a case still read other than the model says after the second look, both
    may be misread: then neither probe's one-hot sat where the hardware read it, no first map can be trusted, and
    none can place the other's one-hot. Each operand is then probed apart from the other's addresses:

    * B in the RS form of the same instruction (A from registers: no A address enters B's probe), at its own start
      and with its start field moved past everything A's probe numbers (addresses.b_moved_on);
    * A in this form with B's one-hot where the RS probe saw the hardware read the moved B: A's numbers lie
      everywhere A may be read, none under B's one-hot, however far a misread A reaches into B's tile.

    Returns ({(id, operand): (setup, observed, note)} replacing the first looks, {(id, operand): why} for an
    operand that could not be probed apart, whose first look then says nothing about it)."""
    both = [(c, st) for c, st in cs if st.a is not None and all((c, w) in seen for w in "AB")
            and not any(np.array_equal(seen[(c, w)][1], _model(st.a if w == "A" else st.b)) for w in "AB")]
    if not both:
        return {}, {}
    why_apart = "A and B both read other than the model says, so neither first probe's one-hot surely sat where " \
                "the hardware read it"
    rs = addresses.registers_form(both[0][1]).key
    # the accumulator fragment is the instruction shape's, whether A comes from shared memory or registers
    rs_tables = {rs: tables.get(rs) or ((tables[key][0], None) if tables.get(key) is not None else None)}
    todo, moved = [], {}
    for c, st in both:
        try:
            moved[c] = addresses.b_moved_on(st)
        except addresses.ProbeImpossible:
            pass
        todo.append((("at", c), addresses.registers_form(st), "B"))
        if c in moved:
            todo.append((("moved", c), addresses.registers_form(moved[c][0]), "B"))
    from harness.contract import CompileError
    try:
        got, errors = _observe(rs, todo, cubin_of, worker, timeout, rs_tables)
    except CompileError as e:
        got, errors = {}, [{"error": f"its kernel did not compile: {e}"}]
    if errors:
        failed = "; ".join(sorted({e.get("error") or e.get("summary", "") for e in errors}))
        return {}, {(c, w): f"{why_apart}, and the probe of B in the {rs.name} form failed ({failed})"
                    for c, _ in both for w in "AB"}
    out, unsure, todo = {}, {}, []
    for c, st in both:
        out[(c, "B")] = (st, got[(("at", c), "B")][1],
                         f"{why_apart}: B was probed in the {rs.name} form (A from registers), where no A address "
                         "enters its probe")
        if c not in moved:
            unsure[(c, "A")] = f"{why_apart}, and B's start could not be moved past A's probe to probe A apart"
            continue
        st_m, shift = moved[c]
        where = got[(("moved", c), "B")][1]
        if not _placeable(where, dtypes.get(st.b.dtype).bits, st_m.size):
            unsure[(c, "A")] = (f"{why_apart}, and the hardware reads two elements of B from one place (or outside "
                                "the image), so B cannot hold a one-hot for A's probe")
            continue
        todo.append((c, replace(st_m, b=replace(st_m.b, addr=where, desc_layout=None)), "A"))
    if todo:
        again, errors = _observe(key, todo, cubin_of, worker, timeout, tables)
        for e in errors:
            failed = e.get("error") or e["summary"]
            unsure[(e["id"], "A")] = f"{why_apart}, and A's probe apart from B failed ({failed})"
        for (c, _), (_, observed, _) in again.items():
            st, shift = next(s for cid, s in cs if cid == c), moved[c][1]
            out[(c, "A")] = (st, observed, f"{why_apart}: A was probed with B's one-hot where the hardware was seen "
                                           f"to read B in the {rs.name} form, B's start moved {shift} bytes on "
                                           "(past A's numbers)")
    return out, unsure
