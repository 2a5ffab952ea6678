"""Compilation of kernels by a toolchain (harness/run/toolchain.py), a persistent cache, and SASS inspection.

The default toolchain compiles cubins for the exact arch with the NVRTC cuda.bindings binds (cubin bytes from
nvrtcGetCUBINSize/nvrtcGetCUBIN: CuPy 14.2's low-level getCUBIN returns them one byte short, which cuobjdump
rejects). `--toolchain driver-jit` stops at PTX for the driver to JIT, and `--nvrtc` picks another NVRTC
library (README, "Toolchain axis").

The cache key covers the source, the options, the arch and the toolchain (its kind, NVRTC version and build);
the cache directory is $TC_HARNESS_CACHE or ~/.cache/tc-harness (harness/cache.py: what either may be).
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from pathlib import Path

from harness import registry
from harness.cache import cache_dir, content_digest
from harness.contract import CompileError, IfAccepted, Kernel, SassCheck
from harness.enums import Arch
from harness.run import cores, processes, sass, toolchain as toolchains
from harness.run.sass import Verdict
from harness.run.toolchain import Toolchain

ARCHS = Arch.values()  # the vocabulary's archs (harness.enums), not a list of its own
# a kernel's options at full optimization; a CompileJob adds its toolchain's fast-compile level unless it asks not to
DEFAULT_OPTIONS = ("-std=c++17", "--device-as-default-execution-space", "-lineinfo")


def nvrtc_version() -> str:
    """The version of the NVRTC cuda.bindings binds (the default toolchain's)."""
    from cuda.bindings import nvrtc
    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def nvrtc_compile(source: str, name: str, arch: str, options: tuple[str, ...]) -> tuple[bytes | None, str]:
    """(cubin or None, log) from the NVRTC cuda.bindings binds. Runs in worker processes too: plain data."""
    return toolchains.bindings_compile(source, name, arch, options, toolchains.CUBIN)


@dataclass(frozen=True)
class CompileJob:
    name: str
    source: str
    arch: str
    options: tuple[str, ...] = DEFAULT_OPTIONS
    # whether the toolchain's fast-compile level is added to the options (Toolchain.fast_compile_options): not where
    # the schedule ptxas makes is under test (a sequence's pipeline, the timing bench's loop)
    fast_compile: bool = True
    # what the cubin's SASS must show: the process that builds it checks it too (disassembly, parse, rules), and
    # its verdict is cached beside the cubin, where the sweep's SASS check (sass.verify_many) finds it. Not part of
    # the cache key: a cached cubin is checked by verify_many.
    sass_check: SassCheck | None = None

    def options_for(self, tc: Toolchain) -> tuple[str, ...]:
        """The options NVRTC gets for this job from `tc`."""
        return self.options + (tc.fast_compile_options if self.fast_compile else ())

    def key(self, tc: Toolchain) -> str:
        h = hashlib.sha256()
        for part in (self.source, self.arch, "\0".join(self.options_for(tc)), *tc.cache_key()):
            h.update(part.encode())
            h.update(b"\1")
        return h.hexdigest()[:32]


@dataclass
class Compiled:
    name: str
    arch: str
    cubin_path: Path | None  # the module the GPU loads: a cubin, or PTX for the driver's JIT
    cached: bool
    log: str = ""
    error: CompileError | None = None
    # the verdict of the job's sass_check, where the process that built this cubin judged it (cached beside it too):
    # the sweep's SASS check takes it from here rather than reading every module again (0.37 s of a cold sweep's
    # critical path on an H100 node, bench24 in docs/performance.md)
    verdict: Verdict | None = None


def _failure_dir(job: CompileJob, log: str, failed_dir: Path | None = None) -> Path:
    root = failed_dir or Path(os.environ.get("TC_HARNESS_FAILED_DIR", cache_dir() / "failed"))
    d = Path(root) / f"{job.name}-{job.arch}"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{job.name}.cu").write_text(job.source)
    (d / "nvrtc.log").write_text(log)
    return d


def compile_job(kernel: Kernel, sass_check: SassCheck | None = None, tc: Toolchain | None = None) -> CompileJob:
    """The compile job of a family's kernel: its source, at the toolchain's fast-compile level where the family
    allows it (its `fast_compile`; a family without one compiles at full optimization), with the kernel's own options
    (the family's `compile_options`, an IfAccepted one as `tc` decides: by default the NVRTC cuda.bindings binds)."""
    fam = registry.get(kernel.family)
    extra = own_options(fam.compile_options(kernel), tc) if hasattr(fam, "compile_options") else ()
    return CompileJob(kernel.name, fam.source(kernel), str(kernel.arch), DEFAULT_OPTIONS + extra,
                      sass_check=sass_check, fast_compile=getattr(fam, "fast_compile", False))


def own_options(options, tc: Toolchain | None = None) -> tuple[str, ...]:
    """A family's compile options for a kernel, each IfAccepted one resolved: its option where the toolchain `tc` (by
    default the NVRTC cuda.bindings binds) accepts it, else its `otherwise` (also where no toolchain can be had)."""
    out: list[str] = []
    for o in options:
        if not isinstance(o, IfAccepted):
            out.append(o)
            continue
        try:
            accepted = (tc or toolchains.default()).accepts(o.option, o.arch)
        except toolchains.ToolchainError:
            accepted = False
        out += [o.option] if accepted else list(o.otherwise)
    return tuple(out)


def compile_one(job: CompileJob, tc: Toolchain | None = None) -> Compiled:
    return compile_many([job], workers=1, toolchain=tc)[0]


# Kernels per NVRTC program (one cubin): NVRTC takes as long either way, but the SASS check disassembles a module
# with one nvdisasm start, which costs about as much per module as the work (16 single-kernel cubins: 5.4 s,
# one cubin of the same 16: 0.5 s, on this project's CPU machine; 64 sparse wgmma kernels: 3.6 s in modules of 8,
# 1.3 s in modules of 32). Fewer modules also mean fewer module loads on the GPU.
# Two modules a worker, of up to 32 kernels, balanced by estimated cost (`compile_cost`). Fewer modules mean fewer
# disassembler starts: on H200 nodes the compile's disassembly took 42-45 core-s in the 64 modules of three a worker,
# 23-25 in 32 of one a worker, 31.7 in 48 of two (bench15 on H200 in docs/performance.md). One a worker left
# the compile uneven: its modules' NVRTC took 6.2-10.6 s under load, and the compile ended 1.0-1.7 s after an even share
# of its work on 16 processes would have; three a worker 0.7-1.1 s, two 0.45 s (the modtimes-*.json there).
KERNELS_PER_MODULE = 32
MODULES_PER_WORKER = 2
# Each module's SASS check starts a disassembler, ~0.36 s of CPU before its first instruction however small the cubin
# (the CPU note 2026-11-26 module-size.txt in docs/performance.md): a module of a kernel or two spends more on that than
# its spread saves. Without this floor a small group went out a kernel a module (the 34 and 27 compile-only tcgen05
# kernels of a cold sweep on 16 workers: 61 modules). One size for every group, from all the jobs, cut those to 4 but
# left a compile of few processes with fewer, larger modules: tcgen05's compile test (4 processes) took 1.5-2.5 s longer
# cold on H100 nodes (bench11 in docs/performance.md).
MIN_KERNELS_PER_MODULE = 4
# ... and a group's modules cost (compile_cost) at least this share of the dearest module of the compile, where the
# group is large enough. A cold default sweep on 16 workers compiled tcgen05's 61 compile-only kernels in 16 modules of
# 3-4: 0.22-0.24 s of NVRTC each, and 0.38-0.50 s of disassembler start-up, against 2.6 s and 0.5 s for a module of 24
# wgmma kernels (NVRTC 13.0, this project's CPU machine). At a third they go out in 3 modules of 17-27 kernels, in
# 4.7-5.6 s of CPU against 10.3-12.1 s, the longest within the wgmma modules' time (the CPU note
# 2026-11-27 module-share.txt in docs/performance.md). compile_cost's fit was made on sm_90a kernels; a tcgen05 module's
# NVRTC seconds per unit of it came within a quarter of a wgmma module's there.
MIN_MODULE_SHARE = 1 / 3


def module_source(jobs: list[CompileJob]) -> str:
    """Several kernel sources as one translation unit: each in a namespace of its own (their helpers and structs
    keep their names apart; an extern "C" entry keeps its own, unique, name) and its macros undefined after it."""
    parts = []
    for i, job in enumerate(jobs):
        macros = re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", job.source, re.M)
        parts.append(f"namespace tc_harness_module_{i} {{\n{job.source}\n}}  // namespace tc_harness_module_{i}\n"
                     + "".join(f"#undef {m}\n" for m in dict.fromkeys(macros)))
    return "".join(parts)


def shares_a_module(job: CompileJob) -> bool:
    """A source that can sit in a module with others: no #include (it would land inside a namespace). The search,
    anchored at every line of a 20-50 KB source, took 0.1 s of the sweep's start for its 823 kernels, before any
    module could go to a helper: a source without the word has no such line."""
    return "include" not in job.source or re.search(r"^[ \t]*#[ \t]*include", job.source, re.M) is None


def _run_job(args):
    """One module's jobs -> ([(module bytes or None, log)] for each, whether they share one module, [(the module's
    content digest, the verdict of the job's sass_check), or None, for each]). A shared module NVRTC rejects is
    compiled again kernel by kernel, so each error is the rejected kernel's own. A cubin is SASS-checked here, while
    other processes still compile: the check after the compile parsed every listing in one process (GIL-bound
    threads: 3-5 s of an H100 node's cold sweep with one core busy, bench3 in docs/performance.md)."""
    jobs, tc = args
    built, shared = None, False
    if len(jobs) > 1:
        module, log = tc.compile(module_source(jobs), f"module_{jobs[0].name}", jobs[0].arch, jobs[0].options_for(tc))
        if module is not None:
            built, shared = [(module, log)] * len(jobs), True
    if built is None:
        built = [tc.compile(job.source, job.name, job.arch, job.options_for(tc)) for job in jobs]
    verdicts: list[tuple[str, Verdict] | None] = [None] * len(jobs)
    if tc.kind.module_suffix == ".cubin" and any(job.sass_check is not None for job in jobs):
        contents = {id(m): content_digest(m) for m, _ in built if m is not None}  # a shared module: once
        for i, (job, (module, _)) in enumerate(zip(jobs, built)):
            if module is not None and job.sass_check is not None:
                verdicts[i] = contents[id(module)], sass.judge(module, contents[id(module)], job.sass_check)
    return built, shared, verdicts


def modules_to_compile(todo: list, tc: Toolchain, workers: int) -> list[list]:
    """The jobs to compile, grouped into modules: cubins of one arch and options, at most KERNELS_PER_MODULE a
    module and, with several workers, no fewer modules than MODULES_PER_WORKER per worker (every core busy to the
    end, the heaviest module first), but a group in modules of up to no fewer than MIN_KERNELS_PER_MODULE (a group
    of 6 in two of 3), and in no more modules than cost MIN_MODULE_SHARE of the dearest module each (within the cap);
    PTX one kernel a module (the driver's JIT would compile the whole module for each kernel it loads)."""
    if tc.kind.module_suffix != ".cubin":
        return [[t] for t in todo]
    groups: dict[tuple, list] = {}
    singles = []
    for t in todo:
        job = t[1]
        if shares_a_module(job):
            groups.setdefault((job.arch, job.options_for(tc)), []).append(t)
        else:
            singles.append([t])
    spread = MODULES_PER_WORKER * workers if workers > 1 else 1  # one process: nothing to spread
    counts = {key: -(-len(g) // min(KERNELS_PER_MODULE, max(MIN_KERNELS_PER_MODULE, -(-len(g) // spread))))
              for key, g in groups.items()}
    cost = {key: sum(compile_cost(t[1]) for t in g) for key, g in groups.items()}
    dearest = max((cost[key] / counts[key] for key in groups), default=0)  # a module of the costliest group, about
    out = []
    for key, group in groups.items():
        # no more modules than make each a MIN_MODULE_SHARE of the dearest one's cost (a group of cheap kernels,
        # tcgen05's beside wgmma's, in fewer and larger modules: fewer disassembler starts), none over the cap
        count = counts[key]
        if dearest > 0:
            by_cost = max(1, int(cost[key] / (dearest * MIN_MODULE_SHARE) + 0.5))
            count = max(-(-len(group) // KERNELS_PER_MODULE), min(count, by_cost))
        out += balanced(group, -(-len(group) // count))
    return sorted(out, key=lambda m: -sum(compile_cost(t[1]) for t in m)) + singles


def compile_cost(job: CompileJob) -> int:
    """A kernel's NVRTC time, up to a factor: the square of its source's length. A kernel's variants are its source's
    asm blocks, and NVRTC's time grows faster than they do: over the sweep's 762 sm_90a kernels compiled one at a time
    (NVRTC 13.0), the square fits the times better than the length (r^2 0.78 against 0.68; the slowest, 54 KB of
    source, 1.62 s against 0.14 s on average; the CPU note 2026-11-26 modules-per-worker.txt in docs/performance.md).
    The fit's constant is left out and it was made on sm_90a kernels alone; the 32-kernel cap bounds what that costs a
    module's balance."""
    return len(job.source) ** 2


def balanced(group: list, size: int) -> list[list]:
    """The group's jobs in as few modules of at most `size` as hold them, of about equal work: the costliest job
    first (compile_cost) onto the module with the least cost so far. In plan order, the sparse kernels' modules
    (three times a dense one's compile) came last and ran alone at the end of a cold compile."""
    count = -(-len(group) // size)
    modules: list[list] = [[] for _ in range(count)]
    load = [0] * count
    for t in sorted(group, key=lambda t: (-compile_cost(t[1]), t[1].name)):
        m = min((i for i in range(count) if len(modules[i]) < size), key=lambda i: (load[i], i))
        modules[m].append(t)
        load[m] += compile_cost(t[1])
    return modules


def compile_many(jobs: list[CompileJob], workers: int | None = None, failed_dir: Path | None = None,
                 raise_on_error: bool = True, toolchain: Toolchain | None = None,
                 helpers: Executor | None = None, submitted=None) -> list[Compiled]:
    """Compile what the cache lacks, in parallel processes, with `toolchain` (default: NVRTC cubins from the
    NVRTC cuda.bindings binds). A rejected job's source and NVRTC log are saved (under `failed_dir`, else the
    cache's failed/); then CompileError is raised, or, with raise_on_error=False, returned in that job's
    Compiled.error. A job's sass_check is judged by the process that builds its cubin, the verdict cached beside
    the cubin (for the SASS check that follows). `helpers`: a pool already running (the sweep's helpers,
    processes.Helpers.executor) that compiles the modules instead of a pool of this call's own; `workers` is then how
    many processes it has. `submitted()`, if given, is called once every module to compile has gone to the processes
    that compile it (or, in one process, before it compiles them), or at once where the cache has every job."""
    tc = toolchain or toolchains.default()
    root = cache_dir()
    results: list[Compiled | None] = [None] * len(jobs)
    todo = []
    for i, job in enumerate(jobs):
        path = root / f"{job.name}-{job.arch}-{job.key(tc)}{tc.kind.module_suffix}"
        if path.exists():
            results[i] = Compiled(job.name, job.arch, path, True)
        else:
            todo.append((i, job, path))
    if not todo and submitted is not None:
        submitted()  # nothing to hand out: what waits for the modules (the sweep's plan) goes on now, not after the
        # SASS check of the cached cubins that follows
    if todo:
        workers = workers or min(len(todo), cores.default_workers())
        modules = modules_to_compile(todo, tc, workers)
        args = [([job for _, job, _ in m], tc) for m in modules]

        def store(m, out) -> None:
            """One module's kernels into the cache as soon as it is built, not once every module is: a compile cut
            short (Ctrl-C, a killed helper) keeps what it finished, and the next sweep compiles only the rest."""
            built, shared, verdicts = out
            # a shared module is written once, to a file of this process's own, and each kernel's cache entry
            # becomes a link to it (one copy on disk, one inode for the GPU worker to load); linking to another
            # entry instead could pick up a module a concurrent run put there, without this kernel in it
            own = _private_copy(root, built[0][0]) if shared else None
            try:
                for (i, job, path), (cubin, log), judged in zip(m, built, verdicts):
                    if cubin is None:
                        d = _failure_dir(job, log, failed_dir)
                        results[i] = Compiled(job.name, job.arch, None, False, log,
                                              CompileError(job.name, job.arch, log, d / f"{job.name}.cu"))
                        continue
                    _store(path, cubin, own)
                    verdict = None
                    if judged is not None:
                        content, verdict = judged
                        sass.save_verdict(sass.verdict_path(path, content, job.sass_check), verdict)
                    results[i] = Compiled(job.name, job.arch, path, False, log, verdict=verdict)
            finally:
                if own is not None:
                    own.unlink(missing_ok=True)

        if helpers is not None:
            _compiled_on(helpers, modules, args, store, submitted)
        elif workers > 1 and len(modules) > 1:
            # started by processes.context() (a fork server, or spawned), not forked from this process: callers
            # (pytest, the sweep) may already hold a CUDA context, which a forked child must not inherit
            with processes.pool(min(workers, len(modules))) as own_pool:
                _compiled_on(own_pool, modules, args, store, submitted)
        else:
            if submitted is not None:
                submitted()
            for m, a in zip(modules, args):
                store(m, _run_job(a))
        if raise_on_error:
            err = next((r.error for r in results if r is not None and r.error is not None), None)
            if err is not None:
                raise err
    return results  # type: ignore[return-value]


def _compiled_on(pool: Executor, modules: list, args: list, store, submitted=None) -> None:
    """_run_job of each module's args on `pool`; store(module, its output) as each comes, in the order they come;
    `submitted()` once all have gone to the pool. What stops the wait (an interrupt, a helper killed) cancels what
    has not started and stores what had come back."""
    futures = {pool.submit(_run_job, a): m for m, a in zip(modules, args)}
    try:
        if submitted is not None:
            submitted()
        for f in as_completed(futures):
            store(futures[f], f.result())
    except BaseException:  # as Executor.map does: what has not started never starts
        for f in futures:
            f.cancel()
        for f, m in futures.items():  # modules done before the stop: kept (a shared module's files are whole)
            if f.done() and not f.cancelled() and f.exception() is None and not _stored(m):
                try:
                    store(m, f.result())
                except Exception:  # noqa: BLE001 (the first error is the one raised)
                    pass
        raise


def _stored(module: list) -> bool:
    return all(path.exists() for _, _, path in module)


def _private_copy(root: Path, module: bytes) -> Path | None:
    path = root / f"module-{os.getpid()}-{threading.get_ident()}-{hashlib.sha256(module).hexdigest()[:16]}.tmp"
    try:
        path.write_bytes(module)
        return path
    except OSError:
        return None


def _store(path: Path, module: bytes, own: Path | None) -> None:
    """Put a module at its cache path atomically (a concurrent run never sees half of one): a hard link to this
    process's own copy `own` where there is one, else the bytes."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    try:
        if own is None:
            raise OSError
        tmp.unlink(missing_ok=True)
        os.link(own, tmp)
    except OSError:
        tmp.write_bytes(module)
    tmp.replace(path)
