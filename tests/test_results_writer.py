"""The results file as the sweep writes it: every batch readable at once, on disk within a second and at close."""
import json

from harness.records import results


def test_each_batch_is_in_the_file_at_once_and_synced_at_most_once_a_second(tmp_path, monkeypatch):
    clock, synced = [100.0], []  # quarters of a second: exact in binary
    monkeypatch.setattr(results.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(results.os, "fsync", lambda fd: synced.append(clock[0]))
    path = tmp_path / "r.jsonl"
    w = results.ResultsWriter(path, {"type": "environment"})
    for i in range(4):  # four kernels' records within 0.75 s: in the file each time, not synced
        w.write_cases([{"id": f"c{i}", "status": "pass"}])
        assert json.loads(path.read_text().splitlines()[-1])["id"] == f"c{i}"
        clock[0] += 0.25
    assert synced == []
    w.write_cases([{"id": "c4", "status": "pass"}])  # a second after the writer's start
    assert synced == [101.0]
    w.write_cases([{"id": "c5", "status": "pass"}])
    assert synced == [101.0]
    w.close({"cases": 6})
    assert synced == [101.0, 101.0] and json.loads(path.read_text().splitlines()[-1])["type"] == "summary"
