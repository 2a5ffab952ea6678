"""desc, idesc, zmask, layout: the spec's models on the command line, thin shells over harness.api (encode or
decode a descriptor and name the rules it breaks; show where a canonical tile's elements live). No GPU, no
compiler."""
from __future__ import annotations

import json
from dataclasses import asdict

from harness import api
from harness.cli.common import UsageError, fill, given, integer, out_file, show
from harness.enums import Arch, ExitCode, Major, Swizzle
from harness.spec import idesc, layouts as L


def _report_decoded(dec: api.Decoded, title: str, as_json: bool, width: int, named: dict) -> int:
    """Print a descriptor as the API decoded it, or refused it (its fields as given), with the spec rules it
    breaks; exit 1 if it breaks any. `named`: what the JSON of a decoded value names before it (its arch or kind)."""
    info = {"value": dec.value, "fields": dec.fields, "problems": list(dec.problems)}
    if dec.refused:  # as the command has always printed a refused value: fields aligned at 18, no `named`
        lines = [f"{title} {dec.value or '(not encodable)'}"] + [f"  {k:<18} {v}" for k, v in dec.fields.items()]
    else:
        info = {**named, **info}
        lines = [f"{title} {dec.value}"] + [f"  {k:<{width}} {v}" for k, v in dec.fields.items()]
    lines += [f"  problem: {p}" for p in dec.problems] or ["  (no spec violations)"]
    show(info, as_json, "\n".join(lines))
    return ExitCode.FAILED if dec.problems else ExitCode.OK


# ---------------------------------------------------------------------------------------------------- desc

DESC_DEFAULTS = {"start": None, "lbo": None, "sbo": None, "swizzle": "none", "base_offset": 0, "lbo_mode": "relative"}


def cmd_desc(a) -> int:
    if a.decode is not None:
        extra = given(a, DESC_DEFAULTS)
        if extra:
            raise UsageError(f"desc: --decode takes no encode flag ({', '.join(extra)}); give one or the other")
        if not 0 <= a.decode < 1 << 64:
            raise UsageError(f"desc: --decode {a.decode:#x} does not fit the 64-bit descriptor")
    else:
        fill(a, DESC_DEFAULTS)
        missing = [n for n in ("start", "lbo", "sbo") if getattr(a, n) is None]
        if missing:
            raise UsageError(f"desc: give --{', --'.join(missing)} (or --decode VALUE)")
        if a.arch == "sm_90a" and a.lbo_mode != "relative":
            raise UsageError("desc: --lbo-mode absolute is a tcgen05 (sm_103a) mode, not sm_90a")
    if a.major is not None and a.kind is None:
        raise UsageError("desc: --major says how the operand of --kind KIND is laid out; give --kind too")
    if a.kind is not None and a.arch == "sm_90a":
        raise UsageError("desc: --kind names a tcgen05 .kind (sm_100a / sm_103a), not an sm_90a operand")
    if a.decode is not None:
        dec = api.decode_smem_descriptor(a.decode, a.arch, a.kind, a.major)
    else:
        d = api.SmemDescriptor(a.arch, a.start, a.lbo, a.sbo, a.swizzle, a.base_offset, a.lbo_mode)
        dec = api.validate_smem_descriptor(d, a.kind, a.major)
    return _report_decoded(dec, f"{a.arch} shared-memory matrix descriptor", a.json, 22, {"arch": a.arch})


IDESC_DEFAULTS = {"atype": None, "btype": None, "dtype": None, "m": None, "n": None, "transpose_a": False,
                  "transpose_b": False, "negate_a": False, "negate_b": False, "sparse": False, "saturate": False,
                  "k96": False, "ws": False, "sparsity_selector": 0, "max_shift": 0, "scale_type": "ue8m0",
                  "a_sf_id": 0, "b_sf_id": 0, "cta_group": 1}


