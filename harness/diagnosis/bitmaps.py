"""Recovered index maps, named and compared: what every probe of the kit (register fragments, Tensor Memory data
paths, scale factors, sparse metadata) says once affine.solve has read the hardware's map off its data.

A probe knows, for every place it looked at (a thread's register slot, a Tensor Memory lane and column), which
element the hardware put there -- named by the data itself (each element's value codes its own row and column),
so the recovered map does not lean on the model. `Coding` turns places and elements into bit vectors with a name
for every bit; `recover` solves for the affine map; `verdict` compares it with the model's map (recovered the same
way from the model's table) and says, in one sentence, which output bit comes from which input bit on each side;
`record_maps` puts that comparison into a probe's record, the same fields for every probe.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.diagnosis import affine


def bit_width(extent: int) -> int:
    """Bits an index 0..extent-1 needs (an extent of 1 needs none)."""
    return max(0, int(extent) - 1).bit_length()


def names(word: str, extent: int) -> list[str]:
    """'row bit 0', 'row bit 1', ...; a one-bit field is its word ('half')."""
    if extent == 2:
        return [word]
    return [f"{word} bit {i}" for i in range(bit_width(extent))]


@dataclass(frozen=True)
class Coding:
    """Places (inputs) and elements (outputs) as bit fields, lowest field first: ((word, extent), ...)."""
    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, int], ...]

    def __post_init__(self):
        for word, extent in self.inputs + self.outputs:
            if not word or extent < 1:
                raise ValueError(f"a field needs a name and a positive extent, not ({word!r}, {extent})")

    @property
    def in_names(self) -> list[str]:
        return [n for w, e in self.inputs for n in names(w, e)]

    @property
    def out_names(self) -> list[str]:
        return [n for w, e in self.outputs for n in names(w, e)]

    @staticmethod
    def _pack(fields, values) -> np.ndarray:
        out, shift = 0, 0
        for (word, extent), v in zip(fields, values):
            v = np.asarray(v, np.int64)
            if (v < 0).any() or (v >= extent).any():
                raise ValueError(f"{word} outside 0..{extent - 1}")
            out = out + (v << shift)
            shift += bit_width(extent)
        return np.asarray(out, np.int64)

    @staticmethod
    def _unpack(fields, value: int) -> str:
        parts, shift = [], 0
        for word, extent in fields:
            w = bit_width(extent)
            parts.append(f"{word} {(int(value) >> shift) & ((1 << w) - 1)}")
            shift += w
        return "(" + ", ".join(parts) + ")"

    def place_words(self, value: int) -> str:
        """A packed input as '(row 3, k 1)'."""
        return self._unpack(self.inputs, value)

    def element_words(self, value: int) -> str:
        return self._unpack(self.outputs, value)

    def places(self, *values) -> np.ndarray:
        return self._pack(self.inputs, values)

    def elements(self, *values) -> np.ndarray:
        return self._pack(self.outputs, values)


@dataclass(frozen=True)
class Witness:
    """A NotAffine witness with the coding that says what its numbers are."""
    proof: affine.NotAffine
    coding: Coding

    @property
    def inputs(self):
        return self.proof.inputs

    @property
    def outputs(self):
        return self.proof.outputs

    def holds(self) -> bool:
        return self.proof.holds()

    def describe(self) -> str:
        return self.proof.describe(self.coding.place_words, self.coding.element_words)


def recover(coding: Coding, places, elements, valid=None) -> affine.AffineMap | Witness:
    """Solve for the map places -> elements (int arrays of one shape, packed by `coding`), over `valid` ones: the
    named affine map, or a Witness that there is none."""
    p, e = np.asarray(places, np.int64).ravel(), np.asarray(elements, np.int64).ravel()
    if valid is not None:
        keep = np.asarray(valid, bool).ravel()
        p, e = p[keep], e[keep]
    got = affine.solve(p, e, len(coding.in_names), len(coding.out_names))
    return got.named(coding.in_names, coding.out_names) if isinstance(got, affine.AffineMap) else Witness(got, coding)


def terms(m: affine.AffineMap, bits: list[int]) -> str:
    return ", ".join(f"{m.out_name(j)} = {m.term(j)}" for j in bits)


def verdict(subject: str, hardware, model, differ: str = "") -> dict:
    """The record fields of one comparison: 'same' (bool), 'sentence' (one sentence), 'roles' (per differing
    output bit, where the hardware and the model take it from), 'hardware_map' / 'model_map' (whole maps)."""
    out = {"hardware_map": _as_dict(hardware), "model_map": _as_dict(model)}
    tail = f" ({differ})" if differ else ""
    if not isinstance(hardware, affine.AffineMap):
        out.update(same=False, roles=[], sentence=f"{subject}: the hardware's map is {hardware.describe()}; no index "
                                                  f"map of bits reproduces it{tail}")
        return out
    if not isinstance(model, affine.AffineMap):
        out.update(same=False, roles=[], sentence=f"{subject}: the hardware's map is {hardware.describe()}; the "
                                                  f"model's is {model.describe()}{tail}")
        return out
    diff = affine.differences(hardware, model)
    if not diff:
        out.update(same=True, roles=[], sentence=f"{subject}: the hardware's map is the model's{tail}")
        return out
    roles = [f"{hardware.out_name(j)} comes from {hardware.term(j)}; the model takes it from {model.term(j)}"
             for j in diff]
    out.update(same=False, roles=roles,
               sentence=f"{subject}: the hardware's map is {terms(hardware, diff)}; the model's is "
                        f"{terms(model, diff)}{tail}")
    return out


def record_maps(rec: dict, subject: str, hardware, model, differ: str = "", unnamed: str = "") -> str:
    """Put a recovered map beside the model's into a probe's record, as every probe's record holds them:
    'hardware_map', 'model_map' (the whole maps) and 'roles' (verdict's), in that order; return the one sentence
    comparing them. `hardware` None (no place the probe read named an element): no maps, no roles, and the
    sentence '<subject>: <unnamed> (<differ>)'."""
    if hardware is None:
        said = {"sentence": f"{subject}: {unnamed}" + (f" ({differ})" if differ else ""), "roles": [],
                "hardware_map": None, "model_map": None}
    else:
        said = verdict(subject, hardware, model, differ)
    rec.update(hardware_map=said["hardware_map"], model_map=said["model_map"], roles=said["roles"])
    return said["sentence"]


def _as_dict(m):
    if isinstance(m, affine.AffineMap):
        return m.as_dict()
    return {"not_affine": True, "witness_inputs": list(m.inputs), "witness_outputs": list(m.outputs)}
