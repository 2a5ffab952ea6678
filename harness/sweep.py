"""The sweep: plan -> compile every kernel (cached, parallel) -> engine (launch, read back) -> records ->
diagnosis of what failed. Nothing here knows an instruction family: each kernel's family answers for it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness import cache, plan as planning, registry as families  # the families by name
from harness.contract import Kernel, case_keys, case_record
from harness.enums import ExitCode, Status
from harness.plan import Plan, Selection, SweepError  # noqa: F401  (re-exported: the sweep's vocabulary)
from harness.records import results
from harness.enums import ToolchainKind
from harness.run import (build, compile as nvrtc, cores, gpu, kernel_folder, processes, sass,
                         toolchain as toolchains)
from harness.run.kernel_folder import KernelFolder
from harness.run.toolchain import Toolchain
from harness.run.engine import (DEFAULT_BACKEND, MAX_ISOLATION_FAILURES_TOTAL, Engine, IsolationBudget, Job,
                                helpers_for_jobs)
from harness.run.worker import GpuWorker


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _terminal(log):
    """The sweep's messages and progress: with the default log (stderr) a Progress (a bar on a terminal, plain
    lines elsewhere); with a caller's log, that log and no bar."""
    from harness.progress import Progress
    if log is _log:
        return Progress(sys.stderr)
    prog = Progress(stream=None, bar=False)
    prog.log = log
    return prog


@dataclass(frozen=True)
class SweepConfig:
    out_path: Path | None = None
    workers: int | None = None  # parallel compile / preparation processes (default: every core)
    resume: bool = False
    timeout: float = 30.0
    gpus: str = "all"
    shard: tuple[int, int] | None = None
    diagnose: int = 16  # cases probed after the sweep, at most
    backend: str = DEFAULT_BACKEND  # the module that launches: the real device, or a simulated one
    isolation_total: int = MAX_ISOLATION_FAILURES_TOTAL  # failed bisection launches the whole sweep may spend
    toolchain: Toolchain | None = None  # what compiles the kernels (None: NVRTC cubins, the NVRTC cuda.bindings binds)
    kernels: KernelFolder | None = None  # launch the modules of this folder instead of compiling (its toolchain's)
    keep_launches: bool = False  # read and add to the cache's kept launches (harness/run/launch_cache.py)
    hold_plan: bool = False  # the process ends with the sweep (the sweep command's): its plan is made out of the
    # cyclic garbage collector's sight (planning.make_held)
    ahead: GpuWorker | None = None  # a GPU worker already starting (worker_ahead, the sweep command's); else the sweep
    # starts its own ahead
    helpers: processes.Helpers | None = None  # helpers already starting (helpers_ahead, the sweep command's): the
    # sweep takes them and shuts them down; else it starts its own ahead
    workers_on_one_gpu: int = 1  # GPU workers where the sweep runs on one GPU (the sweep command's:
    # engine.WORKERS_ON_ONE_GPU)
    level: int | None = None  # sweep --level (harness/levels.py): 1 the fleet sample, 3 the full sweep; recorded


def ptx_modules(cfg: SweepConfig) -> bool:
    """Whether the sweep's modules are PTX the driver's JIT compiles (which GPUs run an arch's kernels depends on it:
    harness.enums.runs_on)."""
    tc = cfg.kernels.toolchain if cfg.kernels is not None else cfg.toolchain
    return tc is not None and tc.kind is ToolchainKind.DRIVER_JIT


def devices(cfg: SweepConfig, archs) -> list[tuple[int, str]]:
    """(GPU index, arch) for every selected GPU and every one of `archs` it runs (gpu.runs): a GPU that runs several
    is listed with each."""
    out = []
    for arch in dict.fromkeys(map(str, archs)):
        out += [(i, arch) for i in gpu.select(cfg.gpus, arch, ptx_modules(cfg))]
    return sorted(out)


def device_indices(devs) -> list[int]:
    """The GPU indices of `devices`' answer, each once."""
    return list(dict.fromkeys(d for d, _ in devs))


def run_archs(devs) -> dict[str, str]:
    """family -> the arch its cases are planned for: the first of its archs a GPU here runs."""
    here = {a for _, a in devs}
    out = {}
    for fam in families.all_families():
        arch = next((a for a in map(str, fam.archs) if a in here), None)
        if arch:
            out[str(fam.name)] = arch
    return out


