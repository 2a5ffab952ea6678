"""The vocabulary every layer shares, defined once: the CLI's choices, the records and the models use these.

They are `str` enums, so a member compares equal to its spelling ("128B" == Swizzle.B128) and serialises
as it in JSON records.
"""
from __future__ import annotations

from enum import Enum, IntEnum


class _Str(str, Enum):
    def __str__(self) -> str:
        return self.value

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class Arch(_Str):
    SM_90A = "sm_90a"
    SM_100A = "sm_100a"
    SM_103A = "sm_103a"


class Swizzle(_Str):
    NONE = "none"
    B32 = "32B"
    B64 = "64B"
    B128 = "128B"
    B128_BASE32B = "128B_base32b"  # tcgen05 only: 128-byte swizzle with 32-byte atomicity


class Major(_Str):
    K = "K"
    MN = "MN"


class OperandSource(_Str):
    SS = "SS"  # A and B from shared memory
    RS = "RS"  # wgmma: A from registers
    TS = "TS"  # tcgen05: A from Tensor Memory


class CtaGroup(int, Enum):
    ONE = 1
    TWO = 2


class Status(_Str):
    """What happened to a case. `rank` orders them from best to worst for merging several runs of one case;
    not-run says nothing about the case, so it ranks below every outcome that ran."""
    PASS = "pass"
    FAIL = "fail"
    TIMEOUT = "timeout"
    FAULT = "fault"
    COMPILE_ERROR = "compile-error"
    ERROR = "error"  # a GPU is here but unusable (the driver or runtime fails): the environment, not the case
    NOT_RUN = "not-run"
    # what the device did with an encoding the ISA leaves undefined (a probe that cannot fail as predicted): recorded,
    # never counted as a pass or a fail (the sweep's summary counts observations apart)
    OBSERVED = "observed"

    @property
    def ran(self) -> bool:
        """The case was launched and this is the device's answer (a compile error, an unusable GPU and not-run
        are not)."""
        return self not in (Status.NOT_RUN, Status.ERROR, Status.COMPILE_ERROR)


class ToolchainKind(_Str):
    """How a kernel's source becomes the module the GPU loads (README, "Toolchain axis")."""
    NVRTC = "nvrtc"  # NVRTC compiles to a cubin for the exact arch (NVRTC's own ptxas)
    DRIVER_JIT = "driver-jit"  # NVRTC stops at PTX; the driver's JIT compiles it when the module loads

    @property
    def module_suffix(self) -> str:
        return ".ptx" if self is ToolchainKind.DRIVER_JIT else ".cubin"


class FamilyName(_Str):
    WGMMA = "wgmma"
    WGMMA_SEQ = "wgmma_seq"  # sequences of wgmma in one kernel (harness/families/wgmma_seq)
    WGMMA_SP = "wgmma_sp"
    TCGEN05 = "tcgen05"


class SeqPattern(_Str):
    """wgmma_seq: the shape of a sequence of wgmma in one kernel."""
    K_LOOP = "kloop"  # several wgmma into one accumulator, A and B descriptors advanced along K, one commit
    RS_PIPELINE = "rspipe"  # RS, the next K step's A registers loaded while the previous wgmma is in flight
    TWO_WARPGROUPS = "twowg"  # M = 128 per CTA: each warpgroup issues its own wgmma over its 64 rows of A


class DescStep(_Str):
    """wgmma_seq: how a kernel advances a matrix descriptor's start address (the 64-bit descriptor, PTX)."""
    ADD = "add"  # add.s64
    OR = "or"  # or.b64: the same value only where the base has the advance's bits clear


class ExitCode(IntEnum):
    """The exit status of every command (README, Commands): 0 all passed / nothing regressed; 1 a case failed,
    faulted, timed out or did not compile, compare found a regression or merge a disagreement; 2 usage or input
    error (one line on stderr, nothing written, before anything is compiled or launched); 3 nothing could run
    (no GPU of a family's arch: every case recorded not run); 4 environment error (a GPU is present but
    CUDA or its driver is unusable)."""
    OK = 0
    FAILED = 1
    USAGE = 2
    NOTHING_RAN = 3
    ENVIRONMENT = 4
