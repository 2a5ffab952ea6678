"""Results files: JSON Lines, one record per line, appended as each batch finishes. Every record type and field,
the status vocabulary and the exit codes are documented in docs/results-schema.md (tests/test_results_schema.py
keeps it complete).

Line 1 is {"type": "environment", ...}; then {"type": "case", ...} per case; a run that finishes writes a
last {"type": "summary", ...}. A run killed part way keeps every case it finished.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import gzip
import hashlib
import io
import json
import os
import platform
import re
import socket
import subprocess
import threading
import time
import zlib
from concurrent.futures import Future
from functools import lru_cache
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, TypeVar

from harness.contract import CaseLines
from harness.enums import Status

try:
    import fcntl
except ImportError:  # not POSIX: OutLock refuses to write (it cannot keep a second writer out)
    fcntl = None

SCHEMA = 3  # docs/results-schema.md; 2 added cuda_visible_devices and gpus_requested (environment), kernel_s (case);
# 3 the toolchain (toolchain, nvrtc_build, nvrtc_library, ptx_isa, kernels_dir/host/date)
READABLE_SCHEMAS = (1, 2, 3)  # committed baselines are schema 1 and 2: still read


def environment(devices: list[int] | None = None, seed_note: str = "per-case seeds: crc32 of the case id",
                toolchain=None, kernels=None, run: str | None = None) -> dict:
    """What a run ran on; `devices` are the GPU indices the run used (default: GPU 0); `toolchain` what compiled
    its kernels (default: NVRTC cubins from the NVRTC cuda.bindings binds), `kernels` the kernel folder they came
    from, if any; `run` what kind of run writes the file (RUN_KINDS: the readers refuse a probe's or a bench's
    file where a sweep's is expected)."""
    from harness import __version__
    from harness.run import gpu, toolchain as toolchains
    if run is not None and run not in RUN_KINDS:
        raise ValueError(f"run kind {run!r} is not one of {', '.join(RUN_KINDS)}")
    env = {"type": "environment", "schema": SCHEMA, "harness": __version__,
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "host": socket.gethostname(), "python": platform.python_version(), "seed": seed_note,
           "cuda_visible_devices": gpu.visible_devices(), **({"run": run} if run else {})}
    for mod in ("numpy", "ml_dtypes", "cupy", "cuda_bindings"):
        try:
            env[mod] = _version(mod)
        except Exception as e:  # record why rather than fail the run
            env[mod] = f"unavailable ({type(e).__name__})"
    try:
        env.update((toolchain or toolchains.default()).record())
    except Exception as e:  # no NVRTC here: the run compiles nothing, and says so
        env.update({"toolchain": "nvrtc", "nvrtc": f"unavailable ({type(e).__name__})"})
    if kernels is not None:
        env.update(kernels.record())
    tools = host_tools().result()
    env["ptxas"] = tools["ptxas"]
    devices = devices or [0]
    info = gpu.device_info(devices[0])
    if info:
        env["gpu"] = info["name"]
        env["gpu_uuid"] = info["uuid"]
        env["compute_capability"] = info["compute_capability"]
        env["cuda_driver_api"] = info["driver"]
        env["cuda_runtime"] = info["runtime"]
        env["driver"] = tools["driver"]
        env["gpus"] = [{k: d[k] for k in ("index", "name", "uuid", "compute_capability")}
                       for d in map(gpu.device_info, devices) if d]
    else:
        env["gpu"] = None
    return env


@lru_cache(maxsize=1)
def host_tools() -> Future:
    """What environment() asks other programs (ptxas's version, the driver's as nvidia-smi reports it), asked in a
    thread from the first call on: a sweep calls this as it starts, so that the two programs run while it plans
    rather than ahead of its first launch. The answers are this process's (the same programs for its whole life)."""
    answer: Future = Future()

    def ask():
        try:
            answer.set_result({"ptxas": _ptxas_version(), "driver": _nvidia_smi_driver()})
        except BaseException as e:  # each asks defensively; this is for what they cannot catch
            answer.set_exception(e)
    threading.Thread(target=ask, name="host-tools", daemon=True).start()
    return answer


def _version(module: str) -> str:
    """A package's __version__; CuPy's read from its _version.py (what cupy.__version__ is), not by importing CuPy:
    the sweep's own process launches nothing, and `import cupy` cost 0.2 s of its start-up on an H100 node."""
    if module == "cupy":
        import importlib.util
        try:
            spec = importlib.util.find_spec("cupy")
            found = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""",
                              (Path(spec.origin).parent / "_version.py").read_text(), re.M)
            if found:
                return found.group(1)
        except (OSError, AttributeError, TypeError, ValueError, ImportError):
            pass  # a CuPy laid out otherwise: imported, as before
    if module == "cuda_bindings":  # the distribution's version: cuda.bindings is a namespace's subpackage
        import importlib.metadata
        return importlib.metadata.version("cuda-bindings")
    return __import__(module).__version__


def _ptxas_version() -> str | None:
    """ptxas on PATH, where present (NVRTC carries its own; this is the toolkit's)."""
    try:
        out = subprocess.run(["ptxas", "--version"], capture_output=True, text=True, timeout=20)
        lines = [ln for ln in out.stdout.splitlines() if "release" in ln]
        return lines[-1].strip() if lines else None
    except Exception:
        return None


def _nvidia_smi_driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except Exception:
        return None


RUN_KINDS = ("sweep", "probe", "bench")  # the environment record's `run`: what wrote the file


class ResultsFileError(ValueError):
    pass


class ResultsBusy(ResultsFileError):
    """Another writer holds the results file (OutLock)."""


class ResultsWriteError(OSError):
    """The results file could not be written (a full disk): the file holds every record up to its last whole line,
    and nothing more is written to it."""


def _host() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return "?"


class OutLock:
    """The one-writer lock of a results file: an exclusive `flock` on `<file>.lock` beside it, taken before the
    writer compiles or launches anything and held for the sweep's life. A second writer is refused at once
    (ResultsBusy: the sweep's exit 2), never made to wait: a fleet script that gave two shards one --out learns it
    in a second, not after the first shard's hour. The lock file names its holder (pid, host, start) for that
    message, and is removed by the holder as it lets go; a writer that opened it just before then finds the name
    gone (another inode, or none) and opens it again, so two writers never hold two different locks of one name.
    Across nodes sharing a folder this holds where the file system gives flock (NFS does, through its byte-range
    locks); one that gives none (ENOLCK, EOPNOTSUPP) is refused as well (ResultsFileError): the harness will not
    write a file it cannot keep a second writer out of; write --out on a local disk, one file a node, and merge."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.fd: int | None = None
        self.made: list[Path] = []  # the folders acquire created for the file, deepest first

    def acquire(self) -> None:
        if fcntl is None:
            raise ResultsFileError(f"{self.path}: no file locks on this platform (fcntl): a second writer could not "
                                   f"be kept out")
        missing = [d for d in (self.path.parent, *self.path.parent.parents) if not d.exists()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ResultsFileError(f"{self.path}: cannot create its folder: {e.strerror or e}") from None
        self.made = missing  # removed again at release where nothing was written in them (a sweep refused)
        try:
            self._lock()
        except BaseException:
            self._remove_made()
            raise

    def _lock(self) -> None:
        while True:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise ResultsFileError(f"{self.path}: cannot create its lock {self.lock_path.name}: "
                                       f"{e.strerror or e}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 300, 0).decode("utf-8", "replace").strip() or "a writer"
                os.close(fd)
                raise ResultsBusy(f"{self.path}: another sweep is writing it ({holder}); give each sweep its own "
                                  f"--out (merge them afterwards), or wait for that one to finish") from None
            except OSError as e:
                os.close(fd)
                raise ResultsFileError(f"{self.path}: cannot lock {self.lock_path.name} ({e.strerror or e}): this "
                                       f"file system gives no locks, so a second writer could not be kept out; "
                                       f"write --out on a local disk") from None
            try:
                st, mine = os.stat(self.lock_path), os.fstat(fd)
                if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                    break
            except FileNotFoundError:
                pass
            os.close(fd)  # its holder removed it as we opened it: open the name again
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {_host()} since "
                      f"{_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.lock_path)  # while still held: see the class's note
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        self._remove_made()

    def _remove_made(self) -> None:
        for d in self.made:  # a sweep refused before it wrote leaves no folder behind (results/scratch/, say)
            try:
                d.rmdir()
            except OSError:  # not empty: what was written there stays
                break
        self.made = []


_HELD: dict[str, list] = {}  # results file (real path) -> [OutLock, holders]: this process's locks


@contextlib.contextmanager
def held(path: Path):
    """The results file's OutLock for the block: taken (ResultsBusy where another process holds it), or, where this
    process holds it already (the sweep took it before compiling, and its writer takes it again), shared. A lock is
    not kept from the process's own other threads."""
    key = os.path.realpath(path)
    entry = _HELD.get(key)
    if entry is None:
        lock = OutLock(path)
        lock.acquire()
        entry = _HELD[key] = [lock, 0]
    entry[1] += 1
    try:
        yield entry[0]
    finally:
        entry[1] -= 1
        if entry[1] == 0:
            del _HELD[key]
            entry[0].release()


class ResultsWriter:
    """The results file, written as records come. Each batch goes to the file at once, by an unbuffered write (the
    file has it whatever then happens to this process: a kill, a fault); the file is synced to the disk (fsync) with
    the first batch written SYNC_INTERVAL_S or more after the last sync was asked for, and at close. A machine that
    stops (a GPU wedging it) therefore loses the batches written since the last sync: those of the last second or
    so, and any written just before a launch that then hung. An fsync per batch (per kernel: 796 a sweep) took 0.3 s
    on a RAM disk and more on a real one. The periodic fsync runs in a thread of the writer's own: in the sweep's
    process, which hands out the launches, each took 0.2-0.27 s on an H100 node's disk while its GPU waited
    (bench13 in docs/performance.md: the GPU worker's three longest gaps, 0.6 s of a
    3.3 s warm sweep).

    One writer a file: the writer holds the file's OutLock (`held`) from its start to `close`. A write the disk
    refuses (a full disk) is ResultsWriteError: the file keeps what the disk took, which is every record up to its
    last whole line (a reader and `--resume` drop a last line cut short), and the writer writes nothing more, not
    even the summary. `close(summary, interrupted=True)` closes a run that was stopped part way (Ctrl-C, SIGTERM):
    its summary says `"interrupted": true`, every reader treats the file as not whole, and `--resume` continues it.
    With `resume` the file's closing summary, if any, is cut off: the run that continues it writes the one summary
    of the whole file."""
    SYNC_INTERVAL_S = 1.0

    def __init__(self, path: Path, env: dict | None = None, resume: bool = False):
        self.path = Path(path)
        self.synced = time.monotonic()  # when the last sync was asked for
        self._failed: OSError | None = None
        self._fh = None
        self._lock = held(self.path)
        self._lock.__enter__()
        try:
            if resume and self.path.exists():
                _drop_partial_last_line(self.path)
                _drop_closing_summary(self.path)
                self._fh = open(self.path, "ab", buffering=0)
            else:
                self._fh = open(self.path, "wb", buffering=0)
                self.write(env or environment())
        except BaseException:
            if self._fh is not None:
                self._fh.close()
            self._lock.__exit__(None, None, None)
            raise
        self._sync_asked = threading.Event()
        self._closing = False
        self._sync_error: OSError | None = None
        self._syncer = threading.Thread(target=self._sync_when_asked, name="results-fsync", daemon=True)
        self._syncer.start()

    def _put(self, text: str) -> None:
        """text to the file, all of it or ResultsWriteError (after which nothing more is written)."""
        if self._failed is not None:
            raise ResultsWriteError(self._failed.errno, f"{self.path}: cannot write: "
                                                        f"{self._failed.strerror or self._failed}")
        data = memoryview(text.encode())
        try:
            while data:
                n = self._fh.write(data)
                if n is None or n <= 0:  # an unbuffered file's write: None only where it would block
                    raise OSError(errno.EIO, "the results file took no bytes")
                data = data[n:]
        except OSError as e:
            self._failed = e
            raise ResultsWriteError(e.errno, f"{self.path}: cannot write: {e.strerror or e}; it holds every "
                                             f"record up to its last whole line") from None

    def write(self, record: dict) -> None:
        self._put(json.dumps(record, sort_keys=False) + "\n")

    def write_lines(self, batch: CaseLines) -> None:
        self._raise_sync_error()
        self._put(batch.text())
        if time.monotonic() - self.synced >= self.SYNC_INTERVAL_S:
            self.synced = time.monotonic()
            self._sync_asked.set()

    def _sync_when_asked(self) -> None:
        fd = self._fh.fileno()  # written unbuffered before each ask: fsync needs only the descriptor
        while True:
            self._sync_asked.wait()
            self._sync_asked.clear()
            if self._closing:
                return
            try:
                os.fsync(fd)
            except OSError as e:  # raised in the writing thread (write_lines, close): the disk lost what it was given,
                self._sync_error = e  # and the descriptor reports a writeback error once, to this fsync only
                return

    def _raise_sync_error(self) -> None:
        if self._sync_error is not None:
            raise ResultsWriteError(self._sync_error.errno, f"results file {self.path}: fsync failed: "
                                                            f"{self._sync_error.strerror or self._sync_error}")

    @property
    def failed(self) -> bool:
        """Whether a write failed (the file then ends at its last whole record, without a summary)."""
        return self._failed is not None

    def close(self, summary: dict | None = None, interrupted: bool = False) -> None:
        """Write `summary` (if given; with `interrupted`, marked `"interrupted": true`), sync and close, and let go
        of the file's lock. After a failed write nothing is written: the file is closed as the disk left it."""
        if self._fh.closed:
            return
        try:
            self._closing = True
            self._sync_asked.set()
            self._syncer.join()
            if self._failed is None:
                self._raise_sync_error()
                if summary is not None:
                    self.write({"type": "summary", **summary, **({"interrupted": True} if interrupted else {})})
                try:
                    os.fsync(self._fh.fileno())
                except OSError as e:
                    raise ResultsWriteError(e.errno, f"results file {self.path}: fsync failed: "
                                                     f"{e.strerror or e}") from None
        finally:
            self._fh.close()
            self._lock.__exit__(None, None, None)


def _drop_partial_last_line(path: Path) -> None:
    """A run killed while writing a record leaves its last line without a newline: cut it off before appending."""
    with open(path, "rb+") as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def _drop_closing_summary(path: Path) -> None:
    """Cut off the file's last line where it is a summary record (a finished run's, or one marked interrupted): the
    run that continues the file writes the summary of all of it, so a file holds one summary, at its end."""
    with open(path, "rb+") as fh:
        data = fh.read()
        body = data.rstrip(b"\n")
        start = body.rfind(b"\n") + 1
        if start == 0:
            return  # the environment record alone
        try:
            last = json.loads(body[start:])
        except (ValueError, RecursionError):
            return
        if isinstance(last, dict) and last.get("type") == "summary":
            fh.truncate(start)


_KINDS = ("environment", "case", "summary", "diagnosis")
_STATUSES = Status.values()
_COUNT = (int,)
# optional fields and the JSON types they may hold (None is always allowed): every field a reader computes with,
# so that a record another tool wrote, or an edit, is one line naming file:line (exit 2), never a traceback
_CASE_FIELDS = {"kernel": str, "family": str, "arch": str, "mismatches": int, "first_mismatches": list, "error": str,
                "reason": str, "seed": int, "kernel_s": (int, float), "control": str, "why": str, "diagnosis": list,
                "bad_rows": str, "bad_cols": str, "gpu": int, "isolated": bool, "caught": bool,
                "matches_model_prediction": bool, "facets": dict}
_ENV_FIELDS = {"host": str, "date": str, "toolchain": str, "nvrtc": str, "nvrtc_build": str, "harness": str,
               "run": str, "selection": str, "merged_from": list, "gpu": str, "gpu_uuid": str, "planned": dict}
_SUMMARY_FIELDS = {"cases": int, "tcgen05_cases": int, "unaccounted": int, "interrupted": bool,
                   "incomplete_inputs": list, **{str(s): int for s in Status}}
_LISTS_OF_OBJECTS = ("first_mismatches", "diagnosis", "merged_from", "incomplete_inputs")


def _bad_type(v, want) -> bool:
    if v is None:
        return False
    if isinstance(v, bool):  # a JSON true is no count
        return want is not bool and bool not in (want if isinstance(want, tuple) else (want,))
    return not isinstance(v, want)


def _check_fields(path, n: int, rec: dict, table: dict, what: str) -> None:
    for k, want in table.items():
        v = rec.get(k)
        if _bad_type(v, want):
            raise ResultsFileError(f"{path}:{n}: {what}: field {k!r} has the wrong type ({_json_type(v)}, not "
                                   f"{_json_type(want)})"[:300])
        if k in _LISTS_OF_OBJECTS and isinstance(v, list) and not all(isinstance(x, dict) for x in v):
            raise ResultsFileError(f"{path}:{n}: {what}: field {k!r} is a list of objects, not of "
                                   f"{', '.join(sorted({_json_type(x) for x in v if not isinstance(x, dict)}))}"
                                   [:300])


def _json_type(v) -> str:
    """A value's (or a Python type's) JSON name, for messages."""
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object",
             type(None): "null"}
    if isinstance(v, tuple):
        return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in v))
    if isinstance(v, type):
        return names.get(v, v.__name__)
    return names.get(type(v), type(v).__name__)


