"""The toolchain axis: which compiler turns a kernel's CUDA source into the module a GPU loads.

Two kinds (`harness.enums.ToolchainKind`):
  * `nvrtc`: NVRTC compiles to a cubin for the exact arch (NVRTC's built-in ptxas) - the default;
  * `driver-jit`: NVRTC stops at PTX (`--gpu-architecture=compute_90a`), and the GPU worker loads the PTX, so the
    driver's JIT compiles it: the compiler a driver upgrade changes.
Either kind with any NVRTC library: the one cuda.bindings binds (the default, called through cuda.bindings), or
another libnvrtc.so named by a path, a folder holding one, or a version (`find_library`), loaded with ctypes
(cuda.bindings binds one version per process). A `Toolchain` is plain data: it goes to the compile processes, into
the environment record of a results file and into a kernel folder's manifest; `compile` loads its library where
it runs.

A version is looked up among the NVRTC cuda.bindings binds and the libraries under `library_roots()`
($TC_HARNESS_NVRTC_DIR, else ~/.cache/tc-harness/nvrtc), where each is a wheel installed with
`pip install --target ROOT/12.8 'nvidia-cuda-nvrtc-cu12==12.8.*'`.
"""
from __future__ import annotations

import ctypes
import hashlib
import mmap
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness import cache
from harness.enums import ToolchainKind

PROBE_NAME = "tc_harness_toolchain_probe"
PROBE_SOURCE = f'extern "C" __global__ void {PROBE_NAME}(int *out) {{ if (out) *out = 1; }}\n'
PROBE_OPTIONS = ("-std=c++17",)
_RELEASE_MARK = b"Cuda compilation tools, release "
_RELEASE = re.compile(rb"Cuda compilation tools, release (\d+\.\d+), V(\d+\.\d+\.\d+)")
_LIBRARY_FILE = re.compile(r"libnvrtc\.so(\.\d+)*")  # not libnvrtc.alt.so.*, not libnvrtc-builtins.so.*
_VERSION_SPEC = re.compile(r"\d+(\.\d+){0,2}")
_PTX_VERSION = re.compile(r"^\s*\.version\s+(\d+\.\d+)\s*$", re.M)
_PTX_TARGET = re.compile(r"^\s*\.target\s+([\w]+)", re.M)
_SYMBOLS = ("nvrtcVersion", "nvrtcGetNumSupportedArchs", "nvrtcGetSupportedArchs", "nvrtcCreateProgram",
            "nvrtcCompileProgram", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetPTXSize", "nvrtcGetPTX",
            "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcDestroyProgram")
PTX, CUBIN = "ptx", "cubin"
# The fast-compile level of the validation kernels, and the first NVRTC that has it. At "min", NVRTC skips some of its
# optimizer's and ptxas's costlier passes: every kernel of the default sweep (823, three archs) compiled in 26% less
# time, and each one's SASS still has everything its check asks for (the CPU note 2026-11-27 fast-compile.txt in
# docs/performance.md). What the validation proves is the instruction's meaning, which no optimization level changes;
# the timing bench, whose loop's schedule is what it measures, compiles at full optimization (harness/timing/bench.py).
FAST_COMPILE_LEVEL = "min"
FAST_COMPILE_SINCE = (12, 9)


class ToolchainError(ValueError):
    """A toolchain that cannot be used as asked: one line saying why (the CLI prints it and exits 2)."""


def library_roots() -> list[Path]:
    """Where `--nvrtc VERSION` looks besides the NVRTC cuda.bindings binds: $TC_HARNESS_NVRTC_DIR (folders
    separated by os.pathsep), else ~/.cache/tc-harness/nvrtc."""
    text = os.environ.get("TC_HARNESS_NVRTC_DIR")
    if text:
        return [Path(p).expanduser() for p in text.split(os.pathsep) if p]
    return [Path.home() / ".cache" / "tc-harness" / "nvrtc"]


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


# ---------------------------------------------------------------------------------------------------- libraries

@dataclass(frozen=True)
class NvrtcLibrary:
    """One libnvrtc.so: where it is, its version (major.minor, as nvrtcVersion says) and its build (the
    `V12.8.93` of the release string it carries, else `sha256:` and the start of the file's digest): two
    libraries of one version may differ in build, and the build is what the compile cache keys on."""
    path: str
    version: str
    build: str

    def __post_init__(self):
        if not re.fullmatch(r"\d+\.\d+", self.version):
            raise ValueError(f"NVRTC version {self.version!r} is not major.minor")
        if not (re.fullmatch(r"\d+\.\d+\.\d+", self.build) or self.build.startswith("sha256:")):
            raise ValueError(f"NVRTC build {self.build!r} is neither major.minor.patch nor sha256:...")


