"""The SASS check: every kernel the sweep compiles must show, in its disassembly, the tensor-core instructions it
exists to test. A toolchain that lowers a `wgmma` or `tcgen05.mma` to something else (or drops a variant) makes
every case of that kernel a `compile-error` whose message names the missing instruction, before anything is
launched. This is what `pytest` on a GPU node and every `python -m harness sweep` (also on a CPU-only machine,
where every kernel is compiled) check for every kernel; CI checks a representative set.

A family states what each kernel's SASS must show as a `SassCheck` (harness/contract.py: rules over instructions:
opcode, operands, how many). Disassembling (nvdisasm, found here: `nvdisasm_path`) costs one process per cubin (most
of it the disassembler's start-up), so the verdict is cached beside the cubin, keyed by the rules: a warm sweep
disassembles nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness import contract
from harness.cache import cache_dir, content_digest, write_atomically
from harness.contract import SassCheck
from harness.run import cores

# the checker's own code: the listing's parser (here) and the rules' matching (contract.SassRule); a fixed one must
# not leave old verdicts standing
CHECKER_SOURCE = Path(__file__).read_bytes() + b"\0" + Path(contract.__file__).read_bytes()

# one instruction of nvdisasm's listing: /*0090*/  @!P0 HGMMA.64x8x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)([^;]*);")


@dataclass(frozen=True)
class Instruction:
    opcode: str  # with its modifiers: HGMMA.64x8x16.F32.BF16
    operands: str  # as printed, stripped: R24, gdesc[UR4], RZ, !UPT, gsb0


# ---------------------------------------------------------------------------------------------- the disassembler

NVDISASM_MISSING = ("nvdisasm (the SASS check's disassembler) is not installed: pip install nvidia-cuda-nvdisasm, "
                    "or put a CUDA toolkit's bin folder on PATH (cuda-toolkit 13.0 and 13.1 bring no nvdisasm wheel)")


class NvdisasmMissing(FileNotFoundError):
    """No nvdisasm: the cubins' SASS cannot be checked (NVDISASM_MISSING says what to install)."""


def nvdisasm_path() -> str:
    """nvdisasm from the nvidia-cuda-nvdisasm wheel, else the one on PATH; NvdisasmMissing, one line, if neither."""
    try:
        import nvidia
        for base in nvidia.__path__:
            for sub in ("cu13", "cuda_nvdisasm", "cu12"):
                p = Path(base) / sub / "bin" / "nvdisasm"
                if p.exists():
                    return str(p)
    except ImportError:
        pass
    found = shutil.which("nvdisasm")
    if found:
        return found
    raise NvdisasmMissing(NVDISASM_MISSING)


# nvdisasm's listing of the code sections (-c) without its dataflow analysis (-ndf), which only names the targets of
# branches taken through the branch stack. For every kernel of the default sweep (823, three archs) it lists the same
# arch, functions and instructions (opcodes and operands; branch targets as labels, not addresses) as
# `cuobjdump --dump-sass`, which runs nvdisasm with that analysis, in 23% less CPU and less than a quarter of the text
# (the CPU note 2026-11-26 disassembler.txt in docs/performance.md). Most of a module's disassembly is nvdisasm's
# start-up, ~0.3 s.
DISASSEMBLER_OPTIONS = ("-c", "-ndf")


