"""Names for common recovered maps (tcgen05's Tensor Memory and scale-factor probes; wgmma's fragment probe keeps
its own list of edits for the same purpose).

The diagnosis no longer searches a catalogue for an explanation: each probe recovers the map the hardware used
(harness/diagnosis/affine.py, bitmaps.py, address_fit.py) and names the bits or fields that differ from the
model's. A probe may still bring hypotheses -- an id, the words for it and what it predicts (a fragment, a
placement, a scale-factor map) -- whose words, when a prediction reproduces every probe value bit for bit, are
added as the familiar name of the recovered map ("data path D with the 32-lane quarters in reverse order")."""
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
