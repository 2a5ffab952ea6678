"""harness/cache.py: a cache file is written whole or not at all."""
import threading

import pytest

from harness.cache import write_atomically


def test_bytes_and_text_are_written_and_no_temporary_file_stays(tmp_path):
    write_atomically(tmp_path / "a.bin", b"\x00\x01")
    write_atomically(tmp_path / "b.json", '{"k": "\u00e9"}')
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "b.json").read_text(encoding="utf-8") == '{"k": "\u00e9"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.json"]


def test_a_write_that_cannot_be_put_in_place_raises_and_leaves_nothing(tmp_path):
    (tmp_path / "taken").mkdir()  # a folder where the file should go: the rename fails
    with pytest.raises(OSError):
        write_atomically(tmp_path / "taken", b"data")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and (tmp_path / "taken").is_dir()


def test_a_reader_never_sees_part_of_a_file_while_threads_rewrite_it(tmp_path):
    """Threads rewrite one file with payloads of 1 MiB each while a reader reads it over and over: every read is one
    whole payload. (Written in place, the reader found files cut short or mixed.)"""
    path = tmp_path / "shared.bin"
    payloads = [bytes([i]) * (1 << 20) for i in range(4)]
    write_atomically(path, payloads[0])
    stop = threading.Event()
    seen, bad = [0], []

    def read():
        while not stop.is_set():
            data = path.read_bytes()
            seen[0] += 1
            if data not in payloads:
                bad.append(len(data))

    def write(i):
        for _ in range(40):
            write_atomically(path, payloads[i])

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert seen[0] > 0 and not bad, f"{len(bad)} of {seen[0]} reads were not a whole payload"
    assert [p.name for p in tmp_path.iterdir()] == ["shared.bin"]