def _check(path, n: int, rec) -> dict:
    """One line's record, or ResultsFileError naming path:line and what is wrong with it. Runs for every record of
    every file read (561,646 for results/README.md's tables): nothing is formatted unless it is wrong."""
    if not isinstance(rec, dict):
        raise ResultsFileError(f"{path}:{n}: a record is a JSON object, not a JSON "
                               f"{type(rec).__name__.replace('dict', 'object')} (is this a harness results file?)")
    t = rec.get("type")
    if t not in _KINDS:
        if t == "timing":
            raise ResultsFileError(f"{path}:{n}: a timing record: this is a timing bench's file (python -m harness "
                                   f"bench compare reads it), not a sweep's")
        raise ResultsFileError(f"{path}:{n}: record type {t!r} is not one of {', '.join(_KINDS)}"[:300])
    if t in ("case", "diagnosis"):
        cid = rec.get("id")
        if not isinstance(cid, str) or not cid:
            raise ResultsFileError(f"{path}:{n}: a {t} record needs an \"id\" that is a non-empty string, not "
                                   f"{cid!r}"[:300])
    if t == "case":
        st = rec.get("status")
        if not isinstance(st, str) or st not in _STATUSES:
            raise ResultsFileError(f"{path}:{n}: case {rec['id']}: status {st!r} is not one of "
                                   f"{', '.join(_STATUSES)}"[:300])
        _check_fields(path, n, rec, _CASE_FIELDS, f"case {rec['id']}")
    elif t == "environment":
        _check_fields(path, n, rec, _ENV_FIELDS, "environment")
    elif t == "summary":
        _check_fields(path, n, rec, _SUMMARY_FIELDS, "summary")
    return rec


