"""Every kernel a run needs, built and checked: one `build(kernels, options)` for the sweep and its tests.

A kernel is taken from the checked set (a list compiled and SASS-checked before, unchanged since:
harness/run/checked_set.py), or from a kernel folder (`sweep --kernels`, compiled on another machine), or compiled
(cached, in parallel: harness/run/compile.py); then each cubin's SASS is checked against its family's `sass_check`
(harness/run/sass.py). A kernel whose SASS lacks what it tests gets a SassMismatch as its error, so that its cases are
recorded `compile-error` with the missing instruction named. PTX for the driver's JIT has no SASS to check.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from harness import cache, registry
from harness.contract import Kernel
from harness.enums import ToolchainKind
from harness.run import checked_set, compile as nvrtc, processes, sass, toolchain as toolchains
from harness.run.kernel_folder import KernelFolder
from harness.run.toolchain import Toolchain


@dataclass(frozen=True)
class BuildOptions:
    """How a run's kernels are made: by `toolchain` (None: the default, NVRTC cubins), or taken from `folder`
    (whose own toolchain made them: it wins over `toolchain`); `workers` compile processes (None: every core) where no helpers are handed to
    `build`; a kernel that fails to compile leaves its source and log in `failed_dir` (None: the cache's)."""
    toolchain: Toolchain | None = None
    folder: KernelFolder | None = None
    workers: int | None = None
    failed_dir: Path | None = None

    def __post_init__(self):
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"BuildOptions.workers is {self.workers}: at least 1, or None for every core")

    @property
    def resolved_toolchain(self) -> Toolchain:
        """The toolchain the kernels come from: the folder's, the one given, or the default."""
        return self.folder.toolchain if self.folder is not None else (self.toolchain or toolchains.default())

    @property
    def checks_sass(self) -> bool:
        """Whether the modules are cubins whose SASS is checked (not PTX for the driver's JIT)."""
        return self.resolved_toolchain.kind is not ToolchainKind.DRIVER_JIT


def build(kernels: list[Kernel], options: BuildOptions, log, helpers: processes.Helpers | None = None,
          submitted=None) -> dict[Kernel, nvrtc.Compiled]:
    """Every kernel of `kernels`, built and checked (kernel -> Compiled, in their order; a kernel that did not
    compile or lacks in its SASS what it tests carries the error). Compiles on `helpers` where given. `submitted()`:
    called once the modules to compile have gone to `helpers` (compile.compile_many), if they do. `log` gets one
    line for the compile and one for the SASS check."""
    t = time.time()
    archs = ", ".join(sorted({str(k.arch) for k in kernels}))
    tc = options.resolved_toolchain
    checked = options.checks_sass
    list_key = (checked_set.key(kernels, tc.cache_key(), sass.disassembler_id())
                if checked and options.folder is None and kernels else None)
    made = "compiled and SASS-checked" if checked else "compiled"

    def say_compiled(fresh: int, cached: int) -> None:
        log(f"compile: {len(kernels)} kernels for {archs} with {tc.describe()} ({fresh} {made}, {cached} cached) in "
            f"{time.time() - t:.1f}s; cache {cache.cache_dir()}")
    cubins = checked_set.recorded(cache.cache_dir(), list_key, len(kernels)) if list_key else None
    if cubins is not None:
        say_compiled(0, len(kernels))
        log(f"SASS: {len(kernels)} kernels checked, 0 lack what they test: the cubins checked by an earlier sweep of "
            f"this source and toolchain, unchanged since (harness/run/checked_set.py)")
        return {k: nvrtc.Compiled(k.name, str(k.arch), path, True) for k, path in zip(kernels, cubins)}
    # each kernel's check made once (its rules compile their regexes), for the compile and the check after it
    checks = {k: registry.get(k.family).sass_check(k) for k in kernels} if checked else {}
    if options.folder is not None:
        compiled = options.folder.compiled(kernels)
        log(f"kernels: {len(kernels)} for {archs} from {options.folder.path} ({tc.describe()}, compiled on "
            f"{options.folder.host} at {options.folder.date})")
    else:
        jobs = [nvrtc.compile_job(k, checks.get(k)) for k in kernels]
        compiled = dict(zip(kernels, nvrtc.compile_many(
            jobs, helpers.workers if helpers is not None else options.workers, options.failed_dir,
            raise_on_error=False, toolchain=tc, helpers=helpers.executor if helpers is not None else None,
            submitted=submitted)))
        say_compiled(sum(not c.cached and c.error is None for c in compiled.values()),
                     sum(c.cached for c in compiled.values()))
    if not checked:  # PTX: the driver's JIT makes the SASS when the module loads
        log("SASS: not checked (driver-jit: the driver compiles each module's PTX when it loads it)")
        return compiled
    t = time.time()
    built = [k for k, c in compiled.items() if c.error is None]
    # a cubin compiled now was judged by the process that built it; one from the cache or a folder is judged here
    unjudged = [k for k in built if compiled[k].verdict is None]
    judged = dict(zip(unjudged, sass.verify_many([(compiled[k].cubin_path, checks[k]) for k in unjudged],
                                                 options.workers)))
    verdicts = [judged[k] if k in judged else compiled[k].verdict for k in built]
    for k, v in zip(built, verdicts):
        if not v.ok:
            compiled[k].error = sass.SassMismatch(k.name, str(k.arch), v, compiled[k].cubin_path)
    log(f"SASS: {len(built)} kernels checked, {sum(not v.ok for v in verdicts)} lack what they test, "
        f"in {time.time() - t:.1f}s")
    if list_key and all(c.error is None for c in compiled.values()):
        checked_set.record(cache.cache_dir(), list_key, [compiled[k].cubin_path for k in kernels])
    return compiled