def cmd_idesc(a) -> int:
    if a.decode is not None:
        extra = [f for f in given(a, IDESC_DEFAULTS) if f not in ("--cta-group", "--ws")]
        if extra:
            raise UsageError(f"idesc: --decode takes no encode flag ({', '.join(extra)}); give one or the other")
        if not 0 <= a.decode < 1 << 32:
            raise UsageError(f"idesc: --decode {a.decode:#x} does not fit the 32-bit instruction descriptor")
        ws = True if a.ws else None  # not in the value: only a given --ws is known
        dec = api.decode_instr_descriptor(a.decode, a.kind, a.cta_group, ws, a.arch, a.scale_vec or "",
                                          a.swizzle_a, a.swizzle_b)
    else:
        if a.scale_type is not None and a.kind not in idesc.BLOCK_SCALED:
            raise UsageError(f"idesc: --scale-type is for the block-scaled kinds ({', '.join(idesc.BLOCK_SCALED)}), "
                             f"not .kind::{a.kind}")
        fill(a, IDESC_DEFAULTS)
        missing = [n for n in ("atype", "btype", "m", "n") if getattr(a, n) is None]
        if missing:
            raise UsageError(f"idesc: give --{', --'.join(missing)} (or --decode VALUE)")
        d = api.InstrDescriptor(a.kind, a.atype, a.btype, a.dtype or api.default_accumulator_dtype(a.kind), a.m, a.n,
                                a.transpose_a, a.transpose_b, a.negate_a, a.negate_b, a.sparse, a.sparsity_selector,
                                a.saturate, a.max_shift, a.scale_type, a.a_sf_id, a.b_sf_id, a.k96, a.cta_group, a.ws,
                                a.scale_vec or "")
        dec = api.validate_instr_descriptor(d, a.arch, a.swizzle_a, a.swizzle_b)
    return _report_decoded(dec, f"tcgen05 instruction descriptor .kind::{a.kind}", a.json, 18, {"kind": a.kind})


ZMASK_DEFAULTS = {"start_count": [0, 0, 0, 0], "first_span": [0, 0, 0, 0], "skip_span": 0, "use_span": 0,
                  "shift": 0, "all_zero": None}


def cmd_zmask(a) -> int:
    legal = api.zero_mask_legal_n(a.m)
    if a.n not in legal:
        step = legal[1] - legal[0]
        listing = (f"{legal[0]}..{legal[-1]} step {step}" if all(y - x == step for x, y in zip(legal, legal[1:]))
                   else ", ".join(map(str, legal)))
        raise UsageError(f"zmask: --n {a.n}: not an N of tcgen05.mma with M = {a.m} (legal N: {listing})")
    if a.decode is not None:
        extra = given(a, ZMASK_DEFAULTS)
        if extra:
            raise UsageError(f"zmask: --decode takes no encode flag ({', '.join(extra)}); give one or the other")
        if not 0 <= a.decode < 1 << 64:
            raise UsageError(f"zmask: --decode {a.decode:#x} does not fit the 64-bit descriptor")
        z = api.decode_zero_column_mask(a.decode)
    else:
        fill(a, ZMASK_DEFAULTS)
        z = api.ZeroColumnMask(tuple(a.start_count), tuple(a.first_span), not a.all_zero, a.skip_span, a.use_span,
                               a.shift)
    value = api.encode_zero_column_mask(z)
    zero = api.zero_columns(z, a.m, a.n)
    info = {"value": f"0x{value:016x}", "fields": asdict(z), "m": a.m, "n": a.n,
            "mask_lsb_first": "".join("1" if j in zero else "0" for j in range(a.n)),
            "zero_columns": zero, "b_columns_used_from": z.column_shift}
    text = (f"zero-column mask descriptor {info['value']}  (M={a.m}, N={a.n})\n"
            f"  mask, column 0 first (1 = column reads as zero): {info['mask_lsb_first']}\n"
            f"  B columns {z.column_shift}..{z.column_shift + a.n - 1} are used (column shift {z.column_shift})")
    show(info, a.json, text)
    return ExitCode.OK


# ---------------------------------------------------------------------------------------------------- layout

