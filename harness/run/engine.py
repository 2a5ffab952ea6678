"""The sweep's engine: host preparation, GPU launches and diffs overlapped, one GPU worker per GPU.

    pool (all cores):  prepare + pack a kernel's cases -> spool files    (launch.npz, preps.pkl)
    GPU worker / GPU:  launch the packed cases          -> spool file    (regs.npy)
    pool (all cores):  diff the registers               -> result records
    this process:      hand out work, write records in completion order

The bulky data (shared-memory images, registers) goes through files in a spool directory (/dev/shm where it
has room), never through this process, which only dispatches and writes: it is the one serial part. A launch
that faults or hangs is bisected here in a fresh worker on the same GPU (sweep.run_isolated).
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from harness.families.wgmma import readback as _diff, kernel as launch, reference
from harness.run.worker import GpuWorker, LaunchFailed, wait_any

SPOOL_SUFFIXES = (".npz", ".preps.pkl", ".regs.npy")


def prepare_and_pack(cs):
    """Host work of one launch: references, images, packed buffers; each Prepared drops its image."""
    preps = [reference.prepare(c) for c in cs]
    packed = launch.pack(preps)
    return [p.slim() for p in preps], packed


def _prepare_job(cs, spool: str) -> str:
    preps, packed = prepare_and_pack(cs)
    stem = os.path.join(spool, f"{cs[0].key.name}-{cs[0].seed:08x}-{len(cs)}")
    launch.save(packed, stem + ".npz")
    with open(stem + ".preps.pkl", "wb") as fh:
        pickle.dump(preps, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return stem


def load_preps(stem: str):
    with open(stem + ".preps.pkl", "rb") as fh:
        return pickle.load(fh)


def _diff_job(stem: str, device: int) -> list[dict]:
    recs = _diff.diff_launch(load_preps(stem), np.load(stem + ".regs.npy"))
    for r in recs:
        r["gpu"] = device
    remove(stem)
    return recs


def remove(stem: str) -> None:
    for suffix in SPOOL_SUFFIXES:
        try:
            os.unlink(stem + suffix)
        except FileNotFoundError:
            pass


def spool_dir() -> str | None:
    """RAM-backed /dev/shm when it has room (containers often give it only 64 MB), else the default."""
    try:
        if shutil.disk_usage("/dev/shm").free > 1 << 30 and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


class Engine:
    """Started before the sweep plans and compiles, so that the pool's processes and the GPU workers'
    CUDA contexts come up meanwhile; `begin` hands it the launches to prepare, `run` drives them."""

    def __init__(self, devices: list[int], workers: int | None = None, backend: str = "harness.families.wgmma.kernel"):
        self.devices, self.backend = devices, backend
        self.nworkers = max(1, workers or os.cpu_count() or 1)
        self.gpu_workers = [GpuWorker(d, backend) for d in devices]
        for w in self.gpu_workers:
            w.start()
        self._spool = tempfile.TemporaryDirectory(prefix="tc-harness-spool-", dir=spool_dir())
        self.spool = self._spool.name
        # spawn: this process has (or will have) a CUDA context, which forked children must not inherit
        self.pool = ProcessPoolExecutor(max_workers=self.nworkers, mp_context=multiprocessing.get_context("spawn"))
        for _ in range(self.nworkers):  # bring every process up now
            self.pool.submit(int)
        self.items: list = []
        self.preparing: list = []

    @property
    def ahead(self) -> int:
        return 2 * self.nworkers  # bounded look-ahead keeps memory and the spool flat however long the sweep is

    def begin(self, items) -> None:
        """items: [(key, cases)] in launch order; their preparation starts now."""
        self.items = items
        self.preparing = [self.pool.submit(_prepare_job, cs, self.spool) for _, cs in items[:self.ahead]]

    def close(self) -> None:
        for w in self.gpu_workers:
            w.close()
        self.pool.shutdown(cancel_futures=True)
        self._spool.cleanup()

    def run(self, compiled, timeout: float, emit, isolate, log) -> dict:
        """Launch every item begun (compiled[i] is item i's Compiled; items that did not compile are
        skipped: the caller records them). emit(records) gets each kernel's records; isolate(worker, key,
        preps, packed, cubin_path, error) bisects a failed launch. Returns timings."""
        items, pool, spool, gpu_workers, backend = self.items, self.pool, self.spool, self.gpu_workers, self.backend
        timing = {"prepare_wait_s": 0.0, "isolate_s": 0.0, "diff_wait_s": 0.0}
        in_flight: dict[GpuWorker, tuple] = {}
        diffs = []  # (future, key, device, t_submitted)
        done = [0]
        total = sum(c.error is None for c in compiled)

        def finished(recs, key, device, t):
            done[0] += 1
            nfail = sum(r["status"] != "pass" for r in recs)
            emit(recs)
            log(f"[{done[0]}/{total}] {key.name}: {len(recs)} cases, {nfail} not passing "
                f"(GPU {device}, {time.time() - t:.2f}s)")

        def drain(block: bool = False):
            t = time.time()
            while diffs and (block or diffs[0][0].done()):
                fut, key, device, tk = diffs.pop(0)
                finished(fut.result(), key, device, tk)
            timing["diff_wait_s"] += time.time() - t if block else 0.0

        def harvest(w: GpuWorker):
            entry = in_flight.pop(w)
            try:
                w.collect()
                return entry, w, None
            except LaunchFailed as e:
                return entry, w, e

        def complete(entry, w: GpuWorker, error) -> None:
            key, comp, stem, tk = entry
            if error is None:
                diffs.append((pool.submit(_diff_job, stem, w.device), key, w.device, tk))
                return
            ti = time.time()
            isolator = GpuWorker(w.device, backend)
            try:
                recs = isolate(isolator, key, load_preps(stem), stem + ".npz", comp.cubin_path, error)
            finally:
                isolator.close()
                remove(stem)
            for r in recs:
                r["gpu"] = w.device
            timing["isolate_s"] += time.time() - ti
            finished(recs, key, w.device, tk)

        for i, ((key, cs), comp) in enumerate(zip(items, compiled)):
            tp = time.time()
            stem = self.preparing[i].result()
            self.preparing[i] = None
            timing["prepare_wait_s"] += time.time() - tp
            if i + self.ahead < len(items):
                self.preparing.append(pool.submit(_prepare_job, items[i + self.ahead][1], spool))
            if comp.error is not None:
                remove(stem)
                continue
            idle = [w for w in gpu_workers if not w.busy]
            answered = None
            if not idle:  # take the first answer, give that GPU its next launch, then hand off the diff
                answered = harvest(wait_any(gpu_workers))
                idle = [answered[1]]
            in_flight[idle[0]] = (key, comp, stem, time.time())
            idle[0].submit(str(comp.cubin_path), key.name, stem + ".npz", timeout, regs_out=stem + ".regs.npy")
            if answered:
                complete(*answered)
            drain()
        while in_flight:
            complete(*harvest(wait_any(gpu_workers)))
        drain(block=True)
        timing = {k: round(v, 2) for k, v in timing.items()}
        timing["gpu_worker_s"] = round(sum(w.gpu_s for w in gpu_workers), 2)
        return timing


def run(todo, devices: list[int], timeout: float, emit, isolate, log, workers: int | None = None,
        backend: str = "harness.families.wgmma.kernel") -> dict:
    """Run every (key, cases, compiled) of `todo` over the GPUs `devices` (an Engine for one call)."""
    engine = Engine(devices, workers, backend)
    try:
        engine.begin([(k, cs) for k, cs, _ in todo])
        return engine.run([c for _, _, c in todo], timeout, emit, isolate, log)
    finally:
        engine.close()
