"""ldmatrix / stmatrix .m8n8 .x1/.x2/.x4 [.trans] .b16 (PTX ISA 9.7.14.5.15 and 9.7.14.5.16), and how real kernels
use ldmatrix to load an mma operand fragment out of a (swizzled) shared-memory tile.

An .m8n8 matrix is 8 rows of 8 .b16 elements, each row 16 contiguous bytes whose address one lane supplies: row
i of matrix j comes from lane 8j + i (.x1 reads lanes 0-7, .x2 lanes 0-15, .x4 all 32). Register j of lane l
receives matrix j's row l // 4, elements 2 (l % 4) and 2 (l % 4) + 1 (low half first); with .trans, the same
positions of the transposed matrix: rows 2 (l % 4) and 2 (l % 4) + 1 of column l // 4. stmatrix (sm_90) stores
the same maps the other way.

`Swizzle` is CuTe's Swizzle<B,M,S> on byte addresses: bits [M+S, M+S+B) XORed into bits [M, M+B); a tile of
16/32/64/128-byte rows uses Swizzle<0|1|2|3, 4, 3> (harness.spec.layouts.SWIZZLE_BMS). `lane_addresses` solves,
from an operand's fragment map, which 8x8 block each register is and so which row address each lane must give.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from harness.families.mma_sync.fragments import WARP, FragmentMap
from harness.spec import layouts


@dataclass(frozen=True)
class MatrixMoveForm:
    """One ldmatrix / stmatrix form: .m8n8 .x{num} [.trans] .b16."""
    num: int
    trans: bool = False
    store: bool = False  # stmatrix (sm_90, PTX 7.8) instead of ldmatrix (sm_75, PTX 6.5)

    def __post_init__(self):
        if self.num not in (1, 2, 4):
            raise ValueError(f".x{self.num} is not an ldmatrix/stmatrix count: .x1, .x2 or .x4")

    @property
    def min_sm(self) -> int:
        return 90 if self.store else 75

    @property
    def min_ptx(self) -> tuple[int, int]:
        return (7, 8) if self.store else (6, 5)

    def instruction(self) -> str:
        op = "stmatrix" if self.store else "ldmatrix"
        return f"{op}.sync.aligned.m8n8.x{self.num}{'.trans' if self.trans else ''}.shared.b16"

    @cached_property
    def address_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(matrix, row) whose 16-byte row address lane l supplies, [32]; -1 for lanes whose address is unread."""
        lane = np.arange(WARP)
        used = lane < 8 * self.num
        return np.where(used, lane // 8, -1), np.where(used, lane % 8, -1)

    @cached_property
    def elements(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(matrix, row, col) of the .b16 element in register r, half h of lane l: arrays [32, num, 2]; row is the
        matrix row in memory (the one whose address lane 8 * matrix + row supplies)."""
        lane = np.arange(WARP)[:, None, None]
        reg = np.arange(self.num)[None, :, None]
        half = np.arange(2)[None, None, :]
        near, far = lane // 4 + 0 * half, 2 * (lane % 4) + half
        row, col = (far, near) if self.trans else (near, far)
        shape = (WARP, self.num, 2)
        return tuple(np.broadcast_to(a, shape).copy() for a in (reg + 0 * lane, row, col))


ALL_MOVES = tuple(MatrixMoveForm(n, t, s) for s in (False, True) for t in (False, True) for n in (1, 2, 4))


# ------------------------------------------------------------------------------------------------ swizzles

@dataclass(frozen=True)
class Swizzle:
    """CuTe's Swizzle<B, M, S> on (byte) offsets: bits [M+S, M+S+B) XORed into bits [M, M+B)."""
    b: int
    m: int
    s: int

    def __post_init__(self):
        if self.b < 0 or self.m < 0 or self.s < self.b:
            raise ValueError(f"Swizzle<{self.b},{self.m},{self.s}> needs B >= 0, M >= 0 and S >= B (the source and "
                             "destination bit ranges must not overlap)")

    def __call__(self, offset):
        o = np.asarray(offset, dtype=np.int64)
        mask = ((1 << self.b) - 1) << (self.m + self.s)
        return o ^ ((o & mask) >> self.s)


ROW_SWIZZLES = {16: Swizzle(*layouts.SWIZZLE_BMS["none"]), 32: Swizzle(*layouts.SWIZZLE_BMS["32B"]),
                64: Swizzle(*layouts.SWIZZLE_BMS["64B"]), 128: Swizzle(*layouts.SWIZZLE_BMS["128B"])}


@dataclass(frozen=True)
class SmemTile:
    """A rows x cols tile of .b16 units in shared memory, row after row (`pitch` bytes apart), each byte address
    then swizzled: the layout CuTe's SW32/SW64/SW128 K-major atoms give 16-bit operands."""
    rows: int
    cols: int  # .b16 units per row
    swizzle: Swizzle = Swizzle(0, 4, 3)
    base: int = 0  # byte address of the tile; a swizzled one starts on its pattern's boundary
    pitch: int | None = None  # bytes between rows; default cols * 2

    def __post_init__(self):
        pitch = self.pitch if self.pitch is not None else 2 * self.cols
        object.__setattr__(self, "pitch", pitch)
        if pitch % 16 or self.base % 16:
            raise ValueError(f"ldmatrix rows are 16-byte aligned: pitch {pitch} and base {self.base} must be "
                             "multiples of 16")
        pattern = 1 << (self.swizzle.m + self.swizzle.s + self.swizzle.b)
        if self.swizzle.b and self.base % pattern:
            raise ValueError(f"a Swizzle<{self.swizzle.b},{self.swizzle.m},{self.swizzle.s}> tile starts on a "
                             f"{pattern}-byte boundary, not at {self.base}")

    def address(self, row, col):
        """Byte address of .b16 unit (row, col)."""
        return self.swizzle(self.base + np.asarray(row) * self.pitch + 2 * np.asarray(col))


# ------------------------------------------------------------------------------------------------ operands

def _storage(frag: FragmentMap, contiguous: str):
    """Each fragment value's (storage row, storage col in elements) [32, values]: contiguous 'rows' keeps the
    operand's (row, col), 'cols' stores its columns as rows (A is K-major as 'rows', B K-major as 'cols')."""
    row, col, _ = frag.table
    if contiguous == "rows":
        return row, col
    if contiguous == "cols":
        return col, row
    raise ValueError(f"contiguous is 'rows' or 'cols', not {contiguous!r}")


def ldmatrix_plan(frag: FragmentMap, contiguous: str) -> tuple[bool, np.ndarray, np.ndarray]:
    """(trans, storage row origin [registers], storage .b16 column origin [registers]) such that ldmatrix
    .x{registers} [.trans] from those 8x8 blocks fills each register exactly as the fragment holds it; ValueError
    where no ldmatrix can (elements wider than 16 bits, a register spread over more than one block, ...)."""
    if frag.bits > 16 or frag.instances != 1:
        raise ValueError(f"ldmatrix .b16 moves 16-bit units: an {frag.bits}-bit {frag.operand} fragment "
                         "is not one" if frag.bits > 16 else "m8n8k4 .f16's quad-pair fragments are not ldmatrix's")
    per_unit = 16 // frag.bits  # elements in one .b16 unit
    srow, scol = _storage(frag, contiguous)
    v = np.arange(frag.values)
    reg, sub = frag.register_of(v)
    # unit h of a register holds sub-elements h * per_unit .. + per_unit - 1, which must be one .b16 unit, in order
    if np.any(scol % per_unit != (sub % per_unit)[None, :]):
        raise ValueError(f"{frag.operand}'s sub-elements of one .b16 unit are not consecutive in storage")
    unit_row = srow[:, ::per_unit].reshape(WARP, frag.registers, 2)
    unit_col = (scol[:, ::per_unit] // per_unit).reshape(WARP, frag.registers, 2)
    move = MatrixMoveForm(frag.registers if frag.registers in (1, 2, 4) else 4)
    for trans in (False, True):
        _, row, col = MatrixMoveForm(move.num, trans).elements
        r0, c0 = unit_row[0, :, 0] - row[0, :, 0], unit_col[0, :, 0] - col[0, :, 0]
        if frag.registers == move.num and np.array_equal(unit_row, row + r0[None, :, None]) and np.array_equal(
                unit_col, col + c0[None, :, None]):
            return trans, r0, c0
    raise ValueError(f"no ldmatrix .m8n8 [.trans] gives the {frag.operand} fragment from "
                     f"{'row' if contiguous == 'rows' else 'column'}-contiguous storage")


def lane_addresses(frag: FragmentMap, contiguous: str, tile: SmemTile, row0: int = 0, col0: int = 0):
    """(MatrixMoveForm, row addresses [32]) that load the fragment of the operand block whose storage origin is
    (row0, col0 in .b16 units) of `tile`: lane 8j + i gives row i of register j's block."""
    trans, r0, c0 = ldmatrix_plan(frag, contiguous)
    move = MatrixMoveForm(frag.registers, trans)
    matrix, row = move.address_rows
    used = matrix >= 0
    m, r = np.where(used, matrix, 0), np.where(used, row, 0)
    addr = tile.address(row0 + r0[m] + r, col0 + c0[m])
    return move, np.where(used, addr, 0)


# ------------------------------------------------------------------------------------------------ simulation

def ldmatrix(move: MatrixMoveForm, addresses, image: np.ndarray) -> np.ndarray:
    """What ldmatrix leaves in the registers (uint32 [32, num]) given each lane's row address and a shared-memory
    image (uint8)."""
    if move.store:
        raise ValueError("stmatrix stores; use stmatrix()")
    matrix, row, col = move.elements
    addr = np.asarray(addresses, np.int64)[8 * matrix + row] + 2 * col
    img = np.asarray(image, np.uint8)
    half = img[addr].astype(np.uint32) | (img[addr + 1].astype(np.uint32) << 8)
    return half[..., 0] | (half[..., 1] << 16)


def stmatrix(move: MatrixMoveForm, addresses, registers, image: np.ndarray) -> None:
    """Store each lane's registers (uint32 [32, num]) through stmatrix into a shared-memory image (in place)."""
    if not move.store:
        raise ValueError("ldmatrix loads; use ldmatrix()")
    matrix, row, col = move.elements
    addr = np.asarray(addresses, np.int64)[8 * matrix + row] + 2 * col
    regs = np.asarray(registers, np.uint32)[..., None] >> np.array([0, 16], np.uint32)
    image[addr] = (regs & 0xFF).astype(np.uint8)
    image[addr + 1] = ((regs >> 8) & 0xFF).astype(np.uint8)