def _chunk_picture(m: api.AddressMap, max_cols: int = 64) -> str:
    """A terminal picture of an address map: for every element, the 16-byte chunk it lands in (relative to the
    lowest)."""
    lay, lo = m.layout, m.footprint[0]
    ch = m.chunk - (lo >> 4)
    width = max(2, len(str(int(ch.max()))))
    cols = min(lay.cols, max_cols)
    lines = [f"{L.describe_tile(lay)}\nchunk (16 B, relative to byte {lo}) of element [mn, k]\n"
             + "mn\\k  " + " ".join(f"{c:>{width}}" for c in range(cols))]
    lines += [f"{r:>4}  " + " ".join(f"{int(ch[r, c]):>{width}}" for c in range(cols)) for r in range(lay.rows)]
    if cols < lay.cols:
        lines.append(f"... {lay.cols - cols} more columns (use --json for all)")
    return "\n".join(lines)


def cmd_layout(a) -> int:
    if a.json and a.png is not None:
        raise UsageError("layout: give --json or --png, not both")
    png = out_file("layout", "--png", a.png)
    for flag in ("rows", "cols"):
        if not 0 < getattr(a, flag) <= 1024:
            raise UsageError(f"layout: --{flag} {getattr(a, flag)}: give 1..1024 elements")
    for flag in ("lbo", "sbo", "start"):
        if not 0 <= getattr(a, flag) < L.SMEM_BYTES:
            raise UsageError(f"layout: --{flag} {getattr(a, flag)}: give 0..{L.SMEM_BYTES - 16} bytes")
    m = api.address_map(api.canonical_layout(a.dtype, a.major, a.swizzle, a.rows, a.cols, a.lbo, a.sbo, a.start,
                                             a.base_offset))
    if png is not None:
        from harness.diagnosis import pictures
        try:
            png.parent.mkdir(parents=True, exist_ok=True)
            pictures.layout_png(m.layout, m.chunk, png)
        except OSError as e:
            raise UsageError(f"layout: --png {a.png}: cannot write: {e.strerror or e}") from None
        print(f"wrote {png}")
        return ExitCode.OK
    if a.json:
        print(json.dumps({"layout": asdict(m.layout), "address": m.address.tolist(), "chunk": m.chunk.tolist(),
                          "footprint": list(m.footprint)}))
    else:
        print(_chunk_picture(m))
    return ExitCode.OK


