"""mma_sync cases: one form (a variant of a kernel key), how A and B reach their registers, one set of inputs.

A case is pure data. Each operand is loaded either straight from global memory, registers packed on the host by the
fragment model (`Load()`), or with ldmatrix [.trans] out of a shared-memory tile (`Load("ldmatrix", ...)`): the
tile's rows are `row_bytes` wide and CuTe's Swizzle<B,4,3> of that width (none for 16: its rows are padded by 16
bytes instead), the operand stored row-contiguous ("rows": A K-major, B N-major) or column-contiguous ("cols": A
M-major, B K-major), each lane's row address solved on the host (ldmatrix.lane_addresses). `cases_for_key` spreads
every variant and every tile an operand allows over the cases (spread, not crossed), adds a saturating case for each
integer variant, and negative controls whose launch deliberately disagrees with the data.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cached_property, lru_cache

from harness.families.mma_sync import forms, fragments, store
from harness.families.mma_sync.ldmatrix import MatrixMoveForm, ldmatrix_plan

VIAS = ("regs", "ldmatrix")
ROW_BYTES = (16, 32, 64, 128)
LD_PATH = {"regs": 0, "ldmatrix": 1, "ldmatrix.trans": 2}  # the kernel's a_path / b_path values
CONTROLS = ("wrong-swizzle", "trans-dropped", "rows+16", "wrong-selector")


@dataclass(frozen=True)
class Load:
    """How one operand reaches its registers: 'regs' (from global memory) or 'ldmatrix' from a tile of `row_bytes`
    rows holding the operand `contiguous` ('rows' or 'cols')."""
    via: str = "regs"
    contiguous: str = ""
    row_bytes: int = 0

    def __post_init__(self):
        if self.via not in VIAS:
            raise ValueError(f"an operand is loaded by {' or '.join(VIAS)}, not {self.via!r}")
        if self.via == "regs" and (self.contiguous or self.row_bytes):
            raise ValueError("an operand loaded from registers has no tile")
        if self.via == "ldmatrix" and (self.contiguous not in ("rows", "cols") or self.row_bytes not in ROW_BYTES):
            raise ValueError(f"an ldmatrix tile holds its operand by 'rows' or 'cols' in rows of "
                             f"{', '.join(map(str, ROW_BYTES))} bytes, not {self.contiguous!r} / {self.row_bytes}")

    @property
    def swizzle(self) -> str | None:
        """The tile's layout, 'pad16' (16-byte rows, unswizzled) or 'sw32' / 'sw64' / 'sw128' (CuTe's Swizzle of
        those rows); None from registers. With `major`, what fleet level 1 covers once (harness/levels.py)."""
        return None if self.via == "regs" else ("pad16" if self.row_bytes == 16 else f"sw{self.row_bytes}")

    @property
    def major(self) -> str | None:
        return self.contiguous or None

    @property
    def tag(self) -> str:
        return "regs" if self.via == "regs" else f"ld-{self.contiguous}-{self.swizzle}"


@dataclass(frozen=True)
class Store:
    """Whether D also leaves through stmatrix (`num` 0: it does not): .x{num} [.trans] .b16 into a tile of
    `row_bytes` rows (store.py), the tile then copied out whole and compared byte by byte."""
    num: int = 0
    trans: bool = False
    row_bytes: int = 0

    def __post_init__(self):
        if self.num == 0 and (self.trans or self.row_bytes):
            raise ValueError("no stmatrix store has no tile and no .trans")
        if self.num and (self.num not in (1, 2, 4) or self.row_bytes not in ROW_BYTES):
            raise ValueError(f"a stmatrix store is .x1, .x2 or .x4 into rows of {', '.join(map(str, ROW_BYTES))} "
                             f"bytes, not .x{self.num} / {self.row_bytes}")

    @property
    def move(self) -> MatrixMoveForm:
        return MatrixMoveForm(self.num, self.trans, store=True)

    @property
    def contiguous(self) -> str:
        """The storage stmatrix writes: D's rows as the tile's rows, or (.trans) D's columns."""
        return "cols" if self.trans else "rows"

    @property
    def tag(self) -> str:
        if not self.num:
            return ""
        return f"st-x{self.num}{'-trans' if self.trans else ''}-{'pad16' if self.row_bytes == 16 else f'sw{self.row_bytes}'}"