@lru_cache(maxsize=None)
def _release(path: str, size: int, mtime: float) -> tuple[str, str] | None:
    """(release, build) from the 'Cuda compilation tools, release 12.8, V12.8.93' string a library carries."""
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        at = m.find(_RELEASE_MARK)
        while at >= 0:
            hit = _RELEASE.match(m[at:at + 80])
            if hit:
                return hit.group(1).decode(), hit.group(2).decode()
            at = m.find(_RELEASE_MARK, at + 1)
    return None


def release_of(path) -> tuple[str, str] | None:
    """(release, build) a library file names, without loading it; None when it names none."""
    st = os.stat(path)
    return _release(str(path), st.st_size, st.st_mtime)


def _build_of(path: str) -> str:
    found = release_of(path)
    if found:
        return found[1]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()[:16]


@lru_cache(maxsize=None)
def _load(path: str) -> ctypes.CDLL:
    """The library at `path`, loaded with ctypes (once per process), with its builtins beside it loaded first."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ToolchainError(f"{path}: cannot load: {e}") from None
    missing = [s for s in _SYMBOLS if not hasattr(lib, s)]
    if missing:
        raise ToolchainError(f"{path}: not an NVRTC library (it has no {missing[0]})")
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    major, minor = _ctypes_version(lib)
    builtins = Path(path).parent / f"libnvrtc-builtins.so.{major}.{minor}"
    if builtins.exists():
        # libnvrtc opens its builtins by name when it first compiles; NVRTC 13.0's wheel carries no RUNPATH to
        # find them beside it, so load them here, by path, and the dynamic loader finds them loaded
        ctypes.CDLL(str(builtins))
    return lib


def _ctypes_version(lib) -> tuple[int, int]:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _ok(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _ok(lib, status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what}: {lib.nvrtcGetErrorString(status).decode(errors='replace')}")


def library_at(path) -> NvrtcLibrary:
    """The NVRTC library file at `path`, loaded to ask its version; ToolchainError when it is none."""
    real = str(Path(path).expanduser().resolve())
    lib = _load(real)
    major, minor = _ctypes_version(lib)
    return NvrtcLibrary(real, f"{major}.{minor}", _build_of(real))


def bound_library_path() -> str:
    """Where the libnvrtc.so that cuda.bindings binds lies (cuda.pathfinder finds it for cuda.bindings; failing
    that, the mapping this process has of it)."""
    from cuda.bindings import nvrtc
    nvrtc.nvrtcVersion()  # loads it
    try:
        from cuda import pathfinder
        return str(Path(pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path).resolve())
    except Exception:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = line.split()[-1]
                if _LIBRARY_FILE.fullmatch(Path(name).name):
                    return str(Path(name).resolve())
    raise ToolchainError("cannot tell where the NVRTC library cuda.bindings binds lies")


class NvrtcMissing(ToolchainError):
    """No NVRTC library for cuda.bindings to bind (nvrtc_problem says why, and what to install)."""


def nvrtc_install_line() -> str:
    """The pip line that installs NVRTC for the CUDA major cuda.bindings is built for: the harness's own pin
    (pyproject.toml: cuda-toolkit[nvrtc]==13.*) for 13 or no cuda.bindings, the CUDA 12 wheel for 12."""
    try:
        from cuda.bindings import __version__ as bindings_version
        major = bindings_version.split(".")[0]
    except Exception:  # noqa: BLE001 (no cuda.bindings: the harness's own pin)
        major = "13"
    if major == "12":
        return "pip install 'nvidia-cuda-nvrtc-cu12==12.*'"
    return f"pip install 'cuda-toolkit[nvrtc]=={major}.*'"


def nvrtc_problem() -> str | None:
    """Why the NVRTC cuda.bindings binds (the default toolchain's) cannot be used here, in one line that says what to
    install; None where it loads. For `toolchains`, `doctor`, and the sweep's refusal (exit 2)."""
    try:
        from cuda.bindings import nvrtc
    except Exception as e:  # noqa: BLE001 (named in the line)
        return (f"cuda.bindings does not import ({type(e).__name__}: {_first_line(e)}); install it with: "
                f"pip install 'cuda-bindings==13.*' and {nvrtc_install_line()}")
    try:
        result = nvrtc.nvrtcVersion()
    except Exception as e:  # noqa: BLE001 (cuda.pathfinder's DynamicLibNotFoundError, a broken library ...)
        return (f"no NVRTC library found for cuda.bindings ({type(e).__name__}: {_first_line(e)}); install it with: "
                f"{nvrtc_install_line()}, or name another with --nvrtc (python -m harness toolchains lists them)")
    if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return f"the NVRTC library cuda.bindings binds does not answer nvrtcVersion ({result[0]!r})"
    return None


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]


