"""A launch's spool file (LaunchInput.save / load in harness/contract.py, the arrays files of harness/cache.py, the
staging of harness/run/launch.py): every array back bit for bit, read into the GPU worker's staging memory or into
fresh memory, and a file that is not whole refused."""
import numpy as np
import pytest

from harness import plan
from harness.run import engine
from harness.contract import LaunchInput
from harness.run.launch import PinnedStaging, load_outputs, save_outputs


@pytest.fixture(scope="module")
def prepared():
    sel = plan.Selection(families=("wgmma",), kinds=("f16",), n_values=(64,), a_srcs=("RS",), dtypes=("f32",))
    kernel, cases = plan.make(sel, {"wgmma": "sm_90a"}).work[0]
    return engine.prepare(kernel, cases[:5])[0]


def same(a: LaunchInput, b: LaunchInput) -> bool:
    arrays = lambda x: [x.images, x.params, *x.inputs.values()]  # noqa: E731
    return (all(u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes()
                for u, v in zip(arrays(a), arrays(b))) and list(a.inputs) == list(b.inputs)
            and (a.outputs, a.ctas_per_case, a.threads, a.extra_smem) == (b.outputs, b.ctas_per_case, b.threads,
                                                                         b.extra_smem))


def host_staging(capacity: int) -> PinnedStaging:
    """A staging over ordinary memory (page-locked memory needs a GPU), made `capacity` bytes at once."""
    staging = PinnedStaging(allocate=bytearray)
    staging.slices([capacity])
    return staging


def test_a_launch_comes_back_whole_in_fresh_memory_and_in_the_staging(prepared, tmp_path):
    path = prepared.save(str(tmp_path / "l.launch.pkl"))
    assert prepared.params.dtype.names and len(prepared.inputs) >= 2  # a structured array and several inputs
    assert same(LaunchInput.load(path), prepared)
    staging = host_staging(4 << 20)
    staged = LaunchInput.load(path, staging)
    assert same(staged, prepared)
    base = np.frombuffer(staging.memory, np.uint8)
    for arr in (staged.images, staged.params, *staged.inputs.values()):  # views of the staging, each aligned
        assert np.shares_memory(arr, base) and (arr.ctypes.data - base.ctypes.data) % PinnedStaging.ALIGN == 0


def test_a_launch_file_cut_short_or_of_another_kind_is_refused(prepared, tmp_path):
    path = tmp_path / "l.launch.pkl"
    prepared.save(str(path))
    whole = path.read_bytes()
    path.write_bytes(whole[:-1])
    with pytest.raises(ValueError, match="spool file cut short"):
        LaunchInput.load(str(path))
    path.write_bytes(b"\x80\x05" + whole[2:])
    with pytest.raises(ValueError, match="not a spool file"):
        LaunchInput.load(str(path))


def test_outputs_written_from_the_staging_come_back_bit_for_bit(tmp_path):
    staging = host_staging(1 << 16)
    regs = np.arange(3 * 128 * 4, dtype=np.uint32).reshape(3, 128, 4) * np.uint32(2654435761)
    views = staging.slices([regs.nbytes, 8])
    outputs = {"d": np.frombuffer(views[0], np.uint32).reshape(regs.shape), "flag": np.frombuffer(views[1], np.int64)}
    outputs["d"][...] = regs
    outputs["flag"][...] = -1
    save_outputs(outputs, str(tmp_path / "o.out.pkl"))
    back = load_outputs(str(tmp_path / "o.out.pkl"))
    assert list(back) == ["d", "flag"] and back["d"].shape == regs.shape and (back["d"] == regs).all()
    assert back["flag"].dtype == np.int64 and back["flag"].tolist() == [-1]
    assert not np.shares_memory(back["d"], np.frombuffer(staging.memory, np.uint8))  # its own memory


def test_the_staging_hands_out_aligned_slices_that_do_not_overlap_and_grows_when_asked_for_more():
    staging = host_staging(4096)
    slices = staging.slices([10, 300, 1])
    base = np.frombuffer(staging.memory, np.uint8).ctypes.data
    starts = [np.frombuffer(s, np.uint8).ctypes.data - base for s in slices]
    assert starts == [0, 256, 768] and [len(s) for s in slices] == [10, 300, 1]
    assert len(staging.slices([5000])[0]) == 5000 and staging.capacity == 8192  # doubled: fewer growths
    assert [len(m) for m in PinnedStaging(allocate=bytearray).slices([0])] == [0]  # nothing, asked first


def test_a_reserved_staging_holds_launches_up_to_its_size_without_asking_for_memory_again():
    asked = []
    staging = PinnedStaging(allocate=lambda n: asked.append(n) or bytearray(n))
    staging.reserve(10_000)
    memory = staging.memory
    staging.slices([4000, 4000])
    staging.slices([9000])
    staging.reserve(5000)  # less than it holds: nothing
    assert asked == [10_000] and staging.memory is memory
    staging.slices([12_000])  # beyond the reserve: grown as before
    assert asked == [10_000, 20_000]


def test_the_reserve_holds_the_largest_launches_of_the_default_sweep(tmp_path):
    """The launch with the most cases of the widest accumulator of each dense and sparse wgmma family (the default
    sweep's largest: the CPU note 2026-11-27 launch-reserve.txt in docs/performance.md) fits the GPU worker's
    reserve."""
    from harness.run import launch
    for family in ("wgmma", "wgmma_sp"):
        work = plan.make(plan.Selection(families=(family,)), {family: "sm_90a"}, cache=True).work
        kernel, cases = max(work, key=lambda kc: (len(kc[1]) * kc[0].form.n * (kc[0].form.dtype != "f16"), kc[0].name))
        assert (kernel.form.n, kernel.form.dtype) == (256, "f32"), kernel.name
        inp, _ = engine.prepare(kernel, cases)
        asked = []
        inputs, outputs = (PinnedStaging(allocate=lambda n: asked.append(n) or bytearray(n)) for _ in range(2))
        inputs.reserve(launch.LAUNCH_RESERVE)
        outputs.reserve(launch.OUTPUT_RESERVE)
        # the launch read into its staging as the GPU worker reads it, and its outputs copied into theirs
        LaunchInput.load(inp.save(str(tmp_path / f"{kernel.name}.launch.pkl")), inputs)
        outputs.slices([inp.ctas * int(np.prod(o.shape)) * np.dtype(o.dtype).itemsize for o in inp.outputs.values()])
        assert asked == [launch.LAUNCH_RESERVE, launch.OUTPUT_RESERVE], (kernel.name, asked)  # neither grew


def test_a_launch_concatenated_from_parts_is_the_launch_of_their_cases(prepared):
    """Each part's image offsets count from its own first image; concatenated, every CTA's image is where its offset
    says and is the image it had in its part; the launch cut into parts and put back together is itself."""
    parts = [prepared.subset([0, 1]), prepared.subset([2]), prepared.subset([3, 4])]
    assert [int(p.params["image_offset"][0]) for p in parts] == [0, 0, 0]
    whole = LaunchInput.concatenate(parts)
    assert same(whole, prepared)
    assert LaunchInput.concatenate([prepared]) is prepared
    with pytest.raises(ValueError, match="one part or more"):
        LaunchInput.concatenate([])
    other = prepared.subset([0])
    other.threads = 256
    with pytest.raises(ValueError, match="differ in"):
        LaunchInput.concatenate([prepared, other])