def run(sel: Selection, cfg: SweepConfig, log=_log) -> dict:
    """Plan, compile and run (where a GPU of the kernel's arch is) the selection; returns the summary. Where the
    kernels are known before the cases (`planning.kernels_first`), they compile while the cases are planned."""
    ahead = cfg.ahead if cfg.ahead is not None else worker_ahead(cfg)
    # one pool of helpers a sweep: they compile the kernels, then prepare the launches (a compile pool beside the
    # engine's started sixteen more processes at a cold sweep's start on an H100 node's 16 cores); started now, in a
    # thread, where a GPU may be (the engine's, else made with the engine)
    helpers = cfg.helpers if cfg.helpers is not None else helpers_ahead(cfg)
    results.host_tools()  # the environment record's answers from other programs, asked meanwhile
    early = engine = None
    out_lock = contextlib.ExitStack()
    opened: list = []  # the results writer, once _execute has opened it
    devs: list = []
    try:
        # one writer a results file: a second sweep given this --out is refused before anything is compiled
        out_lock.enter_context(writing(cfg.out_path))
        try:
            all_archs = [a for fam in families.all_families() for a in fam.archs]
            devs = devices(cfg, all_archs) if gpu.device_count() and not gpu.unusable() else []
            first = compile_first(sel, cfg, devs)  # a toolchain that cannot build them is refused before any start
            engine = start_engine(devs, cfg, ahead, helpers) if devs else None
            if engine is not None:
                helpers = engine.helpers
            early = EarlyCompile(*first, helpers) if first is not None else None
        finally:
            if ahead is not None and (engine is None or ahead not in engine.gpu_workers):
                ahead.kill()  # not a GPU this sweep runs on (or none is usable, or the sweep is refused)
        if early is not None:
            early.wait_submitted()
        t = time.time()
        p = (planning.make_held(sel, run_archs(devs), cfg.shard) if cfg.hold_plan
             else planning.make(sel, run_archs(devs), cfg.shard, cache=True))
        if cfg.level is not None:
            from harness import levels
            p = levels.sample(p, cfg.level, set(run_archs(devs)))
        for note in p.notes:
            log(note)
        return execute(p, cfg, log, plan_s=time.time() - t, engine=engine, devs=devs, early=early, opened=opened,
                       selection=selection_of(sel, cfg.shard))
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (processes.Interrupted) before the results file was opened
        if not opened:
            write_interrupted(cfg, e, devs, selection_of(sel, cfg.shard))
        raise
    finally:
        interrupted = sys.exc_info()[0] is not None and issubclass(sys.exc_info()[0], KeyboardInterrupt)
        if interrupted:
            # interrupted: what the signal's kill (processes.on_signals) found is dead; what started since dies now,
            # not waited for (a helper still importing would read its stop only once it had)
            if early is not None:
                early.stop()  # what it compiled is in the cache (compile.compile_many stores each module as it comes)
            running = engine.helpers if engine is not None else helpers
            if running is not None:
                running.kill()
            processes.kill_children()
        if early is not None:
            early.wait()  # a plan that failed leaves no compile running behind it
        if engine is not None:
            # its helpers with it; interrupted, its GPU workers (killed) are not waited for: a process that held a
            # CUDA context ends only once the driver has torn it down
            engine.close(wait=not interrupted)
        elif helpers is not None:
            helpers.shutdown()
        out_lock.close()


def selection_of(sel: Selection, shard: tuple[int, int] | None) -> str:
    """The selection as the environment record keeps it (`selection`): the sweep's filter flags and its shard, so
    that a --resume of another selection is refused, naming the difference."""
    return " ".join(x for x in (sel.flags(), f"--shard {shard[0]}/{shard[1]}" if shard else "") if x)


@contextlib.contextmanager
def writing(out_path: Path | None):
    """The results file's one-writer lock for the block (results.held; nothing without a file): SweepError (exit 2)
    where another sweep holds it, or the file system gives no locks."""
    if not out_path:
        yield
        return
    try:
        lock = results.held(Path(out_path))
        lock.__enter__()
    except results.ResultsFileError as e:
        raise SweepError(f"--out {e}") from None
    try:
        yield
    finally:
        lock.__exit__(None, None, None)


def write_interrupted(cfg: SweepConfig, e: KeyboardInterrupt, devs, selection: str | None = None) -> None:
    """The results file of a sweep interrupted before it opened it (while it planned or compiled): its environment
    and a summary that says it was interrupted and ran nothing, so that the file is whole and says so, and `--resume`
    continues from it. A --resume file is left as it is (it holds the runs before)."""
    if not cfg.out_path or (cfg.resume and Path(cfg.out_path).exists()):
        return
    with processes.whole():
        try:
            # the environment record a --resume is checked against: the one the sweep would have written
            env = _environment(cfg, devs, gpu.unusable(), selection, "sweep")
            writer = results.ResultsWriter(cfg.out_path, env)
            writer.close({"signal": str(e) or "SIGINT", "ran": 0, "cases": None, "unaccounted": None},
                         interrupted=True)
        except (OSError, ValueError):  # no file to say it in: the command line's line says it
            pass


def start_engine(devs, cfg: SweepConfig, started: GpuWorker | None = None,
                 helpers: processes.Helpers | None = None) -> Engine:
    """The engine of a sweep on these GPUs (its pool and GPU workers start now; `started`, a GPU worker already
    starting, is taken for its GPU; `helpers`, processes already starting, as its pool)."""
    return Engine(devs, cfg.workers, cfg.backend, IsolationBudget(cfg.isolation_total),
                  keep_launches=cache.cache_dir() if cfg.keep_launches else None, started=started, helpers=helpers,
                  workers_on_one_gpu=cfg.workers_on_one_gpu)


def helpers_ahead(cfg: SweepConfig) -> processes.Helpers | None:
    """The sweep's helpers (engine.helpers_for_jobs), started as its run begins, where a GPU may be here
    (NVIDIA_CONTROL_DEVICE): they compile the kernels while the sweep asks CUDA for its GPUs and makes the kernels'
    sources, and the engine takes them. None elsewhere: a machine without a GPU has no engine, and its compile starts
    a pool of its own only if something is not cached."""
    if not os.path.exists(NVIDIA_CONTROL_DEVICE) or os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return None
    return helpers_for_jobs(cfg.workers or cores.default_workers())


# Where a GPU may be: the NVIDIA driver's control device (in a container given a GPU as on a host). Without it no GPU
# worker is started ahead of the sweep asking CUDA.
NVIDIA_CONTROL_DEVICE = "/dev/nvidiactl"


