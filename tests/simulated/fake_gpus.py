"""Make the sweep believe simulated GPUs are present (for tests, with pytest's monkeypatch): harness.run.gpu
answers for them, and compilation is skipped (the simulated devices never read a cubin)."""
from __future__ import annotations

from pathlib import Path

from harness.run.compile import Compiled

BACKEND = "tests.simulated.sim_device"
CC = {"sm_90a": "9.0", "sm_100a": "10.0", "sm_103a": "10.3"}


def hide_real_gpus(monkeypatch) -> None:
    """The harness sees no GPU, as on a CPU-only machine (the tests that check what happens there also run on GPU
    nodes); compilation is left as it is."""
    from harness.run import gpu
    none = gpu.GpuState("none", 0, (), "no CUDA device or driver")
    monkeypatch.setattr(gpu, "state", lambda: none)
    monkeypatch.setattr(gpu, "device_count", lambda: 0)
    monkeypatch.setattr(gpu, "device_info", lambda index=0: None)
    monkeypatch.setattr(gpu, "unusable", lambda: None)


def install(monkeypatch, archs, ccs=None) -> None:
    """archs: the arch of each simulated GPU, by index; ccs: the compute capability of each arch CC does not have (an
    arch the harness has never heard of, which its family declares). NVRTC is not asked whether it builds those
    archs: nothing is compiled for a simulated GPU."""
    from harness import sweep
    from harness.run import gpu
    cc = {**CC, **(ccs or {})}
    infos = {i: {"index": i, "name": f"Simulated {a}", "compute_capability": cc[a], "arch": a,
                 "uuid": f"GPU-sim-{i}", "multiprocessors": 1, "driver": 0, "runtime": 0}
             for i, a in enumerate(archs)}
    if ccs:
        from harness.run import toolchain
        cannot = toolchain.Toolchain.cannot_build
        monkeypatch.setattr(toolchain.Toolchain, "cannot_build",
                            lambda self, archs_: cannot(self, [a for a in archs_ if str(a) not in ccs]))
    monkeypatch.setattr(gpu, "device_count", lambda: len(infos))
    monkeypatch.setattr(gpu, "device_info", lambda index=0: infos.get(index))

    def compile_kernels(kernels, cfg, log, helpers=None, submitted=None):
        suffix = cfg.toolchain.kind.module_suffix if cfg.toolchain is not None else ".cubin"  # .ptx: driver-jit
        return {k: Compiled(k.name, str(k.arch), Path(f"/nonexistent/simulated/{k.name}{suffix}"), True)
                for k in kernels}

    monkeypatch.setattr(sweep, "compile_kernels", compile_kernels)
