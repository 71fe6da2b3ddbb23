"""Confidence intervals for the bench's ratios, and the target decisions they allow.

A single ratio of medians moves by ±0.15 between runs on the shared 2-core machine, so a target
is decided by an interval, never by the point value: a 95 % percentile bootstrap over the timed
*pairs* (a resample draws pair indices, keeping each KIP sample with the hand-written sample
timed next to it, so the drift both sides saw stays paired) of median(KIP) / median(Cypher).
A target is **met** when the whole interval is at or under it, **missed** when the whole
interval is above it, **undecided** otherwise — more pairs narrow the interval, noise widens it.
Resampling is seeded: the same samples give the same interval on every machine.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

LEVEL = 0.95
RESAMPLES = 2000
SEED = 29

MET, MISSED, UNDECIDED = "met", "missed", "undecided"


def _resample_ratio(rng: random.Random, kip: Sequence[float], cypher: Sequence[float]) -> float:
    picks = [rng.randrange(len(kip)) for _ in kip]
    return statistics.median(kip[i] for i in picks) / statistics.median(cypher[i] for i in picks)


def _percentiles(values: list[float], level: float) -> tuple[float, float]:
    values.sort()
    tail = (1.0 - level) / 2.0
    low = values[max(0, math.floor(tail * len(values)))]
    high = values[min(len(values) - 1, math.ceil((1.0 - tail) * len(values)) - 1)]
    return low, high


def ratio_interval(
    kip: Sequence[float], cypher: Sequence[float], level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """The percentile-bootstrap interval of median(kip) / median(cypher) over paired samples;
    None with fewer than 3 pairs (nothing to resample)."""
    if len(kip) != len(cypher):
        raise ValueError(f"paired samples of different lengths: {len(kip)} KIP, {len(cypher)} Cypher")
    if len(kip) < 3:
        return None
    rng = random.Random(seed)
    return _percentiles([_resample_ratio(rng, kip, cypher) for _ in range(resamples)], level)


def median_interval(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], level: float = LEVEL, resamples: int = 1000, seed: int = SEED
) -> tuple[float, float] | None:
    """The bootstrap interval of the median, over commands, of their ratios: each resample
    resamples every command's pairs and takes the median of the resampled ratios."""
    usable = [(k, c) for k, c in pairs if len(k) >= 3 and len(k) == len(c)]
    if not usable:
        return None
    rng = random.Random(seed)
    medians = [statistics.median(_resample_ratio(rng, k, c) for k, c in usable) for _ in range(resamples)]
    return _percentiles(medians, level)


def decide(interval: tuple[float, float] | None, target: float) -> str:
    """met / missed / undecided for a ratio that must stay at or under ``target``."""
    if interval is None:
        return UNDECIDED
    low, high = interval
    if high <= target:
        return MET
    if low > target:
        return MISSED
    return UNDECIDED


def decide_all(decisions: Sequence[str]) -> str:
    """A target every command must meet: missed if one misses, met if all meet, else undecided."""
    if MISSED in decisions:
        return MISSED
    if decisions and all(d == MET for d in decisions):
        return MET
    return UNDECIDED
