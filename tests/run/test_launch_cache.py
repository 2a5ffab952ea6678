"""Kept launches (harness/run/launch_cache.py): a warm sweep reads the launches an earlier sweep of the same source
prepared, and still launches and diffs every case; another source never reads them."""
import fcntl
import os
from pathlib import Path

import pytest

from harness import cache, plan
from harness.run import engine, launch_cache
from harness.run.launch_cache import KeptFolder

B_128B = plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(32,), dtypes=("f32",), controls=False,
                        match="B:K/128B")  # two kernels (A from registers, A from shared memory)


def kept_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / launch_cache.FOLDER).rglob("*.pkl"))


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_a_warm_sweep_reads_the_kept_launches_and_still_launches_and_diffs_every_case(monkeypatch, tmp_path):
    from tests.run import simsweep
    from tests.simulated import fake_gpus
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    p = plan.make(B_128B, {"wgmma": "sm_90a"})
    simsweep.warm_wgmma_oracle(p)
    fake_gpus.install(monkeypatch, ["sm_90a"])
    launches = len(p.work)
    assert launches == 2
    cold, cold_recs, _, _ = simsweep.sweep(p, tmp_path / "cold.jsonl", keep_launches=True)
    assert cold["timing"]["kept_launches_read"] == 0 and cold["pass"] == len(cold_recs) > 0
    assert len(kept_files(tmp_path / "cache")) == 2 * launches  # a launch and its expectations each
    asked = []
    submit_next = engine.Engine.submit_next
    monkeypatch.setattr(engine.Engine, "submit_next", lambda self: asked.append(self.queued[0]) or submit_next(self))
    warm, warm_recs, _, _ = simsweep.sweep(p, tmp_path / "warm.jsonl", keep_launches=True)
    assert warm["timing"]["kept_launches_read"] == launches
    assert asked == []  # each found by the engine itself: no pool process asked to prepare it (Engine.begin)
    assert {i: r["status"] for i, r in warm_recs.items()} == {i: r["status"] for i, r in cold_recs.items()}
    # the same kept launches on a GPU that swizzles 128B tiles like 64B: every case fails, so the warm sweep
    # launched each one and diffed its registers (nothing of the earlier verdicts is kept)
    monkeypatch.setenv("TC_SIM_BUG", "swizzle")
    bad, bad_recs, _, _ = simsweep.sweep(p, tmp_path / "bad.jsonl", keep_launches=True)
    assert bad["timing"]["kept_launches_read"] == launches
    assert set(bad_recs) == set(cold_recs) and bad["fail"] == len(bad_recs)
    assert len(kept_files(tmp_path / "cache")) == 2 * launches  # outputs are never kept


def test_a_launch_is_kept_under_its_source_its_kernel_and_its_cases(monkeypatch, tmp_path):
    (k0, c0), (k1, c1) = plan.make(B_128B, {"wgmma": "sm_90a"}).work[:2]
    folder = tmp_path / launch_cache.process_key()  # a folder is named by its source key
    kept = launch_cache.KeptLaunches(str(folder), writable=True)
    assert kept.stem(k0, c0) == kept.stem(k0, list(c0)) != kept.stem(k0, c0[:-1])
    assert kept.stem(k0, c0) != kept.stem(k1, c1) and kept.stem(k0, c0).startswith(str(folder / k0.name))
    assert kept.stem(k0, [object()]) is None  # a case its text does not describe whole is never kept
    # a preparing process whose code is not the folder's (a file edited after the engine chose the folder)
    assert launch_cache.KeptLaunches(str(tmp_path / "another source"), writable=True).stem(k0, c0) is None
    key = launch_cache.source_key()
    monkeypatch.setattr(cache, "source_digest", lambda: "a planted change of source")
    assert launch_cache.source_key() != key


def test_prepared_launches_are_kept_read_back_and_spooled_where_there_is_no_room(monkeypatch, tmp_path):
    kernel, cases = plan.make(B_128B, {"wgmma": "sm_90a"}).work[0]
    cases = cases[:3]
    spool = tmp_path / "spool"
    spool.mkdir()
    folder = KeptFolder(tmp_path / "cache")
    try:
        first, _, reused = engine.prepare_job(kernel, cases, str(spool), folder.launches)
        assert first.kept and not reused and Path(first.launch).parent.parent == Path(folder.launches.folder)
        again, _, reused = engine.prepare_job(kernel, cases, str(spool), folder.launches)
        assert again == first and reused
        assert engine.load_expectations(again)[0].case == cases[0]
        Path(first.outputs).write_bytes(b"")
        engine.remove(first)  # the outputs go; the kept launch stays
        assert not Path(first.outputs).exists()
        assert launch_cache.KeptLaunches.holds(first.launch[:-len(launch_cache.LAUNCH_SUFFIX)])
    finally:
        folder.close()
    monkeypatch.setattr(launch_cache, "KEEP_FREE_BYTES", 1 << 62)
    full = KeptFolder(tmp_path / "cache2")
    try:
        assert not full.launches.writable
        spooled, _, reused = engine.prepare_job(kernel, cases, str(spool), full.launches)
        assert not spooled.kept and not reused and Path(spooled.launch).parent == spool
        assert not kept_files(tmp_path / "cache2")
    finally:
        full.close()


