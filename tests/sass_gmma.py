"""Reading the SASS of the wgmma kernels: the tensor-core instructions, how a descriptor step was compiled, and
whether any instruction touches a register an in-flight wgmma still reads (A) or writes (D).

SASS facts used (nvdisasm listings of sm_90a cubins; see tests/test_wgmma_seq.py for the kernels they were read from):
  * `HGMMA/QGMMA/IGMMA/BGMMA.64xNxK...` is one wgmma.mma_async; its operands are D (first register of N/2
    32-bit registers, N/4 for an .F16 accumulator), A (a register quad for RS, `gdesc[URx]` for SS), `gdesc`
    for B, ...; the one that carries `gsb0` closes a commit group (wgmma.commit_group);
  * `WARPGROUP.DEPBAR.LE gsb0, N` is wgmma.wait_group N: after it at most N groups are in flight;
  * `WARPGROUP.ARRIVE` is wgmma.fence.
Straight-line code only: the analysis restarts after a branch, and a group still in flight at a branch is
reported (the kernels here wait for everything before leaving a variant's case).
"""
from __future__ import annotations

import re

from harness.run.sass import function_listings

GMMA = re.compile(r"^[HQIB]GMMA\.64x(?P<n>\d+)x\d+(?P<rest>[.A-Z0-9]*)$")


def function_text(listing: str, name: str) -> str:
    """The part of a listing that is one function's code (a module may hold several kernels: a test that read the
    whole listing could be satisfied by another kernel's instructions)."""
    chunks = function_listings(listing)
    assert name in chunks, f"no function {name} in the listing (it has {', '.join(sorted(chunks))})"
    return chunks[name]


REG = re.compile(r"\bR(\d+)(\.64)?\b")


def instructions(sass: str) -> list[str]:
    """The instruction text of every SASS line, predicate included, without address and encoding."""
    out = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m:
            out.append(m.group(1))
    return out


def split(ins: str) -> tuple[str, list[str]]:
    """(opcode, operands) of an instruction, without its predicate."""
    words = ins.split(None, 1)
    if words and words[0].startswith("@"):
        words = words[1].split(None, 1)
    return words[0], [o.strip() for o in words[1].split(",")] if len(words) > 1 else []


def gmma_ops(sass: str) -> list[str]:
    return [split(i)[0] for i in instructions(sass) if GMMA.match(split(i)[0])]


def _registers(opcode: str, operands: list[str]) -> set[int]:
    """Every general register an instruction names, register pairs and quads widened."""
    regs = set()
    for idx, o in enumerate(operands):
        for m in REG.finditer(o):
            r, width = int(m.group(1)), 2 if m.group(2) else 1
            if idx == 0 and o.startswith("R"):  # the destination: its width is the opcode's
                width = 4 if ".128" in opcode else 2 if (".64" in opcode or ".WIDE" in opcode) else 1
            regs.update(range(r, r + width))
    return regs


def _gmma_registers(opcode: str, operands: list[str]) -> set[int]:
    """The registers a wgmma owns until it completes: its accumulators and (RS) its A quad."""
    m = GMMA.match(opcode)
    n = int(m.group("n"))
    count = n // 4 if m.group("rest").startswith(".F16") else n // 2
    d0 = int(REG.match(operands[0]).group(1))
    regs = set(range(d0, d0 + count))
    a = REG.fullmatch(operands[1])
    if a:
        regs.update(range(int(a.group(1)), int(a.group(1)) + 4))
    return regs


def async_register_hazards(sass: str) -> list[str]:
    """Instructions that read or write a register an in-flight wgmma reads as A or writes as D, before a
    wait_group retires it (what ptxas must never emit; triton#11781 was a ptxas that did, with A registers)."""
    pending: list[set[int]] = []  # closed groups still in flight, oldest first
    open_group: set[int] = set()  # wgmma issued since the last commit
    hazards = []
    for ins in instructions(sass):
        op, operands = split(ins)
        if GMMA.match(op):
            open_group |= _gmma_registers(op, operands)
            if "gsb0" in operands:
                pending.append(open_group)
                open_group = set()
        elif op == "WARPGROUP.DEPBAR.LE":
            keep = int(operands[1], 0)
            while len(pending) > keep:
                pending.pop(0)
        elif op in ("BRA", "BRX", "EXIT", "RET", "JMP", "CALL"):
            if pending or open_group:
                hazards.append(f"{ins}: leaves with wgmma in flight")
            pending, open_group = [], set()
        elif op != "WARPGROUP.ARRIVE":
            inflight = set().union(open_group, *pending)
            touched = _registers(op, operands) & inflight
            if touched:
                hazards.append(f"{ins}: touches R{min(touched)} of an in-flight wgmma")
    return hazards


def descriptor_adds(sass: str) -> int:
    """64-bit adds of two values, one per add: the low half of a register add (IADD3 with a carry-out predicate,
    its high half an IADD3.X / IMAD.X), a uniform-datapath one (UIADD3 with a carry-out, or UIADD3.64)."""
    pattern = (r"IADD3 R\d+, P\d, R\d+(\.reuse)?, R\d+(\.reuse)?, RZ$|UIADD3 UR\d+, UP\d, UR\d+, UR\d+, URZ$"
               r"|UIADD3\.64 UR\d+, UR\d+, UR\d+, URZ$")
    return sum(1 for i in instructions(sass) if re.match(pattern, i))


def descriptor_ors(sass: str) -> int:
    """Bitwise ors of two values (LOP3.LUT / ULOP3.LUT with the or truth table 0xfc), one per 32-bit half."""
    pattern = r"U?LOP3\.LUT U?R\d+, U?R\d+(\.reuse)?, U?R\d+(\.reuse)?, U?RZ, 0xfc, !U?PT$"
    return sum(1 for i in instructions(sass) if re.match(pattern, i))


def waits(sass: str) -> list[int]:
    """The N of every WARPGROUP.DEPBAR.LE gsb0, N (wgmma.wait_group N) in order."""
    return [int(split(i)[1][1], 0) for i in instructions(sass) if split(i)[0] == "WARPGROUP.DEPBAR.LE"]