def sass(cubin_path: Path | str) -> str:
    """nvdisasm's SASS listing of a cubin (DISASSEMBLER_OPTIONS): a `.section .text.<kernel>` header before each
    function's instructions, one `/*offset*/ OPCODE operands ;` line each."""
    exe = nvdisasm_path()
    out = subprocess.run([exe, *DISASSEMBLER_OPTIONS, str(cubin_path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"nvdisasm failed on {cubin_path}: {out.stderr.strip()}")
    return out.stdout


def sass_of_bytes(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return sass(f.name)


def instructions(sass_text: str) -> list[Instruction]:
    """Every instruction of a listing (or of part of one), in order; a target the listing names by a label of its own
    (a branch's `(.L_x_12), a call's or return's `($__internal_0_...) or `(kernel)) as that label's offset in its
    function, 0x1a0, as cuobjdump prints it: nvdisasm numbers its labels across the module, so that a kernel's code
    reads the same in a module of one and in a module of many (tests/run/test_modules.py)."""
    found = [(m.group(1), m.group(2).strip()) for m in INSTRUCTION.finditer(sass_text)]
    if "`(" not in sass_text:
        return [Instruction(op, operands) for op, operands in found]
    offsets = label_offsets(sass_text)

    def offset(m: re.Match) -> str:
        return hex(offsets[m.group(1)]) if m.group(1) in offsets else m.group(0)
    return [Instruction(op, TARGET.sub(offset, operands) if "`(" in operands else operands) for op, operands in found]


LABEL = re.compile(r"^[ \t]*([.$\w]+):[ \t]*$", re.M)  # a label's definition, alone on its line: .L_x_12:
OFFSET = re.compile(r"/\*([0-9a-f]{4,})\*/")  # an instruction's offset in its function's section
TARGET = re.compile(r"`\(([^)\s]+)\)")  # a target named by a label: `(.L_x_12)


def label_offsets(sass_text: str) -> dict[str, int]:
    """Each label defined in a listing -> the offset of the instruction it labels (the next one after it)."""
    out = {}
    for m in LABEL.finditer(sass_text):
        at = OFFSET.search(sass_text, m.end())
        if at is not None:
            out[m.group(1)] = int(at.group(1), 16)
    return out


def tensor_core_opcodes(instrs) -> list[str]:
    """The tensor-core instructions of a listing (for a failure message: what the compiler emitted instead)."""
    return sorted(op for op in {i.opcode for i in instrs} if TENSOR_CORE.match(op))


TENSOR_CORE = re.compile(r"[HQIB]GMMA|UTC[A-Z]*MMA")


@lru_cache(maxsize=1)
def disassembler_id() -> str:
    """Which tool makes the listings: nvdisasm's path, size and time, and how it is asked (LISTING_FORMAT); another
    nvdisasm, or other options, may print them otherwise."""
    tool = Path(nvdisasm_path())
    st = tool.stat()
    parts = [LISTING_FORMAT, f"{tool}\0{st.st_size}\0{st.st_mtime_ns}"]
    return hashlib.sha256("\1".join(parts).encode()).hexdigest()[:12]


LISTING_FORMAT = " ".join(("nvdisasm", *DISASSEMBLER_OPTIONS))  # what `sass` runs
# a section's header in a listing: a function's code is its .text.<name> section's   .section  .text.k,"ax",@progbits
SECTION = re.compile(r"^[ \t]*\.section[ \t]+([^\s,]+)", re.M)


def disassembly(data: bytes) -> str:
    """nvdisasm's SASS listing of these cubin bytes, kept in the compile cache keyed by the bytes and the
    disassembler: the processes of a test run or of sweeps after it (xdist workers, CLI subprocesses) disassemble
    each cubin once, not once each (131 of the 314 disassemblies of a CI run were repeats). The bytes hashed are
    the bytes disassembled: a cubin rewritten meanwhile cannot file its listing under another's name."""
    folder = cache_dir() / "sass"
    content = content_digest(data)
    cached = folder / f"{content}-{disassembler_id()}.sass"
    with DISASSEMBLING.setdefault(content, threading.Lock()):  # verify_many's threads: the kernels of one module
        return _cached_or_disassembled(cached, data, folder)   # wait for one disassembly of it


DISASSEMBLING: dict[str, threading.Lock] = {}


def _cached_or_disassembled(cached: Path, data: bytes, folder: Path) -> str:
    try:
        return cached.read_text()
    except (OSError, UnicodeDecodeError):
        pass
    text = sass_of_bytes(data)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(cached, text)  # a concurrent process reads the whole listing or none
    except OSError:
        pass  # a read-only cache: disassembled again next time
    return text


@lru_cache(maxsize=128)  # every tcgen05 form of both archs, in one process
def listing_of(content: str, data: bytes) -> tuple[str | None, tuple[Instruction, ...]]:
    """(the arch the cubin is code for, its instructions), for cubin bytes and their content digest."""
    text = disassembly(data)
    return listing_arch(text), tuple(instructions(text))


def listing_arch(text: str) -> str | None:
    """The arch a listing says its cubin is code for: its `.target` line, else its ELF header flags. nvdisasm 13
    writes the flags, not a `.target`, for an sm_90a cubin of NVRTC 12.8 or 12.9 (`.headerflags @"...
    EF_CUDA_ACCELERATORS EF_CUDA_SM90 ..."`: the arch and its `a`); read as no arch, every such kernel failed its
    SASS check."""
    m = re.search(r"^[ \t]*\.target[ \t]+(sm_\w+)", text, re.M)
    if m:
        return m.group(1)
    flags = re.search(r'^[ \t]*\.headerflags[ \t]+@"([^"]*)"', text, re.M)
    sm = re.search(r"\bEF_CUDA_SM(\d+)\b", flags.group(1)) if flags else None
    if sm is None:
        return None
    return f"sm_{sm.group(1)}" + ("a" if re.search(r"\bEF_CUDA_ACCELERATORS\b", flags.group(1)) else "")


def function_listings(text: str) -> dict[str, str]:
    """Each function of a listing -> its part of the listing (from its section's header to the next section's)."""
    parts = SECTION.split(text)
    return {parts[i][len(".text."):]: parts[i + 1] for i in range(1, len(parts), 2) if parts[i].startswith(".text.")}


def functions(cubin_path: Path | str) -> dict[str, tuple[Instruction, ...]]:
    """Each function of a cubin -> its instructions (for checks of a module holding several kernels)."""
    data = Path(cubin_path).read_bytes()
    return functions_of(content_digest(data), data)[1]


@lru_cache(maxsize=64)
def functions_of(content: str, data: bytes) -> tuple[str | None, dict[str, tuple[Instruction, ...]]]:
    """(the arch the cubin is code for, each of its functions -> its instructions): a module's listing parsed once
    for all its kernels (verify_many gives each module's kernels to one thread)."""
    text = disassembly(data)
    return listing_arch(text), {name: tuple(instructions(part)) for name, part in function_listings(text).items()}


@dataclass(frozen=True)
class Verdict:
    broken: tuple[str, ...]  # the rules the SASS breaks, in words; empty: it shows everything
    tensor_core: tuple[str, ...]  # the tensor-core opcodes it has (what the compiler emitted instead, on failure)

    @property
    def ok(self) -> bool:
        return not self.broken


def verify(cubin_path: Path | str, check: SassCheck) -> Verdict:
    """One cubin against its check, the verdict cached beside the cubin, keyed by the check and by the cubin's own
    bytes (a kernel folder reuses names: a recompiled cubin must not inherit the old one's verdict)."""
    data = Path(cubin_path).read_bytes()
    return verify_bytes(Path(cubin_path), data, content_digest(data), check)


def verify_bytes(cubin_path: Path, data: bytes, content: str, check: SassCheck) -> Verdict:
    """verify() of a cubin whose bytes and content digest the caller has read (each link to a shared module is the
    same bytes: verify_many reads and hashes a module once for all its kernels, not once each)."""
    cached = verdict_path(cubin_path, content, check)
    if cached.exists():
        try:
            d = json.loads(cached.read_text())
            return Verdict(tuple(d["broken"]), tuple(d["tensor_core"]))
        except (ValueError, KeyError, TypeError, OSError):
            pass  # a damaged verdict is recomputed
    verdict = judge(data, content, check)
    save_verdict(cached, verdict)
    return verdict


def judge(data: bytes, content: str, check: SassCheck) -> Verdict:
    """A cubin's bytes against a check, nothing cached but the listing and its parse (the compiling processes judge
    the cubins they build; verify_bytes what it finds no verdict for)."""
    if check.function is not None:  # a module's listing is parsed once, by function
        arch, fns = functions_of(content, data)
        instrs = fns.get(check.function, ())
    else:
        arch, instrs = listing_of(content, data)
    broken = [] if arch == check.arch else [f"the cubin is code for {arch}, not {check.arch}"]
    if check.function is not None and check.function not in fns:
        broken.append(f"the module has no function {check.function} (it has {', '.join(sorted(fns))})")
    broken += [b for b in (r.broken(instrs) for r in check.rules) if b]
    return Verdict(tuple(broken), tuple(tensor_core_opcodes(instrs)))


def verdict_path(cubin_path: Path, content: str, check: SassCheck) -> Path:
    """Where a cubin's verdict is cached: beside it, keyed by the check, the cubin's bytes and the disassembler."""
    return cubin_path.with_name(f"{cubin_path.name}.sass-{check_digest(check)}-{content}-{disassembler_id()}.json")


def check_digest(check: SassCheck) -> str:
    """The rules and the checker's own code (CHECKER_SOURCE)."""
    return hashlib.sha256(repr(check).encode() + b"\0" + CHECKER_SOURCE).hexdigest()[:16]


def save_verdict(path: Path, verdict: Verdict) -> None:
    try:
        # verify_many's threads and compile_many's parent both save verdicts: the temporary file is the thread's
        write_atomically(path, json.dumps({"broken": verdict.broken, "tensor_core": verdict.tensor_core}))
    except OSError:
        pass  # a cubin in a read-only folder is checked again next time


def verify_many(items: list[tuple[Path | str, SassCheck]], workers: int | None = None) -> list[Verdict]:
    """verify() over many cubins in parallel (threads: the work is in nvdisasm processes), one module at a time
    per thread: a module's kernels all need its one disassembly and one parse, so a thread takes all of them (in
    plan order, threads holding one module's kernels each waited on its disassembly, and the modules went one after
    another: 35 s of an H100 node's cold sweep), and a module is not parsed again after others pushed it out of the
    parse cache."""
    if not items:
        return []
    by_module: dict[tuple, list[int]] = {}
    for i, (path, _) in enumerate(items):
        try:
            st = os.stat(path)
            module = (st.st_dev, st.st_ino)  # the kernels of a shared module are links to one file
        except OSError:
            module = (str(path),)  # verify() says what is wrong with it
        by_module.setdefault(module, []).append(i)
    groups = list(by_module.values())
    workers = max(1, min(len(groups), workers or cores.default_workers()))
    verdicts: list[Verdict | None] = [None] * len(items)

    def module_verdicts(group: list[int]) -> list[Verdict]:
        try:
            data = Path(items[group[0]][0]).read_bytes()
        except OSError:
            return [verify(*items[i]) for i in group]  # verify() says what is wrong with it
        content = content_digest(data)
        return [verify_bytes(Path(items[i][0]), data, content, items[i][1]) for i in group]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for group, found in zip(groups, pool.map(module_verdicts, groups)):
            for i, v in zip(group, found):
                verdicts[i] = v
    return verdicts  # type: ignore[return-value]


class SassMismatch(RuntimeError):
    """A kernel compiled, but its SASS lacks what the kernel exists to test: its cases cannot tell anything."""

    def __init__(self, name: str, arch: str, verdict: Verdict, cubin_path: Path | str):
        self.name, self.arch, self.source_path = name, arch, Path(cubin_path)
        self.log = "\n".join(verdict.broken)
        more = f"; {len(verdict.broken) - 1} more rule(s) broken" if len(verdict.broken) > 1 else ""
        super().__init__(f"{name} for {arch} compiled, but its SASS lacks what the kernel tests: "
                         f"{verdict.broken[0]}{more}; tensor-core instructions present: "
                         f"{', '.join(verdict.tensor_core) or 'none'} (cubin {cubin_path})")
