"""A kernel folder: kernels compiled on one machine and launched on another.

GPU machines may have no network and carry little (an NVRTC wheel is ~100 MB), so a run with another NVRTC
compiles here (`python -m harness compile --nvrtc 12.8 --out DIR`) and launches there (`python -m harness sweep
--kernels DIR`). The folder holds one module per kernel (`<kernel>-<arch>.cubin`, or `.ptx` for the driver's JIT),
`compile-errors/` (source and NVRTC log of each kernel NVRTC rejected) and `manifest.json`:

    {"format": "tc-harness-kernels", "version": 3, "harness": "0.1.0", "host": ..., "date": ...,
     "selection": "--family wgmma",
     "toolchain": {"toolchain": "nvrtc", "nvrtc": "12.8", "nvrtc_build": "12.8.93", "nvrtc_library": ...,
                   "ptx_isa": "8.7", "archs": [...]},
     "kernels": [{"name": ..., "family": ..., "arch": ..., "source_sha256": ..., "options": ["-std=c++17", ...],
                  "file": ..., "sha256": ..., "error": null}, ...]}

A sweep takes the folder only if it matches its plan (`KernelFolder.check`): every kernel the plan compiles is
there, for its arch, from the same CUDA source and NVRTC options as this harness writes (a kernel's options are its
own: a family compiles at the toolchain's fast-compile level or at full optimization), and each module's bytes are
the ones the manifest names. A kernel NVRTC rejected is in the manifest with its error; the sweep records its cases
compile-error, as if it had compiled them itself.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import socket
from dataclasses import dataclass
from pathlib import Path

from harness.cache import write_atomically
from harness.contract import CompileError, Kernel
from harness.run.compile import CompileJob, Compiled
from harness.run.toolchain import Toolchain

FORMAT = "tc-harness-kernels"
# 2: kernels may share a module file (an older harness would check a whole module as one kernel); 3: each kernel's
# NVRTC options, in place of one list for the folder
VERSION = 3
MANIFEST = "manifest.json"
ERRORS = "compile-errors"


class KernelFolderError(ValueError):
    """A folder that is no kernel folder, or one that does not match the plan: one line saying why."""


def digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


@dataclass(frozen=True)
class FolderKernel:
    """One kernel of a folder: its module file (None when NVRTC rejected it, with `error`)."""
    name: str
    family: str
    arch: str
    source_sha256: str
    options: tuple[str, ...]
    file: str | None
    sha256: str | None
    error: str | None = None

    def __post_init__(self):
        if (self.file is None) == (self.error is None):
            raise KernelFolderError(f"kernel {self.name} for {self.arch}: give a module file or an error, one of them")
        if self.file is not None and (Path(self.file).name != self.file or self.sha256 is None):
            raise KernelFolderError(f"kernel {self.name}: module {self.file!r} must be a file name in the folder, "
                                    f"with its sha256")


@dataclass(frozen=True)
class KernelFolder:
    path: Path
    toolchain: Toolchain
    harness: str
    host: str
    date: str
    selection: str
    kernels: tuple[FolderKernel, ...]

    def find(self, name: str, arch: str) -> FolderKernel | None:
        return next((k for k in self.kernels if k.name == name and k.arch == arch), None)

    def record(self) -> dict:
        """The environment record's fields that say where the kernels came from."""
        return {"kernels_dir": str(self.path), "kernels_host": self.host, "kernels_date": self.date}

    def check(self, kernels: list[tuple[Kernel, CompileJob]]) -> None:
        """KernelFolderError unless every (kernel, the job this harness would compile it with) is in the folder,
        built from the job's source with the options the job gets from the folder's toolchain, and its module's bytes
        are the manifest's."""
        for kernel, job in kernels:
            entry = self.find(kernel.name, str(kernel.arch))
            if entry is None:
                raise KernelFolderError(f"has no {kernel.name} for {kernel.arch}, which this sweep needs (the folder "
                                        f"holds the kernels of `{self.selection or 'every family'}`: compile the "
                                        f"selection you sweep)")
            if entry.source_sha256 != digest(job.source):
                raise KernelFolderError(f"{kernel.name} for {kernel.arch} was compiled from another source than this "
                                        f"harness writes (harness {self.harness} on {self.host}, {self.date}): "
                                        f"compile it again from this checkout")
            options = job.options_for(self.toolchain)
            if entry.options != options:
                raise KernelFolderError(f"{kernel.name} for {kernel.arch} was compiled with options "
                                        f"{' '.join(entry.options)}; this harness compiles it with {' '.join(options)}")
            if entry.file is not None:
                module = self.path / entry.file
                if not module.is_file():
                    raise KernelFolderError(f"{entry.file}: the manifest names it and the folder lacks it")
                if digest(module.read_bytes()) != entry.sha256:
                    raise KernelFolderError(f"{entry.file}: its bytes differ from the manifest's sha256 (changed or "
                                            f"cut short in transit)")

    def compiled(self, kernels: list[Kernel]) -> dict[Kernel, Compiled]:
        """What compile_many would have returned for these kernels (after `check`)."""
        out = {}
        for k in kernels:
            entry = self.find(k.name, str(k.arch))
            if entry.file is not None:
                out[k] = Compiled(k.name, str(k.arch), self.path / entry.file, True)
            else:
                source = self.path / ERRORS / f"{k.name}-{k.arch}" / f"{k.name}.cu"
                out[k] = Compiled(k.name, str(k.arch), None, True, entry.error,
                                  CompileError(k.name, str(k.arch), entry.error, source if source.exists() else None))
        return out