@dataclass(frozen=True)
class ResultsFile:
    """A results file as read (`read`): its records and what says whether it is whole.

    `summaries`: summary records in it; `after_summary`: case records written after the last summary (a second
    writer, or an append after the run had closed); `case_lines`: case records (a case written twice counts
    twice: two writers ran it)."""
    path: Path
    env: dict
    cases: dict
    summary: dict | None
    summaries: int
    after_summary: int
    case_lines: int

    @property
    def kind(self) -> str:
        return run_kind(self.path, self.env, self.cases)

    def problems(self) -> list[str]:
        """Why the file is not one whole run (empty: it is): no summary (killed, or still being written), a summary
        marked interrupted, more than one summary or cases after it, a case recorded twice, fewer or more cases
        than the summary counts, planned cases without a record, a merge of inputs that were not whole."""
        s = self.summary
        if s is None:
            return ["no summary record: the run did not finish (killed, or still being written); --resume "
                    "continues it"]
        out = []
        if s.get("interrupted"):
            out.append("its summary is marked interrupted: the run was stopped part way; --resume continues it")
        if self.summaries > 1:
            out.append(f"{self.summaries} summary records: more than one run wrote it")
        if self.after_summary:
            out.append(f"{self.after_summary} case records after its summary: another writer appended to it")
        if self.case_lines != len(self.cases):
            out.append(f"{self.case_lines - len(self.cases)} case records repeat an id: two writers ran them")
        planned = s.get("cases")
        if isinstance(planned, int) and "inputs" not in s:
            planned += s.get("tcgen05_cases") or 0  # schema 1: tcgen05 counted apart
            if planned != len(self.cases):
                out.append(f"{len(self.cases)} cases recorded, its summary counts {planned}: "
                           f"{'some were lost' if planned > len(self.cases) else 'more than one run wrote it'}")
        if s.get("unaccounted"):
            out.append(f"{s['unaccounted']} planned cases have no record")
        for f in s.get("incomplete_inputs") or ():
            out.append(f"merged from {f.get('file')}, which was not whole: {f.get('problem')}"[:300])
        return out


