"""The results file as the sweep writes it: every batch readable at once, on disk within a second and at close."""
import json

import pytest

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