def _desc_parser(sub, family_names) -> None:
    d = sub.add_parser("desc", help="encode or decode a shared-memory matrix descriptor")
    d.add_argument("--arch", required=True, choices=Arch.values())
    d.add_argument("--start", type=integer, help="start address in bytes, a multiple of 16 (encode: required)")
    d.add_argument("--lbo", type=integer, help="leading-dimension byte offset in bytes, a multiple of 16 "
                                            "(encode: required)")
    d.add_argument("--sbo", type=integer, help="stride-dimension byte offset in bytes, a multiple of 16 "
                                            "(encode: required)")
    d.add_argument("--swizzle", choices=Swizzle.values(), help="swizzle mode (default none)")
    d.add_argument("--base-offset", type=integer, help="matrix base offset 0..7 (default 0)")
    d.add_argument("--lbo-mode", choices=["relative", "absolute"],
                   help="tcgen05: LBO as an offset or (sm_103a) an absolute address (default relative)")
    d.add_argument("--decode", type=integer, metavar="VALUE", help="decode this 64-bit value instead (no other "
                                                                "field flag)")
    d.add_argument("--kind", choices=list(idesc.KINDS), help="tcgen05: the .kind of the MMA whose operand this "
                                                             "descriptor describes (checks the rules tying them)")
    d.add_argument("--major", choices=Major.values(), help="with --kind: the operand's major-ness (MN: its "
                                                           "transpose bit is set; default K)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(fn=cmd_desc)


def _idesc_parser(sub, family_names) -> None:
    i = sub.add_parser("idesc", help="encode or decode a tcgen05 instruction descriptor")
    i.add_argument("--kind", required=True, choices=list(idesc.KINDS))
    i.add_argument("--atype", help="A element type (encode: required)")
    i.add_argument("--btype", help="B element type (encode: required)")
    i.add_argument("--dtype", help="accumulator type (default f32; s32 for --kind i8)")
    i.add_argument("--m", type=integer, help="M (encode: required)")
    i.add_argument("--n", type=integer, help="N (encode: required)")
    for flag in ("transpose-a", "transpose-b", "negate-a", "negate-b", "sparse", "saturate", "k96", "ws"):
        i.add_argument(f"--{flag}", action="store_const", const=True)
    i.add_argument("--sparsity-selector", type=integer, help="0..3 (default 0)")
    i.add_argument("--max-shift", type=integer, help=".ws B-reuse shift code 0..3 (default 0)")
    i.add_argument("--scale-type", choices=["ue8m0", "ue4m3"], help="block-scaled kinds only (default ue8m0)")
    i.add_argument("--a-sf-id", type=integer, help="block-scaled kinds only (default 0)")
    i.add_argument("--b-sf-id", type=integer, help="block-scaled kinds only (default 0)")
    i.add_argument("--cta-group", type=integer, choices=[1, 2], help="default 1 (decode: guessed from M)")
    i.add_argument("--scale-vec", choices=["1X", "2X", "4X"], help="block-scaled kinds (default: the kind's)")
    i.add_argument("--arch", choices=["sm_100a", "sm_103a"], help="adds the per-arch rules (K = 96: sm_103a)")
    i.add_argument("--swizzle-a", choices=Swizzle.values(), help="A's shared-memory descriptor's swizzle (checks "
                                                                 "the rules tying it to the transpose bits)")
    i.add_argument("--swizzle-b", choices=Swizzle.values(), help="B's shared-memory descriptor's swizzle")
    i.add_argument("--decode", type=integer, metavar="VALUE", help="decode this 32-bit value instead (no other "
                                                                "field flag)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(fn=cmd_idesc)


def _zmask_parser(sub, family_names) -> None:
    z = sub.add_parser("zmask", help="encode/decode a tcgen05 zero-column mask descriptor and show its mask")
    z.add_argument("--m", type=integer, required=True, choices=[32, 64, 128])
    z.add_argument("--n", type=integer, required=True, help="N of the MMA (M = 32: 64, 128 or 256; M = 64, 128: "
                                                         "8..256 step 8)")
    z.add_argument("--start-count", type=integer, nargs=4, metavar=("SC0", "SC1", "SC2", "SC3"),
                   help="0..255 each (default 0 0 0 0)")
    z.add_argument("--first-span", type=integer, nargs=4, metavar=("FS0", "FS1", "FS2", "FS3"),
                   help="0 or 1 each (default 0 0 0 0)")
    z.add_argument("--skip-span", type=integer, help="0..255 (default 0)")
    z.add_argument("--use-span", type=integer, help="0..255 (default 0)")
    z.add_argument("--shift", type=integer, help="column shift 0..32, 0..16 for M = 32 (default 0)")
    z.add_argument("--all-zero", action="store_const", const=True,
                   help="non-zero-mask bit 0: the mask is all 0s")
    z.add_argument("--decode", type=integer, metavar="VALUE", help="decode this 64-bit value instead (no other "
                                                                "field flag)")
    z.add_argument("--json", action="store_true")
    z.set_defaults(fn=cmd_zmask)


def _layout_parser(sub, family_names) -> None:
    lp = sub.add_parser("layout", help="show where each element of a canonical smem tile lives")
    lp.add_argument("--major", required=True, choices=Major.values())
    lp.add_argument("--swizzle", required=True, choices=list(L.SWIZZLE_BMS))
    lp.add_argument("--dtype", required=True)
    lp.add_argument("--rows", type=integer, required=True, help="MN extent, elements")
    lp.add_argument("--cols", type=integer, required=True, help="K extent, elements")
    lp.add_argument("--lbo", type=integer, required=True, help="leading-dimension byte offset, bytes")
    lp.add_argument("--sbo", type=integer, required=True, help="stride-dimension byte offset, bytes")
    lp.add_argument("--start", type=integer, default=0, help="start address, bytes (default 0)")
    lp.add_argument("--base-offset", type=integer, default=0, help="matrix base offset 0..7 (default 0)")
    lp.add_argument("--json", action="store_true")
    lp.add_argument("--png", metavar="FILE", help="draw the tile (16-byte chunk of every element) to this PNG "
                                                  "file (its folder is created); not with --json")
    lp.set_defaults(fn=cmd_layout)


# the commands this group adds, by name (harness/cli/__init__.py puts them in --help's order)
PARSERS = {"desc": _desc_parser, "idesc": _idesc_parser, "zmask": _zmask_parser, "layout": _layout_parser}
