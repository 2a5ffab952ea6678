"""python -m harness {sweep, compile, toolchains, compare, merge, junit, probe, desc, idesc, zmask, layout}

Exit status (harness.enums.ExitCode): 0 all passed / nothing regressed; 1 a case failed, faulted, timed out or
did not compile, compare found a regression, merge a disagreement, or a decoded descriptor breaks a rule;
2 bad argument, file or path (one line on stderr, nothing written, before anything is compiled or launched);
3 nothing could run (no GPU of the arch: every case recorded as not run); 4 a GPU is there but CUDA is unusable.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import errno
import json
import math
import os
import sys
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

from harness import __version__, api, families
from harness.enums import Arch, ExitCode, Major, OperandSource, Swizzle
from harness.spec import descriptors, idesc, layouts as L
from harness.run import cores

PROG = "python -m harness"
DEFAULT_RESULTS_DIR = Path("results") / "scratch"  # under the current folder
STDOUT_LOST = 120  # what Python's own exit says when stdout cannot be flushed (docs/results-schema.md, exit codes)


class UsageError(Exception):
    """Bad input: the message is the one line printed, `<command>: <what is wrong>`; exit 2."""


def _command(prog: str) -> str:
    """'python -m harness desc' -> 'desc'; the top-level parser -> 'harness'."""
    return prog[len(PROG):].strip() or "harness" if prog.startswith(PROG) else prog


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump, exit 2
        raise UsageError(f"{_command(self.prog)}: {message}")


def _int(text: str) -> int:
    try:
        if len(text) > 64:
            raise ValueError
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None


def _count(text: str) -> int:
    """A positive whole number (--jobs)."""
    v = _int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not a positive number")
    return v


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (--timeout)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text[:40]} is not a positive, finite number of seconds")
    return v


def _print(obj, as_json: bool, text: str):
    print(json.dumps(obj, indent=2) if as_json else text)


def _out_file(cmd: str, flag: str, text: str | None) -> Path | None:
    """An output file the command will write: refuse '', a folder, or a place it cannot write, before any work.
    A missing parent folder is created when the file is written."""
    if text is None:
        return None
    if not text.strip():
        raise UsageError(f"{cmd}: {flag} '': give a file name")
    p = Path(text)
    if p.is_dir() or text.endswith(os.sep):
        raise UsageError(f"{cmd}: {flag} {text}: is a folder; give a file name in it")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{cmd}: {flag} {text}: not writable")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{cmd}: {flag} {text}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{cmd}: {flag} {text}: cannot write in {parent}")
    return p


def _results_out(cmd: str, flag: str, text: str | None) -> Path | None:
    """A results file the command writes (and `--resume` appends to): plain JSON Lines. A .gz name is refused,
    since the writer would put plain text under it (and resume would cut compressed bytes); gzip a finished run."""
    p = _out_file(cmd, flag, text)
    if p is not None and p.name.endswith(".gz"):
        raise UsageError(f"{cmd}: {flag} {text}: results are written as plain JSON Lines; "
                         f"write {p.name[:-3]} and gzip it when the run is finished")
    return p


def _given(a, defaults: dict) -> list[str]:
    """The flags among `defaults` (dest -> default) given on the command line (their value is not None)."""
    return [f"--{k.replace('_', '-')}" for k in defaults if getattr(a, k) is not None]


def _fill(a, defaults: dict) -> None:
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)


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
    _print(info, as_json, "\n".join(lines))
    return ExitCode.FAILED if dec.problems else ExitCode.OK


# ---------------------------------------------------------------------------------------------------- desc

DESC_DEFAULTS = {"start": None, "lbo": None, "sbo": None, "swizzle": "none", "base_offset": 0, "lbo_mode": "relative"}


def cmd_desc(a) -> int:
    if a.decode is not None:
        extra = _given(a, DESC_DEFAULTS)
        if extra:
            raise UsageError(f"desc: --decode takes no encode flag ({', '.join(extra)}); give one or the other")
        if not 0 <= a.decode < 1 << 64:
            raise UsageError(f"desc: --decode {a.decode:#x} does not fit the 64-bit descriptor")
    else:
        _fill(a, DESC_DEFAULTS)
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
        extra = [f for f in _given(a, IDESC_DEFAULTS) if f not in ("--cta-group", "--ws")]
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
        _fill(a, IDESC_DEFAULTS)
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
        extra = _given(a, ZMASK_DEFAULTS)
        if extra:
            raise UsageError(f"zmask: --decode takes no encode flag ({', '.join(extra)}); give one or the other")
        if not 0 <= a.decode < 1 << 64:
            raise UsageError(f"zmask: --decode {a.decode:#x} does not fit the 64-bit descriptor")
        z = api.decode_zero_column_mask(a.decode)
    else:
        _fill(a, ZMASK_DEFAULTS)
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
    _print(info, a.json, text)
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
    png = _out_file("layout", "--png", a.png)
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


# ---------------------------------------------------------------------------------------------------- sweep

def _toolchain(cmd: str, a):
    """(Toolchain, KernelFolder or None) from --toolchain, --nvrtc and --kernels; UsageError, one line, for a
    library that does not load or compile, a folder that is no kernel folder, or flags that contradict it."""
    from harness.enums import ToolchainKind
    from harness.run import kernel_folder, toolchain as toolchains
    kernels = getattr(a, "kernels", None)
    if kernels is not None:
        if a.nvrtc is not None:
            raise UsageError(f"{cmd}: --kernels {kernels} brings the toolchain that compiled it (its manifest "
                             f"names it); leave out --nvrtc")
        try:
            folder = kernel_folder.load(kernels)
        except kernel_folder.KernelFolderError as e:
            raise UsageError(f"{cmd}: --kernels {kernels}: {e}") from None
        if a.toolchain is not None and a.toolchain != folder.toolchain.kind:
            raise UsageError(f"{cmd}: --toolchain {a.toolchain}, but --kernels {kernels} holds "
                             f"{folder.toolchain.describe()} modules")
        return folder.toolchain, folder
    try:
        return toolchains.resolve(ToolchainKind(a.toolchain or ToolchainKind.NVRTC), a.nvrtc), None
    except toolchains.ToolchainError as e:
        raise UsageError(f"{cmd}: --nvrtc {a.nvrtc}: {e}" if a.nvrtc is not None else f"{cmd}: {e}") from None


def _selection(cmd: str, a):
    """The selection the filter flags name (sweep and compile share them)."""
    from harness.plan import Selection
    if a.match is not None and any(not m.strip() for m in a.match):
        raise UsageError(f"{cmd}: --match '': give some text of the case ids to run")
    return Selection(
        families=tuple(a.family) if a.family else None, kinds=tuple(a.kind) if a.kind else None,
        n_values=tuple(a.n) if a.n else None, dtypes=tuple(a.dtype) if a.dtype else None,
        a_srcs=tuple(a.a_src) if a.a_src else None, cta_groups=tuple(a.cta_group) if a.cta_group else None,
        data_modes=tuple(a.data) if a.data else None, controls=not a.no_controls,
        match=tuple(a.match) if a.match else None)


def _out_folder(cmd: str, flag: str, text: str) -> Path:
    """A folder the command will fill: refuse '', a file, or a folder that holds anything but an earlier kernel
    folder (whose modules are replaced), before any work."""
    from harness.run import kernel_folder
    if not text.strip():
        raise UsageError(f"{cmd}: {flag} '': give a folder")
    p = Path(text)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{cmd}: {flag} {text}: is a file; give a folder")
    if p.is_dir() and any(p.iterdir()) and not (p / kernel_folder.MANIFEST).is_file():
        raise UsageError(f"{cmd}: {flag} {text}: holds files and is no kernel folder; give a new or empty folder")
    parent = p if p.exists() else p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{cmd}: {flag} {text}: cannot write in {parent}")
    return p


def cmd_compile(a) -> int:
    from harness import sweep
    sel = _selection("compile", a)
    out = _out_folder("compile", "--out", a.out)
    try:
        sel.validate()
    except sweep.SweepError as e:
        raise UsageError(f"compile: {e}") from None
    tc, _ = _toolchain("compile", a)
    try:
        summary = sweep.compile_to_folder(sel, tc, out, a.jobs)
    except sweep.SweepError as e:
        raise UsageError(f"compile: {e}") from None
    code = ExitCode.FAILED if summary["rejected"] else ExitCode.OK
    if a.json:
        print(json.dumps({**summary, "exit": int(code)}, indent=2))
        return code
    archs = ", ".join(f"{n} for {arch}" for arch, n in sorted(summary["by_arch"].items()))
    print(f"compiled {summary['kernels']} kernels ({archs}) with {summary['toolchain']} into {out}: "
          f"{summary['files']} files, {summary['bytes'] / 2**20:.1f} MiB, in {summary['wall_s']}s")
    for r in summary["rejected"]:
        print(f"NVRTC rejected {r['kernel']} for {r['arch']}: {r['error']}")
    print(f"launch them with: {PROG} sweep --kernels {out}" + (f" {summary['selection']}" if summary["selection"]
                                                                else ""))
    return code


def cmd_toolchains(a) -> int:
    """Every NVRTC library --nvrtc can name here, with what each builds; where the one cuda.bindings binds is missing,
    why, and what to install (on stderr, one line). Exit 2 where there is none at all (nothing could compile)."""
    from harness.enums import Arch, ToolchainKind
    from harness.run import toolchain as toolchains
    missing = toolchains.nvrtc_problem()
    if missing:
        print(_one_line(f"toolchains: the default NVRTC: {missing}"), file=sys.stderr)
    rows = []
    for path, release, build in toolchains.installed_libraries():
        row = {"nvrtc": release, "nvrtc_build": build, "nvrtc_library": str(path)}
        try:
            tc = toolchains.resolve(ToolchainKind.NVRTC, str(path))
            cannot = tc.cannot_build(Arch.values())
            row.update(ptx_isa=tc.ptx_isa, builds=[x for x in Arch.values() if x not in cannot], cannot=cannot)
        except toolchains.ToolchainError as e:
            row["error"] = str(e)
        rows.append(row)
    code = ExitCode.OK if rows else ExitCode.USAGE  # no NVRTC at all: an environment problem (docs/environment.md)
    if a.json:
        print(json.dumps({"roots": [str(r) for r in toolchains.library_roots()], "libraries": rows,
                          "default_problem": missing}, indent=2))
        return code
    print(f"NVRTC libraries (the one cuda.bindings binds, and those under "
          f"{os.pathsep.join(map(str, toolchains.library_roots()))}):")
    for r in rows:
        what = (f"PTX ISA {r['ptx_isa']}, builds {', '.join(r['builds']) or 'none of the harness archs'}"
                + (f"; not {', '.join(r['cannot'])}" if r["cannot"] else "")) if "error" not in r else r["error"]
        print(f"  {r['nvrtc']:<5} V{r['nvrtc_build']:<10} {what}\n        {r['nvrtc_library']}")
    if not rows:
        print("  none: " + (missing or "no libnvrtc.so under those folders"))
    return code


def cmd_doctor(a) -> int:
    """This environment, whether CI or a committed run covers it, and each problem with its fix (exit 4 if any)."""
    from harness import doctor
    if a.matrix:
        print(doctor.matrix_markdown())
        return ExitCode.OK
    rep = doctor.examine()
    print(json.dumps(rep.as_json(), indent=2, default=str) if a.json else doctor.render(rep))
    return int(ExitCode.ENVIRONMENT if rep.problems else ExitCode.OK)


def cmd_sweep(a) -> int:
    from harness import sweep
    # the command line's own process: the first GPU's worker starts now, forked while this process has made no CUDA
    # call, its start-up (importing CuPy and making its CUDA context) running while the input is checked and the plan
    # read; the sweep takes it (sweep.worker_ahead). A caller that goes on (a test) has threads of its own, and the
    # sweep starts its worker as it always did
    ahead = sweep.worker_ahead(sweep.SweepConfig(gpus=a.gpus), fork=True) if a.own_process else None
    # and its helpers (the processes that compile, then prepare), started in a thread while the input is checked
    # (the toolchain's check alone took 0.47 s on an H100 node: bench24 in docs/performance.md)
    helpers = sweep.helpers_ahead(sweep.SweepConfig(workers=a.jobs)) if a.own_process else None
    try:
        return _sweep_command(a, ahead, helpers)
    finally:
        if ahead is not None:
            ahead.kill()  # already stopped where the sweep ran on it; else (an input refused, say) only starting
        if helpers is not None:
            helpers.shutdown()  # shut down with the sweep's engine already; else (an input refused) only starting


def _sweep_command(a, ahead, helpers) -> int:
    from harness import sweep
    from harness.run import engine
    sel = _selection("sweep", a)
    if a.resume and a.out is None:
        raise UsageError("sweep: --resume needs the --out file to continue")
    out = _results_out("sweep", "--out", a.out) or DEFAULT_RESULTS_DIR / (
        f"sweep-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl")
    if a.resume and out.exists():
        from harness.records import results
        try:
            results.load(out)
        except results.ResultsFileError as e:
            raise UsageError(f"sweep: {e}") from None
    junit = _out_file("sweep", "--junit", a.junit)
    if junit is not None and junit.resolve() == out.resolve():
        raise UsageError(f"sweep: --junit {a.junit} is the --out file; give the XML its own name")
    shard = _shard(a.shard)
    _check_gpus(a.gpus)
    if a.bundle is not None and (not a.bundle.strip() or (Path(a.bundle).exists() and not Path(a.bundle).is_dir())):
        raise UsageError(f"sweep: --bundle {a.bundle!r}: give a folder (created if absent)")
    try:
        sel.validate()
    except sweep.SweepError as e:
        raise UsageError(f"sweep: {e}") from None
    tc, folder = _toolchain("sweep", a)
    cfg = sweep.SweepConfig(out_path=out, workers=a.jobs, resume=a.resume, timeout=a.timeout, gpus=a.gpus,
                            shard=shard, toolchain=tc, kernels=folder, keep_launches=not a.no_keep_launches,
                            hold_plan=a.own_process, ahead=ahead, helpers=helpers,
                            workers_on_one_gpu=engine.WORKERS_ON_ONE_GPU, level=a.level)
    from harness.records import results
    try:  # an empty or impossible selection is refused while planning, before anything is compiled
        summary = sweep.run(sel, cfg)
    except sweep.SweepError as e:
        raise UsageError(f"sweep: {e}") from None
    except results.ResultsWriteError as e:  # a full disk: the file holds every record up to its last whole line
        raise UsageError(f"sweep: --out {e.strerror or e}") from None
    code = sweep.exit_code(summary)
    if a.bundle is not None:  # issue 57: what a bug report needs, for every failing case
        from harness import fleet_cli
        code = max(code, fleet_cli.write_bundle(out, Path(a.bundle), tc))
    if junit is not None:
        from harness.records import junit as junit_xml, results
        try:  # a file that is not whole (cases without a record) is written, with its reasons as errors
            if junit_xml.convert(out, junit, allow_incomplete=True)["incomplete"]:
                code = max(code, ExitCode.FAILED)
        except (results.ResultsFileError, OSError) as e:  # the sweep ran: say so, keep its status
            print(f"sweep: --junit {a.junit}: not written: {e}", file=sys.stderr)
            code = max(code, ExitCode.FAILED)
    if a.json:
        print(json.dumps({**summary, "results": str(out), **({"junit": str(junit)} if junit else {}),
                          "exit": int(code)}, indent=2, default=str))
        return code
    for e in summary.get("compile_errors", []):
        print(f"NVRTC rejected {e['kernel']} for {e['arch']} ({e['cases']} cases); source and log: "
              f"{Path(e['source']).parent}")
    print(f"{summary.get('pass', 0)} passed, {summary.get('fail', 0)} failed, {summary.get('fault', 0)} faulted, "
          f"{summary.get('timeout', 0)} timed out, {summary.get('compile-error', 0)} did not compile, "
          f"{summary.get('not-run', 0)} not run of {summary.get('cases', 0)} cases in {summary.get('wall_s')}s; "
          f"results: {out}")
    for fam, reason in summary.get("not_run_reasons", {}).items():
        print(f"{fam}: not run: {reason}")
    if summary.get("unaccounted"):
        print(f"{summary['unaccounted']} planned cases have no record: not passed (exit {int(code)})")
    return code


def _shard(text: str | None):
    if text is None:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UsageError(f"sweep: --shard {text!r}: write I/N, for example 0/4 (Slurm: $SLURM_PROCID/$SLURM_NTASKS)") from None
    if not (n >= 1 and 0 <= i < n):
        raise UsageError(f"sweep: --shard {text}: need 0 <= I < N")
    return i, n


def _check_gpus(spec: str) -> None:
    """Refuse a bad --gpus before compiling: its spelling always, and where GPUs are visible, a GPU that is not
    there or (named by index) one of an arch the harness does not run on; nothing named is dropped silently.
    `all` is never refused: on a node whose GPUs the harness cannot use, every case is recorded not run (exit 3)."""
    from harness.enums import Arch
    from harness.run import gpu
    try:
        how, _ = gpu.parse_gpus(spec)
        if gpu.device_count():
            picked = gpu.chosen(spec)
            if how == "indices":
                other = [i for i in picked if (gpu.device_info(i) or {}).get("arch") not in Arch.values()]
                if other:
                    info = gpu.device_info(other[0]) or {}
                    raise UsageError(f"sweep: --gpus {spec}: GPU {other[0]} is {info.get('name')} (compute "
                                     f"capability {info.get('compute_capability')}), not one the harness runs on "
                                     f"({', '.join(Arch.values())})")
            if how != "all" and not any(gpu.select(spec, arch) for arch in Arch.values()):
                raise UsageError(f"sweep: --gpus {spec}: none of those GPUs is one the harness runs on "
                                 f"({', '.join(Arch.values())})")
    except gpu.GpuSelectionError as e:
        raise UsageError(f"sweep: {e}") from None


def _results_files(cmd: str, items) -> list[Path]:
    """The results files named on the command line: files, directories (one run each) or comma lists of files."""
    from harness.records import results
    names = []
    for item in items:
        parts = item.split(",")
        if any(not x.strip() for x in parts):
            raise UsageError(f"{cmd}: {item!r}: an empty name in the list of results files")
        names += parts
    try:
        return results.expand_run(names)
    except results.ResultsFileError as e:
        raise UsageError(f"{cmd}: {e}") from None


def cmd_merge(a) -> int:
    from harness.records import merge, results
    out = _results_out("merge", "--out", a.out)
    files = _results_files("merge", a.inputs)
    if any(f.resolve() == out.resolve() for f in files):
        raise UsageError(f"merge: --out {a.out} is one of the inputs; write the merged run elsewhere")
    try:
        env, cases, summary, disagreements = merge.merge(files, a.allow_mixed, a.allow_incomplete)
    except results.ResultsFileError as e:
        raise UsageError(f"merge: {e}") from None
    try:
        merge.write(out, env, cases, summary, disagreements)
    except OSError as e:
        raise UsageError(f"merge: --out {a.out}: cannot write: {e.strerror or e}") from None
    bad = sum(summary[k] for k in merge.BAD)
    code = merge.exit_code(summary, disagreements)
    if a.json:
        print(json.dumps({**summary, "out": str(out), "files": list(map(str, files)),
                          "disagreements": disagreements, "exit": int(code)}, indent=2))
        return code
    print(f"merged {summary['inputs']} files: {summary['cases']} cases: {summary['pass']} pass, {bad} fail, fault, "
          f"time out or did not compile, {summary['not-run']} not run anywhere -> {out}")
    for d in disagreements[:20]:
        print(f"  disagreement: {d['id']}: " + ", ".join(f"{r['file']}={r['status']}" for r in d["runs"]))
    if len(disagreements) > 20:
        print(f"  ({len(disagreements) - 20} more disagreements, in the merged file)")
    for f in summary.get("environment_errors", []):
        print(f"  unusable GPU in {f['file']}: {f['error']}")
    for f in summary.get("incomplete_inputs", []):
        print(f"  NOT WHOLE: {f['file']}: {f['problem']} (the merged file says so too)")
    return code


def cmd_probe(a) -> int:
    if a.match is not None and a.name != "addresses":
        raise UsageError(f"probe: --match selects address probes only (probe addresses), not {a.name}")
    if a.match is not None and not a.match.strip():
        raise UsageError("probe: --match '': give some text of the case ids to probe")
    out = _results_out("probe", "--out", a.out) or DEFAULT_RESULTS_DIR / f"probe-{a.name}.jsonl"
    from harness.experiments import probes
    from harness import sweep
    if a.name in ("base-offset", "start-alignment"):
        from harness.families.wgmma import FAMILY as WGMMA
        work = sweep.Plan([(WGMMA.kernel_of(key), cs) for key, cs in probes.work(a.name)])
        try:
            summary = sweep.execute(work, sweep.SweepConfig(out_path=out, timeout=a.timeout), run_kind="probe")
        except sweep.SweepError as e:  # another run writes --out
            raise UsageError(f"probe: {e}") from None
        code = sweep.exit_code(summary)
        if a.json:
            print(json.dumps({"probe": a.name, **summary, "results": str(out), "exit": int(code)}, indent=2,
                             default=str))
        elif summary.get("ran") == 0 or code == ExitCode.NOTHING_RAN:
            print(f"compile-only: {summary.get('not_run_reasons', {}).get('wgmma')}")
        else:
            print(f"probe {a.name}: {summary.get('pass', 0)} cases behave as the model says, "
                  f"{summary['cases'] - summary.get('pass', 0)} do not; results: {out}")
        return code
    from harness.experiments import probe_runs
    run = {"addresses": lambda: probe_runs.addresses(out, a.timeout, a.match),
           "field-overflow": lambda: probe_runs.field_overflow(out, a.timeout),
           "spec-examples": lambda: probe_runs.spec_examples(out, a.timeout)}[a.name]
    text = run()
    code = ExitCode.NOTHING_RAN if text.startswith("compile-only") else ExitCode.OK
    if a.json:
        print(json.dumps({"probe": a.name, "report": text.splitlines(), "results": str(out), "exit": int(code)},
                         indent=2))
    else:
        print(text)
    return code


def cmd_compare(a) -> int:
    from harness.records import compare, results
    old, new = _results_files("compare", [a.old]), _results_files("compare", [a.new])
    try:
        report = compare.compare(old, new, accept_lost_coverage=a.accept_lost_coverage, allow_mixed=a.allow_mixed,
                                 allow_incomplete=a.allow_incomplete)
    except results.ResultsFileError as e:
        raise UsageError(f"compare: {e}") from None
    print(json.dumps(report, indent=1) if a.json else compare.render(report))
    return ExitCode.FAILED if report["regressed"] or report["incomplete"] else ExitCode.OK


def cmd_junit(a) -> int:
    from harness.records import junit, results
    out = _out_file("junit", "--out", a.out)
    src = Path(a.results)
    if "," in a.results or src.is_dir():
        raise UsageError(f"junit: {a.results}: give one results file (merge a run's files first)")
    if not src.is_file():
        raise UsageError(f"junit: {a.results}: no such results file")
    if src.resolve() == out.resolve():
        raise UsageError(f"junit: --out {a.out} is the results file; write the XML elsewhere")
    try:
        totals = junit.convert(src, out, a.allow_mixed, a.allow_incomplete)
    except results.ResultsFileError as e:
        raise UsageError(f"junit: {e}") from None
    except OSError as e:
        raise UsageError(f"junit: --out {a.out}: cannot write: {e.strerror or e}") from None
    _print({**totals, "out": str(out)}, a.json, f"{totals['tests']} test cases ({totals['failures']} failures, "
           f"{totals['errors']} errors, {totals['skipped']} skipped) -> {out}"
           + "".join(f"\nNOT WHOLE: {src}: {p}" for p in totals["incomplete"]))
    return ExitCode.FAILED if totals["incomplete"] else ExitCode.OK


def cmd_report(a) -> int:
    """The tables; exit 1 where one of them is of a file that is not one whole run (each said on stderr, and in
    its table), or the README has drifted."""
    from harness.records import report, results
    try:
        text = report.render(a.root)
        code = ExitCode.OK
        if a.check:
            ok = report.check(a.check, a.root)
            text = f"{a.check}: {'matches' if ok else 'DRIFTED from'} the results files under {a.root}"
            code = ExitCode.OK if ok else ExitCode.FAILED
        elif a.update:
            Path(a.update).write_text(report.update(Path(a.update).read_text(), a.root))
            text = None
    except BrokenPipeError:
        raise
    except (results.ResultsFileError, OSError) as e:
        raise UsageError(f"report: {e}") from None
    if text is not None:
        print(text)
    for p in report.problems(report.render(a.root)):
        print(_one_line(f"report: {p}"), file=sys.stderr)
        code = ExitCode.FAILED
    return int(code)


# ----------------------------------------------------------------------------------------------------

def _kinds() -> list[str]:
    from harness.families.wgmma import forms
    return list(dict.fromkeys(forms.KINDS + idesc.KINDS))


def _selection_args(p, family_names: tuple[str, ...]) -> None:
    p.add_argument("--family", action="append", choices=list(family_names),
                   help="instruction family (repeatable)")
    p.add_argument("--kind", action="append", choices=_kinds(), help="wgmma or tcgen05 kind (repeatable)")
    p.add_argument("--n", action="append", type=int, help="only these N (repeatable)")
    p.add_argument("--a-src", action="append", choices=OperandSource.values(), help="A operand source (repeatable)")
    p.add_argument("--cta-group", action="append", type=int, choices=[1, 2], help="tcgen05 CTA group")
    p.add_argument("--dtype", action="append", choices=["f16", "f32", "s32"], help="accumulator type")
    p.add_argument("--data", action="append", choices=["exact", "normal"])
    p.add_argument("--match", action="append", help="only cases whose id contains this text (repeatable: any of "
                                                    "them; other filters narrow it further)")
    p.add_argument("--no-controls", action="store_true", help="skip the negative controls")


def _reader_args(p) -> None:
    """The flags of the commands that read results files (merge, compare, junit): what they otherwise refuse."""
    p.add_argument("--allow-mixed", action="store_true",
                   help="take files of different toolchains or harness versions as one run (refused otherwise, "
                        "exit 2); the merged environment says toolchain: mixed")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="read a file that is not one whole run (no summary: killed or still being written; marked "
                        "interrupted; cases lost or written twice) instead of refusing it (exit 2); the answer "
                        "says so and exits 1 or more")


def _toolchain_args(p) -> None:
    from harness.enums import ToolchainKind
    p.add_argument("--toolchain", choices=ToolchainKind.values(),
                   help="nvrtc: NVRTC compiles cubins for the exact arch (default); driver-jit: NVRTC writes PTX "
                        "and the driver's JIT compiles it as the GPU loads it")
    p.add_argument("--nvrtc", metavar="PATH_OR_VERSION",
                   help="the NVRTC to compile with: a libnvrtc.so, a folder holding one, or a version (13, 12.8, "
                        "12.8.93) installed under $TC_HARNESS_NVRTC_DIR (default ~/.cache/tc-harness/nvrtc; "
                        "python -m harness toolchains lists them); default: the one cuda.bindings binds")


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, one for each set of families (TC_HARNESS_FAMILIES may add some: --family's choices).
    argparse takes ~10 ms to build it, and a test session runs main() ~1,000 times; a parser parses any number of
    argument lists without changing (each parse fills a fresh namespace)."""
    return parser_for(tuple(families.registry()))