@lru_cache(maxsize=None)
def bound_library() -> NvrtcLibrary:
    """The NVRTC cuda.bindings binds: the harness's default."""
    from cuda.bindings import nvrtc
    _, major, minor = nvrtc.nvrtcVersion()
    path = bound_library_path()
    return NvrtcLibrary(path, f"{major}.{minor}", _build_of(path))


# where a folder holds its NVRTC: the library's own folder, a toolkit (/usr/local/cuda-12.8), a `pip install
# --target` folder or a virtual environment; a fixed set of places, so that `--nvrtc /` is no walk of the disk
_PLACES = ("", "lib", "lib64", "targets/*/lib", "nvidia/*/lib", "lib/python3*/site-packages/nvidia/*/lib")


def libraries_under(folder) -> list[Path]:
    """The NVRTC library files a folder holds in one of `_PLACES` (symbolic links to one file counted once)."""
    found = set()
    for place in _PLACES:
        for p in Path(folder).glob(f"{place}/libnvrtc.so*" if place else "libnvrtc.so*"):
            if _LIBRARY_FILE.fullmatch(p.name) and p.is_file():
                found.add(p.resolve())
    return sorted(found)


def installed_libraries() -> list[tuple[Path, str, str]]:
    """(path, release, build) of the NVRTC cuda.bindings binds and of every library under `library_roots()`,
    read from the files (none is loaded)."""
    paths: list[Path] = []
    try:
        paths.append(Path(bound_library_path()))
    except Exception:  # no cuda.bindings: only the roots
        pass
    for root in library_roots():  # ROOT/<version>/ is a `pip install --target` folder
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if folder.is_dir():
                    paths += libraries_under(folder)
    out, seen = [], set()
    for p in paths:
        if p in seen:
            continue
        seen.add(p)
        found = release_of(p)
        if found:
            out.append((p, *found))
    return out


def _pip_line(spec: str) -> str:
    major = spec.split(".")[0]
    wheel = "nvidia-cuda-nvrtc-cu12" if major == "12" else "nvidia-cuda-nvrtc"
    minor = ".".join(spec.split(".")[:2])
    return f"pip install --target {library_roots()[0]}/{minor} '{wheel}=={minor}.*'"


def find_library(spec: str) -> NvrtcLibrary:
    """`--nvrtc`: a libnvrtc.so file, a folder holding exactly one, or a version (13, 12.8 or 12.8.93: the newest
    build that matches among `installed_libraries()`). ToolchainError, one line, when it names none."""
    text = spec.strip()
    hint = "give a libnvrtc.so file, a folder holding one, or a version such as 12.8"
    if not text:
        raise ToolchainError(hint)
    p = Path(text).expanduser()
    if _VERSION_SPEC.fullmatch(text) and not p.exists():
        want = _numbers(text)
        have = installed_libraries()
        match = [(path, rel, build) for path, rel, build in have if _numbers(build)[:len(want)] == want]
        if not match:
            listed = ", ".join(sorted({f"{rel} (V{build})" for _, rel, build in have}, key=_numbers_of_listing))
            raise ToolchainError(f"no NVRTC {text} here (found {listed or 'none'}, in "
                                 f"{os.pathsep.join(map(str, library_roots()))} and the one cuda.bindings binds); "
                                 f"install it with: {_pip_line(text)}")
        path = max(match, key=lambda m: _numbers(m[2]))[0]
        return library_at(path)
    if p.is_file():
        return library_at(p)
    if p.is_dir():
        libs = libraries_under(p)
        if not libs:
            raise ToolchainError(f"no libnvrtc.so in this folder, nor in its lib/, lib64/, targets/*/lib/ or "
                                 f"nvidia/*/lib/ ({hint})")
        if len(libs) > 1:
            raise ToolchainError(f"{len(libs)} NVRTC libraries in this folder ({libs[0]}, {libs[1]}"
                                 f"{', ...' if len(libs) > 2 else ''}); name one file")
        return library_at(libs[0])
    raise ToolchainError(f"no such file or folder ({hint})")