def run_kind(path: Path, env: dict, cases: dict) -> str:
    """What wrote a results file (RUN_KINDS): the environment record's `run` where it has one; else, for files from
    before that field, a bench's seed note, a probe's file name (probe-*) or its records (a claim tested)."""
    kind = env.get("run")
    if kind in RUN_KINDS:
        return kind
    if str(env.get("seed", "")).startswith("bench:") or "bench" in env:
        return "bench"
    if Path(path).name.startswith("probe-") or any("claim" in r or "verdict" in r for r in cases.values()):
        return "probe"
    return "sweep"


def load(path: Path) -> tuple[dict, dict[str, dict], dict | None]:
    """(environment, {case id: record}, summary or None): `read`'s records."""
    f = read(path)
    return f.env, f.cases, f.summary


def read(path: Path) -> ResultsFile:
    """The file's records; ResultsFileError naming the file and line of the first thing that makes it not a harness
    results file (every record is checked: a JSON object of a known type, a case with a string id, a known status,
    fields of the right types). A last line without a newline that does not parse is a record a killed
    run cut short: it is left out, and `ResultsWriter(resume=True)` cuts it off. Whether the file is one whole run
    is `problems()`'s to say: a reader decides what to do with one that is not."""
    path = Path(path)
    if path.is_dir():
        raise ResultsFileError(f"{path}: is a directory, not a results file")
    if not path.is_file():
        raise ResultsFileError(f"{path}: no such results file")
    env, cases, summary = None, {}, None
    summaries = after = case_lines = 0
    try:
        fh = open_results(path)
    except OSError as e:
        raise ResultsFileError(f"{path}: cannot read: {e.strerror or e}") from None
    with fh:
        for n, raw in enumerate(_lines(path, fh), 1):
            cut = not raw.endswith(b"\n")  # the last line, and no newline: a killed run may have cut it short
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                if cut and n > 1:
                    break
                raise ResultsFileError(f"{path}:{n}: not UTF-8 text (is this a harness results file?)") from None
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                if cut and n > 1:  # a record cut off part way: every whole record before it stands
                    break
                raise ResultsFileError(f"{path}:{n}: not JSON Lines (is this a harness results file?)") from None
            if n == 1 and not (isinstance(rec, dict) and rec.get("type") == "environment"):
                raise ResultsFileError(f"{path}: first line is not an environment record")
            rec = _check(path, n, rec)
            t = rec["type"]
            if t == "environment":
                if env is not None:
                    raise ResultsFileError(f"{path}:{n}: a second environment record: two runs wrote this file")
                env = rec
            elif t == "case":
                case_lines += 1
                after += summaries > 0
                cases[rec["id"]] = rec
            elif t == "summary":
                summaries += 1
                after = 0
                summary = rec
            elif t == "diagnosis" and rec["id"] in cases:
                cases[rec["id"]].setdefault("diagnosis", []).append(rec)
    if env is None:
        raise ResultsFileError(f"{path}: empty")
    if env.get("schema") not in READABLE_SCHEMAS:
        raise ResultsFileError(f"{path}: schema {env.get('schema')!r} is not this harness's schema {SCHEMA} "
                               f"(it reads {', '.join(map(str, READABLE_SCHEMAS))})"[:300])
    return ResultsFile(path, env, cases, summary, summaries, after, case_lines)