def load(path) -> KernelFolder:
    """The kernel folder at `path`; KernelFolderError, one line, when it is none or its manifest is malformed."""
    folder = Path(path)
    if not folder.is_dir():
        raise KernelFolderError("no such folder" if not folder.exists() else "is not a folder")
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise KernelFolderError(f"has no {MANIFEST}: not a kernel folder (python -m harness compile --out DIR "
                                f"writes one)")
    try:
        m = json.loads(manifest.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KernelFolderError(f"{MANIFEST} is not readable JSON ({type(e).__name__})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise KernelFolderError(f"{MANIFEST} is not a kernel folder's manifest (format {FORMAT!r})")
    if m.get("version") != VERSION:
        raise KernelFolderError(f"{MANIFEST} is version {m.get('version')!r}; this harness reads version {VERSION}")
    try:
        tc = m["toolchain"]
        toolchain = Toolchain.from_record(tc, tuple(tc.get("archs", ())))
        kernels = tuple(FolderKernel(k["name"], k["family"], k["arch"], k["source_sha256"],
                                     tuple(map(str, k["options"])), k.get("file"), k.get("sha256"), k.get("error"))
                        for k in m["kernels"])
        return KernelFolder(folder, toolchain, str(m["harness"]), str(m["host"]), str(m["date"]),
                            str(m.get("selection", "")), kernels)
    except KernelFolderError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise KernelFolderError(f"{MANIFEST} is malformed ({type(e).__name__}: {e})"[:300]) from None


def write(path, toolchain: Toolchain, kernels: list[tuple[Kernel, CompileJob]], compiled: dict[Kernel, Compiled],
          selection: str) -> KernelFolder:
    """Copy each compiled module into the folder and write the manifest (last, so a folder cut short has none).
    A folder that held an earlier manifest loses the modules it named first."""
    from harness import __version__
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    old = folder / MANIFEST
    if old.exists():
        try:
            for entry in load(folder).kernels:
                if entry.file:
                    (folder / entry.file).unlink(missing_ok=True)
        except KernelFolderError:
            pass
        old.unlink()
    entries = []
    written: dict[str, str] = {}  # module digest -> its file: the kernels of one module share it (stored once)
    for kernel, job in kernels:
        c = compiled[kernel]
        made = dict(name=kernel.name, family=str(kernel.family), arch=str(kernel.arch),
                    source_sha256=digest(job.source), options=job.options_for(toolchain))
        if c.error is None:
            data = Path(c.cubin_path).read_bytes()
            sha = digest(data)
            if sha not in written:
                written[sha] = f"{kernel.name}-{kernel.arch}{toolchain.kind.module_suffix}"
                (folder / written[sha]).write_bytes(data)
            entries.append(FolderKernel(**made, file=written[sha], sha256=sha))
        else:
            entries.append(FolderKernel(**made, file=None, sha256=None, error=str(c.error)))
    manifest = {"format": FORMAT, "version": VERSION, "harness": __version__, "host": socket.gethostname(),
                "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "selection": selection,
                "toolchain": {**toolchain.record(), "archs": list(toolchain.archs)},
                "kernels": [{**vars(e), "options": list(e.options)} for e in entries]}
    write_atomically(old, json.dumps(manifest, indent=1) + "\n")
    return load(folder)
