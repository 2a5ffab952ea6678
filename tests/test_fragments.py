import numpy as np
import pytest

from harness.spec import fragments
from harness.families.wgmma import forms as wgmma


@pytest.mark.parametrize("dtype", ["f32", "s32", "f16"])
@pytest.mark.parametrize("n", wgmma.N_ALL)
def test_d_fragment_covers_the_tile_exactly_once(n, dtype):
    f = fragments.wgmma_d_fragment(n, dtype)
    assert f.row.shape == (128, n // 2)
    cover = np.zeros((64, n), int)
    np.add.at(cover, (f.row, f.col), 1)
    assert (cover == 1).all()
    assert f.regs_per_thread == (n // 4 if dtype == "f16" else n // 2)
    assert f.reg.max() == f.regs_per_thread - 1


def test_d_fragment_matches_the_spec_formula_for_thread_37():
    f = fragments.wgmma_d_fragment(16, "f32")
    # t = 37: warp 1, lane 5 -> rows 16 + 1 (+8), cols 2*(5%4) (+1) (+8)
    assert list(zip(f.row[37], f.col[37])) == [(17, 2), (17, 3), (25, 2), (25, 3), (17, 10), (17, 11), (25, 10), (25, 11)]


def test_a_fragments_match_the_spec_table_for_thread_37():
    """Worked by hand from the spec's table (/work/shared/spec/README.md, Figures 148-155): t = 37 is warp 1,
    lane 5, so l/4 = 1 and l%4 = 1; element j's register and bit follow "lower-numbered elements sit in the
    lower bits"."""
    f = fragments.wgmma_a_fragment("f16")  # row 17 + 8*((j/2)%2), col 2 + (j%2) + 8*(j/4)
    assert list(zip(f.row[37], f.col[37])) == [(17, 2), (17, 3), (25, 2), (25, 3), (17, 10), (17, 11), (25, 10), (25, 11)]
    assert list(zip(f.reg[37], f.shift[37])) == [(0, 0), (0, 16), (1, 0), (1, 16), (2, 0), (2, 16), (3, 0), (3, 16)]
    f = fragments.wgmma_a_fragment("tf32")  # row 17 + 8*(j%2), col 1 + 4*(j/2)
    assert list(zip(f.row[37], f.col[37])) == [(17, 1), (25, 1), (17, 5), (25, 5)]
    assert list(f.reg[37]) == [0, 1, 2, 3] and not f.shift[37].any()
    f = fragments.wgmma_a_fragment("s8")  # row 17 + 8*((j/4)%2), col 4 + (j%4) + 16*(j/8)
    assert list(zip(f.row[37], f.col[37])) == ([(17, c) for c in (4, 5, 6, 7)] + [(25, c) for c in (4, 5, 6, 7)]
                                               + [(17, c) for c in (20, 21, 22, 23)] + [(25, c) for c in (20, 21, 22, 23)])
    assert list(f.reg[37]) == [j // 4 for j in range(16)] and list(f.shift[37]) == [8 * (j % 4) for j in range(16)]
    f = fragments.wgmma_a_fragment("b1")  # row 17 + 8*((j/32)%2), col 32 + (j%32) + 128*(j/64)
    assert list(zip(f.row[37], f.col[37])) == ([(17, 32 + c) for c in range(32)] + [(25, 32 + c) for c in range(32)]
                                               + [(17, 160 + c) for c in range(32)] + [(25, 160 + c) for c in range(32)])
    assert list(f.reg[37]) == [j // 32 for j in range(128)] and list(f.shift[37]) == [j % 32 for j in range(128)]


def test_d_fragment_f16_packs_two_elements_per_register_low_first():
    """Spec: f16 D is N/4 .f16x2 registers holding d0..d(N/2-1), low half first (hand-worked for N = 16)."""
    f = fragments.wgmma_d_fragment(16, "f16")
    assert list(zip(f.reg[37], f.shift[37])) == [(0, 0), (0, 16), (1, 0), (1, 16), (2, 0), (2, 16), (3, 0), (3, 16)]
    assert f.regs_per_thread == 4 and f.bits == 16


@pytest.mark.parametrize("atype,k", [("f16", 16), ("tf32", 8), ("e4m3", 32), ("s8", 32), ("b1", 256)])
def test_a_fragment_covers_64xK_exactly_once_in_four_registers(atype, k):
    f = fragments.wgmma_a_fragment(atype)
    cover = np.zeros((64, k), int)
    np.add.at(cover, (f.row, f.col), 1)
    assert (cover == 1).all()
    assert f.reg.max() == 3 and f.regs_per_thread == 4
    assert (f.shift + f.bits <= 32).all()


@pytest.mark.parametrize("atype", ["f16", "tf32", "e4m3", "s8", "b1"])
def test_gather_scatter_round_trip(atype):
    f = fragments.wgmma_a_fragment(atype)
    k = int(f.col.max()) + 1
    rng = np.random.default_rng(1)
    m = rng.integers(0, 1 << f.bits, size=(64, k)).astype(np.uint64)
    regs = fragments.gather_registers(f, m)
    assert regs.dtype == np.uint32 and regs.shape == (128, 4)
    assert np.array_equal(fragments.scatter_registers(f, regs, (64, k)), m)


def test_lower_numbered_elements_sit_in_lower_bits():
    f = fragments.wgmma_a_fragment("s8")
    m = np.zeros((64, 32), np.uint64)
    m[f.row[0, 0], f.col[0, 0]] = 0xAB
    m[f.row[0, 1], f.col[0, 1]] = 0xCD
    assert fragments.gather_registers(f, m)[0, 0] == 0xCDAB


def test_illegal_shapes_are_refused():
    with pytest.raises(ValueError, match="N = 12"):
        fragments.wgmma_d_fragment(12, "f32")
    with pytest.raises(ValueError, match="f64"):
        fragments.wgmma_d_fragment(16, "f64")
    with pytest.raises(ValueError):
        fragments.wgmma_a_fragment("e2m1")


@pytest.mark.parametrize("shape,num,lanes,cols", [("32x32b", 4, 32, 4), ("16x64b", 2, 16, 4),
                                                   ("16x128b", 2, 16, 8), ("16x256b", 1, 16, 8),
                                                   ("16x32bx2", 4, 16, 4)])
def test_tmem_ld_shapes_cover_their_lanes_and_columns_once(shape, num, lanes, cols):
    lane, col = fragments.tmem_ld_fragment(shape, num, imm_half_offset=num)
    cover = np.zeros((32, 64), int)
    np.add.at(cover, (lane, col), 1)
    assert cover.max() == 1
    assert cover.sum() == lane.size
    if shape == "16x32bx2":
        assert set(np.unique(col)) == set(range(2 * num))
    else:
        assert cover[:lanes, :cols].all() and cover.sum() == lanes * cols


def test_gathering_from_a_matrix_smaller_than_the_fragment_is_an_error_not_a_wrapped_read():
    """gather_registers indexes the matrix flat (row * cols + col); a fragment that reaches past the matrix must
    still be refused as numpy's (row, col) indexing refuses it, not read the next row's elements."""
    frag = fragments.wgmma_d_fragment(16, "f32")
    with pytest.raises(IndexError):
        fragments.gather_registers(frag, np.zeros((80, 12), np.uint64))  # in range flat, not by (row, col)
    with pytest.raises(IndexError):
        fragments.gather_registers(frag, np.zeros((32, 16), np.uint64))


def test_a_fragment_holds_read_only_copies_of_its_arrays():
    """A fragment's extent is computed once: the arrays it was built from, changed afterwards, must not change it
    (a column moved past the matrix would then be read flat from the next row instead of refused)."""
    d = fragments.wgmma_d_fragment(16, "f32")
    col = d.col.copy()
    frag = fragments.Fragment(d.row.copy(), col, d.reg.copy(), d.shift.copy(), d.bits, d.regs_per_thread)
    m = np.arange(64 * 16, dtype=np.uint64).reshape(64, 16)
    before = fragments.gather_registers(frag, m)
    col[0, 0] = 17  # the caller's array, after the gather computed the extent
    assert np.array_equal(fragments.gather_registers(frag, m), before)
    for a in (frag.row, frag.col, frag.reg, frag.shift):
        with pytest.raises(ValueError):
            a[0, 0] = 0


def _packed_by_or(frag, m: np.ndarray) -> np.ndarray:
    """The registers by the fragment's definition alone: each element's bits OR-ed in at its register and shift."""
    vals = m[frag.row, frag.col].astype(np.uint64) & np.uint64((1 << frag.bits) - 1)
    regs = np.zeros((frag.row.shape[0], frag.regs_per_thread), np.uint64)
    t = np.broadcast_to(np.arange(frag.row.shape[0])[:, None], frag.row.shape)
    np.bitwise_or.at(regs, (t, frag.reg), vals << frag.shift.astype(np.uint64))
    return regs.astype(np.uint32)


FRAGMENTS = [("D", n, dt) for n in (8, 24, 256) for dt in ("f32", "f16", "s32")] + \
    [("A", 0, t) for t in ("f16", "bf16", "tf32", "e4m3", "s8", "b1")]


@pytest.mark.parametrize("which,n,dtype", FRAGMENTS, ids=lambda x: str(x))
def test_gathering_a_stack_gives_each_matrix_as_alone_and_as_the_fragment_defines(which, n, dtype):
    """gather_registers of a stack [cases, rows, cols] (a launch's packing in one call), and its shortcut for fields
    of whole bytes (the registers' little-endian words), give each matrix's registers as the fragment's rows,
    columns, registers and shifts define them; elements wider than their field keep only its bits."""
    frag = fragments.wgmma_d_fragment(n, dtype) if which == "D" else fragments.wgmma_a_fragment(dtype)
    rows, cols = int(frag.row.max()) + 1, int(frag.col.max()) + 1
    stack = np.random.default_rng(n).integers(0, 1 << 40, size=(3, rows, cols)).astype(np.uint64)
    together = fragments.gather_registers(frag, stack)
    assert together.dtype == np.uint32 and together.shape == (3, 128, frag.regs_per_thread)
    for m, regs in zip(stack, together):
        assert np.array_equal(regs, _packed_by_or(frag, m))
        assert np.array_equal(fragments.gather_registers(frag, m), regs)
    assert fragments.gather_registers(frag, stack[:0]).shape == (0, 128, frag.regs_per_thread)
    assert frag.byte_packed == (frag.bits in (8, 16, 32))  # every wgmma fragment of those widths takes the shortcut
    # bits handed over in a register-wide type (a float accumulator's own width) are packed in it, the same; in a
    # narrower one, widened first
    for narrow in (np.uint32, np.uint16):
        mask = np.uint64((1 << (8 * np.dtype(narrow).itemsize)) - 1)
        assert np.array_equal(fragments.gather_registers(frag, (stack & mask).astype(narrow)),
                              fragments.gather_registers(frag, stack & mask))


def test_fields_of_whole_bytes_that_do_not_fill_their_register_are_packed_by_the_definition():
    """A 16-bit element alone in its register, or two 8-bit ones per register: not the little-endian-word shortcut
    (which needs the register filled), but the registers as the fragment defines them."""
    t = np.arange(128)[:, None]
    for bits, per_reg in ((16, 1), (8, 2)):
        e = np.arange(4 * per_reg)[None, :]
        frag = fragments.Fragment(np.broadcast_to(t % 64, (128, e.size)), np.broadcast_to(e + 0 * t, (128, e.size)),
                                  np.broadcast_to(e // per_reg, (128, e.size)),
                                  np.broadcast_to(e % per_reg * bits, (128, e.size)), bits, 4)
        assert not frag.byte_packed
        m = np.random.default_rng(bits).integers(0, 1 << 20, size=(2, 64, e.size)).astype(np.uint64)
        for one, regs in zip(m, fragments.gather_registers(frag, m)):
            assert np.array_equal(regs, _packed_by_or(frag, one))


def test_a_fragment_in_register_order_for_thread_0_only_is_packed_by_the_definition():
    """Register order is a property of every thread: a fragment whose thread 1 holds its elements in the other
    register order must not take the in-order shortcuts (it would pack thread 1's registers wrong)."""
    t = np.arange(128)[:, None]
    e = np.arange(4)[None, :]
    reg = np.broadcast_to(e // 2, (128, 4)).copy()
    reg[1] = 1 - reg[1]  # thread 1: elements 0-1 in register 1, 2-3 in register 0
    frag = fragments.Fragment(np.broadcast_to(t % 64, (128, 4)), np.broadcast_to(e + 0 * t, (128, 4)), reg,
                              np.broadcast_to(e % 2 * 16, (128, 4)), 16, 2)
    assert not frag.in_register_order and not frag.byte_packed
    m = np.random.default_rng(3).integers(0, 1 << 16, size=(64, 4)).astype(np.uint64)
    assert np.array_equal(fragments.gather_registers(frag, m), _packed_by_or(frag, m))