def worker_ahead(cfg: SweepConfig, fork: bool = False) -> GpuWorker | None:
    """The GPU worker of GPU 0 where `--gpus` is `all` or a count, started before the sweep asks CUDA which GPUs are
    here (the engine takes it if it runs on that GPU; else it is stopped). A GPU worker's start-up (a process
    importing CuPy and making its CUDA context) took 0.62-1.28 s on H200 and H100 nodes: started with the engine, it
    was still going when a warm sweep's plan had been read, and held back the first launch by 0.27 s
    (bench17 in docs/performance.md); started as the sweep's run began, by 0.16-0.32 s
    (bench17 too). The command line's sweep starts it before it checks its input, forked (`fork`: where this process has
    made no CUDA call and runs no other thread; GpuWorker.start): on an H100 node ready 0.35-0.47 s later, and the
    first launch went as the engine's run began (bench17 too). None where no GPU can be here (NVIDIA_CONTROL_DEVICE;
    CUDA_VISIBLE_DEVICES empty), the selection names GPUs by index or is not one gpu.parse_gpus reads (the sweep
    checks it, and refuses it with the reason), or the process cannot be started."""
    if not os.path.exists(NVIDIA_CONTROL_DEVICE) or os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return None
    try:
        how, _ = gpu.parse_gpus(cfg.gpus)
    except gpu.GpuSelectionError:
        return None
    if how == "indices":  # an index may name no GPU (refused once CUDA is asked): its worker would fail to start
        return None
    worker = GpuWorker(0, cfg.backend)
    try:  # only a head start: where the process cannot be started the sweep starts its own, or says why
        worker.start(fork=fork and gpu.cuda_untouched() and threading.active_count() == 1)
    except OSError:
        return None
    return worker


# how often the sweep, waiting for its compile, hands the engine more preparation (Engine.top_up): each time up to
# `ahead` (32 on 16 cores) places are refilled, more than 16 cores finish in 0.05 s at ~0.1 s a launch's preparation
POLL_S = 0.05


class EarlyCompile:
    """compile_kernels of kernels known before the plan, in a thread of its own while the plan is built (the
    compiling runs in its own processes; the plan, in this one). Its messages wait for `result`, which hands them
    to the sweep's log (a progress bar on a terminal is drawn by that one thread).

    The plan waits until the modules have gone to the helpers (`wait_submitted`): the thread makes the kernels'
    sources, cache keys and modules first, in this process, and the plan built beside it took its share of the
    interpreter's lock: on an H100 node the modules went out 0.63-0.75 s after the compile began, with one core of
    sixteen busy (bench27 in docs/performance.md, the cold timelines)."""

    def __init__(self, kernels: list[Kernel], cfg: SweepConfig, helpers: processes.Helpers | None = None):
        self.kernels, self.seconds, self.helpers = kernels, 0.0, helpers
        self.messages: list[str] = []
        self._out: dict | None = None
        self._error: BaseException | None = None
        self._submitted = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._compile, args=(cfg,), name="early-compile", daemon=True)
        self._thread.start()

    def _compile(self, cfg: SweepConfig) -> None:
        t = time.time()
        try:
            self._out = compile_kernels(self.kernels, cfg, self.messages.append, self.helpers,
                                        submitted=self._submitted.set)
        except BaseException as e:  # handed to whoever asks for the result
            self._error = e
        finally:
            self._submitted.set()  # nothing to hand out (every kernel cached), or the compile failed
        self.seconds = time.time() - t

    def stop(self) -> None:
        """Stop waiting for the compile (an interrupt: its processes are killed, processes.on_signals): the modules
        it finished are in the cache (compile.compile_many stores each as it comes); a module this thread compiles
        itself (one process) is left to it, a daemon, which the process's exit ends."""
        self._stopping.set()

    def wait_submitted(self) -> None:
        """Until the compile's modules have gone to the helpers, or the compile has ended without any."""
        self._submitted.wait()

    def wait(self, while_waiting=None) -> None:
        """Until the compile ends, calling `while_waiting()` every POLL_S meanwhile, if given (stopped: the compile
        ends within a poll of compile_many's)."""
        while self._thread.is_alive() and not self._stopping.is_set():
            if while_waiting is not None:
                while_waiting()
            self._thread.join(POLL_S)

    def result(self, log, while_waiting=None) -> dict[Kernel, nvrtc.Compiled]:
        self.wait(while_waiting)
        for m in self.messages:
            log(m)
        if self._error is not None:
            raise self._error
        return dict(self._out)


def compile_first(sel: Selection, cfg: SweepConfig, devs) -> tuple[list[Kernel], SweepConfig] | None:
    """The kernels to compile while the cases are planned (an EarlyCompile of them, with the config returned), where
    they are known first and are to be compiled here (not a --kernels folder, a usable GPU or none), and nothing
    checked after the plan can refuse the run (a --resume file is read and checked then); the toolchain checked
    against them here (SweepError, exit 2, before anything is started). None: compiled after the plan, as ever."""
    if cfg.kernels is not None or cfg.resume or gpu.unusable() or cfg.level == 1:  # level 1: its sample's only
        return None
    kernels = planning.kernels_first(sel, run_archs(devs), cfg.shard)
    if not kernels:
        return None
    tc = check_kernels_toolchain(kernels, cfg, devs)
    return kernels, dataclasses.replace(cfg, toolchain=tc)


