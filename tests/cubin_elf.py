"""A cubin's machine code read from its ELF, without a disassembler: a kernel's code is its `.text.<kernel>` section
and the relocations the loader applies to it (`.rela.text.<kernel>` / `.rel.text.<kernel>`), each named by the symbol
it points to, since a module of several kernels numbers its symbols on from the kernels before. Comparing those is
comparing the instructions bit for bit, scheduling control bits included, which a disassembler's listing leaves out.
(Each disassembler start costs ~0.4 s of CPU whatever the cubin's size: the CPU note 2026-11-28 ci-rehearsal.txt in
docs/performance.md.)
"""
from __future__ import annotations

import struct
from pathlib import Path

SHT_NOBITS = 8  # a section that takes no room in the file


def _sections(data: bytes) -> list[tuple[str, int, int, bytes]]:
    """(name, type, link, contents) of each section of a 64-bit little-endian ELF (every cubin is one)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = data[heads[shstrndx][4]:heads[shstrndx][4] + heads[shstrndx][5]]
    out = []
    for name, kind, _, _, offset, size, link, _, _, _ in heads:
        text = names[name:names.index(b"\0", name)].decode()
        out.append((text, kind, link, b"" if kind == SHT_NOBITS else data[offset:offset + size]))
    return out


def function_code(cubin_path: Path | str, function: str) -> tuple[bytes, tuple[tuple[int, int, str, int], ...]]:
    """(the function's instruction bytes, its relocations as (offset, type, symbol name, addend))."""
    sections = _sections(Path(cubin_path).read_bytes())
    by_name = {s[0]: s for s in sections}
    code = by_name[f".text.{function}"][3]
    relocs = []
    for prefix, size in ((".rela", 24), (".rel", 16)):
        sec = by_name.get(f"{prefix}.text.{function}")
        if sec is None:
            continue
        symtab = sections[sec[2]]
        strtab = sections[symtab[2]][3]
        for at in range(0, len(sec[3]), size):
            offset, info = struct.unpack_from("<QQ", sec[3], at)
            addend = struct.unpack_from("<q", sec[3], at + 16)[0] if size == 24 else 0
            (name_at,) = struct.unpack_from("<I", symtab[3], (info >> 32) * 24)
            relocs.append((offset, info & 0xFFFFFFFF, strtab[name_at:strtab.index(b"\0", name_at)].decode(), addend))
    return code, tuple(relocs)


def function_names(cubin_path: Path | str) -> set[str]:
    """The functions a cubin has code for (its `.text.<function>` sections)."""
    return {s[0][len(".text."):] for s in _sections(Path(cubin_path).read_bytes()) if s[0].startswith(".text.")}
