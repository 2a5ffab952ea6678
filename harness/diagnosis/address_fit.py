"""Recover the shared-memory address map the tensor core used, from an address probe's data alone, and say it in
the descriptor's terms and in CuTe notation beside the model's.

Two readings of one observed map (the bit address read for every element [mn, k]):

* the GF(2) affine map (affine.solve) from row and k bits to address bits -- the swizzle is an XOR of bit
  ranges, power-of-two strides are bit moves -- or the proof (four elements) that the map is not affine: a
  stride that is not a power of two (SBO 1040) carries, which no XOR does;
* the descriptor that reads exactly like this: for each major-ness, swizzle mode and base offset the descriptor
  can hold, the map is un-swizzled and start, LBO and SBO are read off it (the address steps of the first row
  group, K chunk, ...), then the whole tile is recomputed and compared bit for bit.

The recomputation is this module's own reading of the PTX ISA's canonical layouts (below), not
harness.spec.layouts, so a model with a wrong term (a flipped base-offset sign) is decomposed as what its map
does, not as what its code believes. The model's map is decomposed the same way, and the fields that differ are
named: "SBO 1040, model 1024"; "swizzle XORs bits 7-9 into 4-6, model XORs bits 7-8 into 4-5".

Canonical layouts (CuTe notation, strides in elements, T = 128 / element bits, W = swizzle row bytes / 16):
    K-major,  none      ((8,m),(T,c)) : ((T,SBO),(1,LBO))
    K-major,  swizzled  ((8,m),(T,c)) : ((WT,SBO),(1,T))
    MN-major, none      ((T,m),(8,c)) : ((1,SBO),(T,LBO))
    MN-major, swizzled  ((T,W,m),(8,c)) : ((1,T,LBO),(WT,SBO))
then Swizzle<B,M,S> on the byte address, its row phase (address bits M+S..) taken back by the base offset.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.diagnosis import affine, bitmaps
from harness.contract import ranges

# the descriptor's swizzle modes: name -> (B, M, S, row bytes)
SWIZZLES = {"none": (0, 4, 3, 16), "32B": (1, 4, 3, 32), "64B": (2, 4, 3, 64), "128B": (3, 4, 3, 128),
            "128B_base32b": (2, 5, 2, 128)}
WGMMA_SWIZZLES = ("none", "32B", "64B", "128B")


@dataclass(frozen=True)
class Terms:
    """A descriptor's worth of layout: what the map decomposes into."""
    major: str
    swizzle: str
    bits: int  # element width
    rows: int
    cols: int
    lbo: int
    sbo: int
    start: int
    base_offset: int

    def __post_init__(self):
        if self.major not in ("K", "MN") or self.swizzle not in SWIZZLES:
            raise ValueError(f"no canonical layout is {self.major}-major with swizzle {self.swizzle!r}")
        if self.bits not in (1, 4, 8, 16, 32) or min(self.rows, self.cols) < 1:
            raise ValueError(f"element width {self.bits} / tile {self.rows}x{self.cols} is not a canonical tile")

    @property
    def lbo_used(self) -> bool:
        """LBO means nothing for a K-major swizzled tile one swizzle row wide."""
        return not (self.major == "K" and self.swizzle != "none")

    def cute(self) -> str:
        """'Swizzle<3,4,3> o ((8,8),(8,2)):((64,512),(1,8)) @ 0 B, base offset 0' (strides in elements)."""
        b, m, s, row = SWIZZLES[self.swizzle]
        T = 128 // self.bits

        def el(nbytes: int):
            v = nbytes * 8 / self.bits
            return int(v) if v == int(v) else v
        W = row // 16
        if self.major == "K":
            shape = f"((8,{-(-self.rows // 8)}),({T},{-(-self.cols // T)}))"
            stride = (f"(({T},{el(self.sbo)}),(1,{el(self.lbo)}))" if self.swizzle == "none"
                      else f"(({W * T},{el(self.sbo)}),(1,{T}))")
        elif self.swizzle == "none":
            shape = f"(({T},{-(-self.rows // T)}),(8,{-(-self.cols // 8)}))"
            stride = f"((1,{el(self.sbo)}),({T},{el(self.lbo)}))"
        else:
            shape = f"(({T},{W},{-(-self.rows // (T * W))}),(8,{-(-self.cols // 8)}))"
            stride = f"((1,{T},{el(self.lbo)}),({W * T},{el(self.sbo)}))"
        sw = f"Swizzle<{b},{m},{s}> o " if b else ""
        return f"{sw}{shape}:{stride} @ {self.start} B" + (f", base offset {self.base_offset}" if b else "")

    def bit_addresses(self) -> np.ndarray:
        """(rows, cols) absolute bit address of every element."""
        b, m, s, row = SWIZZLES[self.swizzle]
        T, W = 128 // self.bits, row // 16
        i = np.arange(self.rows, dtype=np.int64)[:, None]
        k = np.arange(self.cols, dtype=np.int64)[None, :]
        if self.major == "K":
            e = k % T
            if self.swizzle == "none":
                byte = (i % 8) * 16 + (i // 8) * self.sbo + (k // T) * self.lbo
            else:
                byte = (i % 8) * row + (i // 8) * self.sbo + (k // T) * 16
        else:
            e = i % T
            if self.swizzle == "none":
                byte = (i // T) * self.sbo + (k % 8) * 16 + (k // 8) * self.lbo
            else:
                byte = ((i // T) % W) * 16 + (i // (T * W)) * self.lbo + (k % 8) * row + (k // 8) * self.sbo
        within = e * self.bits
        byte = self.start + byte + within // 8
        return (_swizzle(byte, self.swizzle, self.base_offset) << 3) | (within % 8)


def _swizzle(byte: np.ndarray, name: str, base_offset: int) -> np.ndarray:
    b, m, s, _ = SWIZZLES[name]
    if not b:
        return byte
    phase = ((byte >> (m + s)) - base_offset) & ((1 << b) - 1)
    return byte ^ (phase << m)  # an involution: the phase bits sit above the bits it changes


def xor_words(name: str) -> str:
    """'XORs bits 7-9 into 4-6' / 'XORs nothing'."""
    b, m, s, _ = SWIZZLES[name]
    if not b:
        return "XORs nothing"
    src = ranges(range(m + s, m + s + b))
    dst = ranges(range(m, m + b))
    return f"XORs bit{'s' if b > 1 else ''} {src} into {dst}"


def decompose(bit_addr: np.ndarray, bits: int, prefer: Terms | None = None,
              swizzles=tuple(SWIZZLES)) -> Terms | None:
    """The descriptor terms whose canonical layout reads exactly `bit_addr` ((rows, cols) bit addresses), the
    one closest to `prefer` (fewest differing fields) when several read alike; None when no descriptor does."""
    addr = np.asarray(bit_addr, np.int64)
    rows, cols = addr.shape
    T = 128 // bits
    found = []
    for major in ("K", "MN"):
        for sw in swizzles:
            b, m, s, row = SWIZZLES[sw]
            for bo in range(8 if b else 1):
                byte = _swizzle(addr >> 3, sw, bo)  # un-swizzled (the swizzle is its own inverse)
                start = int(byte[0, 0])

                def step(r, c, default):
                    return int(byte[r, c]) - start if r < rows and c < cols else default
                if major == "K":
                    sbo = step(8, 0, prefer.sbo if prefer else 0)
                    lbo = step(0, T, prefer.lbo if prefer else 0) if sw == "none" else (prefer.lbo if prefer else 16)
                elif sw == "none":
                    sbo, lbo = step(T, 0, prefer.sbo if prefer else 0), step(0, 8, prefer.lbo if prefer else 0)
                else:
                    lbo = step(T * (row // 16), 0, prefer.lbo if prefer else 0)
                    sbo = step(0, 8, prefer.sbo if prefer else 0)
                if min(start, lbo, sbo) < 0:
                    continue
                try:
                    t = Terms(major, sw, bits, rows, cols, lbo, sbo, start, bo)
                except ValueError:
                    continue
                if np.array_equal(t.bit_addresses(), addr):
                    found.append(t)
    if not found:
        return None
    if prefer is None:
        return found[0]
    # several terms may read alike (a base offset is a start moved by whole rows of the pattern): the fewest
    # differing fields, and of those one that keeps the start (the descriptor's explicit address)
    return min(found, key=lambda t: (len(field_differences(t, prefer)), t.start != prefer.start))


def field_differences(hw: Terms, model: Terms, other: str = "model") -> list[str]:
    """'SBO 1040, model 1024', 'swizzle XORs bits 7-9 into 4-6, model XORs bits 7-8 into 4-5', ... (`other`
    names the second side)."""
    out = []
    if hw.major != model.major:
        out.append(f"{hw.major}-major, {other} {model.major}-major")
    if SWIZZLES[hw.swizzle][:3] != SWIZZLES[model.swizzle][:3]:
        b, m, s, _ = SWIZZLES[hw.swizzle]
        mb, mm, ms, _ = SWIZZLES[model.swizzle]
        out.append(f"swizzle {xor_words(hw.swizzle)} (Swizzle<{b},{m},{s}>, {hw.swizzle}), {other} "
                   f"{xor_words(model.swizzle)} (Swizzle<{mb},{mm},{ms}>, {model.swizzle})")
    if hw.start != model.start:
        out.append(f"start {hw.start}, {other} {model.start}")
    if hw.lbo != model.lbo and (hw.lbo_used or model.lbo_used):
        out.append(f"LBO {hw.lbo}, {other} {model.lbo}")
    if hw.sbo != model.sbo:
        out.append(f"SBO {hw.sbo}, {other} {model.sbo}")
    if hw.base_offset != model.base_offset and SWIZZLES[hw.swizzle][0]:
        out.append(f"base offset {hw.base_offset}, {other} {model.base_offset}")
    return out


def coding(rows: int, cols: int, max_bit_addr: int) -> bitmaps.Coding:
    return bitmaps.Coding((("row", rows), ("k", cols)), (("in-byte", 8), ("address", max(2, (max_bit_addr >> 3) + 1))))


def relative(bit_addr: np.ndarray) -> np.ndarray:
    """Bit addresses from the tile's lowest: a start added to power-of-two strides carries into their bits (start
    2048 + row group 3 x 2048 = 8192), so the GF(2) map is taken of the offsets, the start said apart."""
    addr = np.asarray(bit_addr, np.int64)
    return addr - (int(addr.min()) & ~7)


def index_map(bit_addr: np.ndarray, width_bits: int | None = None):
    """The GF(2) affine map (row bits, k bits) -> (bit within the byte, address bits from the tile's lowest byte)
    of a bit-address table."""
    addr = relative(bit_addr)
    rows, cols = addr.shape
    top = int(addr.max()) if width_bits is None else (1 << width_bits) - 1
    cd = coding(rows, cols, top)
    r = np.broadcast_to(np.arange(rows)[:, None], addr.shape)
    k = np.broadcast_to(np.arange(cols)[None, :], addr.shape)
    return bitmaps.recover(cd, cd.places(r, k), addr)


@dataclass(frozen=True)
class Reading:
    """What the probe's map is, beside the model's: the decomposition and GF(2) map of each, and the sentence."""
    hardware: Terms | None
    model: Terms | None
    differences: tuple[str, ...]
    hardware_map: object
    model_map: object
    sentence: str

    def as_dict(self) -> dict:
        out = {"hardware_cute": self.hardware.cute() if self.hardware else None,
               "model_cute": self.model.cute() if self.model else None,
               "field_differences": list(self.differences), "sentence": self.sentence,
               "hardware_map": bitmaps.verdict("", self.hardware_map, self.model_map)["hardware_map"],
               "model_map": bitmaps.verdict("", self.hardware_map, self.model_map)["model_map"]}
        if self.hardware:
            out["hardware_terms"] = {k: getattr(self.hardware, k) for k in
                                     ("major", "swizzle", "lbo", "sbo", "start", "base_offset")}
        return out


def read(observed: np.ndarray, model: np.ndarray, bits: int, subject: str, swizzles=tuple(SWIZZLES),
         descriptor: Terms | None = None) -> Reading:
    """Recover the hardware's map from `observed` and compare it with `model` (both (rows, cols) bit
    addresses). `descriptor`: the terms the model's descriptor holds, preferred when decomposing the model's
    map (its own code may read them differently: then the model's map decomposes to other terms, and says so)."""
    obs, mod = np.asarray(observed, np.int64), np.asarray(model, np.int64)
    mterms = decompose(mod, bits, descriptor, swizzles)
    hterms = decompose(obs, bits, mterms or descriptor, swizzles)
    width = max(int(relative(obs).max()), int(relative(mod).max())).bit_length()
    hmap, mmap = index_map(obs, width), index_map(mod, width)
    n, total = int((obs != mod).sum()), obs.size
    differ = f"{n} of {total} elements read elsewhere"
    diffs: list[str] = []
    if n == 0:
        sentence = f"{subject}: the hardware reads every element where the model says ({differ})"
    elif hterms is not None and mterms is not None:
        diffs = field_differences(hterms, mterms)
        sentence = (f"{subject}: the hardware's layout is {hterms.cute()}; the model's is {mterms.cute()}: "
                    f"{'; '.join(diffs) if diffs else 'the same terms'} ({differ})")
        if descriptor is not None and field_differences(mterms, descriptor):
            sentence += (f"; the model's map is not its own descriptor's ("
                         f"{'; '.join(field_differences(mterms, descriptor, 'descriptor'))})")
    else:
        said = bitmaps.verdict(subject, hmap, mmap, differ)
        sentence = said["sentence"]
        lo_h, lo_m = int(obs.min()) >> 3, int(mod.min()) >> 3
        sentence += (f" (addresses from the tile's lowest byte, {lo_h}" + (f"; the model's lowest is {lo_m}"
                                                                           if lo_h != lo_m else "") + ")")
        if hterms is None:
            sentence += "; no descriptor (major-ness, swizzle, base offset, start, LBO, SBO) reads like this"
    return Reading(hterms, mterms, tuple(diffs), hmap, mmap, sentence)


def terms_of(layout, bits: int) -> Terms:
    """An SmemLayout-like record (major, swizzle, rows, cols, lbo, sbo, start, base_offset) as Terms."""
    return Terms(layout.major, layout.swizzle, bits, layout.rows, layout.cols, layout.lbo, layout.sbo, layout.start,
                 layout.base_offset)