def _numbers_of_listing(text: str) -> tuple[int, ...]:
    return _numbers(text.split(" ")[0])


# ---------------------------------------------------------------------------------------------------- compiling

def out_buffer(size: int) -> bytearray:
    """A fresh, writable buffer for C code to write `size` bytes into (NVRTC's log, PTX, cubin).

    Never an immutable `bytes`: CPython shares small bytes objects (`b" " * 1` is the interpreter's one-byte
    singleton), so NVRTC writing its NUL into one turned every later `b" "` of the process into `b"\\x00"`, and
    Python 3.12 then compiled f-strings without their one-space parts (`f"{a} {b}"` -> "ab"): the main job's
    kernel sources lost their spaces and nothing compiled. tests/test_c_buffers.py holds every such call to this."""
    return bytearray(max(int(size), 1))


def bindings_compile(source: str, name: str, target: str, options: tuple[str, ...],
                     output: str = CUBIN) -> tuple[bytes | None, str]:
    """(cubin or PTX, or None when NVRTC rejects the source; NVRTC's log) through cuda.bindings. Cubin bytes come
    from nvrtcGetCUBINSize/nvrtcGetCUBIN: CuPy 14.2's low-level getCUBIN returns them one byte short."""
    from cuda.bindings import nvrtc

    def check(result, what):
        if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{what}: {nvrtc.nvrtcGetErrorString(result[0])[1].decode()}")
        return result[1] if len(result) > 1 else None

    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []), "create")
    try:
        opts = [f"--gpu-architecture={target}".encode()] + [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = out_buffer(check(nvrtc.nvrtcGetProgramLogSize(prog), "log size"))
        check(nvrtc.nvrtcGetProgramLog(prog, log), "log")
        log_text = bytes(log).rstrip(b"\x00 ").decode(errors="replace")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return None, log_text
        size_of, get = ((nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if output == PTX
                        else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN))
        data = out_buffer(check(size_of(prog), f"{output} size"))
        check(get(prog, data), output)
        return (bytes(data).rstrip(b"\x00") if output == PTX else bytes(data)), log_text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def ctypes_compile(library: str, source: str, name: str, target: str, options: tuple[str, ...],
                   output: str = CUBIN) -> tuple[bytes | None, str]:
    """The same as `bindings_compile`, through the libnvrtc.so at `library` loaded with ctypes."""
    lib = _load(library)
    prog = ctypes.c_void_p()
    _ok(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(), 0, None, None),
        "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={target}".encode()] + [o.encode() for o in options]
        err = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        _ok(lib, lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "nvrtcGetProgramLogSize")
        log = ctypes.create_string_buffer(size.value)
        _ok(lib, lib.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
        log_text = log.raw.rstrip(b"\x00 ").decode(errors="replace")
        if err != 0:
            return None, log_text
        size_of, get = ((lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if output == PTX
                        else (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN))
        _ok(lib, size_of(prog, ctypes.byref(size)), f"{output} size")
        data = ctypes.create_string_buffer(size.value)
        _ok(lib, get(prog, data), output)
        return (data.raw.rstrip(b"\x00") if output == PTX else data.raw), log_text
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def ptx_header(ptx: bytes | str) -> tuple[str | None, str | None]:
    """(the `.version` PTX ISA, the `.target`) a PTX module declares."""
    text = ptx.decode(errors="replace") if isinstance(ptx, bytes) else ptx
    version, target = _PTX_VERSION.search(text), _PTX_TARGET.search(text)
    return (version.group(1) if version else None), (target.group(1) if target else None)


def first_error(log: str) -> str:
    return next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:200] or "no log")


