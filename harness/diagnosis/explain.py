"""Explain a recovered address map: which elements were read from the wrong place, which address bits
differ, and which nearby layout (another swizzle, base offset, swapped LBO/SBO, a shifted start, ...) the
hardware's reads match exactly, in one sentence a kernel engineer can act on."""
from __future__ import annotations

import numpy as np

from harness.spec import layouts
from harness.contract import ranges
from harness.spec.layouts import SmemLayout

# Swizzle<B,M,S> in words: which address bits are XORed into which.
_XOR_WORDS = {sw: (f"bits {m + s}-{m + s + b - 1}" if b > 1 else f"bit {m + s}",
                   f"{m}-{m + b - 1}" if b > 1 else f"{m}")
              for sw, (b, m, s) in layouts.SWIZZLE_BMS.items() if b}


def _bit_ranges(mask: int) -> str:
    bits = [i for i in range(mask.bit_length()) if mask >> i & 1]
    return ranges(bits) if bits else "none"


def candidates(lay: SmemLayout):
    """(what changed, layout) for layouts near `lay`, most telling first."""
    for sw in layouts.SWIZZLES:
        for bo in range(8 if sw != "none" else 1):
            if (sw, bo) != (lay.swizzle, lay.base_offset):
                what = f"swizzle {sw}" if sw != lay.swizzle else f"base offset {bo}"
                if sw != lay.swizzle and bo:
                    what += f" with base offset {bo}"
                yield what, lay.moved(swizzle=sw, base_offset=bo)
    if lay.lbo != lay.sbo:
        yield "LBO and SBO swapped", lay.moved(lbo=lay.sbo, sbo=lay.lbo)
    for d in (16, 32, 48, 64, 96, 128, 256, 512, 1024):
        for sign in (1, -1):
            if lay.start + sign * d >= 0:
                yield f"start {'+' if sign > 0 else '-'}{d} bytes", lay.moved(start=lay.start + sign * d)
    for name in ("lbo", "sbo"):
        for v in (0, 16, 128, 256, 512, 1024, 2048):
            if v != getattr(lay, name):
                yield f"{name.upper()} {v}", lay.moved(**{name: v})
    other = "MN" if lay.major == "K" else "K"
    yield f"{other}-major", lay.moved(major=other)


def matching_layout(lay: SmemLayout, observed_bits: np.ndarray):
    for what, cand in candidates(lay):
        try:
            layouts.validate(cand)
            addr = layouts.element_bit_addresses(cand)
        except (layouts.LayoutError, ValueError):
            continue
        if addr.shape == observed_bits.shape and np.array_equal(addr, observed_bits):
            return what, cand
    return None


def explain(expected_bits: np.ndarray, observed_bits: np.ndarray, lay: SmemLayout | None = None,
            operand: str = "B") -> dict:
    """Compare the model's bit-address map with the recovered one; `lay` is the intended layout."""
    exp, obs = np.asarray(expected_bits), np.asarray(observed_bits)
    wrong = exp != obs
    n = int(wrong.sum())
    out = {"operand": operand, "elements": int(wrong.size), "wrong": n}
    if n == 0:
        out["summary"] = f"{operand}: every element read from the address the layout model gives"
        return out
    rows, cols = np.nonzero(wrong)
    xor = np.bitwise_or.reduce(((exp[wrong] >> 3) ^ (obs[wrong] >> 3)).astype(np.int64))
    out.update({"rows": ranges(np.unique(rows)), "cols": ranges(np.unique(cols)),
                "address_bits_differ": _bit_ranges(int(xor))})
    first = list(zip(rows.tolist(), cols.tolist()))[:6]
    out["first"] = [{"row": r, "k": c, "expected_byte": int(exp[r, c] >> 3), "observed_byte": int(obs[r, c] >> 3)}
                    for r, c in first]
    where = f"{operand} rows {out['rows']} (k {out['cols']})"
    sentence = f"{where}: {n} of {wrong.size} elements read elsewhere; address bits {out['address_bits_differ']} differ"
    match = matching_layout(lay, obs) if lay is not None else None
    if match is not None:
        what, cand = match
        out["observed_layout"] = layouts.describe_tile(cand)
        out["observed_change"] = what
        if cand.swizzle != lay.swizzle:
            sentence = f"{where} read {_swizzle_words(lay.swizzle, cand.swizzle)}"
        else:
            sentence += f"; the reads are exactly those of the layout with {what}"
        sentence += f" (expected {layouts.describe_tile(lay)}; observed {what})"
    else:
        sentence += "; no nearby layout (swizzle, base offset, LBO/SBO, start, major-ness) reads like this"
    out["summary"] = sentence
    return out


def _swizzle_words(expected: str, observed: str) -> str:
    if expected != "none" and observed == "none":
        src, dst = _XOR_WORDS[expected]
        return f"with the XOR of address {src} into bits {dst} missing: swizzle {expected} expected, none observed"
    if expected == "none":
        src, dst = _XOR_WORDS[observed]
        return f"with address {src} XORed into bits {dst}: no swizzle expected, {observed} observed"
    (es, ed), (os_, od) = _XOR_WORDS[expected], _XOR_WORDS[observed]
    return (f"with address {os_} XORed into bits {od} instead of {es} into {ed}: swizzle {expected} expected, "
            f"{observed} observed")
