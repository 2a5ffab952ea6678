"""The descriptor tap on the CPU: buffers built in Python the way tc_tap.cuh leaves them are read and diffed (the
tilelang#2593 class of SBO bug flagged with its exact field and value, its fix passing; tcgen05's descriptor and
instruction descriptor decoded, triton#8032's missing version bit and a wrong N field flagged); a buffer that is
not one, or lost records, is refused; and the proof kernels compile with NVRTC (sm_90a, sm_100a) with the tap's
atomic slot and 16-byte record store in their SASS. tests/test_tap_gpu.py runs the wgmma kernel on an H100."""
import re
import shutil
import struct

import pytest

from harness import api, tap
from harness.run import compile as C, sass
from tests import tap_kernels as K

A_ADDR, B_ADDR = 0x400, 0x2400  # where the kernel's tiles land in its shared window (any 1024-aligned address)


def wgmma_desc(addr: int, sbo: int) -> int:
    """The descriptor tap_wgmma_sbo builds (K-major, 128B swizzle, LBO 16), worked by hand from the PTX ISA's
    field table: start >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, 128B = 1 in bits 62-63."""
    return (addr >> 4) | (16 >> 4) << 16 | (sbo >> 4) << 32 | 1 << 62


def buggy_buffer(n_warpgroups: int = 1):
    recs = [(K.TAG_A, wgmma_desc(A_ADDR, 1024), 0), (K.TAG_B, wgmma_desc(B_ADDR, 512), 0)] * n_warpgroups
    return tap.build_buffer(recs, capacity=8)


def test_the_sbo_bug_is_flagged_with_its_field_and_value():
    (f,) = tap.check_buffer(buggy_buffer(), K.wgmma_declarations())
    assert (f.tag, f.name, f.field, f.got, f.want) == (K.TAG_B, "B", "SBO", 512, 1024)
    # B's rows 8-23 (16 x 16 f16) move: rows 8-15 to bytes 512-1535 of the tile instead of 1024-2047, ...
    assert "rows 8-23 (256 of 384 elements) would be read from bytes" in f.message
    assert f"descriptor {wgmma_desc(B_ADDR, 512):#018x}" in f.message


def test_the_fixed_kernel_passes_and_repeats_are_counted_once():
    fixed = tap.build_buffer([(K.TAG_A, wgmma_desc(A_ADDR, 1024), 0), (K.TAG_B, wgmma_desc(B_ADDR, 1024), 0)] * 3)
    recs = tap.read(fixed)
    assert [(r.tag, r.count) for r in recs] == [(K.TAG_A, 3), (K.TAG_B, 3)]
    assert tap.check(recs, K.wgmma_declarations()) == []


def test_the_start_address_is_checked_where_declared():
    lay = api.canonical_layout("f16", "K", "128B", rows=K.N, cols=16, start=B_ADDR)
    decl = [tap.Declaration(K.TAG_B, "B", "sm_90a", lay)]
    assert tap.check_buffer(tap.build_buffer([(K.TAG_B, wgmma_desc(B_ADDR, 1024), 0)]), decl) == []
    (f,) = tap.check_buffer(tap.build_buffer([(K.TAG_B, wgmma_desc(B_ADDR + 1024, 1024), 0)]), decl)
    assert (f.field, f.got, f.want) == ("start address", B_ADDR + 1024, B_ADDR)


def test_undeclared_and_unrecorded_tags_are_findings():
    buf = tap.build_buffer([(K.TAG_A, wgmma_desc(A_ADDR, 1024), 0), (9, 0x1234, 0)])
    fs = tap.check_buffer(buf, K.wgmma_declarations())
    assert sorted((f.tag, f.field) for f in fs) == [(K.TAG_B, "tag"), (9, "tag")]
    assert any("declared, but the kernel recorded no descriptor" in f.message for f in fs)
    assert any("no layout is declared" in f.message for f in fs)


