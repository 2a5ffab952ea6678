"""Scale-factor probe for the block-scaled kinds (mxf8f6f4, mxf4, mxf4nvf4): which stored scale factor each row of
A / column of B and each K block used, and which single edit of the scale-factor model explains a difference.

Each CTA keeps A's scale-factor tile and then B's in shared memory (datapaths.SF_TILE_BYTES each; the model puts
the factor of row / column mn and block b at sf_smem_offset(mn, b)), which tcgen05.cp copies into Tensor Memory,
where the MMA reads them. The probe launches the case's own kernel, C = 0, one K block b at a time:

    A[m, k] = B[n, k] = 1 at the first k of block b, 0 elsewhere   ->   D[m, n] = SFA_used(m, b) * SFB_used(n, b)

and numbers every byte of both tiles of every CTA: s = cta * 2 * SF_TILE_BYTES + tile * SF_TILE_BYTES + byte
(tile 0: A's, 1: B's). A pass probing A's factors puts in every byte of A's tiles the code of digit p of its
number (base 64: ue8m0 codes 2^-31 .. 2^33 without 1, ue4m3 codes 1.125 .. 256) and in every byte of B's tiles the
code of 1; a pass probing B's factors the other way round. Two digits name up to 4,096 bytes, both CTAs of a pair
included, so D says for every (row, column, block) which byte of which CTA's shared memory the factor came from,
through the copy and the MMA's read of Tensor Memory (a product of exactly 1 says: from the other operand's tile).

Explanation: the byte each product's numbered factor came from is solved, per operand's passes, for the GF(2) map
(row, column, K block) -> (byte, tile, CTA) the hardware used (harness/diagnosis/bitmaps.py) and compared with the
model's, naming the bits whose sources differ; a factor read for the wrong operand shows as bits taken from the
other index. The small catalogue (`hypotheses`: the factors of A and B exchanged, K blocks reversed / in pairs /
another scale-vector size, the scale-factor id off by 1-3 bytes, rows of a 32-lane group reversed or exchanged, the
32-row groups reversed, under cta_group::2 the peer's or the issuing CTA's factors) only names a recovered map it
reproduces bit for bit. D is read through the data path the Tensor Memory probe found (tmem_probe.placement), the
model's unless it named another.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from harness.diagnosis import single_edit  # the catalogue's words name common recovered maps
from harness.contract import ranges
from harness.families.tcgen05 import datapaths, reference as R, tmem_probe
from harness.families.tcgen05.cases import TcCase
from harness.spec import descriptors, dtypes, idesc as idesc_spec, layouts

BASE = 64  # digit base of a byte's number: two digits name 4,096 bytes (a pair's two CTAs x two 1,024-byte tiles)
DIGITS = 2
CODES = {  # scale-factor code of each digit: never the code of 1 (which marks the other tile), exact in f32 products
    "ue8m0": np.array([c for c in range(96, 161) if c != datapaths.SF_ONE["ue8m0"]]),
    "ue4m3": np.arange(datapaths.SF_ONE["ue4m3"] + 1, datapaths.SF_ONE["ue4m3"] + 1 + BASE),
}
TILES = ("A", "B")
CATALOGUE = ("A and B exchanged, K blocks reversed / in pairs / another scale-vector size, scale-factor id +1..3, "
             "rows of a 32-lane group reversed / exchanged, 32-row groups reversed, peer or issuing CTA's factors")


# ---------------------------------------------------------------------------------------------------- setup

@dataclass(frozen=True)
class SfSetup:
    """What the probe of one case needs: its probe case, the scale type and ids, and where each CTA's tiles are."""
    case: TcCase  # the probe case (C off)
    scale_type: str
    sf_id: tuple[int, int]  # (A's, B's) scale-factor ids of the instruction descriptor
    tile_start: tuple[tuple[int, int], ...]  # per CTA: (A's tile, B's tile) start byte in its image

    def __post_init__(self):
        if self.scale_type not in CODES:
            raise ValueError(f"scale type {self.scale_type!r}: one of {', '.join(CODES)}")
        if len(self.tile_start) != self.case.form.cta_group:
            raise ValueError("one pair of tile starts per CTA")

    @property
    def blocks(self) -> int:
        return datapaths.sf_blocks(self.case.form)

    @property
    def block_k(self) -> int:
        return self.case.k // self.blocks

    @property
    def rows_per_cta(self) -> int:
        return self.case.m // self.case.form.cta_group


