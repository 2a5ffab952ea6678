"""Targeted experiments on what the spec leaves open.

`base-offset`, `start-alignment`: ordinary cases (sweep.execute runs them; any that fails is diagnosed with
the address probe). `addresses`: the address probe itself over every negative control and every operand
scenario of a representative N. `field-overflow`: raw descriptors the encoder refuses (fields that wrap
past 2^18 bytes, reserved bits above a field), each with the image written for the "ignored / wraps"
hypothesis, run one per CTA so a fault is isolated to its experiment.

`base_offset_work()`: every matrix base offset 0..7 with tiles starting at each 128-byte row of a swizzle
pattern (on and off its boundary), for each swizzle mode and major-ness of B. Each case's image is written
with the model (the row phase taken from address bits 7.. is shifted back by the base offset), so a case passes
exactly when the hardware's base offset does what the model says for that (start, base offset) pair. The spec
itself only states the value for a pattern that starts at `start` (base offset = (start >> 7) & 7).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from harness.families.wgmma import kernel as launch, forms as wgmma
from harness.spec import desc_wgmma, layouts
from harness.families.wgmma.cases import Case, Operand, operand_scenarios, plain_operand

PROBES = ("base-offset", "start-alignment", "addresses", "field-overflow", "spec-examples")


def _b_placement_work(n: int, swizzles, placements) -> list[tuple[wgmma.KernelKey, list[Case]]]:
    """Cases whose B (f16, n x 16, packed strides) sits at each (suffix, start, base offset) that
    placements(swizzle) yields, K- and MN-major; A is a plain K-major tile."""
    key = wgmma.KernelKey("f16", n, "f32", "SS")
    a = plain_operand(*next(s for s in operand_scenarios("f16", 64, 16, ("K",)) if s[1].swizzle == "none" and not s[0]))
    out = []
    for major in ("K", "MN"):
        vi = _variant(key, "f16", major == "MN")
        for sw in swizzles:
            lbo, sbo = layouts.packed_strides(major, sw, "f16", n, 16)
            for suffix, start, bo in placements(sw):
                lay = layouts.SmemLayout(major, sw, "f16", n, 16, lbo, sbo, start, bo)
                out.append(Case(key, vi, a, Operand(suffix, lay, lay), 0, "exact"))
    return [(key, out)]


def base_offset_work(n: int = 64) -> list[tuple[wgmma.KernelKey, list[Case]]]:
    return _b_placement_work(n, ("32B", "64B", "128B"), lambda sw: [
        (f"+start{start}bo{bo}", start, bo) for start in range(0, layouts.PATTERN_BYTES[sw], 128) for bo in range(8)])


def start_alignment_work(n: int = 64) -> list[tuple[wgmma.KernelKey, list[Case]]]:
    """B starting at every 16-byte offset of a swizzle pattern (base offset 0), for each swizzle mode and
    major-ness: the start is 16-byte aligned as the spec demands, but not aligned to the swizzle row,
    atom or pattern. The model swizzles absolute addresses; a pass means the hardware does too."""
    return _b_placement_work(n, ("none", "32B", "64B", "128B"), lambda sw: [
        (f"+start{start}", start, 0) for start in range(16, max(256, layouts.PATTERN_BYTES[sw]), 16)])


def address_cases(n: int = 64) -> list[Case]:
    """Every negative control at N = n, and per kernel one case for each distinct A and B scenario."""
    from harness import plan
    out = []
    sel = plan.Selection(families=("wgmma",), n_values=(n,), data_modes=("exact",))
    for _, cs in plan.make(sel, cache=True).work:  # the plan cache: every test worker asks this at collection
        seen = set()
        for c in cs:
            tags = {("A", c.a.tag) if c.a else None, ("B", c.b.tag)} - {None}
            if c.control or not tags <= seen:
                out.append(c)
                seen |= tags
    return out


# ---------------------------------------------------------------------------------------------------- overflow

FIELD_BITS = 14
WRAP = 1 << 18  # the descriptor's fields hold address bits 4..17


@dataclass(frozen=True)
class RawCase:
    """A probe case outside the case model: what pack() and diff_launch() need, and a name."""
    id: str
    key: wgmma.KernelKey
    variant_index: int
    scale_d: int = 0
    data: str = "exact"
    control: str = ""
    inject: str = ""


def _raw_desc(start: int, lbo: int, sbo: int, extra_bits: int = 0) -> int:
    """Fields as (value >> 4) & 0x3FFF, the way matrix-descriptor-encode() wraps them, plus raw bits."""
    f = lambda v: (v >> 4) & ((1 << FIELD_BITS) - 1)
    return f(start) | f(lbo) << 16 | f(sbo) << 32 | extra_bits


# name: (B start offset in its region, LBO, SBO, extra descriptor bits, what the hypothesis says)
OVERFLOW_EXPERIMENTS = {
    "sbo-wraps": (7 * 256, 128, WRAP - 256, 0,
                  "SBO = 2^18 - 256 acts as -256: the 8-row groups go downwards from the start"),
    "lbo-wraps": (128, WRAP - 128, 256, 0, "LBO = 2^18 - 128 acts as -128: the second K chunk is below the first"),
    "start-bit14": (0, 128, 256, 1 << 14, "descriptor bit 14 (above the 14-bit start field) is ignored"),
    "start-bit15": (0, 128, 256, 1 << 15, "descriptor bit 15 (above the 14-bit start field) is ignored"),
    "lbo-bit30": (0, 128, 256, 1 << 30, "descriptor bit 30 (above the 14-bit LBO field) is ignored"),
    "sbo-bit46": (0, 128, 256, 1 << 46, "descriptor bit 46 (above the 14-bit SBO field) is ignored"),
}


def raw_b_setup(case_id: str, key: wgmma.KernelKey, vi: int, b_addr: np.ndarray, desc_b: int, size: int):
    """(RawCase, Prepared, addresses.Setup) for a case whose B sits at arbitrary bit addresses `b_addr` (N x K)
    and is read through a raw descriptor; A is an ordinary packed K-major tile at address 0 with no swizzle.
    Exact values; C = 0."""
    from harness.families.wgmma import addresses
    from harness.spec import dtypes, fragments
    from harness.families.wgmma import reference
    v = wgmma.variants(key)[vi]
    at, bt = dtypes.get(v.atype), dtypes.get(v.btype)
    a_lay = layouts.SmemLayout("K", "none", v.atype, 64, key.k, *layouts.packed_strides("K", "none", v.atype, 64,
                                                                                         key.k))
    case = RawCase(case_id, key, vi)
    rng = np.random.default_rng(zlib.crc32(case_id.encode()))
    a_vals = rng.choice(reference.EXACT_POOL[v.atype], size=(64, key.k))
    b_vals = rng.choice(reference.EXACT_POOL[v.btype], size=(key.n, key.k))
    image = np.zeros(-(-size // 16) * 16, np.uint8)
    layouts.write_image(a_lay, at.to_bits(a_vals), image)
    layouts.write_bits(image, b_addr, bt.to_bits(b_vals), bt.bits)
    descs = (launch.encode_desc(a_lay), desc_b)
    expected = (v.scale_a * a_vals) @ (v.scale_b * b_vals).T
    dfrag = fragments.wgmma_d_fragment(key.n, key.dtype)
    c_regs = fragments.gather_registers(dfrag, np.zeros((64, key.n), np.uint64))
    prep = reference.Prepared(case, image, None, None, None, c_regs, a_vals, b_vals, np.zeros((64, key.n)),
                              expected.astype(np.float32), expected, None,
                              fragments.gather_registers(dfrag, reference.acc_bits(key.dtype, expected)), descs)
    st = addresses.Setup(key, vi, addresses.Placed(v.atype, layouts.element_bit_addresses(a_lay), descs[0], a_lay,
                                                    a_lay),
                         addresses.Placed(v.btype, b_addr, descs[1]), image.size)
    return case, prep, st


def _variant(key: wgmma.KernelKey, btype: str, trans_b: bool) -> int:
    return next(i for i, v in enumerate(wgmma.variants(key)) if not v.trans_a and v.trans_b == trans_b
                and v.scale_a == v.scale_b == 1 and v.btype == btype)


def overflow_setups(n: int = 64):
    """(RawCase, Prepared, addresses.Setup, hypothesis) per experiment: B is K-major, no swizzle, f16,
    n x 16 (8-row groups, two 16-byte K chunks); its image is written where the hypothesis says the tensor
    core reads, A is an ordinary packed K-major tile."""
    key = wgmma.KernelKey("f16", n, "f32", "SS")
    vi = _variant(key, "f16", False)
    region_b = 8192
    out = []
    for name, (start, lbo, sbo, extra, hypothesis) in OVERFLOW_EXPERIMENTS.items():
        shape = layouts.SmemLayout("K", "none", "f16", n, 16, lbo % WRAP, sbo % WRAP, 0)
        b_addr = ((region_b + start) * 8 + layouts.canonical_bit_offsets(shape)) % (WRAP * 8)
        out.append((*raw_b_setup(f"m64n{n}k16-overflow-{name}", key, vi, b_addr,
                                 _raw_desc(region_b + start, lbo, sbo, extra), region_b + 4096), hypothesis))
    return out


# The worked examples of the canonical-layouts section (PTX ISA 9.7.15.5.1.2.1.3): name, major-ness, swizzle,
# type, the exact layout as the spec writes it (CuTe, in elements), LBO and SBO in bytes (None: "not used,
# assumed 1").
SPEC_EXAMPLES = [
    ("K-major none tf32", "K", "none", "tf32", "Swizzle<0,4,3> o ((8,2),(4,4)):((4,32),(1,64))", 256, 128),
    ("K-major 32B tf32", "K", "32B", "tf32", "Swizzle<1,4,3> o ((8,2),(4,4)):((8,64),(1,4))", None, 256),
    ("MN-major none bf16", "MN", "none", "bf16", "Swizzle<0,4,3> o ((8,1,2),(8,2)):((1,8,64),(8,128))", 256, 128),
    ("MN-major 32B bf16", "MN", "32B", "bf16", "Swizzle<1,4,3> o ((8,2,2),(8,2)):((1,8,128),(16,256))", 256, 512),
    ("MN-major 64B bf16", "MN", "64B", "bf16", "Swizzle<2,4,3> o ((8,4,2),(8,2)):((1,8,256),(32,512))", 512, 1024),
]


def spec_example_setups():
    """(RawCase, Prepared, addresses.Setup, claim) for each worked example and each K-step of it: B is the
    example's tile (N = its MN extent), written exactly where the spec's CuTe layout puts every element, and
    read through a descriptor with the example's LBO/SBO whose start is the K-step's first element. A pass
    (and an address probe that reads as written) means the hardware agrees with the example as written."""
    from harness.spec import cute_layout, dtypes
    out = []
    region = 4096  # 1024-aligned, so the spec's swizzle (on offsets from 0) is the swizzle on addresses
    for name, major, swz, dtype, text, lbo, sbo in SPEC_EXAMPLES:
        addr = cute_layout.spec_addresses(text, dtypes.get(dtype).bits // 8)  # bytes, [mn, k]
        fam = "tf32" if dtype == "tf32" else "f16"
        key = wgmma.KernelKey(fam, addr.shape[0], "f32", "SS")
        vi = _variant(key, dtype, major == "MN")
        for s in range(addr.shape[1] // key.k):
            cols = slice(s * key.k, (s + 1) * key.k)
            _, lay = cute_layout.parse(text)
            start = lay(0, s * key.k) * dtypes.get(dtype).bits // 8  # the K-step's first element, unswizzled
            desc = desc_wgmma.encode_wgmma_desc(region + start, lbo or 16, sbo, swz)
            b_addr = (region + addr[:, cols]) * 8
            cid = f"spec-example-{name.replace(' ', '-')}-kstep{s}"
            claim = f"{name}: {text}, LBO={lbo if lbo is not None else '1 (assumed)'} SBO={sbo}, K-step {s}"
            out.append((*raw_b_setup(cid, key, vi, b_addr, desc, region + 4096), claim))
    return out


def work(name: str):
    if name == "base-offset":
        return base_offset_work()
    if name == "start-alignment":
        return start_alignment_work()
    raise ValueError(f"probe {name!r} is not made of ordinary cases; one of base-offset, start-alignment")