def whole_problems(files: list[ResultsFile]) -> list[dict]:
    """{file, problem} for each file that is not one whole run (its first problem)."""
    return [{"file": str(f.path), "problem": f.problems()[0]} for f in files if f.problems()]


def check_kind(files: list[ResultsFile], expected: str = "sweep") -> None:
    """ResultsFileError for the first file another kind of run wrote (a probe's, a bench's) where a sweep's is
    expected."""
    for f in files:
        if f.kind != expected:
            raise ResultsFileError(f"{f.path}: is a {f.kind} run's results, not a {expected}'s"
                                   + (" (python -m harness bench compare reads it)" if f.kind == "bench" else ""))


T = TypeVar("T")


def memo_by_content(path: Path, what: str, code: tuple[Path, ...], compute: Callable[[], T]) -> T:
    """compute(), a JSON value read from the results file at `path`, kept in the cache directory by `what`, the
    sha256 of the file's bytes and that of the sources in `code` (every module whose code decides the value): a
    committed run's file does not change, so `report --check` parses its records once, not on every run (561,646
    records, 10 s of one CI core, for results/README.md's tables). A cache that cannot be read or written is
    no error: compute() answers. Nothing compute() raises is kept, nor a value of a file that changed while it was
    read (a sweep still appending to it)."""
    from harness.cache import cache_dir, write_atomically  # the harness's one cache directory ($TC_HARNESS_CACHE)

    def digest() -> str:
        h = hashlib.sha256(what.encode())
        for f in (*code, path):
            h.update(hashlib.sha256(Path(f).read_bytes()).digest())
        return h.hexdigest()[:32]

    try:
        key = digest()
        kept = cache_dir() / "results-memo" / f"{key}.json"
    except OSError:  # compute() says what is wrong with the file
        return compute()
    try:
        return json.loads(kept.read_text())
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        if digest() == key:
            kept.parent.mkdir(exist_ok=True)
            write_atomically(kept, json.dumps(value))  # pytest -n: two workers may write it at once
    except OSError:
        pass
    return value