@dataclass(frozen=True)
class SfJob:
    which: str  # 'A' or 'B': whose tiles hold the numbers
    digit: int
    block: int


def jobs_plan(st: SfSetup) -> list[SfJob]:
    return [SfJob(w, p, b) for w in TILES for p in range(DIGITS) for b in range(st.blocks)]


def _one_hot(rows: int, k: int, block_k: int, block: int) -> np.ndarray:
    """1 at the first k of K block `block` in every row, 0 elsewhere."""
    out = np.zeros((rows, k))
    out[:, block * block_k] = 1.0
    return out


def setup_and_jobs(c: TcCase, arch: str = "sm_100a") -> tuple[SfSetup, list[R.TcPrepared]]:
    """The probe of one case: its setup and one TcPrepared (a case: one CTA, or a pair) per SfJob of jobs_plan."""
    if not c.form.block_scaled:
        raise ValueError(f"kind::{c.form.kind} has no scale factors")
    pc = tmem_probe.probe_case(c)
    ones_a, ones_b = tmem_probe.unit_scales(pc)
    nb = datapaths.sf_blocks(c.form)
    preps = [R.prepare(pc, arch, R.ChosenOperands(_one_hot(pc.m, pc.k, pc.k // nb, b),
                                                  _one_hot(pc.n, pc.k, pc.k // nb, b), ones_a, ones_b))
             for b in range(nb)]
    fields = idesc_spec.decode_idesc(int(preps[0].params[0]["idesc"]), c.form.kind)["fields"]
    st = SfSetup(pc, fields["scale_type"], (fields["a_sf_id"], fields["b_sf_id"]),
                 tuple(tmem_probe.scale_tile_starts(preps[0], arch)))
    jobs = []
    for job in jobs_plan(st):
        prep = preps[job.block]
        images = [img.copy() for img in prep.images]
        for r, img in enumerate(images):
            for t, start in enumerate(st.tile_start[r]):
                end = start + datapaths.SF_TILE_BYTES
                if end > img.size:
                    raise ValueError(f"{c.id}: the scale-factor tile of CTA {r} reaches past its image")
                number = (r * len(TILES) + t) * datapaths.SF_TILE_BYTES + np.arange(datapaths.SF_TILE_BYTES)
                img[start:end] = (CODES[st.scale_type][(number // BASE ** job.digit) % BASE]
                                  if TILES[t] == job.which else datapaths.SF_ONE[st.scale_type])
        jobs.append(replace(prep, images=images))
    return st, jobs


# ---------------------------------------------------------------------------------------------------- hypotheses

@dataclass(frozen=True)
class Sources:
    """Where each factor of the product D[m, n] comes from, per operand: (cta, tile, index, byte-block) [m, n, b],
    the byte being sf_smem_offset(index, byte-block) of that CTA's tile."""
    a: tuple
    b: tuple

    def slots(self, st: SfSetup) -> tuple[np.ndarray, np.ndarray]:
        return _slot(st, *self.a), _slot(st, *self.b)


def _slot(st: SfSetup, cta, tile, index, block) -> np.ndarray:
    ok = (block >= 0) & (index >= 0) & (cta >= 0) & (cta < st.case.form.cta_group)
    byte = datapaths.sf_smem_offset(np.clip(index, 0, None), np.clip(block, 0, None))
    ok &= byte < datapaths.SF_TILE_BYTES
    s = cta * len(TILES) * datapaths.SF_TILE_BYTES + tile * datapaths.SF_TILE_BYTES + byte
    return np.where(ok, s, -1)


def model_sources(st: SfSetup) -> Sources:
    """The model: D row m (in CTA m // rows-per-CTA) takes A's factor of its local row and block b + A's id from its
    own CTA's A tile, and B's factor of column n, block b + B's id from its own CTA's B tile."""
    m, n, nb = st.case.m, st.case.n, st.blocks
    mm, nn, bb = np.meshgrid(np.arange(m), np.arange(n), np.arange(nb), indexing="ij")
    cta = mm // st.rows_per_cta
    return Sources((cta, 0 * mm, mm % st.rows_per_cta, bb + st.sf_id[0]),
                   (cta, 1 + 0 * mm, nn, bb + st.sf_id[1]))


def hypotheses(st: SfSetup) -> list[single_edit.Hypothesis]:
    """The catalogue: single edits of the model's Sources, each a Hypothesis (id, words, Sources)."""
    model = model_sources(st)
    nb, sf_id, k, bk = st.blocks, st.sf_id, st.case.k, st.block_k
    out = [single_edit.Hypothesis("sf:ab-exchanged", "the factors of A and B exchanged (A's rows read B's scale-factor "
                                  "tile, B's columns A's)",
                                  Sources((model.a[0], 1 + 0 * model.a[1], model.a[2], model.a[3]),
                                          (model.b[0], 0 * model.b[1], model.b[2], model.b[3]))),
           single_edit.Hypothesis("sf:a-reads-b-tile", "A's factors read from B's scale-factor address",
                                  Sources((model.a[0], 1 + 0 * model.a[1], model.a[2], model.a[3]), model.b)),
           single_edit.Hypothesis("sf:b-reads-a-tile", "B's factors read from A's scale-factor address",
                                  Sources(model.a, (model.b[0], 0 * model.b[1], model.b[2], model.b[3])))]

    def per_operand(ident: str, words: str, change) -> None:
        """The edit on A's factors, on B's, and on both."""
        for who, a, b in (("A", change(model.a, 0), model.b), ("B", model.a, change(model.b, 1)),
                          ("A,B", change(model.a, 0), change(model.b, 1))):
            subject = {"A": "A's", "B": "B's", "A,B": "A's and B's"}[who]
            out.append(single_edit.Hypothesis(f"sf:{ident}@{who}", words.format(X=subject), Sources(a, b)))

    def blocks(src, which, f):
        cta, tile, index, byte_block = src
        return cta, tile, index, f(byte_block - sf_id[which]) + sf_id[which]

    if nb > 1:
        per_operand("blocks-reversed", "{X} K blocks in reverse order (block b takes the factor of block "
                    f"{nb - 1}-b)", lambda s, w: blocks(s, w, lambda b: nb - 1 - b))
    if nb > 2:
        per_operand("blocks-pairs", "{X} K blocks exchanged in pairs (block b takes the factor of block b^1)",
                    lambda s, w: blocks(s, w, lambda b: b ^ 1))
    for vec in (1, 2, 4):
        if vec != nb:
            per_operand(f"scale-vec-{vec}X", f"{{X}} factors picked with scale vector {vec}X instead of {nb}X (the "
                        f"K block of k = b*{bk} read as block b*{bk}//{k // vec})",
                        lambda s, w, vec=vec: blocks(s, w, lambda b: (b * bk) // (k // vec)))
    for j in (1, 2, 3):
        per_operand(f"sf-id+{j}", f"{{X}} factors read {j} byte{'s' if j > 1 else ''} further on in Tensor Memory "
                    f"(scale-factor id {j} too large, or K block b taking block b+{j}'s factor)",
                    lambda s, w, j=j: (s[0], s[1], s[2], s[3] + j))

    def rows(src, f):
        cta, tile, index, byte_block = src
        return cta, tile, 32 * (index // 32) + f(index % 32), byte_block

    per_operand("rows-reversed", "{X} factors of the rows of each 32-lane group in reverse order (row i of a group "
                "takes row 31-i's)", lambda s, w: rows(s, lambda i: 31 - i))
    per_operand("rows^1", "{X} factors of neighbouring rows exchanged (row i takes row i^1's)",
                lambda s, w: rows(s, lambda i: i ^ 1))
    per_operand("rows^8", "{X} factors of rows i and i+8 of each 32-lane group exchanged",
                lambda s, w: rows(s, lambda i: i ^ 8))
    per_operand("rows^16", "{X} factors of rows i and i+16 of each 32-lane group exchanged",
                lambda s, w: rows(s, lambda i: i ^ 16))
    per_operand("groups-reversed", "{X} 32-row groups in reverse order (the factors' Tensor Memory columns "
                "reversed: row 32g+i takes row 32(3-g)+i's)",
                lambda s, w: (s[0], s[1], 32 * (3 - (s[2] % 128) // 32) + s[2] % 32 + 128 * (s[2] // 128), s[3]))
    if st.case.form.cta_group == 2:
        per_operand("peer-cta", "{X} factors taken from the peer CTA's Tensor Memory (each half of D uses the other "
                    "CTA's copy)", lambda s, w: (1 - s[0], s[1], s[2], s[3]))
        per_operand("issuing-cta", "{X} factors of both halves of D taken from the issuing CTA's copy",
                    lambda s, w: (0 * s[0], s[1], s[2], s[3]))
    return out


# ---------------------------------------------------------------------------------------------------- prediction

def scale_values(scale_type: str, codes) -> np.ndarray:
    return datapaths.scale_codes_to_values("mxf4nvf4" if scale_type == "ue4m3" else "mxf8f6f4", codes)


def predict(st: SfSetup, job: SfJob, slots: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """D [m, n] (as float32) of one probe launch when the factors come from these bytes (Sources.slots)."""
    out = None
    for slot in slots:
        s = slot[:, :, job.block]
        tile = (s // datapaths.SF_TILE_BYTES) % len(TILES)
        digit = (s // BASE ** job.digit) % BASE
        codes = np.where(np.asarray(TILES)[tile] == job.which, CODES[st.scale_type][digit],
                         datapaths.SF_ONE[st.scale_type])
        v = np.where(s >= 0, scale_values(st.scale_type, np.where(s >= 0, codes, 0)), np.nan)
        out = v if out is None else out * v
    with np.errstate(over="ignore", invalid="ignore"):
        return out.astype(np.float32)


def reproduces(st: SfSetup, d_values: np.ndarray, sources: Sources) -> bool:
    """Do these sources predict every D value of the probe's launches (jobs_plan order) bit for bit?"""
    slots = sources.slots(st)
    return all(np.array_equal(predict(st, j, slots), d_values[i].astype(np.float32))
               for i, j in enumerate(jobs_plan(st)))


def decode_digits(st: SfSetup, d: np.ndarray) -> np.ndarray:
    """D values of one launch -> the digit of the one numbered factor in each product: 0..63, -2 for a product of
    exactly 1 (no numbered factor), -1 for anything else."""
    d = np.asarray(d, np.float64)
    values = scale_values(st.scale_type, CODES[st.scale_type])
    out = np.full(d.shape, -1, np.int64)
    for digit, v in enumerate(values):
        out[d == v] = digit
    out[d == 1.0] = -2
    return out


def observe(st: SfSetup, d_values: np.ndarray) -> dict[str, np.ndarray]:
    """D of every job [jobs, m, n] (jobs_plan order) -> {'A', 'B': number [m, n, blocks] of the byte the numbered
    factor of each product came from; -2: no factor was numbered (both from the other operand's tiles), -1: the
    digits do not name one byte}."""
    digits: dict = {}
    for i, job in enumerate(jobs_plan(st)):
        digits.setdefault(job.which, {}).setdefault(job.block, []).append(decode_digits(st, d_values[i]))
    out = {}
    for w in TILES:
        slot = np.zeros((st.case.m, st.case.n, st.blocks), np.int64)
        for b, per_digit in digits[w].items():
            dig = np.stack(per_digit)  # [DIGITS, m, n]
            number = sum(np.where(dig[p] >= 0, dig[p], 0) * BASE ** p for p in range(DIGITS))
            slot[:, :, b] = np.where(np.all(dig == -2, axis=0), -2, np.where(np.all(dig >= 0, axis=0), number, -1))
        out[w] = slot
    return out


def expected(st: SfSetup) -> dict[str, np.ndarray]:
    """The slots observe() gives for a device that reads the factors as the model says."""
    sa, sb = model_sources(st).slots(st)
    return {"A": sa, "B": sb}


def describe_slot(st: SfSetup, s: int) -> str:
    if s == -2:
        return "the other operand's tile"
    if s < 0:
        return "no single byte"
    cta, rest = divmod(int(s), len(TILES) * datapaths.SF_TILE_BYTES)
    tile, byte = divmod(rest, datapaths.SF_TILE_BYTES)
    return (f"CTA {cta} " if st.case.form.cta_group == 2 else "") + f"{TILES[tile]}'s tile byte {byte}"


# ---------------------------------------------------------------------------------------------------- record

def record(st: SfSetup, c: TcCase, d_values: np.ndarray, png_dir: Path | None = None, caveat: str = "") -> dict:
    """D of the probe's launches [jobs, m, n] -> a 'diagnosis' record with probe 'scale-factors'."""
    obs, exp = observe(st, d_values), expected(st)
    # a factor is wrong when the product of some (row, column) took another byte for it than the model says
    wrong_a = np.any(obs["A"] != exp["A"], axis=1)  # [m, blocks]
    wrong_b = np.any(obs["B"] != exp["B"], axis=0)  # [n, blocks]
    total = wrong_a.size + wrong_b.size
    n_wrong = int(wrong_a.sum() + wrong_b.sum())
    rec = {"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "SFA,SFB", "probe": "scale-factors",
           "elements": total, "wrong": n_wrong}
    if caveat:
        rec["caveat"] = caveat
    model = model_sources(st)
    if not n_wrong and reproduces(st, d_values, model):
        rec.update(status="pass", summary=f"scale factors: every row of A and column of B took, in every one of its "
                                          f"{st.blocks} K block{'s' if st.blocks > 1 else ''}, the factor the model's "
                                          f"scale-factor layout and copy give ({st.scale_type}, sf ids {st.sf_id})")
        return rec
    first = []
    for who, wrong, src in (("A", wrong_a, obs["A"]), ("B", wrong_b, obs["B"])):
        for x, b in list(zip(*np.nonzero(wrong)))[:3]:
            at = (x, 0, b) if who == "A" else (0, x, b)
            first.append({"operand": who, "row" if who == "A" else "col": int(x), "block": int(b),
                          "expected": describe_slot(st, exp[who][at]), "observed": describe_slot(st, src[at])})
    rec["first"] = first
    if wrong_a.any():
        rec["rows"] = ranges(np.unique(np.nonzero(wrong_a)[0]))
    if wrong_b.any():
        rec["cols"] = ranges(np.unique(np.nonzero(wrong_b)[0]))
    model_slots = model.slots(st)
    cands = [h for h in hypotheses(st) if not _same(h.prediction.slots(st), model_slots)]
    named = single_edit.reproducing(cands, lambda src: reproduces(st, d_values, src))
    differ = (f"{n_wrong} of {total} factors (row or column x K block) taken from elsewhere"
              + (f": A rows {rec['rows']}" if "rows" in rec else "") + (f"; B columns {rec['cols']}" if "cols" in rec
                                                                       else ""))
    rec["status"] = "fail"
    said = map_reading(st, obs, exp)
    rec.update(hardware_map=said["hardware_map"], model_map=said["model_map"], roles=said["roles"])
    rec["summary"] = f"{said['sentence']} ({differ})"
    if named:  # the catalogue's words name this recovered map
        rec.update(edit=named[0].id, explanation=named[0].words, equivalent_edits=[h.id for h in named[1:]])
        rec["summary"] += f"; that is, {named[0].words}"
    else:
        rec["explanation"] = None
    if caveat:
        rec["summary"] += f" ({caveat})"
    if png_dir is not None:
        rec["png"] = _png(st, c, obs, exp, rec, Path(png_dir))
    return rec


def coding(st: SfSetup):
    """A product (row of D, column of D, K block) -> the byte its numbered factor came from (byte of the tile,
    tile, CTA). The model takes A's from the row's bits and B's from the column's; a factor read for the wrong
    operand shows as bits taken from the other index."""
    from harness.diagnosis import bitmaps
    out = (("byte", datapaths.SF_TILE_BYTES), ("tile", len(TILES)))
    out += (("cta", 2),) if st.case.form.cta_group == 2 else ()
    return bitmaps.Coding((("row", st.case.m), ("col", st.case.n), ("block", st.blocks)), out)


def _solve(st: SfSetup, who: str, slots: np.ndarray):
    """The affine map (row, col, block) -> byte of the numbered factor of one operand's passes, from slots
    [m, n, blocks]; None when no product named a byte."""
    from harness.diagnosis import bitmaps
    cd = coding(st)
    mm, nn, bb = np.meshgrid(np.arange(st.case.m), np.arange(st.case.n), np.arange(st.blocks), indexing="ij")
    ok = slots >= 0
    if not ok.any():
        return None
    return bitmaps.recover(cd, cd.places(mm, nn, bb), np.where(ok, slots, 0), ok)


def map_reading(st: SfSetup, obs: dict, exp: dict) -> dict:
    """One sentence for both operands' factor maps: for each that differs, the recovered map beside the model's."""
    from harness.diagnosis import bitmaps
    parts, roles, hw_maps, model_maps = [], [], {}, {}
    for who in TILES:
        hw, model = _solve(st, who, obs[who]), _solve(st, who, exp[who])
        if hw is None:
            parts.append(f"{who}'s factors: no product named a byte of a numbered tile")
            continue
        said = bitmaps.verdict(f"{who}'s factors", hw, model)
        hw_maps[who], model_maps[who] = said["hardware_map"], said["model_map"]
        if not said["same"] or not np.array_equal(obs[who], exp[who]):
            parts.append(said["sentence"] if not said["same"] else
                         f"{who}'s factors: some products took no single numbered byte")
            roles += [f"{who}'s {r}" for r in said["roles"]]
    return {"sentence": "scale factors: " + "; ".join(parts), "roles": roles, "hardware_map": hw_maps,
            "model_map": model_maps}


def _same(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def _png(st: SfSetup, c: TcCase, obs, exp, rec: dict, png_dir: Path) -> str:
    """Expected vs observed source (CTA and tile; byte) of the factor of every A row and B column per K block (A's
    as the first column of D used them, B's as the first row)."""
    from harness.diagnosis.pictures import safe_name, wrap_text

    def split(a_slots, b_slots):
        s = np.concatenate([a_slots, b_slots])
        where = np.where(s >= 0, s // datapaths.SF_TILE_BYTES, s)
        return where, np.where(s >= 0, s % datapaths.SF_TILE_BYTES, s)
    path = png_dir / f"{safe_name(c.id)}-scale-factors.png"
    try:
        from harness.diagnosis import pictures
        png_dir.mkdir(parents=True, exist_ok=True)
        pictures.ownership_png(split(exp["A"][:, 0], exp["B"][0]), split(obs["A"][:, 0], obs["B"][0]), path,
                               f"{c.id}  scale-factor probe\n{wrap_text(rec['summary'])}",
                               rowword="CTA*2 + tile (0 A, 1 B)", colword="byte of the tile", xlabel="K block",
                               ylabel=f"A rows 0-{c.m - 1}, then B columns 0-{c.n - 1}", unit="factors")
        return str(path)
    except ImportError as e:
        return f"not drawn: {e}"


# ---------------------------------------------------------------------------------------------------- diagnose

def diagnose(kernel, cases, cubin_path, worker, timeout: float = 30.0, png_dir=None, tmem_records=None,
             max_png: int = 8) -> list[dict]:
    """'scale-factors' records for (failing, not control) block-scaled cases of one kernel. tmem_records: the
    'tmem-d' records of these cases by id: D is read through the placement they name (the model's otherwise)."""
    from harness.families.tcgen05 import kernel as tk
    from harness.contract import LaunchFailed
    tmem_records = tmem_records or {}
    out, plan, jobs = [], [], []
    for c in cases:
        try:
            st, js = setup_and_jobs(c, str(kernel.arch))
        except (ValueError, layouts.LayoutError, descriptors.DescriptorError) as e:
            out.append({"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "SFA,SFB",
                        "probe": "scale-factors", "status": "not-probed", "summary": str(e)})
            continue
        plan.append((c, st, len(jobs), len(js)))
        jobs += js
    if not jobs:
        return out
    try:
        res = worker.run(str(cubin_path), kernel.name, tk.pack(jobs), timeout)
    except LaunchFailed as e:
        return out + [{"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "SFA,SFB",
                       "probe": "scale-factors", "status": e.status, "error": str(e)} for c, *_ in plan]
    cg = kernel.form.cta_group
    tm, status = np.asarray(res["tmem_out"]), np.asarray(res["status"])
    pngs = 0
    for c, st, first, count in plan:
        ctas = slice(first * cg, (first + count) * cg)
        if np.any(status[ctas]):
            out.append({"type": "diagnosis", "family": "tcgen05", "id": c.id, "operand": "SFA,SFB",
                        "probe": "scale-factors", "status": "timeout",
                        "error": "a probe CTA's MMA never completed within the spin limit"})
            continue
        trec = tmem_records.get(c.id)
        cta, lane, col, half = tmem_probe.placement(c, trec)
        raw = tm[ctas].reshape(count, cg, 128, -1)
        d = dtypes.get("f32").from_bits(raw[:, cta, lane, col].astype(np.uint64))
        caveat = ""
        if trec is not None and trec.get("status") == "fail":
            caveat = (f"D read through {trec['explanation']}, as the Tensor Memory probe found"
                      if trec.get("explanation") else
                      "D read through the model's data path, which the Tensor Memory probe found wrong and could not "
                      "name: this map is unreliable")
        rec = record(st, c, d, png_dir if png_dir is not None and pngs < max_png else None, caveat)
        pngs += str(rec.get("png", "")).endswith(".png")
        out.append(rec)
    return out
