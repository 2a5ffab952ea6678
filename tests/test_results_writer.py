"""The results file as the sweep writes it: every batch readable at once, on disk within a second and at close."""
import json
import threading
import time

import pytest

from harness.records import results


def synced_within(synced: list, count: int, seconds: float = 10.0) -> bool:
    """Whether the writer's syncing thread has made `count` fsyncs (waiting up to `seconds` for it)."""
    end = time.perf_counter() + seconds  # the tests stand in for time.monotonic
    while len(synced) < count and time.perf_counter() < end:
        time.sleep(0.005)
    return len(synced) == count


def test_each_batch_is_in_the_file_at_once_and_synced_at_most_once_a_second(tmp_path, monkeypatch):
    clock, synced = [100.0], []  # quarters of a second: exact in binary
    monkeypatch.setattr(results.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(results.os, "fsync", lambda fd: synced.append(clock[0]))
    path = tmp_path / "r.jsonl"
    w = results.ResultsWriter(path, {"type": "environment"})
    for i in range(4):  # four kernels' records within 0.75 s: in the file each time, not synced
        w.write_lines(results.CaseLines([{"id": f"c{i}", "status": "pass"}]))
        assert json.loads(path.read_text().splitlines()[-1])["id"] == f"c{i}"
        clock[0] += 0.25
    assert not synced_within(synced, 1, seconds=0.2)
    w.write_lines(results.CaseLines([{"id": "c4", "status": "pass"}]))  # a second after the writer's start: its thread syncs
    assert synced_within(synced, 1) and synced == [101.0]
    w.write_lines(results.CaseLines([{"id": "c5", "status": "pass"}]))
    assert not synced_within(synced, 2, seconds=0.2)
    w.close({"cases": 6})
    assert synced == [101.0, 101.0] and json.loads(path.read_text().splitlines()[-1])["type"] == "summary"


def test_the_periodic_sync_does_not_hold_up_the_writing_thread(tmp_path, monkeypatch):
    """A slow disk's fsync (0.2-0.27 s on an H100 node's) runs in the writer's thread, not the caller's."""
    clock, entered, release, synced = [100.0], threading.Event(), threading.Event(), []

    def slow_fsync(fd):
        entered.set()
        release.wait(10)
        synced.append(clock[0])
    monkeypatch.setattr(results.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(results.os, "fsync", slow_fsync)
    w = results.ResultsWriter(tmp_path / "r.jsonl", {"type": "environment"})
    clock[0] += 1.0
    w.write_lines(results.CaseLines([{"id": "c0", "status": "pass"}]))  # asks for a sync, which cannot end until released
    assert entered.wait(10)
    w.write_lines(results.CaseLines([{"id": "c1", "status": "pass"}]))  # written while the sync waits
    assert synced == [] and len((tmp_path / "r.jsonl").read_text().splitlines()) == 3
    release.set()
    w.close()
    assert len(synced) == 2  # the thread's, then the one at close


def test_records_encoded_where_they_were_made_are_written_as_json_dumps_would_write_them(tmp_path):
    recs = [{"id": "a", "kernel": "k", "status": "pass", "x": [1, {"y": "}\n"}]},
            {"id": "b", "kernel": "k", "status": "fault", "isolated": False}]
    batch = results.CaseLines(recs)
    batch.more["kernel_s"] = 0.125
    assert batch.text() == "".join(json.dumps({"type": "case", **r, "kernel_s": 0.125}) + "\n" for r in recs)
    assert batch.record(1) == recs[1] and batch.facts[1].isolated is False and batch.facts[0].kernel == "k"
    batch.replace(1, {**recs[1], "status": "pass", "caught": True})  # a control's fault settled as its catch
    assert batch.facts[1].status == "pass" and json.loads(batch.text().splitlines()[1])["caught"] is True
    w = results.ResultsWriter(tmp_path / "r.jsonl", {"type": "environment", "schema": results.SCHEMA})
    w.write_lines(batch)
    w.close()
    _, cases, _ = results.load(tmp_path / "r.jsonl")
    assert cases["a"]["kernel_s"] == 0.125 and cases["a"]["x"] == [1, {"y": "}\n"}] and cases["b"]["caught"] is True


def test_the_environment_record_has_cupys_version_as_cupy_says_it():
    cupy = pytest.importorskip("cupy")
    assert results.environment()["cupy"] == cupy.__version__  # read from its _version.py, CuPy not imported


@pytest.mark.parametrize("where", ["the next batch", "close"])
def test_a_failed_periodic_fsync_is_raised_in_the_writing_thread(tmp_path, monkeypatch, where):
    """The disk lost what the file was given (EIO, ENOSPC at writeback): the sweep must not end as if it had the
    records. A descriptor reports such an error to one fsync only, the syncing thread's: the writer keeps it."""
    import errno
    clock, failed = [100.0], threading.Event()

    def failing_fsync(fd):
        failed.set()
        raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(results.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(results.os, "fsync", failing_fsync)
    w = results.ResultsWriter(tmp_path / "r.jsonl", {"type": "environment"})
    clock[0] += 1.0
    w.write_lines(results.CaseLines([{"id": "c0", "status": "pass"}]))  # asks for the sync that fails
    assert failed.wait(10)
    with pytest.raises(OSError, match="fsync failed"):
        if where == "close":  # joins the syncing thread first
            w.close({"cases": 1})
        end = time.perf_counter() + 10  # the thread keeps the error just after its fsync raised
        while time.perf_counter() < end:
            w.write_lines(results.CaseLines([{"id": "c1", "status": "pass"}]))
            time.sleep(0.01)