def test_a_launch_is_kept_whole_once_and_a_refused_write_leaves_nothing(tmp_path):
    kernel, cases = plan.make(B_128B, {"wgmma": "sm_90a"}).work[0]
    folder = tmp_path / launch_cache.process_key()
    folder.mkdir()
    kept = launch_cache.KeptLaunches(str(folder), writable=True)
    stem = kept.stem(kernel, cases[:1])
    inp, expectations = engine.prepare(kernel, cases[:1])
    gone = launch_cache.KeptLaunches(str(tmp_path / "missing" / folder.name), writable=True)
    assert not gone.keep(gone.stem(kernel, cases[:1]), inp, expectations)
    assert not kept.holds(stem)
    assert kept.keep(stem, inp, expectations) and kept.holds(stem)
    # a second process keeping the same launch finds it kept: the pair in place stays the first's, whole
    other, _ = engine.prepare(kernel, cases[1:2])
    assert kept.keep(stem, other, ["another's"]) and engine.load_expectations(
        engine.Spooled(stem + launch_cache.LAUNCH_SUFFIX, stem + launch_cache.EXPECTATIONS_SUFFIX, ""))[0].case == cases[0]
    assert os.listdir(folder) == [Path(stem).parent.name]  # no writer's folder left behind
    assert sorted(os.listdir(Path(stem).parent)) == sorted(Path(stem + s).name for s in (
        launch_cache.LAUNCH_SUFFIX, launch_cache.EXPECTATIONS_SUFFIX))


def test_another_sources_folder_is_removed_unless_a_process_holds_it(tmp_path):
    base = tmp_path / launch_cache.FOLDER
    other = base / "another-source"
    other.mkdir(parents=True)
    (other / "k.launch.pkl").write_bytes(b"x")
    held = os.open(base / "another-source.lock", os.O_RDONLY | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_SH)  # an engine of that source at work
    try:
        KeptFolder(tmp_path).close()
        assert (other / "k.launch.pkl").exists()
    finally:
        os.close(held)
    mine = KeptFolder(tmp_path)
    try:
        assert not other.exists() and Path(mine.launches.folder).is_dir()
        KeptFolder(tmp_path).close()  # an engine of this source leaves a folder another of it holds
        assert Path(mine.launches.folder).is_dir()
    finally:
        mine.close()


def test_the_sweep_command_keeps_launches_unless_told_not_to(monkeypatch, tmp_path):
    from harness import cli, sweep
    seen = []
    monkeypatch.setattr(sweep, "run", lambda sel, cfg: seen.append(cfg) or {"cases": 0})
    cli.main(["sweep", "--out", str(tmp_path / "a.jsonl")])
    cli.main(["sweep", "--no-keep-launches", "--out", str(tmp_path / "b.jsonl")])
    assert [c.keep_launches for c in seen] == [True, False]
    assert not sweep.SweepConfig().keep_launches  # a library caller keeps nothing unless it asks


def test_a_family_from_outside_the_package_is_never_kept(monkeypatch, tmp_path):
    """Its code is not in the key: a launch it prepared once must not stand for what its edited code prepares."""
    from harness import registry
    monkeypatch.setenv(registry.EXTRA, "toy=tests.simulated.toy_family")
    (kernel, cases), = plan.make(plan.Selection(families=None, n_values=(64,), match="toy"), {"toy": "sm_90a"}).work
    kept = launch_cache.KeptLaunches(str(tmp_path / "kept" / launch_cache.process_key()), writable=True)
    assert kept.stem(kernel, cases) is None
    spooled, _, reused = engine.prepare_job(kernel, cases, str(tmp_path), kept)
    assert not spooled.kept and not reused and not (tmp_path / "kept").exists()


def test_a_kept_launch_left_damaged_is_prepared_and_kept_again(tmp_path):
    """A host that went down after a rename, before the data reached the disk, can leave the files empty or short."""
    kernel, cases = plan.make(B_128B, {"wgmma": "sm_90a"}).work[0]
    cases = cases[:2]
    folder = KeptFolder(tmp_path / "cache")
    try:
        kept = folder.launches
        first, _, _ = engine.prepare_job(kernel, cases, str(tmp_path), kept)
        whole = {p: Path(p).read_bytes() for p in (first.launch, first.expectations)}
        for damaged, data in ((first.launch, whole[first.launch][:-7]), (first.expectations, b""),
                              (first.expectations, whole[first.expectations][:-1])):
            Path(damaged).write_bytes(data)
            assert not kept.holds(first.launch[:-len(launch_cache.LAUNCH_SUFFIX)])
            again, _, reused = engine.prepare_job(kernel, cases, str(tmp_path), kept)
            assert not reused and again == first  # prepared, and kept in its place
            assert {p: Path(p).read_bytes() for p in whole} == whole
            _, _, reused = engine.prepare_job(kernel, cases, str(tmp_path), kept)
            assert reused
    finally:
        folder.close()


def test_a_cache_that_cannot_hold_the_folder_keeps_nothing_and_the_engine_runs(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    folder = KeptFolder(tmp_path / "a-file")
    assert folder.launches is None and folder.lock_fd is None
    eng = engine.Engine([], workers=1, keep_launches=tmp_path / "a-file")
    try:
        assert eng.kept is None
    finally:
        eng.close()


def test_a_kernel_and_a_case_id_name_one_case_whatever_the_plan(monkeypatch):
    """What keying kept launches by the cases' ids rests on (KeptLaunches.stem): within one source, the same kernel and
    case id are the same case in every plan that has them: every selection, and each arch a family plans for."""
    seen = {}
    plans = [plan.make(plan.Selection(families=("tcgen05", "wgmma_seq")), {"tcgen05": arch}, cache=True)
             for arch in ("sm_100a", "sm_103a")]
    plans.append(plan.make(plan.Selection(families=("tcgen05",), data_modes=("exact",), controls=False),
                           {"tcgen05": "sm_103a"}, cache=True))
    for p in plans:
        for kernel, cases in p.work:
            for c in cases:
                assert seen.setdefault((repr(kernel), c.id), repr(c)) == repr(c), c.id
    assert len(seen) > 1000