def execute(p: Plan, cfg: SweepConfig, log=_log, plan_s: float = 0.0, engine: Engine | None = None,
            devs: list[tuple[int, str]] | None = None, early: EarlyCompile | None = None,
            opened: list | None = None, selection: str | None = None, run_kind: str = "sweep") -> dict:
    """Compile, run and read back a plan; then probe up to `cfg.diagnose` cases that did not do what the model
    says, and record (and draw) what the hardware read instead. An `engine` handed in is wound down at the end
    (Engine.wind_down): it runs nothing more, and its owner closes it. `selection`: the flags that chose the plan
    (selection_of), kept in the environment record; `run_kind` what the file is (results.RUN_KINDS).

    With `cfg.resume` onto an existing file, the file must be this selection's, toolchain's and environment's
    (SweepError naming the difference, exit 2); its cases are not run again, and the summary (and so the exit
    status) counts every case of the file, those it held and those run now. A file that holds every planned case
    and its summary is left as it is: the summary is the file's, counted again from its records."""
    with writing(cfg.out_path):
        return _resumed_or_run(p, cfg, log, plan_s, engine, devs, early, opened, selection, run_kind)


def _resumed_or_run(p: Plan, cfg: SweepConfig, log, plan_s, engine, devs, early, opened, selection,
                    run_kind) -> dict:
    t0 = time.time()
    progress = _terminal(log)
    log = progress.log
    problem = gpu.unusable()
    if problem:
        devs = []
    elif devs is None:
        devs = devices(cfg, {k.arch for k, _ in p.work}) if gpu.device_count() else []
    cfg = dataclasses.replace(cfg, toolchain=check_toolchain(p, cfg, devs))
    prev = None
    # the environment record: made as the results file is opened, after the compile (its answers from ptxas and
    # nvidia-smi come meanwhile: results.host_tools), but first where a --resume file is to be checked against it
    env = lambda: _environment(cfg, devs, problem, selection, run_kind)  # noqa: E731
    if cfg.resume and cfg.out_path and Path(cfg.out_path).exists():
        try:
            prev = results.read(cfg.out_path)
        except results.ResultsFileError as e:
            raise SweepError(f"--resume {e}") from None
        check_resume_toolchain(prev.env, cfg)
        made = env()
        check_resume(prev, made, p, cfg)
        env = lambda: made  # noqa: E731
    log(f"plan: {len(p.work)} kernels, {p.cases} cases" +
        (f" (+{len(p.compile_only)} kernels of other archs, compile only)" if p.compile_only else ""))
    done_ids: set[str] = set()
    if prev is not None:
        done_ids = set(prev.cases)
        log(f"resume: {len(done_ids)} cases already in {cfg.out_path}")
    work = [(k, [c for c in cs if c.id not in done_ids]) for k, cs in p.work] if done_ids else p.work
    work = [(k, cs) for k, cs in work if cs]
    if prev is not None and not work and prev.summary is not None and not prev.problems():
        log(f"resume: every planned case of {cfg.out_path} has its record, and the file its summary: nothing to run")
        return {**prev.summary, **_counted(prev.cases.values(), p.cases)}
    archs_here = {a for _, a in devs}
    runnable = [(k, cs) for k, cs in work if str(k.arch) in archs_here]
    own_engine = None
    if engine is None and runnable:
        engine = own_engine = start_engine(devs, cfg)
    progress.start(sum(len(cs) for _, cs in work))
    try:
        return _execute(p, work, runnable, cfg, log, plan_s, engine, devs, t0, problem, progress, early,
                        opened=opened, env=env, held=prev.cases.values() if prev is not None else ())
    finally:
        progress.close()
        if own_engine is not None:
            own_engine.close()


def plan_kernels(p: Plan) -> list[Kernel]:
    """Every kernel a plan compiles: those it runs, then those of the families' other archs."""
    return [k for k, _ in p.work] + p.compile_only


def check_toolchain(p: Plan, cfg: SweepConfig, devs) -> Toolchain:
    """The run's toolchain, checked against the plan before anything is compiled or launched; SweepError (exit 2)
    for an arch its NVRTC cannot build, a kernel folder that does not match the plan, or a GPU whose driver's JIT
    cannot load the PTX it writes."""
    return check_kernels_toolchain(plan_kernels(p), cfg, devs)


def check_kernels_toolchain(kernels: list[Kernel], cfg: SweepConfig, devs) -> Toolchain:
    """check_toolchain of these kernels (a plan's, or those known before it)."""
    if cfg.kernels is not None:
        tc = cfg.kernels.toolchain
        try:
            cfg.kernels.check([(k, nvrtc.compile_job(k)) for k in kernels])
        except kernel_folder.KernelFolderError as e:
            raise SweepError(f"--kernels {cfg.kernels.path}: {e}") from None
    else:
        tc = cfg.toolchain or toolchains.default()
        unbuildable = tc.cannot_build(sorted({str(k.arch) for k in kernels}))
        if unbuildable:
            arch, reason = next(iter(unbuildable.items()))
            fams = sorted({str(k.family) for k in kernels if str(k.arch) == arch})
            others = sorted({str(k.family) for k in kernels} - set(fams))
            instead = f"--family {' --family '.join(others)}" if others else "another selection"
            raise SweepError(f"NVRTC {tc.library.version} ({tc.library.path}) cannot build {arch}, which the "
                             f"selection's {', '.join(fams)} kernels need (NVRTC: {reason}; it lists "
                             f"{', '.join(map(str, tc.archs))}): give {instead} or another --nvrtc")
        if kernels and sass_checked(cfg):
            try:
                sass.nvdisasm_path()
            except sass.NvdisasmMissing as e:  # before any compile: every cubin would go unchecked
                raise SweepError(str(e)) from None
    for d in device_indices(devs):
        try:
            toolchains.check_driver(tc, (gpu.device_info(d) or {}).get("driver") or 0)
        except toolchains.ToolchainError as e:
            raise SweepError(f"--toolchain driver-jit on GPU {d}: {e}") from None
    return tc


