"""The GPU UUID is recorded whole, as nvidia-smi writes it (harness/run/gpu.py uuid_of): a fake driver API hands over
16 bytes with NULs inside, where CuPy's getDeviceProperties cut the same field at its first NUL."""
import types

import pytest

from harness.run import gpu

RAW = bytes.fromhex("c4600012a9000b3c00ff000000d1e200")  # NULs in the middle and at the end
WHOLE = "GPU-c4600012-a900-0b3c-00ff-000000d1e200"


class FakeRuntime:
    """CuPy's runtime as it answers: the uuid cut at its first NUL, as a C string would be."""

    def getDeviceProperties(self, index):
        return {"major": 9, "minor": 0, "name": b"NVIDIA H100 80GB HBM3", "uuid": RAW.split(b"\0")[0],
                "multiProcessorCount": 132}

    def driverGetVersion(self):
        return 13000

    def runtimeGetVersion(self):
        return 13000


def fake_driver(raw=RAW, v2=True, fail_at=None):
    calls = []

    def answer(name, *values):
        calls.append(name)
        return (1 if fail_at == name else 0, *values)

    uu = types.SimpleNamespace(bytes=raw)
    drv = types.SimpleNamespace(cuInit=lambda flags: answer("cuInit"),
                                cuDeviceGet=lambda i: answer("cuDeviceGet", 100 + i),
                                cuDeviceGetUuid=lambda dev: answer("cuDeviceGetUuid", uu))
    if v2:
        drv.cuDeviceGetUuid_v2 = lambda dev: answer("cuDeviceGetUuid_v2", uu)
    return drv, calls


def test_uuid_text_is_nvidia_smis_format_with_every_byte():
    assert gpu.uuid_text(RAW) == WHOLE
    assert gpu.uuid_text(bytes(16)) == "GPU-00000000-0000-0000-0000-000000000000"
    for bad in (b"", RAW[:4], RAW + b"\0"):
        with pytest.raises(ValueError, match="16 bytes"):
            gpu.uuid_text(bad)


@pytest.mark.parametrize("v2", [True, False])
def test_the_uuid_comes_whole_from_the_driver_though_cupy_cuts_it(monkeypatch, v2):
    drv, calls = fake_driver(v2=v2)
    monkeypatch.setattr(gpu, "_driver", lambda: drv)
    info = gpu._info(FakeRuntime(), 0)
    assert info["uuid"] == WHOLE
    assert calls[-1] == ("cuDeviceGetUuid_v2" if v2 else "cuDeviceGetUuid")
    # what the record held before: CuPy's copy, cut at the first NUL, as "GPU-" + hex
    assert "GPU-" + RAW.split(b"\0")[0].hex() == "GPU-c460" != info["uuid"]


@pytest.mark.parametrize("fail_at", ["cuInit", "cuDeviceGet", "cuDeviceGetUuid_v2"])
def test_without_the_driver_a_cut_uuid_is_recorded_unknown_never_wrong(monkeypatch, fail_at):
    drv, _ = fake_driver(fail_at=fail_at)
    monkeypatch.setattr(gpu, "_driver", lambda: drv)
    assert gpu._info(FakeRuntime(), 0)["uuid"] == ""


def test_without_cuda_bindings_cupys_uuid_is_taken_where_whole(monkeypatch):
    def missing():
        raise ImportError("no cuda.bindings")
    monkeypatch.setattr(gpu, "_driver", missing)

    class Whole(FakeRuntime):
        def getDeviceProperties(self, index):
            return dict(super().getDeviceProperties(index), uuid=RAW)
    assert gpu._info(Whole(), 0)["uuid"] == WHOLE
    assert gpu._info(FakeRuntime(), 0)["uuid"] == ""