SUFFIXES = (".jsonl", ".jsonl.gz")  # committed runs are gzip-compressed: a 27,554-case sweep is 8 MB, 0.2 MB gzipped


def open_results(path: Path):
    """A results file opened for reading bytes, gunzipped on the fly where its name ends in .gz."""
    if Path(path).name.endswith(".gz"):
        # buffered: GzipFile's own line iteration is Python code, a line at a time (about twice the time to read
        # a committed sweep's lines); the buffer's reads the C way, from 1 MB decompressed at a time
        return io.BufferedReader(gzip.open(path, "rb"), buffer_size=1 << 20)
    return open(path, "rb")


def _lines(path: Path, fh):
    """fh's lines; a file that cannot be read to its end (a damaged gzip stream, an I/O error) is a
    ResultsFileError naming it: nothing of it is loaded."""
    try:
        yield from fh
    except (OSError, EOFError, zlib.error) as e:
        what = "not a readable gzip file" if path.name.endswith(".gz") else "cannot be read"
        raise ResultsFileError(f"{path}: {what} ({e})") from None


def results_files(folder: Path) -> list[Path]:
    """The results files (*.jsonl, *.jsonl.gz) directly in a folder, sorted; a folder holding both x.jsonl and
    x.jsonl.gz (say after `gzip -k`) is refused: the run would count twice."""
    found = sorted(f for f in Path(folder).iterdir() if f.is_file() and f.name.endswith(SUFFIXES))
    names = {f.name for f in found}
    both = [f.name for f in found if f.name.endswith(".gz") and f.name[:-3] in names]
    if both:
        raise ResultsFileError(f"{folder}: holds both {both[0][:-3]} and {both[0]}: keep one of them")
    return found