def _environment(cfg: SweepConfig, devs, problem, selection: str | None, run_kind: str) -> dict:
    """The environment record of this run's results file."""
    env = results.environment(device_indices(devs), toolchain=cfg.toolchain, kernels=cfg.kernels, run=run_kind)
    env["gpu_state"] = "unusable" if problem else ("usable" if devs else gpu.state().kind)
    env["gpus_requested"] = cfg.gpus
    if cfg.level is not None:
        env["level"] = cfg.level
    if problem:
        env["gpu_error"] = problem
    if selection is not None:
        env["selection"] = selection
    return env


# environment fields that differ between any two starts of one run: a resume does not compare them
_RESUME_VOLATILE = {"type", "date", "schema"}
# fields a file written before them lacks: their absence is no other environment (its kind and cases say instead)
_RESUME_NEWER = {"run", "selection", "cuda_bindings"}


def check_resume(prev: results.ResultsFile, env: dict, p: Plan, cfg: SweepConfig) -> None:
    """SweepError (exit 2) where the --resume file is not this run's to continue: another kind of run's, another
    selection's (its `selection`, or, in a file from before that field, cases this plan does not have), or another
    environment's (any field of its environment record but the date: GPU, driver, host, versions); the message
    names the first difference."""
    where = f"--resume {cfg.out_path}"
    if prev.kind != env.get("run", "sweep"):
        raise SweepError(f"{where}: is a {prev.kind} run's results, not a {env.get('run', 'sweep')}'s; "
                         f"give a new --out")
    was, now = prev.env.get("selection"), env.get("selection")
    if was is not None and now is not None and was != now:
        raise SweepError(f"{where}: its cases are of another selection ({was or 'everything'}), this run's is "
                         f"{now or 'everything'}; give a new --out")
    planned = {c.id for _, cs in p.work for c in cs}
    foreign = [cid for cid in prev.cases if cid not in planned]
    if foreign:
        raise SweepError(f"{where}: {len(foreign)} of its cases are not in this run's selection (such as "
                         f"{foreign[0]}); give a new --out"[:400])
    for key in sorted((set(prev.env) | set(env)) - _RESUME_VOLATILE):
        if key in _RESUME_NEWER and key not in prev.env:  # a file from before the field (checked above)
            continue
        if key == "selection" and now is None:
            continue
        if prev.env.get(key) != env.get(key):
            raise SweepError(f"{where}: written in another environment: {key} {prev.env.get(key)!r} there, "
                             f"{env.get(key)!r} here; give a new --out"[:400])


def _counted(records, planned: int) -> dict:
    """A summary's counts of case records: per status, ran, ordinary and controls apart, unaccounted."""
    counts = {str(s): 0 for s in Status}
    by_kind = {k: {str(s): 0 for s in Status} for k in ("ordinary", "controls", "observations")}
    for r in records:
        counts[r["status"]] += 1
        by_kind["observations" if r["status"] == Status.OBSERVED else
                "controls" if r.get("control") else "ordinary"][r["status"]] += 1
    return {**counts, "ran": sum(n for s, n in counts.items() if Status(s).ran),
            "ordinary": {k: v for k, v in by_kind["ordinary"].items() if v},
            "controls": {k: v for k, v in by_kind["controls"].items() if v},
            "observations": by_kind["observations"][Status.OBSERVED],
            "unaccounted": planned - sum(counts.values())}


def check_resume_toolchain(prev_env: dict, cfg: SweepConfig) -> None:
    """SweepError when --resume would append to results another toolchain wrote (files from before the toolchain
    axis name none: they were NVRTC cubins)."""
    tc = cfg.toolchain
    was = (prev_env.get("toolchain", "nvrtc"), prev_env.get("nvrtc_build") or prev_env.get("nvrtc"))
    now = (str(tc.kind), tc.library.build if prev_env.get("nvrtc_build") else tc.library.version)
    if was != now:
        raise SweepError(f"--resume {cfg.out_path}: its cases were compiled by {was[0]} (NVRTC {was[1]}), this run "
                         f"by {now[0]} (NVRTC {now[1]}); give a new --out")


def build_options(cfg: SweepConfig) -> build.BuildOptions:
    """How the sweep's kernels are made (harness/run/build.py): a compile that fails leaves its source and log
    beside the results file."""
    failed_dir = (Path(cfg.out_path).parent / f"{Path(cfg.out_path).stem}-compile-errors") if cfg.out_path else None
    return build.BuildOptions(cfg.toolchain, cfg.kernels, cfg.workers, failed_dir)


def sass_checked(cfg: SweepConfig) -> bool:
    """Whether the run's modules are cubins whose SASS the sweep checks (not PTX for the driver's JIT)."""
    return build_options(cfg).checks_sass


def compile_kernels(kernels: list[Kernel], cfg: SweepConfig, log, helpers: processes.Helpers | None = None,
                    submitted=None) -> dict[Kernel, nvrtc.Compiled]:
    """The sweep's kernels built and SASS-checked (build.build, with the sweep's options); `helpers`, `submitted`:
    as build.build's."""
    return build.build(kernels, build_options(cfg), log, helpers, submitted)