class ExactCase:
    """What every case of the family has from its id: a seed drawn from it, and exact data (integer-valued
    inputs, a result equal to the reference bit for bit or wrong)."""

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    @property
    def data(self) -> str:
        return "exact"


@dataclass(frozen=True)
class Case(ExactCase):
    key: forms.KernelKey
    variant_index: int
    a: Load = Load()
    b: Load = Load()
    extra: str = ""  # 'sat': C drawn near the s32 limits so that the sum overflows (.satfinite clamps, else wraps)
    control: str = ""  # '' or one of CONTROLS: what the launch gets deliberately wrong
    operand: str = ""  # the operand a control's wrong load is on ('A' or 'B'; '' for the selector)
    repeat: int = 0  # another draw of the same setup
    st: Store = Store()  # D stored by stmatrix too (kernels of store.stores_d keys)

    def __post_init__(self):
        if not isinstance(self.key, forms.KernelKey):
            raise ValueError(f"a case's key is a KernelKey, not {type(self.key).__name__}")
        if not 0 <= self.variant_index < len(forms.variants(self.key)):
            raise ValueError(f"{self.key.name} has {len(forms.variants(self.key))} variants, not "
                             f"index {self.variant_index}")
        if self.control and self.control not in CONTROLS:
            raise ValueError(f"control {self.control!r} is not one of {', '.join(CONTROLS)}")
        if self.extra not in ("", "sat"):
            raise ValueError(f"extra {self.extra!r} is not '' or 'sat'")
        for op, load in (("A", self.a), ("B", self.b)):
            if load.via == "ldmatrix" and load.contiguous not in ldmatrix_paths(self.key)[op].values():
                raise ValueError(f"{self.key.name}: no ldmatrix loads {op} from {load.contiguous}-contiguous storage")
        if self.st.num and not store.stores_d(self.key):
            raise ValueError(f"{self.key.name}: its D is no stmatrix fragment (a 16-bit D of two registers)")
        if self.st.num and self.st.row_bytes != 16 and store_bytes(self.key, self.st) > self.st.row_bytes:
            raise ValueError(f"{self.key.name}: a {store_bytes(self.key, self.st)}-byte stored row does not fit "
                             f"{self.st.row_bytes}-byte rows")
        if self.operand == "D" and not (self.control == "wrong-swizzle" and self.st.num):
            raise ValueError("a control on D is a wrong swizzle of its stmatrix store")

    @property
    def form(self) -> forms.MmaForm:
        return forms.variants(self.key)[self.variant_index]

    @cached_property
    def id(self) -> str:
        f = self.form
        parts = [f.shape.value, f"{f.alayout.value}.{f.blayout.value}" if f.shape is forms.Shape.M8N8K4 else "",
                 f"{f.dtype}.{f.atype}.{f.btype}.{f.ctype}", "satfinite" if f.satfinite else "",
                 f.bitop.value if f.bitop else "",
                 (f"{f.sparsity.value.replace('::', '-')}{f.selector}" if f.sparse else ""),
                 f"A:{self.a.tag}", f"B:{self.b.tag}", f"D:{self.st.tag}" if self.st.num else "", self.extra, f"r{self.repeat}" if self.repeat else "",
                 f"neg:{self.control}{'@' + self.operand if self.operand else ''}" if self.control else ""]
        return "-".join(p for p in parts if p)

    @property
    def launch_variant(self) -> int:
        """The variant the kernel issues: the case's own, or for a wrong-selector control the same form with the
        next selector (the metadata was placed for the case's own)."""
        if self.control != "wrong-selector":
            return self.variant_index
        return wrong_selector_variant(self.key, self.variant_index)


