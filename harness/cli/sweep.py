"""sweep and compile: a selection's kernels compiled (into the cache, or a kernel folder to launch elsewhere),
SASS-checked, launched and read back into a results file (harness/sweep.py does the work)."""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from pathlib import Path

from harness import plan
from harness.cli import results as results_commands
from harness.cli.common import DEFAULT_OUT, DEFAULT_RESULTS_DIR, PROG, UsageError, count, out_file, results_out, seconds
from harness.enums import ExitCode, ToolchainKind


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


def _selection(cmd: str, a) -> plan.Selection:
    """The selection the filter flags name (sweep and compile share them)."""
    if a.match is not None and any(not m.strip() for m in a.match):
        raise UsageError(f"{cmd}: --match '': give some text of the case ids to run")
    return plan.Selection.from_flags(a)


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
    out = results_out("sweep", "--out", a.out) or DEFAULT_RESULTS_DIR / (
        f"sweep-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl")
    if a.resume and out.exists():
        from harness.records import results
        try:
            results.load(out)
        except results.ResultsFileError as e:
            raise UsageError(f"sweep: {e}") from None
    junit = out_file("sweep", "--junit", a.junit)
    if junit is not None and junit.resolve() == out.resolve():
        raise UsageError(f"sweep: --junit {a.junit} is the --out file; give the XML its own name")
    shard = _shard(a.shard)
    _check_gpus(a.gpus, ptx=a.toolchain == ToolchainKind.DRIVER_JIT)
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
        code = max(code, results_commands.write_bundle("sweep", out, Path(a.bundle), tc))
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


def _check_gpus(spec: str, ptx: bool = False) -> None:
    """Refuse a bad --gpus before compiling: its spelling always, and where GPUs are visible, a GPU that is not
    there or (named by index) one that runs no family's arch (harness.enums.runs_on; `ptx`: the driver's JIT compiles
    the modules); nothing named is dropped silently. `all` is never refused: on a node whose GPUs the harness cannot
    use, every case is recorded not run (exit 3)."""
    from harness import registry as families
    from harness.run import gpu
    try:
        how, _ = gpu.parse_gpus(spec)
        if gpu.device_count():
            archs = list(dict.fromkeys(str(a) for fam in families.all_families() for a in fam.archs))
            picked = gpu.chosen(spec)
            if how == "indices":
                other = [i for i in picked if not any(gpu.runs(i, arch, ptx) for arch in archs)]
                if other:
                    info = gpu.device_info(other[0]) or {}
                    raise UsageError(f"sweep: --gpus {spec}: GPU {other[0]} is {info.get('name')} (compute "
                                     f"capability {info.get('compute_capability')}), not one the harness runs on "
                                     f"({', '.join(archs)})")
            if how != "all" and not any(gpu.select(spec, arch, ptx) for arch in archs):
                raise UsageError(f"sweep: --gpus {spec}: none of those GPUs is one the harness runs on "
                                 f"({', '.join(archs)})")
    except gpu.GpuSelectionError as e:
        raise UsageError(f"sweep: {e}") from None


def _sweep_parser(sub, family_names) -> None:
    s = sub.add_parser("sweep", help="run every case the node's GPUs support (the rest recorded as not run)")
    plan.add_flags(s, family_names)
    _toolchain_args(s)
    s.add_argument("--kernels", metavar="DIR", help="launch the modules of this kernel folder (python -m harness "
                                                    "compile --out DIR) instead of compiling; refused unless its "
                                                    "manifest matches this sweep's kernels")
    s.add_argument("--out", help=f"results file (JSON Lines); default {DEFAULT_OUT}, sweep-<time>.jsonl")
    s.add_argument("--resume", action="store_true", help="continue --out without re-running its cases")
    s.add_argument("--jobs", type=count, help="parallel compile processes, at least 1 (default: all cores)")
    s.add_argument("--timeout", type=seconds, default=30.0, help="seconds before a launch counts as hung "
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


def _compile_parser(sub, family_names) -> None:
    cp = sub.add_parser("compile", help="compile a selection's kernels into a folder, to launch elsewhere with "
                                        "sweep --kernels")
    plan.add_flags(cp, family_names)
    _toolchain_args(cp)
    cp.add_argument("--out", required=True, metavar="DIR", help="the kernel folder: one module per kernel and "
                                                                "manifest.json (created; an earlier kernel folder "
                                                                "there is replaced)")
    cp.add_argument("--jobs", type=count, help="parallel compile processes, at least 1 (default: all cores)")
    cp.add_argument("--json", action="store_true", help="print the summary as JSON")
    cp.set_defaults(fn=cmd_compile)


def _toolchain_args(p) -> None:
    from harness.enums import ToolchainKind
    p.add_argument("--toolchain", choices=ToolchainKind.values(),
                   help="nvrtc: NVRTC compiles cubins for the exact arch (default); driver-jit: NVRTC writes PTX "
                        "and the driver's JIT compiles it as the GPU loads it")
    p.add_argument("--nvrtc", metavar="PATH_OR_VERSION",
                   help="the NVRTC to compile with: a libnvrtc.so, a folder holding one, or a version (13, 12.8, "
                        "12.8.93) installed under $TC_HARNESS_NVRTC_DIR (default ~/.cache/tc-harness/nvrtc; "
                        "python -m harness toolchains lists them); default: the one cuda.bindings binds")


# the commands this group adds, by name (harness/cli/__init__.py puts them in --help's order)
PARSERS = {"sweep": _sweep_parser, "compile": _compile_parser}
