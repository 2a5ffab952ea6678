"""The bottom layer's caches: where the harness keeps what it computed, and the primitives every cache uses.

- the cache folder: $TC_HARNESS_CACHE or ~/.cache/tc-harness (CACHE_ENV says what either may be), or a temporary one
  of the process's own where HOME gives none; the compile cache, the SASS listings and verdicts, the plans, the kept
  launches and the results memo all live under it;
- digests: `source_digest` (the package's own files: what a cached plan or launch was computed by) and
  `content_digest` (a file's bytes);
- locks: `lock_file` / `locked`, an flock on a file beside what one process builds while the others wait;
- atomic writes: `write_atomically`, a file written whole or not at all, so that a process reading it concurrently
  finds all of it or none;
- arrays files: `write_arrays` / `read_arrays`, numpy arrays in plain containers as one file (a launch, its
  outputs, its expectations: the spool between the sweep's processes, and the kept launches).

What each cache keeps, and its key, stays with its user (run/compile.py, run/sass.py, plan.py, run/launch_cache.py,
records/results.py); this module imports nothing of the package.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import struct
import sys
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no locks, every process builds its own
    fcntl = None

# Where the cache is (docs/environment.md). Named by CACHE_ENV, it must be a folder this process can write (made if it
# is not there): anything else (empty, a file, /dev/null, read-only, uncreatable) is a CacheError, which the command
# line prints as one line and exit 2 before anything runs. A fleet script that names a cache means that one: running
# on without it would hide the mistake and recompile everything on every node. Not named, it is ~/.cache/tc-harness,
# made only under a HOME that is an existing, absolute folder; where HOME is not (unset or empty in a service's
# environment, /nonexistent in a container's), the process works in a temporary cache of its own
# (`temporary_cache`), removed when the command ends, and the command line says so in one line: such a run needs no
# cache to be right, and creating /nonexistent/.cache (as root, mkdir -p would) or a .cache in the current folder
# (HOME='') would leave files where nobody asked for them.
CACHE_ENV = "TC_HARNESS_CACHE"


class CacheError(OSError):
    """The cache folder CACHE_ENV names cannot be used: one line saying why (the command line exits 2). An OSError, so
    that a reader that runs without a cache where it cannot have one (results.memo_by_content) goes on without it."""


def cache_dir() -> Path:
    """The cache folder (see CACHE_ENV): checked once per process and value, made if it is not there."""
    named = os.environ.get(CACHE_ENV)
    if named is None:
        home = usable_home()
        if home is None:
            return temporary_cache()
        named, what = str(Path(home) / ".cache" / "tc-harness"), f"HOME={home}: ~/.cache/tc-harness"
    else:
        what = f"{CACHE_ENV}={named!r}"
        if named.startswith("~"):  # as a shell would have (a value from a unit file or .env is not expanded): never a
            # folder named "~" in the current one
            home = usable_home()
            if home is None:
                raise CacheError(f"{what}: ~ stands for HOME, and {home_problem()}")
            named = os.path.expanduser(named)
    d = _writable_folder(named, what)
    if not d.is_dir():  # removed since it was checked (a test's cold start): made again, as every call once did
        _writable_folder.cache_clear()
        d = _writable_folder(named, what)
    return d


def usable_home() -> str | None:
    """HOME (or the user's home the password database names, where HOME is unset) where it is an existing, absolute
    folder; None where it is not, which the cache does without (CACHE_ENV)."""
    if os.environ.get("HOME") == "":  # which expanduser would make "/"
        return None
    home = os.path.expanduser("~")
    if not home or home == "~" or not os.path.isabs(home) or not os.path.isdir(home):
        return None
    return home


def home_problem() -> str:
    """Why HOME gives no cache folder (for the command line's note)."""
    home = os.environ.get("HOME")
    if home is None:
        return "HOME is unset and the user has no home folder"
    if not home:
        return "HOME is empty"
    if not os.path.isabs(home):
        return f"HOME={home} is not an absolute path"
    if not os.path.exists(home):
        return f"HOME={home} does not exist"
    return f"HOME={home} is not a folder"


@lru_cache(maxsize=None)
def _writable_folder(text: str, what: str) -> Path:
    """The folder `text` names, made if it is not there and written once to see that it can be (os.access says yes
    to root in a read-only folder, and to anyone on a read-only mount); CacheError, one line, if not."""
    if not text.strip():
        raise CacheError(f"{what} is empty: unset {CACHE_ENV} (the cache is then ~/.cache/tc-harness) or name a "
                         f"folder; the current folder is never taken for it")
    d = Path(text)
    if d.exists() and not d.is_dir():
        kind = "a file" if d.is_file() else "not a folder"
        raise CacheError(f"{what} is {kind}: name a folder the harness may write its cache into")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CacheError(f"{what}: the folder cannot be made ({e.strerror or e})") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise CacheError(f"{what}: the folder cannot be written ({e.strerror or e}): name a writable folder in "
                         f"{CACHE_ENV}") from None
    return d


_temporary: list[str] = []  # this process's temporary cache, made by temporary_cache


def temporary_cache() -> Path:
    """A cache of this process's own (HOME gives none: CACHE_ENV), made once and named in CACHE_ENV so that every
    helper started after it shares it; `remove_temporary_cache` removes it."""
    if not _temporary:
        _temporary.append(tempfile.mkdtemp(prefix="tc-harness-cache-"))
        os.environ[CACHE_ENV] = _temporary[0]
    return Path(_temporary[0])


# the caches the GPU processes' libraries keep under HOME unless told otherwise: CuPy's kernel cache (made as CuPy is
# imported: $HOME/.cupy/kernel_cache) and the CUDA driver's compute cache ($HOME/.nv/ComputeCache)
HOME_CACHES = {"CUPY_CACHE_DIR": "cupy-kernel-cache", "CUDA_CACHE_PATH": "cuda-compute-cache"}
_home_caches_set: list[str] = []  # the variables of HOME_CACHES this process set (keep_gpu_caches_off_home)


def settle_cache() -> str | None:
    """The command line's check of the cache, before anything starts: CacheError for a CACHE_ENV that cannot be used;
    a one-line note where HOME gives no cache and a temporary one is used instead; else None."""
    if os.environ.get(CACHE_ENV) is None and usable_home() is None:
        d = temporary_cache()
        keep_gpu_caches_off_home(d)
        return (f"harness: no cache folder ({home_problem()}): using the temporary {d}, removed at exit; set "
                f"{CACHE_ENV} to a writable folder to keep compiled kernels")
    keep_gpu_caches_off_home(cache_dir())
    return None


def keep_gpu_caches_off_home(cache: Path) -> None:
    """Where HOME is unusable, CuPy and the CUDA driver of every GPU process started from here keep their caches in
    the harness's cache, not in folders they would make at $HOME/.cupy and $HOME/.nv (under a HOME that does not
    exist, or a relative one under the current folder: both seen on an H100 node). Before any GPU process starts; a
    variable already set is left as it is."""
    if usable_home() is None:
        for name, sub in HOME_CACHES.items():
            if name not in os.environ:
                _home_caches_set.append(name)
                os.environ[name] = str(cache / sub)


def remove_temporary_cache() -> None:
    """Remove the temporary cache this process made, if it made one (the command line's end), and take back the
    variables keep_gpu_caches_off_home set."""
    while _home_caches_set:
        os.environ.pop(_home_caches_set.pop(), None)
    while _temporary:
        d = _temporary.pop()
        if os.environ.get(CACHE_ENV) == d:
            del os.environ[CACHE_ENV]
        shutil.rmtree(d, ignore_errors=True)


def write_atomically(path: Path, data: bytes | str) -> None:
    """Write `data` (bytes, or text as UTF-8) to `path` in one step: into a file beside it named for this process and
    thread, then renamed over `path`, so that a process reading it concurrently finds the whole of it or none (the
    compile cache's plans, verdicts, listings, lists of checked kernels and a kernel folder's manifest). OSError as the
    writing raises it, the temporary file removed."""
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of the package's own files (and of the Python and numpy it runs on): every in-tree family's plan
    is a function of them alone."""
    import numpy
    h = hashlib.sha256(f"{sys.version}\0{numpy.__version__}".encode())
    root = Path(__file__).resolve().parent  # the package
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".cu", ".cuh") and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\1")
    return h.hexdigest()[:24]


def lock_file(path: Path) -> int | None:
    """A descriptor of the lock file beside `path` (`<path>.lock`: a plan's, or a folder of kept launches'), opened
    read-only (flock needs no write access); None where there is no flock or the file cannot be made."""
    if fcntl is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path.with_name(f"{path.name}.lock"), os.O_RDONLY | os.O_CREAT, 0o666)
    except OSError:
        return None


def locked(fd: int, wait_s: float) -> bool:
    """Take the exclusive lock on fd within wait_s seconds: whether it was taken (a filesystem without flock: no)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        except OSError:
            return False


SPOOL_PICKLE_PROTOCOL = 5  # numpy arrays as their raw buffers
ARRAYS_FILE_MAGIC = b"tc-harness arrays 1\n"


def write_arrays(path: str, obj) -> None:
    """Write `obj` (numpy arrays inside plain containers): ARRAYS_FILE_MAGIC, the byte counts (of a pickle, then of
    each array), the pickle of everything but the arrays' bytes (protocol 5, its buffers out of band), then each
    array's raw bytes, written from where the array is (no zip and no CRC: an .npz cost twice the time to write and
    read, in the preparing processes and in the GPU worker, which reads and writes every launch in turn)."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=SPOOL_PICKLE_PROTOCOL, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    with open(path, "wb") as fh:
        fh.write(ARRAYS_FILE_MAGIC + struct.pack(f"<{2 + len(raws)}Q", len(head), len(raws),
                                                 *(r.nbytes for r in raws)))
        fh.write(head)
        for r in raws:
            fh.write(r)


def read_arrays(path: str, staging=None):
    """What write_arrays wrote; with `staging` (its `slices(sizes)`: harness/run/launch.py PinnedStaging), its arrays are
    views of the staging's memory, else of their own."""
    with open(path, "rb") as fh:
        nhead, sizes = arrays_header(fh, path)
        head = fh.read(nhead)
        buffers = staging.slices(sizes) if staging is not None else [bytearray(n) for n in sizes]
        for b, n in zip(buffers, sizes):
            if fh.readinto(b) != n:
                raise ValueError(f"{path} ends inside an array: a spool file cut short")
        return pickle.loads(head, buffers=buffers)


def arrays_header(fh, path: str) -> tuple[int, tuple[int, ...]]:
    """(the pickle's byte count, each array's) from the header of a file write_arrays wrote, read from its start;
    ValueError where it is no such file."""
    if fh.read(len(ARRAYS_FILE_MAGIC)) != ARRAYS_FILE_MAGIC:
        raise ValueError(f"{path} is not a spool file of this harness")
    try:
        nhead, nbuf = struct.unpack("<2Q", fh.read(16))
        return nhead, struct.unpack(f"<{nbuf}Q", fh.read(8 * nbuf))
    except struct.error:
        raise ValueError(f"{path} ends inside its header: a spool file cut short") from None


def arrays_file_whole(path: str) -> bool:
    """The file write_arrays wrote is there and as long as its header says (not cut short, not empty)."""
    try:
        with open(path, "rb") as fh:
            nhead, sizes = arrays_header(fh, path)
            return os.fstat(fh.fileno()).st_size == fh.tell() + nhead + sum(sizes)
    except (OSError, ValueError):
        return False
