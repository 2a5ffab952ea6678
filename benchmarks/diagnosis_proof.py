"""Proof that the diagnosis names a wrong model by the map the hardware used (issue 56), on the GPU (the truth).

Each plant is a plausible bug put into this process's model -- the harness's own layout, descriptor and fragment
code, patched for the duration -- never into the hardware:

    base-offset-sign   the swizzle adds the matrix base offset instead of subtracting it
    sbo+16, sbo+16-rs  B's descriptor carries SBO 16 bytes too large (an SS and an RS form)
    64B-as-128B        the descriptor encoder codes a 64B swizzle as 128B's
    d-rowhalf-colpair  the accumulator fragment (f32) with its row-half and column-pair slot bits exchanged
    a-rowhalf-khalf    the A fragment (f16, k16) with its row-half and k-half slot bits exchanged
    random-d-<i>, random-a-<i>, random-b-<i>
                       the model's D fragment / A fragment / B address map composed with a random invertible GF(2)
                       affine map of the element's index bits, drawn from --seed (printed)

For each plant the ordinary cases of its kernel are prepared here with the planted model and run on a GPU worker
through the engine's own run_isolated, and the first failing case is diagnosed with the wgmma family's `diagnose`
(fragment probes, then address probes decoded through the fragments the hardware was seen to use). One JSON line per
plant: failing cases, the operands blamed, the blamed record's sentence and recovered map, and whether the plant was
named correctly with no other operand blamed. A baseline per kernel (no plant) must pass every case and probe.

    python3 benchmarks/diagnosis_proof.py --out "$OUT/diagnosis-proof.jsonl"            # H100
    python3 benchmarks/diagnosis_proof.py --simulated --out /tmp/diagnosis-proof.jsonl  # CPU: simulated wgmma device

Exit 0 when every plant was named and the baselines are clean, 1 otherwise, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from harness.diagnosis import affine  # noqa: E402
from harness.families.wgmma import fragments_probe as FP  # noqa: E402
from harness.families import wgmma as W  # noqa: E402
from harness.families.wgmma import cases as C, forms, kernel as wk, readback  # noqa: E402
from harness.run.engine import run_isolated  # noqa: E402
from harness.run.worker import GpuWorker  # noqa: E402
from harness.spec import fragments, layouts  # noqa: E402

SS = forms.KernelKey("f16", 64, "f32", "SS")
RS = forms.KernelKey("f16", 64, "f16", "RS")


def _clear():
    for f in (fragments.wgmma_d_fragment, fragments.wgmma_a_fragment, readback._d_owner, readback._d_gather,
              layouts.element_bit_addresses, layouts.footprint, layouts.is_distinct):
        if hasattr(f, "cache_clear"):
            f.cache_clear()
    layouts.WORD_INDEX_CACHE.clear()


@contextlib.contextmanager
def patched(module, name: str, value):
    orig = getattr(module, name)
    setattr(module, name, value)
    _clear()
    try:
        yield
    finally:
        setattr(module, name, orig)
        _clear()


# ---------------------------------------------------------------------------------------------------- plants

def _random_invertible(n: int, rng) -> tuple[np.ndarray, int]:
    while True:
        m = rng.integers(0, 2, size=(n, n))
        c = int(rng.integers(0, 1 << n))
        got = affine.solve(np.arange(1 << n), _apply(m, c, np.arange(1 << n)))
        if np.unique(_apply(m, c, np.arange(1 << n))).size == 1 << n and (c or not np.array_equal(m, np.eye(n))):
            assert isinstance(got, affine.AffineMap)
            return m, c


def _apply(m: np.ndarray, c: int, x: np.ndarray) -> np.ndarray:
    y = np.full(np.shape(x), c, np.int64)
    for j in range(m.shape[0]):
        for i in range(m.shape[1]):
            if m[j, i]:
                y ^= ((np.asarray(x) >> i) & 1) << j
    return y


def _slot_bit_swap(i: int, j: int):
    def swap(e):
        bi, bj = (e >> i) & 1, (e >> j) & 1
        return e ^ ((bi ^ bj) << i) ^ ((bi ^ bj) << j)
    return swap


def _fragment_plant(operand: str, slot_perm=None, element_map=None):
    """The model's D (or A) fragment with its slots permuted (slot e holds what slot slot_perm(e) held) or its
    elements mapped ((row, col) -> element_map(row, col))."""
    name = "wgmma_d_fragment" if operand == "D" else "wgmma_a_fragment"
    orig = getattr(fragments, name)

    def edited(*args):
        f = orig(*args)
        per = 32 // f.bits
        row, col = FP.as_slots(f, FP.Slots(operand, f.row.shape[1], f.bits, f.regs_per_thread))
        if slot_perm is not None:
            e = slot_perm(np.arange(row.shape[1]))
            row, col = row[:, e], col[:, e]
        if element_map is not None:
            row, col = element_map(row, col)
        slot = f.reg * per + f.shift // f.bits
        t = np.arange(128)[:, None]
        return fragments.Fragment(row[t, slot], col[t, slot], f.reg, f.shift, f.bits, f.regs_per_thread)
    return patched(fragments, name, edited)


def _swizzle_sign_plant():
    orig = layouts.swizzle_address

    def flipped(addr, swizzle, base_offset=0):
        return orig(addr, swizzle, -base_offset & 7)
    return patched(layouts, "swizzle_address", flipped)


def _encoder_plant(change):
    orig = wk.encode_desc

    def encode(layout):
        return orig(change(layout))
    return patched(wk, "encode_desc", encode)


def _desc_b_plant(delta_field: int, shift: int):
    """B's descriptor as packed for the launch (and for every probe launch: they all go through kernel.pack) with
    one field moved: +delta_field in the field at bit `shift` (SBO: bit 32, in 16-byte units)."""
    orig = wk.pack

    def pack(preps):
        inp = orig(preps)
        inp.params["desc_b"] = inp.params["desc_b"] + np.uint64(delta_field << shift)
        return inp
    return patched(wk, "pack", pack)


def _b_address_plant(target: layouts.SmemLayout, q, c):
    """The model's address map of one layout (B's) read through Q: element [r, k] where the true map has Q(r, k)."""
    orig = layouts.element_bit_addresses
    rb = (target.rows - 1).bit_length()

    def planted(lay):
        addr = orig(lay)
        if lay != target:
            return addr
        r = np.arange(lay.rows)[:, None] | (np.arange(lay.cols)[None, :] << rb)
        y = _apply(q, c, r)
        out = addr[y & ((1 << rb) - 1), y >> rb]
        out.flags.writeable = False
        return out
    return patched(layouts, "element_bit_addresses", planted)


# ---------------------------------------------------------------------------------------------------- checks

def _blamed(recs) -> list[str]:
    """Operands a record says are wrong ('inconclusive' says that probe's own inputs were misread: no blame)."""
    return sorted({r["operand"] for r in recs if r.get("status") == "fail"})


def _rec(recs, operand, probe=None):
    return next((r for r in recs if r["operand"] == operand and r.get("status") == "fail"
                 and (probe is None or r.get("probe") == probe)), None)


def check_fields(want):
    def check(recs, case):
        r = _rec(recs, "B")
        got = (r or {}).get("recovered", {}).get("field_differences", [])
        return r is not None and all(any(w in g for g in got) for w in want(case)), r
    return check


def check_roles(operand, roles):
    def check(recs, case):
        r = _rec(recs, operand)
        return r is not None and r.get("roles") == roles, r
    return check


def check_map(operand, true_table_map):
    """The recovered map is exactly the unplanted model's (which the baseline shows the hardware uses)."""
    def check(recs, case):
        r = _rec(recs, operand)
        if r is None:
            return False, r
        hw = r.get("hardware_map") or (r.get("recovered") or {}).get("hardware_map") or {}
        want = true_table_map(case)
        return hw.get("columns") == list(want.columns) and hw.get("constant") == want.constant, r
    return check


def _true_d_map(key):
    return lambda case: FP.index_map(FP.d_slots(key), key.n, FP.model_d(key))


def _true_a_map(case):
    return FP.index_map(FP.a_slots("f16"), RS.k, FP.model_a("f16"))


def _true_b_map(case):
    from harness.diagnosis import address_fit
    from harness.families.wgmma import addresses
    st = addresses.setup_of(case)
    return address_fit.index_map(st.b.addr)


def _b_desc(case) -> layouts.SmemLayout:
    from harness.families.wgmma import addresses
    return addresses.setup_of(case).b.desc_layout


def _negated_bo(lay: layouts.SmemLayout) -> int:
    """The base offset the flipped sign reads as: -bo modulo the swizzle's phase bits (a 64B swizzle has two)."""
    b = layouts.SWIZZLE_BMS[lay.swizzle][0]
    return -lay.base_offset & ((1 << b) - 1)


def plan_of(seed: int, n_random: int):
    """(name, key, operand blamed, plant context factory, check, cases filter)."""
    rng = np.random.default_rng(seed)
    out = [
        ("base-offset-sign", SS, "B", _swizzle_sign_plant,
         check_fields(lambda c: [f"base offset {_b_desc(c).base_offset}, model {_negated_bo(_b_desc(c))}"]),
         "base-offset"),
        ("sbo+16", SS, "B", lambda: _desc_b_plant(1, 32),
         check_fields(lambda c: [f"SBO {_b_desc(c).sbo + 16}, model {_b_desc(c).sbo}"]), "sbo"),
        ("sbo+16-rs", RS, "B", lambda: _desc_b_plant(1, 32),  # A in registers: the fragment probes go inconclusive
         check_fields(lambda c: [f"SBO {_b_desc(c).sbo + 16}, model {_b_desc(c).sbo}"]), "sbo"),
        ("64B-as-128B", SS, "B", lambda: _encoder_plant(
            lambda lay: lay.moved(swizzle="128B") if lay.swizzle == "64B" else lay),
         check_fields(lambda c: ["swizzle XORs bits 7-9 into 4-6 (Swizzle<3,4,3>, 128B), model XORs bits 7-8 into "
                                 "4-5 (Swizzle<2,4,3>, 64B)"]), "64B"),
        ("d-rowhalf-colpair", SS, "D", lambda: _fragment_plant("D", _slot_bit_swap(0, 1)),
         check_roles("D", ["row bit 3 comes from register bit 1; the model takes it from register bit 0",
                           "col bit 0 comes from register bit 0; the model takes it from register bit 1"]), None),
        ("a-rowhalf-khalf", RS, "A", lambda: _fragment_plant("A", _slot_bit_swap(1, 2)),
         check_roles("A", ["row bit 3 comes from register bit 0; the model takes it from register bit 1",
                           "k bit 3 comes from register bit 1; the model takes it from register bit 0"]), None),
    ]
    for i in range(n_random):
        qd, cd = _random_invertible(6 + 6, rng)
        out.append((f"random-d-{i}", SS, "D",
                    lambda q=qd, c=cd: _fragment_plant("D", element_map=lambda r, k: _split(_apply(q, c, r | k << 6))),
                    check_map("D", _true_d_map(SS)), None))
        qa, ca = _random_invertible(6 + 4, rng)
        out.append((f"random-a-{i}", RS, "A",
                    lambda q=qa, c=ca: _fragment_plant("A", element_map=lambda r, k: _split(_apply(q, c, r | k << 6))),
                    check_map("A", _true_a_map), None))
        qb, cb = _random_invertible(6 + 4, rng)
        out.append((f"random-b-{i}", SS, "B", ("b-address", qb, cb), check_map("B", _true_b_map), "affine-b"))
    return out


def _split(y):
    return y & 63, y >> 6


# ---------------------------------------------------------------------------------------------------- running

def cubins(keys, simulated: bool) -> dict:
    if simulated:
        return {k: f"/nonexistent/simulated/{k.name}.cubin" for k in keys}
    from harness.run import compile as nvrtc
    got = nvrtc.compile_many([nvrtc.CompileJob(k.name, wk.source(k), "sm_90a") for k in keys])
    return {k: str(c.cubin_path) for k, c in zip(keys, got)}


def case_pool(key, which: str | None, max_cases: int) -> list:
    if which == "base-offset":
        from harness.experiments import probes
        (_, cs), = probes.work("base-offset")
        # cases where the sign matters: -bo and bo differ modulo the swizzle's 2^B phases (not 32B's two)
        def matters(lay):
            b = layouts.SWIZZLE_BMS[lay.swizzle][0]
            return (-lay.base_offset) % (1 << b) != lay.base_offset % (1 << b)
        return [c for c in cs if matters(c.b.layout)][:max_cases]
    cs = [c for c in C.cases_for_key(key, ("exact",), False)]
    if which == "sbo":
        cs = [c for c in cs if c.b.layout.major == "K" and (c.a is None or c.a.layout.swizzle == "none")]
    elif which == "64B":
        cs = [c for c in cs if c.b.layout.swizzle == "64B" and c.a.layout.swizzle != "64B"]
    elif which == "affine-b":
        from harness.families.wgmma import addresses
        cs = [c for c in cs if all(isinstance(affine.solve(np.arange(op.addr.size), op.addr.T.ravel()),
                                              affine.AffineMap)
                                   for op in (addresses.setup_of(c).a, addresses.setup_of(c).b))][:1]
    return cs[:max_cases]


def run_one(name, key, operand, plant, check, cases, cubin_of, worker, timeout, png_dir, log) -> dict:
    kernel = W.FAMILY.kernel_of(key)
    t = time.time()
    if isinstance(plant, tuple):  # the B address plant needs the case's B layout
        from harness.families.wgmma import addresses
        _, q, c = plant
        target = addresses.setup_of(cases[0]).b.desc_layout
        ctx = _b_address_plant(target, q, c)
    else:
        ctx = plant() if plant is not None else contextlib.nullcontext()
    with ctx:
        # a planted model may refuse some cases outright (a tile it places past its own image): those are counted,
        # the others run
        from harness.families.wgmma import reference
        kept = []
        for c in cases:
            try:
                reference.prepare(c)
                kept.append(c)
            except (layouts.LayoutError, ValueError):
                pass
        refused, cases = len(cases) - len(kept), kept
        if not cases:
            raise RuntimeError(f"the planted model refuses all {refused} cases")
        launch, expectations = W.FAMILY.prepare(kernel, cases)
        recs = run_isolated(worker, kernel, expectations, launch, cubin_of(key), timeout, log)
        failing = [r for r in recs if r["status"] != "pass"]
        by_id = {c.id: c for c in cases}
        probe = by_id[failing[0]["id"]] if failing else cases[0]
        diag = W.FAMILY.diagnose(kernel, [probe], cubin_of(key), worker, timeout,
                                 png_dir / name if png_dir is not None else None)
    blamed = _blamed(diag)
    out = {"plant": name, "kernel": key.name, "case": probe.id, "cases": len(cases), "refused": refused,
           "failing": len(failing), "blamed": blamed, "seconds": None}
    if plant is None:
        out["named"] = not failing and all(r.get("status") == "pass" for r in diag)
        out["sentences"] = [r.get("summary") for r in diag if r.get("status") != "pass"]
    else:
        ok, r = check(diag, probe)
        out.update(expected_operand=operand, named=bool(ok and failing and blamed == [operand]),
                   sentence=(r or {}).get("summary"), roles=(r or {}).get("roles"),
                   recovered=(r or {}).get("recovered") or {k: (r or {}).get(k) for k in ("hardware_map",
                                                                                          "model_map")},
                   other_sentences=[x.get("summary") for x in diag if x.get("status") != "pass" and x is not r])
    out["seconds"] = round(time.time() - t, 2)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON-lines file (its folder also gets the log-free PNG tar)")
    ap.add_argument("--seed", type=int, default=None, help="seed of the random plants (default: drawn, printed)")
    ap.add_argument("--random", type=int, default=2, help="random plants of each kind (D, A, B addresses)")
    ap.add_argument("--max-cases", type=int, default=48, help="ordinary cases per plant")
    ap.add_argument("--simulated", action="store_true", help="run on the simulated wgmma device (CPU)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--budget-s", type=float, default=150.0,
                    help="stop planting after this many seconds (plants left count as not named)")
    ap.add_argument("--png", action="store_true", help="draw the probes' pictures into <out stem>-png.tar.gz")
    args = ap.parse_args(argv)
    if args.random < 0 or args.max_cases < 1 or args.budget_s <= 0 or args.timeout <= 0:
        print("diagnosis_proof: --random must be >= 0, --max-cases >= 1, --budget-s and --timeout > 0",
              file=sys.stderr)
        return 2
    if not args.simulated:  # one line and a non-zero exit before anything is compiled or launched
        from harness.run import gpu
        reason = gpu.skip_reason("sm_90a")
        if reason:
            print(f"diagnosis_proof: {reason} (--simulated runs it on the CPU)", file=sys.stderr)
            return 1
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % (1 << 32))
    print(f"seed {seed} (rerun the random plants with --seed {seed})", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png_dir = out.parent / f"{out.stem}-png" if args.png else None
    t0 = time.time()
    keys = [SS, RS, FP.sibling(RS)]
    paths = cubins(keys, args.simulated)
    print(f"compiled {len(keys)} kernels in {time.time() - t0:.1f}s", flush=True)
    plan = [("baseline", k, None, None, None, None) for k in (SS, RS)]
    plan.append(("baseline-base-offset", SS, None, None, None, "base-offset"))  # the base-offset plant's cases
    plan += plan_of(seed, args.random)
    worker = GpuWorker(0, "tests.simulated.wgmma_device" if args.simulated else "harness.run.launch")
    worker.start()
    ok = True
    try:
        with out.open("w") as fh:
            fh.write(json.dumps({"seed": seed, "random": args.random, "simulated": args.simulated}) + "\n")
            for name, key, operand, plant, check, pool in plan:
                if time.time() - t0 > args.budget_s:
                    rec = {"plant": name, "kernel": key.name, "named": False,
                           "error": f"not run: past the {args.budget_s:g} s budget"}
                else:
                    cases = case_pool(key, pool, args.max_cases)
                    try:
                        rec = run_one(name, key, operand, plant, check, cases, paths.__getitem__, worker,
                                      args.timeout, png_dir, lambda m: print(m, flush=True))
                    except Exception as e:  # one plant's crash is its record, not the end of the proof
                        rec = {"plant": name, "kernel": key.name, "named": False,
                               "error": f"{type(e).__name__}: {e}"}
                        if name.startswith("baseline"):  # the worker or the kernels are unusable: stop here
                            fh.write(json.dumps(rec, default=str) + "\n")
                            print(f"BAD {name}: {rec['error']}; no plant run", flush=True)
                            return 1
                fh.write(json.dumps(rec, default=str) + "\n")
                fh.flush()
                ok &= bool(rec.get("named"))
                print(f"{'OK ' if rec.get('named') else 'BAD'} {name} {key.name}: {rec.get('failing', '-')}/"
                      f"{rec.get('cases', '-')} fail; blamed {rec.get('blamed')}; "
                      f"{rec.get('sentence') or rec.get('error') or rec.get('sentences')} ({rec.get('seconds')}s)",
                      flush=True)
    finally:
        worker.close()
    if png_dir is not None and png_dir.exists():
        with tarfile.open(out.parent / f"{out.stem}-png.tar.gz", "w:gz") as tar:
            tar.add(png_dir, arcname=png_dir.name)
        import shutil
        shutil.rmtree(png_dir)
    print(f"{'every plant named' if ok else 'NOT every plant named'}; seed {seed}; {time.time() - t0:.0f}s; {out}",
          flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
