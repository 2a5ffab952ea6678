"""The descriptor tap's Python side: make the debug buffer a kernel records its descriptors into
(harness/kernels/tc_tap.cuh), read it back, decode every value, and diff it against the layouts the user declares,
one per tag.

    from harness import api, tap
    buf = tap.new_buffer(64)                       # copy to the device; pass its pointer to the kernel
    ... launch; copy the buffer back into `buf` ...
    decls = [tap.Declaration(1, "B", "sm_90a", api.canonical_layout("f16", "K", "128B", 24, 64))]
    for f in tap.check_buffer(buf, decls):
        print(f.message)                           # e.g. "tag 1 (B): SBO is 512, the layout needs 1024: ..."

Nothing is dropped silently: a buffer that is not a tap buffer, or that lost records (more asked for than its
capacity), raises TapError; a record whose tag nobody declared, and a declared tag no record carries, are findings.
Identical records (every thread of a warpgroup taps the same value) are checked once, with their count.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from harness import api
from harness.kernels import KERNEL_DIR
from harness.spec.descriptors import DescriptorError

__all__ = ["HEADER", "MAGIC", "RECORD", "TapError", "Record", "Declaration", "Finding", "include_dir",
           "header_source", "new_buffer", "build_buffer", "read", "check", "check_buffer"]

MAGIC = int.from_bytes(b"TCTAP001", "little")  # TC_TAP_MAGIC in tc_tap.cuh
HEADER = struct.Struct("<IIQ")  # count, capacity, magic
RECORD = struct.Struct("<IIQ")  # tag, idesc, desc


class TapError(ValueError):
    """A buffer that cannot be read as a tap buffer, or one that lost records."""


@dataclass(frozen=True)
class Record:
    """One distinct (tag, descriptor, instruction descriptor) a kernel recorded, and how many times."""
    tag: int
    desc: int
    idesc: int
    count: int = 1


@dataclass(frozen=True)
class Declaration:
    """What the user intends for one tag: the operand's layout in shared memory (harness.api.canonical_layout or
    any SmemLayout), the arch whose descriptor format the value is in, and for tcgen05 the instruction descriptor
    the MMA is issued with (None: not checked). check_start False: the start address is the kernel's own business
    (a buffer placed at run time) and is not compared; the rest of the layout is, relative to the recorded start."""
    tag: int
    name: str
    arch: str
    layout: api.SmemLayout
    instr: api.InstrDescriptor | None = None
    check_start: bool = True

    def __post_init__(self):
        if not 0 <= self.tag < 1 << 32:
            raise TapError(f"tag {self.tag!r} does not fit the record's 32 bits")
        if self.arch not in api.Arch.values():
            raise TapError(f"{self.name}: arch must be one of {', '.join(api.Arch.values())}, not {self.arch!r}")
        if self.instr is not None and self.arch == api.Arch.SM_90A:
            raise TapError(f"{self.name}: wgmma (sm_90a) has no instruction descriptor to check")
        api.canonical_layout(self.layout.dtype, self.layout.major, self.layout.swizzle, self.layout.rows,
                             self.layout.cols, self.layout.lbo, self.layout.sbo, self.layout.start,
                             self.layout.base_offset)  # LayoutError for a layout the descriptor cannot express


@dataclass(frozen=True)
class Finding:
    """One disagreement: the tag (and its declared name), the field, the value found and the value intended, and
    one sentence saying so (with what the tensor core would read instead, for a layout field)."""
    tag: int
    name: str
    field: str
    got: object
    want: object
    message: str


def include_dir() -> Path:
    """The folder holding tc_tap.cuh: give it to NVRTC or nvcc as -I."""
    return KERNEL_DIR


def header_source() -> str:
    return (KERNEL_DIR / "tc_tap.cuh").read_text()


def new_buffer(capacity: int) -> bytearray:
    """The initial bytes of a buffer for `capacity` records (count 0, the capacity, the magic, zeroed records): copy
    them to the device before the launch. A fresh bytearray each call: the caller may copy results back into it."""
    if not isinstance(capacity, int) or not 0 < capacity < 1 << 32:
        raise TapError(f"capacity {capacity!r}: give a positive number of records")
    buf = bytearray(HEADER.size + capacity * RECORD.size)
    HEADER.pack_into(buf, 0, 0, capacity, MAGIC)
    return buf


def build_buffer(records, capacity: int | None = None) -> bytearray:
    """A buffer as a kernel would leave it after recording `records` ((tag, desc, idesc) triples) in order: for
    tests, and for a kernel that writes its records another way. More records than `capacity` are counted, not
    stored, as tc_tap does."""
    records = list(records)
    buf = new_buffer(capacity or max(1, len(records)))
    cap = HEADER.unpack_from(buf, 0)[1]
    for i, (tag, desc, idesc) in enumerate(records):
        if i < cap:
            RECORD.pack_into(buf, HEADER.size + i * RECORD.size, tag, idesc, desc)
    HEADER.pack_into(buf, 0, len(records), cap, MAGIC)
    return buf


def read(buffer) -> list[Record]:
    """The distinct records of a buffer copied back from the device, in the order each first appears. TapError for
    bytes that are not a tap buffer (no magic, a capacity the bytes do not hold) or that lost records."""
    data = memoryview(bytes(buffer)) if not isinstance(buffer, (bytes, bytearray, memoryview)) else memoryview(buffer)
    if data.nbytes < HEADER.size:
        raise TapError(f"{data.nbytes} bytes: shorter than the tap buffer's {HEADER.size}-byte header")
    count, cap, magic = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise TapError(f"no tap buffer: its magic is {magic:#018x}, not {MAGIC:#018x} (was it made by new_buffer "
                       "and copied to the device before the launch?)")
    if data.nbytes < HEADER.size + cap * RECORD.size:
        raise TapError(f"the header says {cap} records but the {data.nbytes} bytes hold "
                       f"{(data.nbytes - HEADER.size) // RECORD.size}")
    if count > cap:
        raise TapError(f"the kernel recorded {count} descriptors but the buffer holds {cap}: {count - cap} were "
                       f"lost; give new_buffer a capacity of at least {count}")
    seen: dict[tuple[int, int, int], int] = {}
    for i in range(count):
        tag, idesc, desc = RECORD.unpack_from(data, HEADER.size + i * RECORD.size)
        seen[(tag, desc, idesc)] = seen.get((tag, desc, idesc), 0) + 1
    return [Record(tag, desc, idesc, n) for (tag, desc, idesc), n in seen.items()]


def _instr_findings(rec: Record, decl: Declaration) -> list[Finding]:
    out = []
    d = decl.instr
    got = api.decode_instr_descriptor(rec.idesc, d.kind, d.cta_group, d.ws, decl.arch, d.scale_vec)
    try:
        want_value = api.encode_instr_descriptor(d, decl.arch)
    except DescriptorError as e:
        raise TapError(f"{decl.name}: the declared instruction descriptor is not valid: {e}") from None
    want = api.decode_instr_descriptor(want_value, d.kind, d.cta_group, d.ws, decl.arch, d.scale_vec)
    for p in got.problems:
        out.append(Finding(rec.tag, decl.name, "idesc rule", got.value, want.value,
                           f"tag {rec.tag} ({decl.name}): the instruction descriptor {got.value} breaks a rule: {p}"))
    for key, want_v in want.fields.items():
        got_v = got.fields.get(key)
        if got_v != want_v:
            out.append(Finding(rec.tag, decl.name, f"idesc {key}", got_v, want_v,
                               f"tag {rec.tag} ({decl.name}): instruction descriptor {key} is {got_v}, the MMA "
                               f"needs {want_v} (value {got.value}, intended {want.value})"))
    return out


def check(records: list[Record], declarations) -> list[Finding]:
    """Every disagreement between what a kernel recorded and what the user declared (empty: every descriptor is
    the intended one): per record, one finding per disagreeing field of the shared-memory descriptor
    (api.check_descriptor, with what the tensor core would read instead) and of the instruction descriptor; a
    record of an undeclared tag; a declared tag no record carries."""
    decls = {}
    for d in declarations:
        if d.tag in decls:
            raise TapError(f"tag {d.tag} is declared twice ({decls[d.tag].name}, {d.name})")
        decls[d.tag] = d
    out = []
    for rec in records:
        decl = decls.get(rec.tag)
        if decl is None:
            out.append(Finding(rec.tag, "", "tag", rec.tag, None,
                               f"tag {rec.tag}: recorded {rec.count} times (descriptor {rec.desc:#018x}) but no "
                               "layout is declared for it"))
            continue
        layout = decl.layout
        if not decl.check_start:
            start = ((rec.desc & 0x3FFF) << 4)
            layout = layout.moved(start=start)
        for f in api.check_descriptor(rec.desc, layout, decl.arch):
            out.append(Finding(rec.tag, decl.name, f.field, f.got, f.want,
                               f"tag {rec.tag} ({decl.name}): {f.message} (descriptor {rec.desc:#018x})"))
        if decl.instr is not None:
            out += _instr_findings(rec, decl)
    recorded = {r.tag for r in records}
    for tag, decl in decls.items():
        if tag not in recorded:
            out.append(Finding(tag, decl.name, "tag", None, tag,
                               f"tag {tag} ({decl.name}): declared, but the kernel recorded no descriptor with it"))
    return out


def check_buffer(buffer, declarations) -> list[Finding]:
    """check(read(buffer), declarations)."""
    return check(read(buffer), declarations)