@dataclass(frozen=True)
class Toolchain:
    """A kind and an NVRTC library; `ptx_isa` is the PTX ISA version that NVRTC writes, `archs` the compute
    capabilities it lists (nvrtcGetSupportedArchs), `bindings` whether it is called through cuda.bindings (the
    library cuda.bindings binds) or loaded with ctypes."""
    kind: ToolchainKind
    library: NvrtcLibrary
    ptx_isa: str
    archs: tuple[int, ...]
    bindings: bool = False

    def __post_init__(self):
        if not isinstance(self.kind, ToolchainKind):
            raise TypeError(f"toolchain kind {self.kind!r} is not a ToolchainKind")
        if not re.fullmatch(r"\d+\.\d+", self.ptx_isa):
            raise ValueError(f"PTX ISA version {self.ptx_isa!r} is not major.minor")

    @property
    def output(self) -> str:
        return PTX if self.kind is ToolchainKind.DRIVER_JIT else CUBIN

    def target(self, arch: str) -> str:
        """NVRTC's --gpu-architecture: the exact arch for a cubin, its virtual arch (compute_90a) for PTX alone."""
        return "compute_" + arch[len("sm_"):] if self.kind is ToolchainKind.DRIVER_JIT else arch

    def compile(self, source: str, name: str, arch: str, options: tuple[str, ...]) -> tuple[bytes | None, str]:
        if self.bindings:
            return bindings_compile(source, name, self.target(arch), options, self.output)
        return ctypes_compile(self.library.path, source, name, self.target(arch), options, self.output)

    @property
    def fast_compile_options(self) -> tuple[str, ...]:
        """NVRTC's --Ofast-compile=min where this NVRTC has that level (12.9 on; 12.8 knows only max and 0), else
        nothing: what a CompileJob adds to its options unless it asks for full optimization (CompileJob.fast_compile)."""
        if _numbers(self.library.version) < FAST_COMPILE_SINCE:
            return ()
        return (f"--Ofast-compile={FAST_COMPILE_LEVEL}",)

    def accepts(self, option: str, arch: str) -> bool:
        """Whether this toolchain compiles a trivial kernel for `arch` with `option` (a ptxas option an older ptxas
        lacks: contract.IfAccepted), tried once per toolchain build, option and arch."""
        key = (*self.cache_key(), option, arch)
        if key not in _ACCEPTS:
            _ACCEPTS[key] = self.compile(PROBE_SOURCE, PROBE_NAME, arch, (option,))[0] is not None
        return _ACCEPTS[key]

    def cache_key(self) -> tuple[str, ...]:
        """What of the toolchain decides the bytes of a module (the path does not: one build is one compiler)."""
        return (str(self.kind), self.library.version, self.library.build)

    def describe(self) -> str:
        build = self.library.build if self.library.build.startswith("sha256:") else f"V{self.library.build}"
        return f"{self.kind} (NVRTC {self.library.version}, {build}, PTX ISA {self.ptx_isa})"

    def record(self) -> dict:
        """The environment record's toolchain fields (docs/results-schema.md)."""
        return {"toolchain": str(self.kind), "nvrtc": self.library.version, "nvrtc_build": self.library.build,
                "nvrtc_library": self.library.path, "ptx_isa": self.ptx_isa}

    @classmethod
    def from_record(cls, rec: dict, archs=()) -> "Toolchain":
        """A toolchain as a record names it (a kernel folder's manifest): to compare and describe, not to compile."""
        return cls(ToolchainKind(rec["toolchain"]), NvrtcLibrary(rec["nvrtc_library"], rec["nvrtc"],
                                                                  rec["nvrtc_build"]), rec["ptx_isa"], tuple(archs))

    def cannot_build(self, archs) -> dict[str, str]:
        """arch -> NVRTC's reason, for each of `archs` this toolchain cannot build (a trivial kernel is tried)."""
        out = {}
        for arch in archs:
            reason = _probe_failure(self, str(arch))
            if reason:
                out[str(arch)] = reason
        return out


_ACCEPTS: dict[tuple, bool] = {}  # Toolchain.accepts's answers, by toolchain build, option and arch


@lru_cache(maxsize=None)
def _probe_failure(tc: Toolchain, arch: str) -> str | None:
    """NVRTC's first error where this toolchain cannot build a trivial kernel for `arch`, else None. A success is
    remembered in the compile cache, a file per toolchain build and arch: a warm sweep's process spent ~0.13 s
    compiling the probe for its three archs, one after another, before its plan (bench16 in
    docs/performance.md)."""
    key = hashlib.sha256("\0".join((*tc.cache_key(), tc.target(arch), PROBE_SOURCE, *PROBE_OPTIONS)).encode())
    try:
        built = cache.cache_dir() / f"probe-{arch}-{key.hexdigest()[:16]}.ok"
        if built.exists():
            return None
    except OSError:  # no cache folder can be made: probed every time
        built = None
    data, log = tc.compile(PROBE_SOURCE, PROBE_NAME, arch, PROBE_OPTIONS)
    if not data:
        return first_error(log)
    try:
        if built is not None:
            built.touch()
    except OSError:
        pass  # a read-only cache: probed again next time
    return None