def is_sweep_file(p: Path) -> bool:
    """A folder's results files that make up its run: not a probe's (probe-*.jsonl), a timing bench's
    (bench-*.jsonl: `python -m harness bench compare` reads those) nor a merge's output."""
    return p.name.endswith(SUFFIXES) and not p.name.startswith(("probe-", "bench-", "merged"))


def expand_run(paths) -> list[Path]:
    """The results files that `paths` name, for merge and compare: a file stands for itself; a directory for one
    run, its sweep results: every *.jsonl (or *.jsonl.gz) in it except probe-*.jsonl (probe runs, which are no sweep),
    bench-*.jsonl (instruction timing) and merged*.jsonl (a merge's output, which repeats its inputs) - unless merged files are all it holds. Sorted;
    ResultsFileError when a name is not there or a directory holds no results file."""
    out: list[Path] = []
    for p in map(Path, paths):
        if str(p) == "":
            raise ResultsFileError("an empty path is not a results file")
        if p.is_dir():
            found = results_files(p)
            runs = [f for f in found if is_sweep_file(f)] or [f for f in found if f.name.startswith("merged")]
            if not runs:
                raise ResultsFileError(f"{p}: directory holds no *.jsonl results file of a sweep"
                                       + (" (only probe-*.jsonl, which are not sweep results)" if found else ""))
            out += runs
        elif p.is_file():
            out.append(p)
        else:
            raise ResultsFileError(f"{p}: no such results file")
    if not out:
        raise ResultsFileError("no results file given")
    return out
