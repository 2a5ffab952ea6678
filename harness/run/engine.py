"""The engine: host preparation, GPU launches and read-backs overlapped, one GPU worker per GPU (two on a sweep's only
GPU: WORKERS_ON_ONE_GPU), for any family.

    pool (all cores):  first the sweep's compile (its helpers are this pool: processes.Helpers), then
                       family.prepare(kernel, cases)   -> spool files   (launch .launch.pkl, expectations .exp.pkl)
                       (or the files kept by an earlier sweep of the same source: launch_cache.py)
    GPU workers:       launch the LaunchInput            -> spool file    (outputs .out.pkl)
    pool (all cores):  family.readback(...)              -> case records
    this process:      hand out work (a launch as soon as its preparation is done), write records in completion order

The bulky data goes through files in a spool directory (/dev/shm where it has room), never through this
process, which only dispatches and writes. With kept launches (`Engine(keep_launches=...)`), a prepared launch's
two files are written to the cache's folder of kept launches instead of the spool and stay there; a later engine of
the same source finds them and does not prepare that launch again. A launch that faults or hangs is bisected in fresh workers on the
same GPU down to the cases that do (`run_isolated`); every other case still gets its result. A module the driver
cannot load (PTX its JIT rejects, with `--toolchain driver-jit`) is no fault of a launch: its kernel's cases are
recorded compile-error at once. The engine never
asks which family it runs: it calls the family's prepare and readback by the kernel's family name.

Bisection is bounded so that a sweep in which every launch faults (a broken driver, a planted bug in a
descriptor encoder) still ends in bounded time with every case accounted for (`IsolationBudget`):
  * per kernel, at most MAX_ISOLATION_LAUNCHES failed launches;
  * per kernel, faults are "widespread" once WIDESPREAD_SINGLES single-case launches have faulted and no
    sub-launch of that kernel has come back: bisecting further would only launch each case alone;
  * per sweep, at most MAX_ISOLATION_FAILURES_TOTAL failed isolation launches in all;
when a bound is reached, the cases of the faulting launch not yet isolated are recorded with the launch's
status (fault or timeout) and an `error` saying that they were not launched alone and why (`isolated: false`).

Mass faults (`FaultStorm`). Every launch that faults costs its GPU worker's CUDA context: the worker process is
replaced (~1 s on an H100 node: a process, CuPy, a context), and every bisection launch that faults costs another.
With a plausible descriptor bug (the LBO written unshifted) most launches of the dense family fault, and a sweep that
took ~10 s clean had recorded 2,024 of its 27,554 cases after 75 s. So a launch that faults (or hangs) is bisected
only after the last launch has gone (its files wait in the spool), and only where its family's faults on that arch
are not a storm: once STORM_MIN_FAILED of its launches have failed and they are at least STORM_RATE of its launches
answered, the group is in a storm. Its failed launches are then recorded as a whole, not bisected, and its launches
still to go are not launched, and a worker holding its launches alone is stopped rather than waited for (each of
them would most likely fault in turn): every case of them is recorded with the storm's status (fault, or timeout),
with `isolated: false` and an `error` that says so and why. Nothing is falsely green (each is a fault, and the run exits
1) and nothing is lost (every case has its record); what is given up is knowing which of those cases would have
passed, which a sweep after the fix tells.
"""
from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path

from harness import registry as families  # the families by name (harness/registry.py)
from harness.contract import CaseLines, Kernel, LaunchFailed, LaunchInput, case_keys, case_record
from harness.enums import Status
from harness.run import cores, processes
from harness.run.launch import load_outputs
from harness.run.launch_cache import (EXPECTATIONS_SUFFIX, LAUNCH_SUFFIX, OUTPUTS_SUFFIX, KeptFolder, KeptLaunches,
                                      process_key)
from harness.run import worker as worker_module
from harness.run.worker import GpuWorker, wait_any