def test_lost_records_and_foreign_bytes_are_refused():
    over = tap.build_buffer([(K.TAG_A, 1, 0)] * 5, capacity=4)
    with pytest.raises(tap.TapError, match="recorded 5 descriptors but the buffer holds 4: 1 were lost"):
        tap.read(over)
    with pytest.raises(tap.TapError, match="magic"):
        tap.read(bytes(64))
    with pytest.raises(tap.TapError, match="header says 4 records"):
        tap.read(tap.new_buffer(4)[:40])
    with pytest.raises(tap.TapError, match="shorter"):
        tap.read(b"\0" * 8)
    with pytest.raises(tap.TapError, match="declared twice"):
        tap.check([], K.wgmma_declarations() * 2)
    with pytest.raises(tap.TapError, match="no instruction descriptor"):
        tap.Declaration(1, "A", "sm_90a", K.wgmma_declarations()[0].layout,
                        instr=api.InstrDescriptor("f16", "f16", "f16", "f32", 128, 24))


def test_the_buffer_layout_is_the_headers():
    """new_buffer's bytes are what tc_tap.cuh reads: count, capacity, the magic its #define names, 16-byte records."""
    text = tap.header_source()
    magic = int(re.search(r"#define TC_TAP_MAGIC (0x[0-9a-fA-F]+)ull", text).group(1), 16)
    assert magic == tap.MAGIC == struct.unpack("<Q", b"TCTAP001")[0]
    buf = tap.new_buffer(3)
    assert len(buf) == 16 + 3 * 16 and struct.unpack_from("<IIQ", buf) == (0, 3, magic)
    assert re.search(r"struct tc_tap_record \{\s*unsigned int tag;\s*unsigned int idesc;\s*unsigned long long desc;",
                     text)


# ---------------------------------------------------------------------------------------------------- tcgen05

@pytest.mark.parametrize("bug, want", [
    (0, []),
    (1, [("rule", None)]),  # triton#8032: bits 46-48 not 0b001
    (2, [("idesc n", (8, 24))]),  # N >> 4 in the N >> 3 field: 24 >> 4 = 1 reads as N = 8
])
def test_tcgen05_records_decode_and_diff(bug, want, tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed here: the kernel's descriptor arithmetic cannot be run on the host")
    desc, idesc = K.tcgen05_values(0x800, K.N, bug, tmp_path)
    if bug == 0:  # the hand-worked values: 0x800 >> 4, LBO 1, SBO 64, version 1 << 46, 128B = 2 << 61; the
        # instruction descriptor 1 << 4 (f32), 24 >> 3 = 3 << 17, 128 >> 4 = 8 << 24
        assert (desc, idesc) == (0x4000_4040_0001_0080, 0x0806_0010)
    fs = tap.check_buffer(tap.build_buffer([(K.TAG_TC, desc, idesc)]), [K.tcgen05_declaration()])
    got = [(f.field, None if f.field == "rule" else (f.got, f.want)) for f in fs]
    assert got == want
    if bug == 1:
        assert "bits 46-48" in fs[0].message


# ---------------------------------------------------------------------------------------------------- the kernels

def _sass(source: str, name: str, arch: str) -> list[str]:
    cubin, log = C.nvrtc_compile(source, name, arch, K.options())
    assert cubin is not None, log
    return [ln.strip() for ln in sass.sass_of_bytes(cubin).splitlines()]


def test_the_wgmma_proof_kernel_compiles_with_the_taps_stores():
    lines = _sass(K.WGMMA_SOURCE, K.WGMMA_NAME, "sm_90a")
    assert sum("ATOMG.E.ADD" in ln for ln in lines) == 2  # one slot for A's record, one for B's
    assert sum("STG.E.128" in ln for ln in lines) == 2  # each record one 16-byte store
    assert sum("HGMMA.64x24x16.F32" in ln for ln in lines) == 1


def test_the_tcgen05_tap_compiles_for_sm_100a():
    lines = _sass(K.TCGEN05_SOURCE, K.TCGEN05_NAME, "sm_100a")
    assert sum("ATOMG.E.ADD" in ln for ln in lines) == 1 and sum("STG.E.128" in ln for ln in lines) == 1


def test_the_tap_header_refuses_nothing_a_kernel_without_it_needs():
    """A kernel that includes the header but passes a null buffer records nothing (the tap compiled in, off)."""
    src = K.COMMON + 'extern "C" __global__ void k(tc_tap_buffer* t) { tc_tap(t, 1u, 2ull); }\n'
    assert any("ATOMG" in ln for ln in _sass(src, "k", "sm_90a"))
