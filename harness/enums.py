"""The vocabulary every layer shares, defined once: the CLI's choices, the records and the models use these.

They are `str` enums, so a member compares equal to its spelling ("128B" == Swizzle.B128) and serialises
as it in JSON records.
"""
from __future__ import annotations

import re
from enum import Enum, IntEnum


class _Str(str, Enum):
    def __str__(self) -> str:
        return self.value

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class Arch(_Str):
    """A compile target (NVRTC's --gpu-architecture, sm_XY[a|f]). Which GPUs run a kernel built for it is a relation
    between the arch and the GPU's compute capability (`runs_on`), not equality: the arch's name says it, by NVIDIA's
    rules (below). A family on an arch whose name does not (a simulated device's) declares it (`declare_arch`), and
    its arch is then a plain string wherever an Arch goes."""
    SM_90A = "sm_90a"
    SM_100A = "sm_100a"
    SM_103A = "sm_103a"

    def runs_on(self, compute_capability, ptx: bool = False) -> bool:
        """Whether a GPU of this compute capability runs a kernel built for this arch (`runs_on`)."""
        return runs_on(self, compute_capability, ptx)


# Which compute capabilities run a kernel built for an arch (CUDA Programming Guide, "Compute Capability and
# Streaming Multiprocessor Versions" and "Binary Compatibility"; NVIDIA's blog on CUDA 12.9's family-specific
# targets): sm_XY is compute capability X.Y, and
#   sm_XYa (arch-specific: wgmma, tcgen05)  only X.Y itself: sm_90a 9.0, sm_100a 10.0, sm_103a 10.3;
#   sm_XYf (family-specific, CUDA 12.9 on)  X.Z for Z >= Y: sm_100f 10.0 and 10.3;
#   sm_XY  (neither)                       a cubin X.Z for Z >= Y (sm_80: 8.0, 8.6, 8.9), its PTX every
#                                          compute capability from X.Y on (sm_80: 9.0 too, through the driver's JIT).
_TARGET = re.compile(r"sm_(\d+)(\d)([af]?)")
# archs whose name is not NVIDIA's spelling, as their families declare them: arch -> the compute capabilities
# that run it (declare_arch)
_DECLARED: dict[str, frozenset[tuple[int, int]]] = {}


def compute_capability(cc) -> tuple[int, int]:
    """A compute capability as (major, minor), from "9.0", (9, 0) or a device record's field; ValueError else."""
    if isinstance(cc, str):
        major, dot, minor = cc.strip().partition(".")
        if dot and major.isdigit() and minor.isdigit():
            return int(major), int(minor)
    elif isinstance(cc, (tuple, list)) and len(cc) == 2 and all(isinstance(x, int) for x in cc):
        return int(cc[0]), int(cc[1])
    raise ValueError(f"a compute capability is major.minor, such as 9.0, not {cc!r}")


def declare_arch(arch: str, compute_capabilities) -> None:
    """Make an arch whose name is not NVIDIA's spelling (sm_XY, sm_XYa, sm_XYf: those follow from the name) known,
    with the compute capabilities that run it: a family on such an arch declares it (its `arch_compute_capabilities`,
    read as harness.families loads it). ValueError for an NVIDIA spelling, no compute capability, or an arch declared
    before with others."""
    arch = str(arch)
    if _TARGET.fullmatch(arch):
        raise ValueError(f"{arch}: the compute capabilities that run it follow from its name (harness.enums)")
    ccs = frozenset(map(compute_capability, compute_capabilities))
    if not ccs:
        raise ValueError(f"{arch}: declared with no compute capability")
    if _DECLARED.get(arch, ccs) != ccs:
        raise ValueError(f"{arch}: declared twice, with different compute capabilities")
    _DECLARED[arch] = ccs


def is_known_arch(arch) -> bool:
    """An arch `runs_on` can answer for: NVIDIA's spelling, or one a family declared."""
    return str(arch) in _DECLARED or _TARGET.fullmatch(str(arch)) is not None


def runs_on(arch, cc, ptx: bool = False) -> bool:
    """Whether a GPU of this compute capability runs a kernel built for `arch` (the table above): as a cubin, or
    with `ptx` as PTX the driver's JIT compiles (the driver-jit toolchain). False for an arch neither spelled as
    NVIDIA does nor declared."""
    cc = compute_capability(cc)
    arch = str(arch)
    if arch in _DECLARED:
        return cc in _DECLARED[arch]
    m = _TARGET.fullmatch(arch)
    if m is None:
        return False
    major, minor, suffix = int(m[1]), int(m[2]), m[3]
    if suffix == "a":
        return cc == (major, minor)
    if suffix == "f" or not ptx:
        return cc[0] == major and cc[1] >= minor
    return cc >= (major, minor)


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
    MMA_SYNC = "mma_sync"  # warp-level mma.sync / mma.sp, ldmatrix, stmatrix (harness/families/mma_sync)


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