def compile_to_folder(sel: Selection, tc: Toolchain, out_dir: Path, workers: int | None = None) -> dict:
    """`python -m harness compile`: every kernel a sweep of `sel` compiles, by `tc`, into a kernel folder (for
    `sweep --kernels` on another machine). The plan is the one a machine without a GPU makes, which compiles the
    same kernels as one with any GPU (each family's archs, every one). SweepError before compiling anything for a
    selection or toolchain that cannot be; returns a summary."""
    t = time.time()
    p = planning.make(sel, {}, None)
    cfg = SweepConfig(workers=workers, toolchain=tc)
    check_toolchain(p, cfg, [])
    kernels = plan_kernels(p)
    jobs = [nvrtc.compile_job(k) for k in kernels]
    compiled = dict(zip(kernels, nvrtc.compile_many(jobs, workers, Path(out_dir) / kernel_folder.ERRORS,
                                                    raise_on_error=False, toolchain=tc)))
    folder = kernel_folder.write(out_dir, tc, list(zip(kernels, jobs)), compiled, sel.flags())
    files = sorted({Path(out_dir) / k.file for k in folder.kernels if k.file})  # kernels of one module share its file
    rejected = [{"kernel": k.name, "arch": k.arch, "error": k.error} for k in folder.kernels if k.error]
    by_arch: dict[str, int] = {}
    for k in kernels:
        by_arch[str(k.arch)] = by_arch.get(str(k.arch), 0) + 1
    return {"out": str(out_dir), "toolchain": tc.describe(), "kernels": len(kernels), "by_arch": by_arch,
            "rejected": rejected, "files": len(files), "bytes": sum(f.stat().st_size for f in files),
            "selection": sel.flags(), "wall_s": round(time.time() - t, 2)}


class _Ledger:
    """What a sweep has recorded, kept as it is written: counts by status, and by kind of case (ordinary, negative
    controls, observations: a control caught as predicted is no ordinary pass), the case ids written, and the
    suspects for the diagnosis pass. `emit` is the one door a batch of records goes through to the results file."""

    def __init__(self, work, run_set, writer, progress, held=()):
        self._kernel_cases = {k.name: (families.get(k.family), cs) for k, cs in work}
        self._kernel_of = {k.name: k for k in run_set}
        self._controls_of: dict[str | None, dict] = {}
        self._writer, self._progress = writer, progress
        self.counts = {str(s): 0 for s in Status}
        self.by_kind = {k: {str(s): 0 for s in Status} for k in ("ordinary", "controls", "observations")}
        self.recorded: set[str] = set()  # the case ids this run wrote: a planned case none of them is, is unaccounted
        self.suspects: list[tuple[Kernel, str]] = []
        self.not_run_reasons: dict[str, str] = {}  # family -> why no GPU here runs it (record_unrun)
        for r in held:  # the resumed file's: the summary is the whole file's
            self._count(r["status"], bool(r.get("control")))

    def _count(self, status: str, control: bool) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        group = self.by_kind["observations" if status == Status.OBSERVED else
                             "controls" if control else "ordinary"]
        group[status] = group.get(status, 0) + 1

    def _controls_in(self, kernel_name: str | None) -> dict:
        """The kernel's negative controls (case id -> (family, case)), found when its first records come: found for
        every case before the first launch, they held it up 0.1 s."""
        if kernel_name not in self._controls_of:
            fam, cs = self._kernel_cases.get(kernel_name, (None, ()))
            self._controls_of[kernel_name] = {c.id: (fam, c) for c in cs if fam.facets_of(c).get("control")}
        return self._controls_of[kernel_name]

    def emit(self, recs) -> None:
        """Count and write a batch of case records: the engine's (results.CaseLines, encoded where they were read
        back) or a list of records made here."""
        batch = recs if isinstance(recs, results.CaseLines) else results.CaseLines(recs)
        controls = {}
        for name in {f.kernel for f in batch.facts}:
            controls.update(self._controls_in(name))
        # a control's fault or hang may be how it is caught: its family says (the engine knows no control); only a
        # fault or hang of the control's own launch counts (one that was not isolated may be another case's)
        for i, f in enumerate(batch.facts):
            if f.id in controls and f.status in (Status.FAULT, Status.TIMEOUT) and f.isolated is not False:
                batch.replace(i, controls[f.id][0].settle_control(controls[f.id][1], batch.record(i)))
        for f in batch.facts:
            self.recorded.add(f.id)
            self._count(f.status, f.id in controls)
            if f.status == Status.FAIL or f.matches_model_prediction is False:
                self.suspects.append((self._kernel_of[f.kernel], f.id))
        if self._writer:
            with processes.whole():  # an interrupt meanwhile is raised once the batch is written whole
                self._writer.write_lines(batch)
        if self._progress is not None:
            self._progress.update(f.status for f in batch.facts)

    def record_unrun(self, work, compiled, run_set, problem, cfg: SweepConfig, log) -> None:
        """One record for each case that is not launched: the GPU here is unusable (error), its kernel did not
        compile (compile-error), or no GPU here runs its arch (not-run, with the reason)."""
        not_run: dict[str, int] = {}
        for k, cs in work:
            fam = families.get(k.family)
            if problem:
                self.emit([case_record(c.id, k, Status.ERROR, error=f"GPU unusable: {problem}", **case_keys(fam, c))
                           for c in cs])
            elif compiled[k].error is not None:
                self.emit([case_record(c.id, k, Status.COMPILE_ERROR, error=str(compiled[k].error),
                                       **case_keys(fam, c)) for c in cs])
            elif k not in run_set:
                # no GPU here runs the family, or (a family of several archs' own forms) none runs this kernel's arch
                reason = (gpu.skip_reason(*map(str, fam.archs), ptx=ptx_modules(cfg))
                          or gpu.skip_reason(str(k.arch), ptx=ptx_modules(cfg)))
                not_run[str(k.family)] = not_run.get(str(k.family), 0) + len(cs)
                self.not_run_reasons.setdefault(str(k.family), reason)
                self.emit([case_record(c.id, k, Status.NOT_RUN, reason=reason, **case_keys(fam, c)) for c in cs])
        for fam, n in not_run.items():
            log(f"{fam}: {n} cases recorded as not run ({self.not_run_reasons[fam]})")

    def fill(self, summary: dict, planned: int, work, interrupted: KeyboardInterrupt | None, log) -> None:
        """The summary's counts: every status, what ran, the kinds apart, and the planned cases with no record."""
        summary.update(self.counts)
        summary["ran"] = sum(n for s, n in self.counts.items() if Status(s).ran)
        # a negative control passes when the wrong descriptor was caught as predicted: counted apart, so that
        # "N pass" of the ordinary cases is not padded by controls (and a control failure is not lost in them)
        summary["ordinary"] = {k: v for k, v in self.by_kind["ordinary"].items() if v}
        summary["controls"] = {k: v for k, v in self.by_kind["controls"].items() if v}
        summary["observations"] = self.by_kind["observations"][Status.OBSERVED]  # neither pass nor fail
        # every planned case: those this run recorded, and (--resume) those the file already held (counted in
        # `counts`, so that the summary is the whole file's); a case with neither is no pass (exit_code)
        summary["unaccounted"] = planned - sum(self.counts.values())
        missing = [c.id for _, cs in work for c in cs if c.id not in self.recorded]
        if missing:  # named, so that nothing is lost silently (an interrupt leaves the rest of the plan here)
            summary["unaccounted_ids"] = missing[:UNACCOUNTED_NAMED]
            if interrupted is None:
                log(f"{len(missing)} planned cases have no record (the first: {missing[0]}): not a pass")
        summary["not_run_reasons"] = self.not_run_reasons