# ------------------------------------------------------------------------------------------------ operands

@lru_cache(maxsize=None)
def form_maps(form: forms.MmaForm) -> dict[str, fragments.FragmentMap]:
    """A, B, C and D's fragment maps of one form: what places, reads and names the elements of a case."""
    return {"A": fragments.a_map(form), "B": fragments.b_map(form), "C": fragments.acc_map(form, "C"),
            "D": fragments.acc_map(form, "D")}


def operand_maps(key: forms.KernelKey) -> dict[str, fragments.FragmentMap]:
    """The maps of the key's first variant, for what every variant shares: register counts, storage sizes, the
    ldmatrix paths. The element maps of m8n8k4 .f16 differ between its .row / .col layouts (one kernel issues all
    four): a case's elements are placed and named by `form_maps(case.form)`."""
    return form_maps(forms.variants(key)[0])


def words(key: forms.KernelKey, operand: str) -> int:
    """32-bit words of one lane's registers of the operand (an f64 register is two)."""
    m = operand_maps(key)[operand]
    return m.registers * m.register_bits // 32


@lru_cache(maxsize=None)
def ldmatrix_paths(key: forms.KernelKey) -> dict[str, dict[int, str]]:
    """Per operand, the kernel's ldmatrix paths (LD_PATH value -> the storage it loads): those ldmatrix.lane_addresses
    can solve for the operand's fragment (16-bit units: every 16-bit, 8-bit, 4-bit and 1-bit A and B; not tf32, f64
    or m8n8k4 .f16's quad pairs)."""
    out: dict[str, dict[int, str]] = {}
    for op in ("A", "B"):
        paths: dict[int, str] = {}
        for contiguous in ("rows", "cols"):
            try:
                trans, _, _ = ldmatrix_plan(operand_maps(key)[op], contiguous)
            except ValueError:
                continue
            paths[LD_PATH["ldmatrix.trans" if trans else "ldmatrix"]] = contiguous
        out[op] = paths
    return out


def path_of(key: forms.KernelKey, operand: str, load: Load) -> int:
    if load.via == "regs":
        return LD_PATH["regs"]
    return next(p for p, c in ldmatrix_paths(key)[operand].items() if c == load.contiguous)


def block_bytes(key: forms.KernelKey, operand: str, contiguous: str) -> int:
    """Bytes of one storage row of the operand block (its contiguous dimension)."""
    m = operand_maps(key)[operand]
    return (m.cols if contiguous == "rows" else m.rows) * m.bits // 8


def store_bytes(key: forms.KernelKey, st: Store) -> int:
    """Bytes of one stored row of the tile stmatrix writes (its contiguous dimension)."""
    m = store.store_map(key, st.num)
    return (m.cols if st.contiguous == "rows" else m.rows) * 2


def stores(key: forms.KernelKey) -> list[Store]:
    """The stmatrix stores of a key's cases: every .x1/.x2/.x4 [.trans] once, the row widths turned by the key's
    place among the storing keys, so that the storing kernels together store every form into every width that holds
    its rows."""
    if not store.stores_d(key):
        return []
    turn = [k for k in forms.all_kernel_keys() if store.stores_d(k)].index(key)
    out = []
    for j, move in enumerate(store.STORE_MOVES):
        for step in range(len(ROW_BYTES)):
            rb = ROW_BYTES[(j + turn + step) % len(ROW_BYTES)]
            st = Store(move.num, move.trans, rb)
            if rb == 16 or store_bytes(key, st) <= rb:
                out.append(st)
                break
    return out