@lru_cache(maxsize=None)
def parser_for(family_names: tuple[str, ...]) -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"tensor-core-harness {__version__}")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    scratch = f"{DEFAULT_RESULTS_DIR}/ under the current folder"

    s = sub.add_parser("sweep", help="run every case the node's GPUs support (the rest recorded as not run)")
    _selection_args(s, family_names)
    _toolchain_args(s)
    s.add_argument("--kernels", metavar="DIR", help="launch the modules of this kernel folder (python -m harness "
                                                    "compile --out DIR) instead of compiling; refused unless its "
                                                    "manifest matches this sweep's kernels")
    s.add_argument("--out", help=f"results file (JSON Lines); default {scratch}, sweep-<time>.jsonl")
    s.add_argument("--resume", action="store_true", help="continue --out without re-running its cases")
    s.add_argument("--jobs", type=_count, help="parallel compile processes, at least 1 (default: all cores)")
    s.add_argument("--timeout", type=_seconds, default=30.0, help="seconds before a launch counts as hung "
                                                                  "(default 30)")
    s.add_argument("--gpus", default="all", help="'all' (default: every visible GPU), device indices such as 0 "
                                                "or 0,1, or count:N (the first N); indices count within "
                                                "CUDA_VISIBLE_DEVICES")
    s.add_argument("--junit", metavar="FILE", help="also write JUnit XML (one testcase per case, one testsuite "
                                                   "per family) to FILE (its folder is created)")
    s.add_argument("--shard", metavar="I/N", help="run only kernel shard I of N (one per node of a fleet)")
    s.add_argument("--bundle", metavar="DIR", help="write a repro bundle of every failing case into DIR (source, "
                   "PTX, cubin, SASS, versions, a standalone .cu and its nvcc command: harness/records/bundle.py)")
    s.add_argument("--level", type=int, choices=[1, 3], help="1: a seconds-long sample covering every form, "
                   "swizzle and major-ness once (a node gate); 3: the full sweep (the default); recorded in the results")
    s.add_argument("--no-keep-launches", action="store_true",
                   help="prepare every launch afresh and keep none (by default prepared launches are kept in the "
                        "cache, about 6 GB for a whole sweep, and a later sweep of the same source reads them)")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(fn=cmd_sweep)

    cp = sub.add_parser("compile", help="compile a selection's kernels into a folder, to launch elsewhere with "
                                        "sweep --kernels")
    _selection_args(cp, family_names)
    _toolchain_args(cp)
    cp.add_argument("--out", required=True, metavar="DIR", help="the kernel folder: one module per kernel and "
                                                                "manifest.json (created; an earlier kernel folder "
                                                                "there is replaced)")
    cp.add_argument("--jobs", type=_count, help="parallel compile processes, at least 1 (default: all cores)")
    cp.add_argument("--json", action="store_true", help="print the summary as JSON")
    cp.set_defaults(fn=cmd_compile)

    dr = sub.add_parser("doctor", help="this environment (Python, NVRTC, cuda-bindings, CuPy, driver, GPUs), whether "
                                       "CI or a committed run covers it, and each problem with its fix")
    dr.add_argument("--json", action="store_true", help="print the findings as JSON")
    dr.add_argument("--matrix", action="store_true", help="print the tested matrix (the README's table) and exit")
    dr.set_defaults(fn=cmd_doctor)
    tl = sub.add_parser("toolchains", help="the NVRTC libraries --nvrtc can name here, and what each builds")
    tl.add_argument("--json", action="store_true")
    tl.set_defaults(fn=cmd_toolchains)

    m = sub.add_parser("merge", help="several results files (GPUs, nodes) as one; exit 1 on any disagreement")
    m.add_argument("inputs", nargs="+", help="results files, comma lists of them, or run folders (a folder: its "
                                             "*.jsonl except probe-*.jsonl and merged*.jsonl)")
    m.add_argument("--out", required=True, help="the merged results file (its folder is created)")
    m.add_argument("--json", action="store_true", help="print the summary as JSON")
    _reader_args(m)
    m.set_defaults(fn=cmd_merge)

    pr = sub.add_parser("probe", help="targeted experiments on what the spec leaves open")
    pr.add_argument("name", choices=["base-offset", "start-alignment", "addresses", "field-overflow",
                                     "spec-examples"])
    pr.add_argument("--match", help="addresses only: only cases whose id contains this text")
    pr.add_argument("--out", help=f"results file; default {scratch}, probe-<name>.jsonl")
    pr.add_argument("--timeout", type=_seconds, default=30.0, help="seconds before a launch counts as hung "
                                                                   "(default 30)")
    pr.add_argument("--json", action="store_true", help="print the summary as JSON")
    pr.set_defaults(fn=cmd_probe)

    c = sub.add_parser("compare", help="what changed between two runs (exit 1 if anything regressed)")
    c.add_argument("old", help="results file, run folder (its *.jsonl except probe-*.jsonl and merged*.jsonl), "
                               "or a comma list of files")
    c.add_argument("new", help="the same, for the new run")
    c.add_argument("--json", action="store_true")
    c.add_argument("--accept-lost-coverage", action="store_true",
                   help="cases missing from new, or passing before and not run now, are a note, not a regression")
    _reader_args(c)
    c.set_defaults(fn=cmd_compare)

    j = sub.add_parser("junit", help="JUnit XML from a results file (one testcase per case)")
    j.add_argument("results", help="a results file (JSON Lines)")
    j.add_argument("--out", required=True, help="the XML file (its folder is created)")
    j.add_argument("--json", action="store_true", help="print the totals as JSON")
    _reader_args(j)
    j.set_defaults(fn=cmd_junit)

    from harness.timing import cli as timing_cli  # python -m harness bench [compare]
    timing_cli.add_parser(sub)
    from harness import fleet_cli  # python -m harness verdict / textfile (issue 57)
    fleet_cli.add_parsers(sub)
    rp = sub.add_parser("report", help="results/README.md's tables from the committed results files")
    rp.add_argument("root", help="the results directory (one folder per run)")
    rp.add_argument("--update", metavar="README", help="rewrite the generated block of this file")
    rp.add_argument("--check", metavar="README", help="exit 1 if this file's generated block has drifted")
    rp.set_defaults(fn=cmd_report)

    d = sub.add_parser("desc", help="encode or decode a shared-memory matrix descriptor")
    d.add_argument("--arch", required=True, choices=Arch.values())
    d.add_argument("--start", type=_int, help="start address in bytes, a multiple of 16 (encode: required)")
    d.add_argument("--lbo", type=_int, help="leading-dimension byte offset in bytes, a multiple of 16 "
                                            "(encode: required)")
    d.add_argument("--sbo", type=_int, help="stride-dimension byte offset in bytes, a multiple of 16 "
                                            "(encode: required)")
    d.add_argument("--swizzle", choices=Swizzle.values(), help="swizzle mode (default none)")
    d.add_argument("--base-offset", type=_int, help="matrix base offset 0..7 (default 0)")
    d.add_argument("--lbo-mode", choices=["relative", "absolute"],
                   help="tcgen05: LBO as an offset or (sm_103a) an absolute address (default relative)")
    d.add_argument("--decode", type=_int, metavar="VALUE", help="decode this 64-bit value instead (no other "
                                                                "field flag)")
    d.add_argument("--kind", choices=list(idesc.KINDS), help="tcgen05: the .kind of the MMA whose operand this "
                                                             "descriptor describes (checks the rules tying them)")
    d.add_argument("--major", choices=Major.values(), help="with --kind: the operand's major-ness (MN: its "
                                                           "transpose bit is set; default K)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(fn=cmd_desc)

    i = sub.add_parser("idesc", help="encode or decode a tcgen05 instruction descriptor")
    i.add_argument("--kind", required=True, choices=list(idesc.KINDS))
    i.add_argument("--atype", help="A element type (encode: required)")
    i.add_argument("--btype", help="B element type (encode: required)")
    i.add_argument("--dtype", help="accumulator type (default f32; s32 for --kind i8)")
    i.add_argument("--m", type=_int, help="M (encode: required)")
    i.add_argument("--n", type=_int, help="N (encode: required)")
    for flag in ("transpose-a", "transpose-b", "negate-a", "negate-b", "sparse", "saturate", "k96", "ws"):
        i.add_argument(f"--{flag}", action="store_const", const=True)
    i.add_argument("--sparsity-selector", type=_int, help="0..3 (default 0)")
    i.add_argument("--max-shift", type=_int, help=".ws B-reuse shift code 0..3 (default 0)")
    i.add_argument("--scale-type", choices=["ue8m0", "ue4m3"], help="block-scaled kinds only (default ue8m0)")
    i.add_argument("--a-sf-id", type=_int, help="block-scaled kinds only (default 0)")
    i.add_argument("--b-sf-id", type=_int, help="block-scaled kinds only (default 0)")
    i.add_argument("--cta-group", type=_int, choices=[1, 2], help="default 1 (decode: guessed from M)")
    i.add_argument("--scale-vec", choices=["1X", "2X", "4X"], help="block-scaled kinds (default: the kind's)")
    i.add_argument("--arch", choices=["sm_100a", "sm_103a"], help="adds the per-arch rules (K = 96: sm_103a)")
    i.add_argument("--swizzle-a", choices=Swizzle.values(), help="A's shared-memory descriptor's swizzle (checks "
                                                                 "the rules tying it to the transpose bits)")
    i.add_argument("--swizzle-b", choices=Swizzle.values(), help="B's shared-memory descriptor's swizzle")
    i.add_argument("--decode", type=_int, metavar="VALUE", help="decode this 32-bit value instead (no other "
                                                                "field flag)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(fn=cmd_idesc)

    z = sub.add_parser("zmask", help="encode/decode a tcgen05 zero-column mask descriptor and show its mask")
    z.add_argument("--m", type=_int, required=True, choices=[32, 64, 128])
    z.add_argument("--n", type=_int, required=True, help="N of the MMA (M = 32: 64, 128 or 256; M = 64, 128: "
                                                         "8..256 step 8)")
    z.add_argument("--start-count", type=_int, nargs=4, metavar=("SC0", "SC1", "SC2", "SC3"),
                   help="0..255 each (default 0 0 0 0)")
    z.add_argument("--first-span", type=_int, nargs=4, metavar=("FS0", "FS1", "FS2", "FS3"),
                   help="0 or 1 each (default 0 0 0 0)")
    z.add_argument("--skip-span", type=_int, help="0..255 (default 0)")
    z.add_argument("--use-span", type=_int, help="0..255 (default 0)")
    z.add_argument("--shift", type=_int, help="column shift 0..32, 0..16 for M = 32 (default 0)")
    z.add_argument("--all-zero", action="store_const", const=True,
                   help="non-zero-mask bit 0: the mask is all 0s")
    z.add_argument("--decode", type=_int, metavar="VALUE", help="decode this 64-bit value instead (no other "
                                                                "field flag)")
    z.add_argument("--json", action="store_true")
    z.set_defaults(fn=cmd_zmask)

    lp = sub.add_parser("layout", help="show where each element of a canonical smem tile lives")
    lp.add_argument("--major", required=True, choices=Major.values())
    lp.add_argument("--swizzle", required=True, choices=list(L.SWIZZLE_BMS))
    lp.add_argument("--dtype", required=True)
    lp.add_argument("--rows", type=_int, required=True, help="MN extent, elements")
    lp.add_argument("--cols", type=_int, required=True, help="K extent, elements")
    lp.add_argument("--lbo", type=_int, required=True, help="leading-dimension byte offset, bytes")
    lp.add_argument("--sbo", type=_int, required=True, help="stride-dimension byte offset, bytes")
    lp.add_argument("--start", type=_int, default=0, help="start address, bytes (default 0)")
    lp.add_argument("--base-offset", type=_int, default=0, help="matrix base offset 0..7 (default 0)")
    lp.add_argument("--json", action="store_true")
    lp.add_argument("--png", metavar="FILE", help="draw the tile (16-byte chunk of every element) to this PNG "
                                                  "file (its folder is created); not with --json")
    lp.set_defaults(fn=cmd_layout)
    return p


def _one_line(msg: str, limit: int = 400) -> str:
    """A message as one printable line: control characters (a newline typed into an argument) escaped."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in msg)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _quiet_stdout() -> None:
    """After a closed pipe (`... --json | head`): point stdout at /dev/null so the exit flush says nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv=None, own_process: bool = False) -> int:
    """Run one command; returns its exit status (ExitCode) and never raises for bad input. own_process: the command
    line's process, which ends with the command (`entry`): a sweep may then fork its GPU worker from it and hold its
    plan out of the garbage collector's sight; a caller that goes on (a test, say) gets neither."""
    from harness.run import compile as nvrtc, processes
    cmd = "harness"
    try:
        families.check_extra()  # a malformed TC_HARNESS_FAMILIES: one line, before its names become --family choices
        parser = build_parser()
        try:
            args, extra = parser.parse_known_args(argv)
        except SystemExit as e:  # --help, --version
            return int(e.code or 0) if not isinstance(e.code, str) else ExitCode.USAGE
        cmd = args.cmd or cmd
        if extra:
            raise UsageError(f"{cmd}: unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "fn", None):
            raise UsageError("harness: give a command: sweep, compile, doctor, toolchains, compare, merge, junit, probe, desc, "
                             "idesc, zmask or layout")
        cores.default_workers()  # a malformed TC_HARNESS_WORKERS is refused before anything runs
        if cmd in CACHED_COMMANDS:  # an unusable TC_HARNESS_CACHE is refused before anything runs (compile.CACHE_ENV)
            note = nvrtc.settle_cache()
            if note:
                print(_one_line(note), file=sys.stderr)
            if own_process:  # before the command's helpers: an interrupted one ends in one line
                processes.quiet_resource_tracker()
        args.own_process = own_process
        return int(args.fn(args))
    except UsageError as e:
        print(_one_line(str(e)), file=sys.stderr)
        return ExitCode.USAGE
    except nvrtc.CacheError as e:
        print(_one_line(f"{cmd}: {e}"), file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (processes.on_signals): the sweep has said so in its file
        processes.kill_children()  # none left behind, whatever the command had started
        code = e.exit_code if isinstance(e, processes.Interrupted) else 128 + 2
        what = str(e) or "SIGINT"
        print(_one_line(f"{cmd}: interrupted ({what}); exit {code}"), file=sys.stderr)
        return code
    except (descriptors.DescriptorError, L.LayoutError, ValueError) as e:
        print(_one_line(f"{cmd}: {e}"), file=sys.stderr)
        return ExitCode.USAGE
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly
        _quiet_stdout()
        return ExitCode.FAILED
    except OSError as e:  # what it printed could not be written (a full disk under `> file`): Python's own 120
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        _quiet_stdout()  # the exit's flush of what is still buffered would fail again
        print(_one_line(f"{cmd}: cannot write its output: {e.strerror or e}"), file=sys.stderr)
        return STDOUT_LOST
    finally:
        nvrtc.remove_temporary_cache()  # where HOME gave no cache folder (compile.settle_cache)


# the commands that compile, and so write the cache: an unusable cache folder is refused (or, where HOME gives none, a
# temporary one is used, with a note) before they start anything; the others never need one
CACHED_COMMANDS = ("sweep", "compile", "probe")


def entry() -> None:
    """The command line's process (`python -m harness`, `tc-harness`): main(), then out without tearing the
    interpreter down where nothing is left to finish. A sweep holds its plan (~56,000 cases) and every module it
    imported; freeing them took 0.6-0.7 s after main returned, on the CPU machine
    (the CPU note 2026-11-26 fast-exit.txt in docs/performance.md). Where a child process or another thread that is not
    a daemon is still alive (nothing the commands leave behind), the ordinary exit joins them."""
    import multiprocessing
    import threading

    from harness.run import processes
    processes.one_shot_process()
    processes.on_signals()  # Ctrl-C and SIGTERM: children killed at once, exit 130 or 143 in one line, no traceback
    code = int(main(own_process=True))
    processes.stop_fork_server()
    if code in (128 + 2, 128 + 15):  # interrupted: a helper a thread was starting as it came goes too
        processes.kill_children()
    if multiprocessing.active_children() or any(not t.daemon and t is not threading.main_thread()
                                                for t in threading.enumerate()):
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say to it
        pass
    except (OSError, ValueError) as e:  # what was printed is lost (a full disk): as Python's own exit says, 120
        print(_one_line(f"harness: stdout: {e}"), file=sys.stderr)
        code = max(code, 120)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


if __name__ == "__main__":
    entry()