def _compile_plan(p: Plan, cfg: SweepConfig, log, problem, early: EarlyCompile | None, engine: Engine | None,
                  preparing: bool) -> tuple[dict, float]:
    """Every kernel of the plan compiled (kernel -> nvrtc.Compiled, in plan_kernels' order) and the compile's
    seconds: nothing where the GPU here is unusable; else what the early compile (begun while the cases were
    planned) made, and anything the plan has that it had not; else all of them now. `preparing`: the engine
    prepares launches meanwhile (as far ahead as it allows)."""
    if problem:
        log(f"GPU unusable: {problem}; every case is recorded as error, nothing is compiled or launched")
        return {}, 0.0
    helpers = engine.helpers if engine is not None else None
    t = time.time()
    if early is None:
        compiled = compile_kernels(plan_kernels(p), cfg, log, helpers)
        return compiled, round(time.time() - t, 2)
    kernels = plan_kernels(p)
    compiled = early.result(log, engine.top_up if engine is not None and preparing else None)
    early_s, t = early.seconds, time.time()  # the early compile's own time (most of it while the plan was built)
    missing = [k for k in kernels if k not in compiled]
    if missing:
        compiled.update(compile_kernels(missing, cfg, log, helpers))
    return {k: compiled[k] for k in kernels}, round(early_s + time.time() - t, 2)


def _execute(p: Plan, work, runnable, cfg: SweepConfig, log, plan_s, engine, devs, t0, problem=None,
             progress=None, early: EarlyCompile | None = None, opened: list | None = None, env=None,
             held=()) -> dict:
    """Every case of `work` gets a record in the results file (written however little runs), and the file
    ends with the summary. `problem`: the GPU here is unusable (gpu.unusable()): nothing is compiled or
    launched, every case is recorded `error` with the message, and the summary carries it. `env()`: the results
    file's environment record; `held`: the case records the file holds already (--resume), counted in the summary
    with those written now."""
    run_set = {k for k, _ in runnable}
    jobs = [Job(k, tuple(cs)) for k, cs in runnable]
    if engine is not None and jobs:
        engine.begin(jobs)  # preparation runs while the kernels compile
    compiled, compile_s = _compile_plan(p, cfg, log, problem, early, engine, bool(jobs))
    cubins = {k.name: (str(c.cubin_path) if c.error is None else None) for k, c in compiled.items()
              if k in run_set}
    summary = {"kernels": len(p.work), "cases": p.cases, "compiled": sum(not c.cached and c.error is None
                                                                            for c in compiled.values()),
               "compile_only_kernels": len(p.compile_only), "compile_s": compile_s, "notes": p.notes,
               "sass_checked": bool(compiled) and sass_checked(cfg)}
    errors = [(k, c) for k, c in compiled.items() if c.error is not None]
    if errors:
        summary["compile_errors"] = [{"kernel": k.name, "arch": str(k.arch),
                                      "cases": sum(len(cs) for kk, cs in p.work if kk == k),
                                      "error": str(c.error), "source": str(c.error.source_path)} for k, c in errors]
        for e in summary["compile_errors"]:
            log(f"compile error: {e['kernel']} for {e['arch']} ({e['cases']} cases): {e['error']}")
    if problem:
        summary["environment_error"] = problem
    writer = None
    if cfg.out_path:
        made = env() if env else _environment(cfg, devs, problem, None, "sweep")
        with processes.whole():
            writer = results.ResultsWriter(cfg.out_path, made, resume=cfg.resume)
            if opened is not None:
                opened.append(writer)
    ledger = _Ledger(work, run_set, writer, progress, held)
    ledger.record_unrun(work, compiled, run_set, problem, cfg, log)
    timing = {"plan_s": round(plan_s, 2)}
    interrupted: KeyboardInterrupt | None = None
    try:
        if jobs:
            log("GPUs: " + ", ".join(f"{d} ({gpu.device_info(d)['name']}, "
                                     f"{', '.join(a for i, a in devs if i == d)})" for d in device_indices(devs)))
            timing.update(engine.run(cubins, cfg.timeout, ledger.emit, log))
        if ledger.suspects and cfg.diagnose > 0:
            from harness.diagnosis import pictures
            td, drawn = time.time(), pictures.DRAWN["seconds"]
            summary["diagnosed"] = _diagnose(p, compiled, ledger.suspects[:cfg.diagnose], devs, cfg, writer, log,
                                             storm=engine.storm if engine is not None else None, engine=engine)
            timing["diagnose_s"] = round(time.time() - td, 2)
            timing["pictures_s"] = round(pictures.DRAWN["seconds"] - drawn, 2)  # of diagnose_s
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (processes.Interrupted): the file says so, then out
        interrupted = e
        raise
    finally:
        ledger.fill(summary, p.cases, work, interrupted, log)
        if interrupted is not None:
            summary["interrupted"] = True
            summary["signal"] = str(interrupted) or "SIGINT"
        summary["gpus"] = device_indices(devs)
        summary["timing"] = timing
        summary["wall_s"] = round(time.time() - t0, 2)
        try:
            if engine is not None:  # nothing more runs on it: its processes end while the results file is synced
                engine.wind_down()
        except Exception:  # (only a head start: `close` stops them in any case) the summary is written whatever
            pass
        if writer:
            with processes.whole():
                writer.close(summary)
    return summary