MAX_ISOLATION_LAUNCHES = 24  # per kernel: bisecting a launch that faults everywhere must stay bounded
WIDESPREAD_SINGLES = 4  # per kernel: this many cases faulting alone, and no sub-launch coming back: stop
MAX_ISOLATION_FAILURES_TOTAL = 96  # per sweep: failed isolation launches in all, over every kernel and GPU
# a family's launches on one arch are a fault storm (FaultStorm) once this many have failed (faulted or hung) ...
STORM_MIN_FAILED = 4
# ... and those failed are at least this share of its launches answered so far
STORM_RATE = 0.5
# After a launch fails, spare GPU workers kept started (worker.SparePool): enough for the failures that make a storm,
# each otherwise a worker's start (about a second) after the one before. A start is a second of a core's time: only
# where cores are to spare (a GPU node's 16; none on a 2-core machine, where they would slow what runs)
SPARES_AFTER_A_FAILURE = min(STORM_MIN_FAILED - 1, max(0, len(os.sched_getaffinity(0)) // 4 - 1))


DEFAULT_BACKEND = "harness.run.launch"
# GPU workers of a sweep on one GPU. A worker takes one launch at a time, and most of its time is not the GPU's: it
# reads the launch's file into page-locked memory and writes the outputs' file (0.7-0.8 s each of the 1.7-2.0 s a
# default sweep's 762 launches took on an H100 node, bench27 in docs/performance.md). A second process on the
# same GPU (a context of its own: a launch that faults there leaves the other's context alone) does that beside it:
# the launches of a cold sweep's end took 2.4 s against 2.9 s, and the cold sweep 0.5-0.7 s less in three pairs on
# one node, its warm sweep the same within the noise (bench27 too). With several GPUs, one worker each: the sweep's own
# process, which hands out every launch, is then what sets the pace. What the sweep command asks for
# (SweepConfig.workers_on_one_gpu); an engine's default is one, as the tests' simulated devices have (a second
# process each would only add start-ups to CI's two cores).
WORKERS_ON_ONE_GPU = 2
# Bisecting a hang costs one timeout per level. Once launches have come back, a sub-launch of a hung launch gets
# ISOLATION_TIMEOUT_FACTOR x the slowest launch seen (at least ISOLATION_TIMEOUT_MIN_S, at most the sweep's
# timeout): a kernel that ran in milliseconds does not need the sweep's 30 s to show that it hangs. The clock
# starts when the worker takes the launch up (worker.py), so a fresh worker's start-up is not counted.
ISOLATION_TIMEOUT_FACTOR = 20.0
ISOLATION_TIMEOUT_MIN_S = 2.0


def isolation_timeout(timeout: float, slowest_launch_s: float | None) -> float:
    """The timeout of a bisection launch (see ISOLATION_TIMEOUT_FACTOR)."""
    if slowest_launch_s is None:
        return timeout
    return min(timeout, max(ISOLATION_TIMEOUT_MIN_S, ISOLATION_TIMEOUT_FACTOR * slowest_launch_s))


@dataclass(frozen=True)
class Job:
    """One launch: a kernel and the cases it runs (its cubin is looked up when it launches, so preparation
    can start while the kernels still compile)."""
    kernel: Kernel
    cases: tuple


# The pool's processes yield to everything else a sweep runs: its own process (the plan, built while the pool compiles;
# handing out the launches) and its GPU workers. The pool's own work goes in the order it was submitted: the sweep's
# compile first, then the preparation Engine.top_up hands it as the compile's last modules leave cores idle.
PREPARE_NICENESS = 10


def ready_for_jobs() -> None:
    """A pool process's start: at PREPARE_NICENESS, every family imported and its source key taken
    (launch_cache.process_key), while the sweep still plans and compiles. Done at its first job instead, this came
    after the plan: in a warm sweep on an H100 node the first launch went 0.28 s after the engine was handed its jobs
    (bench13 in docs/performance.md)."""
    try:
        os.nice(PREPARE_NICENESS)
    except OSError:  # a platform without nice: the pool runs at its caller's priority
        pass
    families.all_families()
    process_key()


def helpers_for_jobs(workers: int) -> processes.Helpers:
    """The processes an engine prepares and reads back on (every one started now, in a thread: ready_for_jobs); the
    sweep makes them before its engine, and compiles its kernels on them first."""
    return processes.Helpers(workers, ready_for_jobs)


def prepare(kernel: Kernel, cases) -> tuple[LaunchInput, list]:
    return families.get(kernel.family).prepare(kernel, list(cases))


@dataclass(frozen=True)
class Spooled:
    """Where a prepared launch's files are: the launch (for the GPU worker), its expectations (for the read-back),
    and where its outputs go (always the spool). `kept`: the first two are kept launches, which stay."""
    launch: str
    expectations: str
    outputs: str
    kept: bool = False


def prepare_job(kernel: Kernel, cases, spool: str, kept: KeptLaunches | None = None) -> tuple[Spooled, float, bool]:
    """(the prepared launch's files, the seconds this pool process took, whether it was kept by an earlier engine and
    so not prepared again)."""
    t = time.perf_counter()
    found = kept_launch(kernel, cases, spool, kept)
    if found is not None:
        return found, time.perf_counter() - t, True
    name = spool_stem(kernel, cases, spool)
    stem = kept.stem(kernel, cases) if kept is not None else None
    inp, expectations = prepare(kernel, cases)
    if stem is not None and kept.writable and kept.keep(stem, inp, expectations):
        return files_of(stem, name, True), time.perf_counter() - t, False
    inp.save(name + LAUNCH_SUFFIX)
    with open(name + EXPECTATIONS_SUFFIX, "wb") as fh:
        pickle.dump(expectations, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return files_of(name, name, False), time.perf_counter() - t, False


def spool_stem(kernel: Kernel, cases, spool: str) -> str:
    """Where a launch's files go in the spool, less their suffixes (its outputs' always)."""
    return os.path.join(spool, f"{kernel.name}-{cases[0].seed:08x}-{len(cases)}")


def files_of(stem: str, spooled_stem: str, kept: bool) -> Spooled:
    return Spooled(stem + LAUNCH_SUFFIX, stem + EXPECTATIONS_SUFFIX, spooled_stem + OUTPUTS_SUFFIX, kept)


def kept_launch(kernel: Kernel, cases, spool: str, kept: KeptLaunches | None) -> Spooled | None:
    """The files of these cases' launch kept by an earlier engine, whole; None where there is none."""
    stem = kept.stem(kernel, cases) if kept is not None else None
    if stem is None or not kept.holds(stem):
        return None
    return files_of(stem, spool_stem(kernel, cases, spool), True)


def load_expectations(spooled: Spooled) -> list:
    with open(spooled.expectations, "rb") as fh:
        return pickle.load(fh)


def with_case_keys(kernel: Kernel, cases, recs: list[dict]) -> list[dict]:
    """`recs` (of `cases`), each given what every record of its case carries (contract.case_keys: the family's
    case fields and the case's facets), whatever its status; a record of no case in `cases` is left as it is."""
    fam = families.get(kernel.family)
    by_id = {c.id: c for c in cases}
    for r in recs:
        case = by_id.get(r["id"])
        if case is not None:
            r.update(case_keys(fam, case))
    return recs


def _cases_of(expectations: list) -> list:
    """The cases of a launch's expectations (each names its case as `.case`, what the engine reads of a failed
    launch's cases too; one that does not names none)."""
    return [e.case for e in expectations if hasattr(e, "case")]


def readback_job(kernel: Kernel, spooled: Spooled, device: int) -> tuple[CaseLines, float]:
    """(the launch's case records, encoded here for the results file, the seconds the read-back took in this pool
    process)."""
    t = time.perf_counter()
    expectations = load_expectations(spooled)
    recs = with_case_keys(kernel, _cases_of(expectations),
                          families.get(kernel.family).readback(kernel, expectations, load_outputs(spooled.outputs)))
    for r in recs:
        r["gpu"] = device
    remove(spooled)
    return CaseLines(recs), time.perf_counter() - t


def remove(spooled: Spooled) -> None:
    """The launch's files in the spool (a kept launch's own stay)."""
    for path in (spooled.outputs,) if spooled.kept else (spooled.launch, spooled.expectations, spooled.outputs):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def spool_dir() -> str | None:
    """RAM-backed /dev/shm when it has room (containers often give it only 64 MB), else the default."""
    try:
        if shutil.disk_usage("/dev/shm").free > 1 << 30 and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


class IsolationBudget:
    """Failed launches bisection may still spend: `total` over the sweep (shared by every kernel), and
    `per_kernel` for each kernel's faulting launch."""

    def __init__(self, total: int = MAX_ISOLATION_FAILURES_TOTAL, per_kernel: int = MAX_ISOLATION_LAUNCHES,
                 widespread: int = WIDESPREAD_SINGLES):
        self.total, self.per_kernel, self.widespread = total, per_kernel, widespread
        self.spent = 0  # failed isolation launches so far, every kernel

    def exhausted(self) -> bool:
        return self.spent >= self.total


class FaultStorm:
    """The launches of each family on each arch (a group: what its cases share before any is launched), answered and
    failed (fault or timeout), and whether they are a storm (module docstring): STORM_MIN_FAILED failed, and failed
    at least STORM_RATE of those answered."""

    def __init__(self, min_failed: int = STORM_MIN_FAILED, rate: float = STORM_RATE):
        self.min_failed, self.rate = min_failed, rate
        self.answered: dict[tuple[str, str], int] = {}
        self.failed: dict[tuple[str, str], dict[str, int]] = {}  # group -> status -> launches
        self.skipped: dict[tuple[str, str], int] = {}  # group -> launches not launched in its storm
        self.abandoned: dict[tuple[str, str], int] = {}  # group -> launches in flight when its storm began, not awaited
        self.failed_kernels: dict[tuple[str, str], tuple[str, str]] = {}  # (arch, kernel) -> (status, family) failed

    @staticmethod
    def group(kernel: Kernel) -> tuple[str, str]:
        return str(kernel.family), str(kernel.arch)

    def note(self, kernel: Kernel, failed: str | None) -> bool:
        """One launch of `kernel` answered (`failed`: its status, fault or timeout; None where it came back). True when
        this answer began its group's storm."""
        g = self.group(kernel)
        was = self.raging(kernel)
        self.answered[g] = self.answered.get(g, 0) + 1
        if failed is not None:
            by = self.failed.setdefault(g, {})
            by[failed] = by.get(failed, 0) + 1
            self.failed_kernels[(str(kernel.arch), kernel.name)] = (failed, str(kernel.family))
        return not was and self.raging(kernel)

    def failed_launch(self, arch: str, name: str) -> str | None:
        """The status (fault, timeout) of a launch of kernel `name` on `arch` that failed, where its group is in a
        storm; else None."""
        status, family = self.failed_kernels.get((str(arch), name), (None, None))
        return status if status is not None and self.raging(Kernel(family, arch, "", None)) else None

    def guard(self, device, kernel: Kernel) -> "NoRelaunch":
        """`device` (a probe's, contract.Device) for a suspect `kernel` of a group in a storm, launching nothing of its
        arch whose own launches failed in a storm (NoRelaunch)."""
        return NoRelaunch(device, self, str(kernel.arch), self.describe(kernel))

    def raging(self, kernel: Kernel) -> bool:
        g = self.group(kernel)
        failed = sum(self.failed.get(g, {}).values())
        return failed >= self.min_failed and failed >= self.rate * self.answered.get(g, 0)

    def status(self, kernel: Kernel) -> str:
        """The status of the group's storm: the one most of its failed launches had."""
        by = self.failed.get(self.group(kernel), {})
        return max(by, key=lambda k: (by[k], k == str(Status.FAULT))) if by else str(Status.FAULT)

    def describe(self, kernel: Kernel) -> str:
        family, arch = self.group(kernel)
        failed = sum(self.failed.get((family, arch), {}).values())
        return (f"a fault storm: {failed} of the {self.answered.get((family, arch), 0)} launches of {family} on {arch} "
                f"answered had failed (at least {self.min_failed} and {self.rate:.0%} make one), and each failed "
                f"launch costs a fresh CUDA context")

    def report(self) -> list[dict]:
        """The groups in a storm, for the sweep's timings."""
        out = []
        for (family, arch), by in self.failed.items():
            k = Kernel(family, arch, "", None)
            if self.raging(k):
                out.append({"family": family, "arch": arch, "answered": self.answered.get((family, arch), 0),
                            "failed": dict(by), "not_launched": self.skipped.get((family, arch), 0),
                            "not_awaited": self.abandoned.get((family, arch), 0)})
        return out


def run_isolated(worker: GpuWorker, kernel: Kernel, expectations: list, launch: LaunchInput, cubin_path: str,
                 timeout: float, log=print, first_error: LaunchFailed | None = None,
                 budget: IsolationBudget | None = None) -> list[dict]:
    """Launch every case at once (unless `first_error` says that launch already failed); if it faults or
    hangs, bisect to the cases that do, so every other case still gets its result, within `budget` (a fresh
    one, i.e. this kernel alone, if not given). Every case gets a record, launched alone or not."""
    family = families.get(kernel.family)
    launch = LaunchInput.load(launch)
    budget = budget or IsolationBudget()
    mine = {"failed": 0, "singles": 0, "ok": 0}  # this kernel: failed sub-launches, cases faulting alone, answers

    def stop_reason() -> str | None:
        if budget.exhausted():
            return (f"the sweep's isolation budget of {budget.total} failed launches is spent, so the rest of this "
                    f"kernel's faulting launch was not bisected")
        if mine["failed"] >= budget.per_kernel:
            return f"isolation of this kernel stopped after {budget.per_kernel} failed launches"
        if mine["singles"] >= budget.widespread and mine["ok"] == 0:
            return (f"faults are widespread in this kernel: {mine['singles']} cases faulted alone and no launch of "
                    f"it came back, so the rest were not launched alone")
        return None

    def unisolated(idx: list[int], e: LaunchFailed, why: str) -> list[dict]:
        return [case_record(expectations[j].case.id, kernel, e.status, isolated=False,
                            error=f"{e} (in a launch of {len(idx)} cases that {e.status}ed as a whole; not launched "
                                  f"alone: {why})") for j in idx]

    def go(idx: list[int], error: LaunchFailed | None = None, first: bool = False) -> list[dict]:
        why = None if first else stop_reason()
        if why is not None:  # a bound was reached before this launch: record without launching
            return unisolated(idx, pending[0], why)
        try:
            if error is not None:
                raise error
            outputs = worker.run(cubin_path, kernel.name, launch.subset(idx), timeout)
            mine["ok"] += 1
            return family.readback(kernel, [expectations[j] for j in idx], outputs)
        except LaunchFailed as e:
            if e.status in (Status.COMPILE_ERROR, Status.ERROR):
                # the driver cannot load the module, or the worker never took the launch up (its start-up failed):
                # every launch would fail alike, and none of it is a case's doing
                return [case_record(expectations[j].case.id, kernel, e.status, error=str(e)) for j in idx]
            pending[0] = e
            if error is None:  # the first launch was the engine's, not isolation's
                mine["failed"] += 1
                budget.spent += 1
            if len(idx) == 1:
                mine["singles"] += 1
                return [case_record(expectations[j].case.id, kernel, e.status, error=str(e)) for j in idx]
            why = stop_reason()
            if why is not None:
                return unisolated(idx, e, why)
            log(f"{kernel.name}: launch of {len(idx)} cases failed ({e.status}: {str(e)[:120]}); isolating")
            half = len(idx) // 2
            return go(idx[:half]) + go(idx[half:])

    pending: list[LaunchFailed | None] = [first_error]
    return go(list(range(launch.cases)), first_error, first=True)


_FAILED = {str(Status.FAULT): "faulted", str(Status.TIMEOUT): "timed out"}  # a failed launch's status, said


class NoRelaunch:
    """A probe's device (contract.Device) that answers a launch of a kernel whose own launches failed in a fault storm
    with that failure, not launching it: the probe would most likely fail as they did, at the cost of the worker's
    CUDA context and of the fault itself (a launch that faults answers about 1.2 s after it starts on an H100 node:
    docs/performance.md, "When most launches fault"). Every other launch, and every compile, goes to the device. Its
    `fault_storm` names the storm to the family probing (contract.Device)."""

    def __init__(self, device, storm: FaultStorm, arch: str, fault_storm: str):
        self.device, self.storm, self.arch = device, storm, arch
        self.fault_storm = fault_storm  # contract.Device: the storm, in words

    def run(self, cubin_path: str, kernel_name: str, launch, timeout: float):
        status = self.storm.failed_launch(self.arch, kernel_name)
        if status is not None:
            said = _FAILED.get(status, status)
            raise LaunchFailed(status, f"not launched: {kernel_name}'s own launches {said} in this sweep's fault "
                                       "storm, so a probe of it would most likely do the same")
        return self.device.run(cubin_path, kernel_name, launch, timeout)

    def compile(self, kernel: Kernel) -> str:
        return self.device.compile(kernel)


class Engine:
    """Started before the sweep plans and compiles, so that the pool's processes and the GPU workers'
    contexts come up meanwhile; `begin` hands it the jobs to prepare, `run` drives them. `devices` pairs
    each GPU index with an arch it runs (a GPU that runs several archs is listed with each: the sweep's `devices`
    asks harness.enums.runs_on): a job goes only to a worker of a GPU that runs its kernel's arch, the one holding
    fewest launches."""

    def __init__(self, devices: list[tuple[int, str]], workers: int | None = None, backend: str = DEFAULT_BACKEND,
                 isolation: IsolationBudget | None = None, keep_launches: Path | None = None,
                 started: GpuWorker | None = None, helpers: processes.Helpers | None = None,
                 workers_on_one_gpu: int = 1):
        """keep_launches: the cache folder (cache.cache_dir()) whose kept launches this engine reads and adds to; None:
        every launch is prepared and spooled, and none is kept. started: a GPU worker already starting (the sweep's
        worker_ahead), taken as a worker of its GPU where it is one of `devices` and runs `backend`; the engine closes
        it with the others. workers_on_one_gpu: GPU workers where `devices` is one GPU (WORKERS_ON_ONE_GPU); with
        several, one each. helpers: the pool's processes, already starting (the sweep's, which compile its kernels
        first: helpers_for_jobs), taken as the engine's pool and shut down with it; `workers` is then theirs."""
        self.devices, self.backend = devices, backend
        self._kept_folder = KeptFolder(keep_launches) if keep_launches is not None else None
        self.kept = self._kept_folder.launches if self._kept_folder else None
        self.isolation = isolation or IsolationBudget()
        self.nworkers = helpers.workers if helpers is not None else max(1, workers or cores.default_workers())
        runs: dict[int, set[str]] = {}  # GPU index -> the archs it runs
        for d, a in devices:
            runs.setdefault(d, set()).add(str(a))
        slots = [d for d in runs for _ in range(max(1, workers_on_one_gpu) if len(runs) == 1 else 1)]
        self.gpu_workers = []
        self.spare_pool = worker_module.SparePool()  # after a fault, a spare started ahead takes the worker's place
        untaken = started  # the worker handed in goes to the first slot of its GPU, and to no other
        for d in slots:
            take = untaken is not None and (untaken.device, untaken.backend) == (d, backend)
            self.gpu_workers.append(untaken if take else GpuWorker(d, backend))
            self.gpu_workers[-1].spares = self.spare_pool
            untaken = None if take else untaken
        self.archs_of = {w: frozenset(runs[d]) for w, d in zip(self.gpu_workers, slots)}
        try:
            for w in self.gpu_workers:
                w.start()
            self._spool = tempfile.TemporaryDirectory(prefix="tc-harness-spool-", dir=spool_dir())
            self.spool = self._spool.name
            # started by processes.context() (a fork server, or spawned), not forked from this process: it has (or will
            # have) a CUDA context, which a forked child must not inherit
            self.helpers = helpers if helpers is not None else helpers_for_jobs(self.nworkers)
            self.pool = self.helpers.executor
        except BaseException:
            # no engine for its owner to close: the workers it started end here (the one handed in, `started`, is its
            # owner's to stop)
            for w in self.gpu_workers:
                if w is not started:
                    w.kill()
            raise
        self.preparing: dict[Future, Job] = {}  # submitted to the pool, in launch order
        self.queued: deque[Job] = deque()  # not yet submitted
        self.found: deque[tuple[Job, Spooled]] = deque()  # kept by an earlier engine, found by begin: not prepared
        self.slowest_launch_s: float | None = None  # of the launches that came back (sets isolation timeouts)
        self.storm = FaultStorm()
        self._pool_ending: threading.Thread | None = None  # the pool's shutdown, where wind_down began it

    @property
    def ahead(self) -> int:
        return 2 * self.nworkers  # bounded look-ahead keeps memory and the spool flat however long the sweep is

    def begin(self, jobs: list[Job]) -> None:
        """Jobs in launch order; their preparation starts now. A launch an earlier engine kept is found here, not in a
        pool process: asking one took a round trip through the pool for each launch of a warm sweep, the cases
        pickled there and back (10.7 MB for the default sweep), in this process, which also hands out the launches."""
        self.found, self.queued = deque(), deque()
        for job in jobs:
            spooled = kept_launch(job.kernel, job.cases, self.spool, self.kept)
            if spooled is None:
                self.queued.append(job)
            else:
                self.found.append((job, spooled))
        self.preparing = {}
        self.top_up()

    def top_up(self) -> None:
        """Submit the next jobs' preparation while those running and the prepared ones waiting in the spool number
        fewer than `ahead` (a read-back submitted to the pool waits behind no more than that). A kept launch (in-tree
        families, a kept-launches folder with room) waits for its launch in that folder on disk, not in the spool, so
        any number of them may: a cold sweep's preparation runs while its kernels compile (the sweep calls this as it
        waits), on the cores the compile leaves idle (the compile's modules, submitted first to the same processes,
        go first), where before all but `ahead` launches waited for the compile's end. The spool still holds no more
        than `ahead` prepared launches, however many are kept or not (a cache that has no room, or stops having it,
        keeps none)."""
        running = spooled = 0
        for f in self.preparing:
            if not f.done():
                running += 1
            elif f.cancelled() or f.exception() is not None or not f.result()[0].kept:  # kept: on disk
                spooled += 1
        while self.queued and running + spooled < self.ahead:
            self.submit_next()
            running += 1

    def submit_next(self) -> None:
        job = self.queued.popleft()
        self.preparing[self.pool.submit(prepare_job, job.kernel, job.cases, self.spool, self.kept)] = job

    def next_prepared(self) -> tuple[Job, Spooled, float, bool]:
        """The first job in launch order whose preparation is done, waiting for one if none is: (job, its files,
        seconds its preparation took, whether it was kept by an earlier engine). In strict launch order, one large launch held the window while the pool's
        other processes, their jobs done, waited for the next submission (about 60% of an H100 node's 16 cores
        busy in a warm sweep, vmstat)."""
        if self.found:  # kept by an earlier engine: ready now
            job, spooled = self.found.popleft()
            return job, spooled, 0.0, True
        ready = next((f for f in self.preparing if f.done()), None)
        if ready is None:
            wait(self.preparing, return_when=FIRST_COMPLETED)
            ready = next(f for f in self.preparing if f.done())
        job = self.preparing.pop(ready)
        self.top_up()
        spooled, took, reused = ready.result()
        return job, spooled, took, reused

    def withdraw(self, unwanted) -> list[tuple[Job, Spooled | None]]:
        """Take off the jobs begun, not yet handed out, whose kernel `unwanted` names: those kept by an earlier engine
        (with their files), those not yet submitted for preparation, and those submitted whose preparation has not
        begun (None: no files). Those being prepared stay, for next_prepared."""
        out = [(j, s) for j, s in self.found if unwanted(j.kernel)]
        self.found = deque((j, s) for j, s in self.found if not unwanted(j.kernel))
        out += [(j, None) for j in self.queued if unwanted(j.kernel)]
        self.queued = deque(j for j in self.queued if not unwanted(j.kernel))
        for f, j in list(self.preparing.items()):
            if unwanted(j.kernel) and f.cancel():
                del self.preparing[f]
                out.append((j, None))
        self.top_up()
        return out

    def wind_down(self) -> None:
        """Tell the GPU workers and the pool's processes to stop, without waiting for them: the sweep does so before
        its results file's last fsync (0.2-0.27 s on an H100 node's disk), so that they end meanwhile and `close`
        finds them gone or going (bench18 in docs/performance.md). The engine runs nothing more after it.
        The pool is shut down in a thread that `close` joins (a shutdown that does not wait forgets its processes,
        and a later one would not join them)."""
        for w in self.gpu_workers:
            w.finish()
        if self._pool_ending is None:
            self._pool_ending = threading.Thread(target=self.pool.shutdown, kwargs={"cancel_futures": True},
                                                 name="engine-pool-shutdown", daemon=True)
            self._pool_ending.start()

    def worker_of(self, device: int) -> GpuWorker | None:
        """One of the engine's GPU workers of `device` (its launches done: the diagnosis's probes run on it)."""
        return next((w for w in self.gpu_workers if w.device == device), None)

    def close(self, wait: bool = True) -> None:
        """Stop the GPU workers and the pool. `wait` False (an interrupted sweep's: everything was killed already):
        the GPU workers and spares are reaped in the background, not waited for."""
        for w in self.gpu_workers:  # their CUDA contexts come down while the pool's processes end
            w.finish()
        if self._pool_ending is not None:
            self._pool_ending.join()
        self.pool.shutdown(cancel_futures=True)
        for w in self.gpu_workers:
            if wait:
                w.close()
            else:
                w.kill()
        self.spare_pool.close(wait=False)  # idle or starting: nothing waits for their contexts to come down
        self._spool.cleanup()
        if self._kept_folder is not None:
            self._kept_folder.close()

    def run(self, cubins: dict[str, str | None], timeout: float, emit, log) -> dict:
        """Launch every job begun whose kernel compiled (cubins: kernel name -> cubin path, None if NVRTC
        rejected it: the caller records those); emit(batch) gets each launch's records (contract.CaseLines).
        Returns timings."""
        pool = self.pool
        timing = {"prepare_wait_s": 0.0, "isolate_s": 0.0, "diff_wait_s": 0.0, "prepare_s": 0.0, "readback_s": 0.0,
                  "kept_launches_read": 0}
        cpu = time.process_time()
        in_flight: dict[GpuWorker, deque] = {w: deque() for w in self.gpu_workers}  # in the order sent
        reads = []  # (future, job, device, t_submitted)
        done = [0]
        launched = sum(cubins.get(j.kernel.name) is not None
                       for j in [*(j for j, _ in self.found), *self.preparing.values(), *self.queued])

        def finished(batch: CaseLines, job, device, t):
            done[0] += 1
            nfail = sum(f.status != Status.PASS for f in batch.facts)
            took = time.time() - t
            batch.more["kernel_s"] = round(took, 3)  # the launch-to-records time (queueing, launch, read-back, bisection)
            emit(batch)
            log(f"[{done[0]}/{launched}] {job.kernel.name}: {len(batch)} cases, {nfail} not passing "
                f"(GPU {device}, {took:.2f}s)")

        def drain(block: bool = False):
            t = time.time()
            while reads and (block or reads[0][0].done()):
                fut, job, device, tk = reads.pop(0)
                recs, took = fut.result()
                timing["readback_s"] += took
                finished(recs, job, device, tk)
            timing["diff_wait_s"] += time.time() - t if block else 0.0

        def harvest(w: GpuWorker):
            entry = in_flight[w].popleft()
            try:
                w.collect(restart=False)  # after a failure, `complete` withdraws what a storm keeps from launching
                self.slowest_launch_s = max(self.slowest_launch_s or 0.0, w.last_s)
                return entry, w, None
            except LaunchFailed as e:
                return entry, w, e

        deferred = []  # (entry, device, error) of launches that failed: bisected (or not: a storm) at the end

        def storm_noted(job, failed: str | None) -> None:
            if self.storm.note(job.kernel, failed):
                log(f"{job.kernel.family} on {job.kernel.arch}: {self.storm.describe(job.kernel)}; its failed launches "
                    f"are recorded whole, not bisected, and the rest are recorded {self.storm.status(job.kernel)} "
                    "without launching")
                # the diagnosis that follows probes one of the group's suspects on the first GPU of its arch, whose
                # workers the storm has most likely cost their contexts: a spare started now is ready by then
                first = next(w for w in self.gpu_workers if str(job.kernel.arch) in self.archs_of[w])
                self.spare_pool.prestart(first.device, self.backend, 1)
                # the group's launches not yet handed out: recorded now, neither prepared nor read
                for later, spooled in self.withdraw(self.storm.raging):
                    not_launched(later, spooled)

        def complete(entry, w: GpuWorker, error) -> None:
            job, spooled, tk = entry
            if error is None:
                storm_noted(job, None)
                reads.append((pool.submit(readback_job, job.kernel, spooled, w.device), job, w.device, tk))
                return
            if error.status in (Status.FAULT, Status.TIMEOUT):  # bisected once every launch has gone, if at all
                storm_noted(job, str(error.status))
                deferred.append((entry, w.device, error))
            else:
                isolate(entry, w.device, error)
            # the launches the failed worker held and never ran: those of a group in a storm are not launched (each
            # would most likely fault too, and cost a fresh worker); the rest go to a fresh worker now
            held = list(in_flight[w])
            stormed = {e[0].kernel.name for e in held if self.storm.raging(e[0].kernel)}
            gone = w.withdraw(lambda sent: sent[1] in stormed)
            in_flight[w] = deque(e for i, e in enumerate(held) if i not in gone)
            for i in gone:
                not_launched(held[i][0], held[i][1])
            w.resume()  # takes a spare where one was started
            if not self.storm.raging(job.kernel):  # faults may come in a run: fresh workers started side by side
                self.spare_pool.prestart(w.device, self.backend, SPARES_AFTER_A_FAILURE)

        def isolate(entry, device: int, error) -> None:
            job, spooled, tk = entry
            ti = time.time()
            expectations = load_expectations(spooled)
            if self.storm.raging(job.kernel):
                remove(spooled)
                why = f"not bisected: {self.storm.describe(job.kernel)}"
                recs = [case_record(e.case.id, job.kernel, error.status, isolated=False,
                                    error=f"{error} (in a launch of {len(expectations)} cases that {error.status}ed "
                                          f"as a whole; {why})") for e in expectations]
            else:
                isolator = GpuWorker(device, self.backend)  # starts only if bisection launches
                iso_timeout = isolation_timeout(timeout, self.slowest_launch_s)
                timing["isolation_timeout_s"] = iso_timeout
                try:
                    recs = run_isolated(isolator, job.kernel, expectations,
                                        LaunchInput.load(spooled.launch), cubins[job.kernel.name], iso_timeout, log,
                                        first_error=error, budget=self.isolation)
                finally:
                    isolator.close()
                    remove(spooled)
            with_case_keys(job.kernel, _cases_of(expectations), recs)
            for r in recs:
                r["gpu"] = device
            timing["isolate_s"] += time.time() - ti
            finished(CaseLines(recs), job, device, tk)

        def not_launched(job, spooled: Spooled | None, sent: bool = False) -> None:
            """A launch of a group in a storm: its cases recorded with the storm's status, none launched (`sent`:
            launched, but its worker was stopped before it answered; `spooled` None: never prepared)."""
            g = FaultStorm.group(job.kernel)
            count = self.storm.abandoned if sent else self.storm.skipped
            count[g] = count.get(g, 0) + 1
            status = self.storm.status(job.kernel)
            why = (f"not awaited: {self.storm.describe(job.kernel)}, so the worker running this launch was stopped "
                   f"before it answered and its cases were recorded {status} (harness/run/engine.py, FaultStorm)"
                   if sent else
                   f"not launched: {self.storm.describe(job.kernel)}, so the rest of its launches were recorded "
                   f"{status} without launching (harness/run/engine.py, FaultStorm)")
            # the job's cases: its expectations' file is not read
            recs = with_case_keys(job.kernel, job.cases,
                                  [case_record(c.id, job.kernel, status, isolated=False, error=why) for c in job.cases])
            if spooled is not None:
                remove(spooled)
            finished(CaseLines(recs), job, None, time.time())

        def abandon_stormed() -> None:
            """A worker whose every launch held is of a group in a storm is stopped rather than waited for: each of
            them would most likely fault, one after another, each taking a context down (a second or so)."""
            for w, held in in_flight.items():
                if held and all(self.storm.raging(e[0].kernel) for e in held):
                    entries = list(held)
                    held.clear()
                    w.kill()
                    for job, spooled, _ in entries:
                        not_launched(job, spooled, sent=True)

        while self.found or self.preparing:
            tp = time.time()
            job, spooled, took, reused = self.next_prepared()
            timing["prepare_s"] += took
            timing["kept_launches_read"] += reused
            timing["prepare_wait_s"] += time.time() - tp
            if cubins.get(job.kernel.name) is None:
                remove(spooled)
                continue
            if self.storm.raging(job.kernel):
                not_launched(job, spooled)
                drain()
                continue
            mine = [w for w in self.gpu_workers if str(job.kernel.arch) in self.archs_of[w]]
            if not mine:
                raise ValueError(f"{job.kernel.name}: no GPU that runs {job.kernel.arch} in this engine")
            free = [w for w in mine if not w.full]
            answered = None
            if not free:  # take the first answer, give that GPU its next launch, then hand off the read-back
                answered = harvest(wait_any(mine))
                free = [answered[1]]
            w = min(free, key=lambda w: w.held)  # an idle GPU before one that has a launch to run first
            in_flight[w].append((job, spooled, time.time()))
            w.submit(cubins[job.kernel.name], job.kernel.name, spooled.launch, timeout, out_path=spooled.outputs)
            if answered:
                complete(*answered)
                abandon_stormed()
            drain()
        abandon_stormed()
        while any(in_flight.values()):
            complete(*harvest(wait_any([w for w, held in in_flight.items() if held])))
            abandon_stormed()
        for entry, device, error in deferred:  # every launch has gone: bisect what failed, unless in a storm
            isolate(entry, device, error)
        drain(block=True)
        timing = {k: round(v, 2) if isinstance(v, float) else v for k, v in timing.items()}
        timing["isolation_failed_launches"] = self.isolation.spent
        storms = self.storm.report()
        if storms:
            timing["fault_storms"] = storms
        timing["gpu_worker_s"] = round(sum(w.gpu_s for w in self.gpu_workers), 2)
        timing["engine_cpu_s"] = round(time.process_time() - cpu, 2)
        return timing
