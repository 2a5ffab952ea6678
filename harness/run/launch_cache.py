"""Prepared launches kept between sweeps, so that a warm sweep does not prepare its cases again.

A launch's preparation (every case's matrices drawn, its shared-memory image written, its registers packed, the numpy
reference) is a function of the kernel, its cases and the harness's own source (with the Python, numpy and
ml_dtypes it runs on) alone. On an H100 node it was 64-69 of a warm sweep's 97 core-seconds
(bench11 in docs/performance.md). The engine spools each prepared launch to two files anyway (the
launch, read by the GPU worker; the expectations, read by the read-back); kept, they go to

    <cache>/launches/<source key>/<kernel>-<digest of the kernel and its cases' ids>/k.launch.pkl, k.exp.pkl

instead of the spool, and stay there. The two are written into a folder of the writer's own, which is then renamed
into place: a reader finds both or neither, and of two processes keeping the same launch at once the first to rename
wins and the other's pair is dropped, so a launch and expectations of two writers are never paired. Outputs are never
kept.

A warm sweep still launches every case on the GPU and diffs every register: what it skips is recomputing inputs and
expected values the same source computed before. The key (`source_key`) is the plan cache's digest of every file of
the package, Python's and numpy's versions, and ml_dtypes'. A planted bug is a change of source, so a new key. A
family from outside the package (TC_HARNESS_FAMILIES) has its launches prepared every time: its code is not in the
key.

A whole default sweep keeps about 6 GB (its 762 launches on an H100: bench12 in docs/performance.md).
Launches are kept only where the cache's file system has KEEP_FREE_BYTES free and the folder holds less than
MAX_BYTES (past it, new launches go to the spool as before). Another source's folder is removed by the next engine
that opens the cache, unless a process still uses it: each holds a shared lock on `<folder>.lock` while it does.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness import cache

try:
    import fcntl
except ImportError:  # no flock: another source's folder is never removed (it might be in use)
    fcntl = None

LAUNCH_SUFFIX, EXPECTATIONS_SUFFIX, OUTPUTS_SUFFIX = ".launch.pkl", ".exp.pkl", ".out.pkl"
FOLDER = "launches"
STEM = "k"  # each kept launch's files, in its own folder: k.launch.pkl, k.exp.pkl
KEEP_FREE_BYTES = 16 << 30  # keep nothing on a file system with less free: a sweep keeps ~6 GB
MAX_BYTES = 16 << 30  # a folder this full keeps no more (each selection's launches are kept apart)


def source_key() -> str:
    """What a prepared launch depends on besides its kernel and cases (the package's files as they are now)."""
    import ml_dtypes

    return hashlib.sha256(f"{cache.source_digest()}\0{ml_dtypes.__version__}".encode()).hexdigest()[:24]


@lru_cache(maxsize=None)
def process_key() -> str:
    """source_key() as this process's code has it: taken once every family is imported, so that a file edited after
    the engine chose its folder (whose key its own process took) does not put launches prepared by the edited code
    under the old key: a preparing process whose key differs keeps and reads nothing."""
    from harness import registry
    registry.all_families()
    return source_key()


@dataclass(frozen=True)
class KeptLaunches:
    """One source's folder of kept launches, as the preparing processes see it (picklable)."""
    folder: str  # named by its source key
    writable: bool  # room to keep more (KEEP_FREE_BYTES, MAX_BYTES), as found when the folder was opened

    def stem(self, kernel, cases) -> str | None:
        """The path, less its suffix, of the launch of these cases (in a folder of its own): named by the kernel and
        the cases' ids. Within one source key that names their content: an in-tree family's plan is a function of its
        source (plan.py caches it under the same digest), and a selection or a shard only picks cases of it. Keyed
        by each case's whole text instead, it cost ~30 us a case: too dear for the engine's own process, which now
        finds a kept launch itself rather than asking a pool process (Engine.begin). None where the key does not cover
        what prepares them (a family from outside the package), the kernel's text does not say all of it (an object
        shown by its address), or a case has no id."""
        from harness import registry
        if not registry.registry().get(str(kernel.family), "").startswith("harness."):
            return None
        if process_key() != os.path.basename(self.folder):  # this process's code is not the folder's
            return None
        ids = [getattr(c, "id", None) for c in cases]
        text = repr(kernel)
        if " at 0x" in text or not all(isinstance(i, str) for i in ids):
            return None
        digest = hashlib.sha256("\0".join([text, *ids]).encode()).hexdigest()[:32]
        return os.path.join(self.folder, f"{kernel.name}-{digest}", STEM)

    @staticmethod
    def holds(stem: str) -> bool:
        """Both files are there and whole: the launch file as long as its header says, the expectations a pickle that
        ends (a host that went down after the rename, before the files' data reached the disk, can leave them empty
        or cut short: that launch is prepared again, and kept again by the next writer)."""
        try:
            with open(stem + EXPECTATIONS_SUFFIX, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                ends = fh.read(1) == pickle.STOP
        except OSError:
            return False
        return ends and cache.arrays_file_whole(stem + LAUNCH_SUFFIX)

    def keep(self, stem: str, launch, expectations: list) -> bool:
        """Keep a prepared launch (a LaunchInput) and its expectations under `stem`: True when they are kept there
        (by this process, or by another that kept the same launch first), False (nothing left behind) where the
        file system refuses."""
        home = os.path.dirname(stem)
        mine = os.path.join(self.folder, f".tmp{os.getpid()}-{os.path.basename(home)}")
        try:
            os.mkdir(mine)
            launch.save(os.path.join(mine, STEM + LAUNCH_SUFFIX))
            with open(os.path.join(mine, STEM + EXPECTATIONS_SUFFIX), "wb") as fh:
                pickle.dump(expectations, fh, protocol=pickle.HIGHEST_PROTOCOL)
            if os.path.isdir(home) and not self.holds(stem):  # a pair left damaged: this one takes its place
                shutil.rmtree(home, ignore_errors=True)
            os.rename(mine, home)  # fails where another process's pair is in place already
            return True
        except OSError:
            shutil.rmtree(mine, ignore_errors=True)
            return self.holds(stem)


class KeptFolder:
    """This process's use of its source's folder: the shared lock that keeps other sources' engines from removing
    it, held until `close`. `launches` is None where the cache cannot hold the folder (read-only, say): the sweep
    then keeps and reads nothing, as before."""

    def __init__(self, root: Path):
        base = Path(root) / FOLDER
        key = source_key()
        self.lock_fd = None
        self.launches = None
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        self.lock_fd = cache.lock_file(base / key)
        if self.lock_fd is not None:
            try:
                fcntl.flock(self.lock_fd, fcntl.LOCK_SH)  # waits while another engine removes this folder
            except OSError:
                self.close()
        folder = base / key
        try:
            folder.mkdir(exist_ok=True)  # after the lock: a folder removed meanwhile is made again
        except OSError:
            self.close()
            return
        remove_unused(base, key)
        self.launches = KeptLaunches(str(folder), writable=has_room(folder))

    def close(self) -> None:
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # releases the lock
            self.lock_fd = None


def has_room(folder: Path) -> bool:
    try:
        if shutil.disk_usage(folder).free < KEEP_FREE_BYTES:
            return False
        return sum(f.stat().st_size for d in os.scandir(folder) if d.is_dir()
                   for f in os.scandir(d.path) if f.is_file()) < MAX_BYTES
    except OSError:
        return False


def remove_unused(base: Path, key: str) -> None:
    """Remove the folders of other sources that no process holds (their lock taken exclusively, without waiting).
    Lock files stay: a process holding the lock of a lock file removed and made again would not exclude a remover."""
    if fcntl is None:
        return
    for other in base.iterdir():
        if not other.is_dir() or other.name == key:
            continue
        fd = cache.lock_file(other)
        if fd is None:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(other, ignore_errors=True)
        except OSError:  # in use (BlockingIOError), or no flock here
            pass
        finally:
            os.close(fd)