BAD = ("fail", "fault", "timeout", "compile-error")
UNACCOUNTED_NAMED = 20  # planned cases without a record, named in the summary (the count is whole)


def exit_code(summary: dict) -> ExitCode:
    """4 when the GPU here is unusable; 1 when any case failed, faulted, timed out or did not compile, or any
    kernel (one compiled only, for another arch, too) did not compile or lacks its instruction in its SASS, or a
    planned case has no record (`unaccounted`: a case never recorded is no pass), or the sweep was interrupted;
    3 when nothing could run (every case not-run); else 0."""
    if summary.get("environment_error") or summary.get("error"):
        return ExitCode.ENVIRONMENT
    if any(summary.get(k) for k in BAD) or summary.get("compile_errors"):
        return ExitCode.FAILED
    if summary.get("unaccounted") or summary.get("interrupted"):  # fewer records than planned cases (or more)
        return ExitCode.FAILED
    if not summary.get("ran") and summary.get("not-run"):
        return ExitCode.NOTHING_RAN
    return ExitCode.OK


# A storm's suspect gets no picture: drawing one was most of its diagnosis, 0.6 s on an H100 node and 1.3 s in the
# node's first such sweep (matplotlib read from disk; docs/performance.md, "When most launches fault"). Its failed and
# inconclusive records say so, and name no way to draw it: swept alone, such a case may fault where in its storm's
# launch it failed, and then it is no suspect.
NOT_DRAWN_IN_A_STORM = ("not drawn: a fault storm (the sweep draws no picture for a storm's suspect, so as to end "
                        "sooner)")


def _diagnose(p: Plan, compiled, suspects, devs, cfg: SweepConfig, writer, log, storm=None, engine=None) -> int:
    """Probe the suspects, one GPU worker per GPU for all of them: the engine's, its launches done (a fresh one costs
    about a second to start). Of a family and arch in a fault storm (`storm`, the engine's FaultStorm) only the
    first suspect is probed: its launches faulted, so its probes most likely fault too, and each fault costs the
    worker its CUDA context; for the same reason its probes launch no kernel whose own launches failed in the storm
    (FaultStorm.guard), and it gets no picture (NOT_DRAWN_IN_A_STORM)."""
    by_id = {c.id: c for _, cs in p.work for c in cs}
    png_dir = Path(cfg.out_path).parent / f"{Path(cfg.out_path).stem}-diagnosis" if cfg.out_path else None
    by_kernel: dict[Kernel, list] = {}
    stormed: dict[tuple[str, str], int] = {}  # group in a storm -> its suspects not probed
    for k, cid in suspects:
        if storm is not None and storm.raging(k):
            g = (str(k.family), str(k.arch))
            if g in stormed or any((str(x.family), str(x.arch)) == g for x in by_kernel):
                stormed[g] = stormed.get(g, 0) + 1
                continue
            stormed[g] = 0
        by_kernel.setdefault(k, []).append(by_id[cid])
    for (fam, arch), skipped in stormed.items():
        if skipped:
            log(f"diagnosis: {skipped} more suspects of {fam} on {arch} not probed: a fault storm (one is)")
    workers: dict[int, GpuWorker] = {}
    n = 0
    try:
        for k, cases in by_kernel.items():
            device = next(d for d, a in devs if a == str(k.arch))
            worker = (engine.worker_of(device) if engine is not None else None) or workers.get(device) \
                or workers.setdefault(device, GpuWorker(device, cfg.backend))
            in_storm = storm is not None and storm.raging(k)
            if in_storm:
                worker = storm.guard(worker, k)
            recs = families.get(k.family).diagnose(k, cases, str(compiled[k].cubin_path), worker, cfg.timeout,
                                                  None if in_storm else png_dir)
            for r in recs:
                if in_storm and png_dir is not None and r.get("status") in ("fail", "inconclusive") \
                        and "png" not in r:
                    r["png"] = NOT_DRAWN_IN_A_STORM
                log(f"diagnosis {r['id']} operand {r['operand']}: {r.get('summary') or r.get('error')}")
                if writer:
                    writer.write(r)
            n += len(recs)
    finally:
        for worker in workers.values():
            worker.close()
    return n