@lru_cache(maxsize=None)
def resolve(kind: ToolchainKind = ToolchainKind.NVRTC, nvrtc: str | None = None) -> Toolchain:
    """The toolchain `--toolchain KIND --nvrtc SPEC` names (SPEC None: the NVRTC cuda.bindings binds), tried on a
    trivial kernel, which also tells the PTX ISA version it writes. ToolchainError, one line, when it cannot be
    used."""
    kind = ToolchainKind(kind)
    if nvrtc is None:
        problem = nvrtc_problem()
        if problem is not None:  # before cuda.bindings raises it from deep inside, as a traceback
            raise NvrtcMissing(problem)
        library, bindings = bound_library(), True
        from cuda.bindings import nvrtc as binding
        archs = tuple(int(a) for a in binding.nvrtcGetSupportedArchs()[1])
    else:
        library, bindings = find_library(nvrtc), False
        lib = _load(library.path)
        n = ctypes.c_int()
        _ok(lib, lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        listed = (ctypes.c_int * n.value)()
        _ok(lib, lib.nvrtcGetSupportedArchs(listed), "nvrtcGetSupportedArchs")
        archs = tuple(listed)
    if not archs:
        raise ToolchainError(f"{library.path}: NVRTC {library.version} lists no architecture")
    probe_arch = 90 if 90 in archs else archs[-1]
    compile_ptx = (bindings_compile if bindings else
                   lambda *a: ctypes_compile(library.path, *a))
    ptx, log = compile_ptx(PROBE_SOURCE, PROBE_NAME, f"compute_{probe_arch}", PROBE_OPTIONS, PTX)
    if not ptx:
        raise ToolchainError(f"{library.path}: NVRTC {library.version} cannot compile a trivial kernel: "
                             f"{first_error(log)}")
    isa, _ = ptx_header(ptx)
    if isa is None:
        raise ToolchainError(f"{library.path}: NVRTC {library.version} wrote PTX without a .version line")
    return Toolchain(kind, library, isa, archs, bindings)


def default() -> Toolchain:
    """NVRTC cubins from the NVRTC cuda.bindings binds: what a sweep uses without --toolchain and --nvrtc."""
    return resolve(ToolchainKind.NVRTC, None)


# ---------------------------------------------------------------------------------------------------- the driver

def cuda_version_text(version: int) -> str:
    """13000 -> '13.0' (the CUDA version encoding of cuDriverGetVersion)."""
    return f"{version // 1000}.{version % 1000 // 10}"


def driver_needed_for_ptx(isa: str) -> tuple[int, bool]:
    """(the oldest CUDA driver version that loads PTX ISA `isa`, exact). From cuda.bindings' copy of the PTX ISA
    release table; for a version newer than the table knows, the newest the table knows is returned with
    exact=False: the driver needs to be newer than that."""
    from cuda.bindings import utils
    major, minor = _numbers(isa)
    for i, (ma, mi) in enumerate([(major, m) for m in range(minor, -1, -1)] + [(major - 1, m) for m in range(9, -1, -1)]):
        try:
            return int(utils.get_minimal_required_cuda_ver_from_ptx_ver(f"{ma}.{mi}")), i == 0
        except ValueError:
            continue
    return 0, False  # nothing known near it: no bound


def check_driver(tc: Toolchain, driver: int) -> None:
    """ToolchainError when the driver (cuDriverGetVersion, e.g. 13000) cannot JIT the PTX the toolchain writes."""
    if tc.kind is not ToolchainKind.DRIVER_JIT or not driver:
        return
    need, exact = driver_needed_for_ptx(tc.ptx_isa)
    if driver < need or (not exact and driver <= need):
        wanted = f"CUDA {cuda_version_text(need)} or later" if exact else f"newer than CUDA {cuda_version_text(need)}"
        raise ToolchainError(f"the driver here is CUDA {cuda_version_text(driver)}, and its JIT cannot load PTX ISA "
                             f"{tc.ptx_isa} (what NVRTC {tc.library.version} writes; it needs a driver of {wanted}): "
                             f"give --nvrtc {cuda_version_text(driver)} or another NVRTC no newer than the driver")
