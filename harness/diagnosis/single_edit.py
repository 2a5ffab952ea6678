"""What the fragment-level probes share (wgmma's accumulator and A-register probes, tcgen05's Tensor Memory and
scale-factor probes): the search for the single edit of the model that reproduces everything a probe saw, and the
sentences that name it.

A probe brings its own catalogue -- hypotheses, each an id, the words for it and what it predicts (a fragment, a
placement, a scale-factor map) -- and a test that says whether a prediction reproduces every probe value bit for
bit; the hypotheses that do are the explanation (the first is named, the others read the same)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable


@dataclass(frozen=True)
class Hypothesis:
    """One way the hardware may differ from the model."""
    id: str
    words: str  # what the edit is, in words, for the summary
    prediction: Any = field(compare=False)  # the probe's own object: what the hardware would hold / use

    def __post_init__(self):
        if not self.id or not self.words:
            raise ValueError("a hypothesis needs an id and words")


def reproducing(hypotheses: Iterable[Hypothesis], reproduces: Callable[[Any], bool]) -> list[Hypothesis]:
    """The hypotheses whose prediction reproduces the observation, in catalogue order."""
    return [h for h in hypotheses if reproduces(h.prediction)]


def explained(subject: str, words: str, differ: str) -> str:
    """'<subject>: the hardware's is the model's with <edit> (<how much differs>)'."""
    return f"{subject}: the hardware's is the model's with {words} ({differ})"


def unexplained(subject: str, differ: str, catalogue: str) -> str:
    """'<subject>: <how much differs>; no single edit of the catalogue (<what it holds>) reproduces the probe'."""
    return f"{subject}: {differ}; no single edit of the catalogue ({catalogue}) reproduces the probe"