def tiles(key: forms.KernelKey, operand: str) -> list[Load]:
    """Every ldmatrix tile the operand can be loaded from: each storage its paths allow, in rows of each width that
    holds a block row (16 bytes: padded, no swizzle)."""
    out = []
    for contiguous in ldmatrix_paths(key)[operand].values():
        for rb in ROW_BYTES:
            if rb == 16 or block_bytes(key, operand, contiguous) <= rb:
                out.append(Load("ldmatrix", contiguous, rb))
    return out


# ------------------------------------------------------------------------------------------------ planning

def wrong_selector_variant(key: forms.KernelKey, index: int) -> int:
    """The variant index of the same form with the next sparsity selector."""
    f = forms.variants(key)[index]
    sels = forms.selectors(f.shape, f.atype)
    want = sels[(sels.index(f.selector) + 1) % len(sels)]
    return next(i for i, g in enumerate(forms.variants(key))
                if g.selector == want and (g.atype, g.btype, g.satfinite, g.sparsity) == (f.atype, f.btype,
                                                                                        f.satfinite, f.sparsity))


def cases_for_key(key: forms.KernelKey, controls: bool = True) -> list[Case]:
    """Every variant from registers, every tile of A and of B (spread over the variants), a saturating case per
    integer variant, and the negative controls."""
    vs = forms.variants(key)
    out = [Case(key, i) for i in range(len(vs))]
    a_tiles, b_tiles = tiles(key, "A"), tiles(key, "B")
    for j in range(max(len(a_tiles), len(b_tiles))):
        a = a_tiles[j % len(a_tiles)] if a_tiles else Load()
        b = b_tiles[(j * 3 + 1) % len(b_tiles)] if b_tiles else Load()
        out.append(Case(key, j % len(vs), a, b))
    if key.dtype == "s32":
        out += [Case(key, i, extra="sat") for i in range(len(vs))]
    out += [Case(key, j % len(vs), st=st) for j, st in enumerate(stores(key))]
    if controls:
        out += negative_controls(key)
    unique = {c.id: c for c in out}
    return list(unique.values())


def negative_controls(key: forms.KernelKey) -> list[Case]:
    """Each control the key allows, on the operand whose ldmatrix it can get wrong (A where A has one, else B):
    the row addresses computed for another swizzle (a 128-byte tile read as 64-byte), .trans dropped (a transposed
    load issued plain), every row address one 16-byte chunk on; and, for a sparse form with more than one selector,
    the next selector launched. Which of them reads something else is the reference's to say: one whose misread
    would equal the intended product is left out there (`reference.vacuous`)."""
    out = []
    vs = forms.variants(key)
    for op in ("A", "B"):
        paths = ldmatrix_paths(key)[op]
        if not paths:
            continue
        plain = "rows" if op == "A" else "cols"
        contiguous = plain if plain in paths.values() else next(iter(paths.values()))
        wide = max(t.row_bytes for t in tiles(key, op) if t.contiguous == contiguous)
        tile = Load("ldmatrix", contiguous, wide)
        other = Load()
        ab = (tile, other) if op == "A" else (other, tile)
        if wide > 32:
            out.append(Case(key, 0, *ab, control="wrong-swizzle", operand=op))
        out.append(Case(key, 0, *ab, control="rows+16", operand=op))
        trans = [c for p, c in paths.items() if p == LD_PATH["ldmatrix.trans"]]
        if trans:
            t = Load("ldmatrix", trans[0], max(x.row_bytes for x in tiles(key, op) if x.contiguous == trans[0]))
            out.append(Case(key, 0, *((t, other) if op == "A" else (other, t)), control="trans-dropped", operand=op))
        break
    if key.sparse and len(forms.selectors(vs[0].shape, vs[0].atype)) > 1:
        out.append(Case(key, 0, control="wrong-selector"))
    if store.stores_d(key):  # stmatrix's lane addresses solved for the 64-byte swizzle, the tile's is 128-byte
        out.append(Case(key, 0, st=Store(4, False, 128), control="wrong-swizzle", operand="D"))
    return out
