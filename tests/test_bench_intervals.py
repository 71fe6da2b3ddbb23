"""The bench's confidence intervals and target decisions (bench/intervals.py), offline.

Synthetic paired samples, a fixed seed: the assertions are on the interval's position against
the target and on determinism, never on a wall-clock time.
"""

from __future__ import annotations

import random

import pytest

from bench import intervals
from bench.intervals import MET, MISSED, UNDECIDED, decide, decide_all, median_interval, ratio_interval


def _pairs(ratio: float, spread: float, n: int, seed: int = 1) -> tuple[list[float], list[float]]:
    """n pairs: hand-written around 10 ms, KIP ``ratio`` times its own pair, both with ±spread noise
    and a shared drift (a busy machine slows both sides of a pair alike)."""
    rng = random.Random(seed)
    kip, cypher = [], []
    for _ in range(n):
        drift = rng.uniform(0.8, 1.4)
        cypher.append(10.0 * drift * rng.uniform(1 - spread, 1 + spread))
        kip.append(10.0 * ratio * drift * rng.uniform(1 - spread, 1 + spread))
    return kip, cypher


def test_interval_contains_the_point_ratio_and_is_ordered():
    kip, cypher = _pairs(1.1, 0.1, 30)
    low, high = ratio_interval(kip, cypher)
    point = sorted(kip)[15] / sorted(cypher)[15]
    assert low <= high
    assert low <= point * 1.05 and point * 0.95 <= high


def test_same_samples_give_the_same_interval():
    kip, cypher = _pairs(1.3, 0.2, 20)
    assert ratio_interval(kip, cypher) == ratio_interval(list(kip), list(cypher))


def test_a_clear_miss_is_missed_and_a_clear_pass_is_met():
    assert decide(ratio_interval(*_pairs(1.8, 0.05, 20)), 1.2) == MISSED
    assert decide(ratio_interval(*_pairs(0.9, 0.05, 20)), 1.2) == MET


def test_a_ratio_at_the_target_on_noise_is_undecided():
    assert decide(ratio_interval(*_pairs(1.2, 0.3, 20)), 1.2) == UNDECIDED


def test_more_pairs_narrow_the_interval():
    few = ratio_interval(*_pairs(1.25, 0.25, 8, seed=3))
    many = ratio_interval(*_pairs(1.25, 0.25, 80, seed=3))
    assert many[1] - many[0] < few[1] - few[0]


def test_pairs_stay_paired_so_shared_drift_does_not_widen_the_interval():
    """Drift that hits both sides of a pair alike cancels in a paired resample far more than in
    one that draws the two sides independently."""
    kip, cypher = _pairs(1.2, 0.02, 40)
    low, high = ratio_interval(kip, cypher)
    assert high - low < 0.25
    assert decide((low, high), 1.5) == MET


def test_too_few_pairs_decide_nothing():
    assert ratio_interval([1.0, 2.0], [1.0, 2.0]) is None
    assert decide(None, 1.2) == UNDECIDED


def test_unpaired_samples_are_refused():
    with pytest.raises(ValueError, match="different lengths"):
        ratio_interval([1.0, 2.0, 3.0], [1.0, 2.0])


def test_interval_bounds_are_inclusive_at_the_target():
    assert decide((1.0, 1.2), 1.2) == MET
    assert decide((1.2000001, 1.5), 1.2) == MISSED
    assert decide((1.2, 1.5), 1.2) == UNDECIDED


def test_a_group_target_is_missed_by_one_miss_and_met_only_when_all_meet():
    assert decide_all([MET, UNDECIDED, MISSED]) == MISSED
    assert decide_all([MET, MET]) == MET
    assert decide_all([MET, UNDECIDED]) == UNDECIDED
    assert decide_all([]) == UNDECIDED


def test_median_over_commands_lies_between_their_ratios():
    commands = [_pairs(r, 0.1, 20, seed=i) for i, r in enumerate((0.9, 1.0, 1.05, 1.1, 1.6))]
    low, high = median_interval(commands, resamples=300)
    assert 0.95 < low <= high < 1.2
    assert median_interval(commands, resamples=300) == (low, high)


def test_level_is_the_documented_95_percent():
    assert intervals.LEVEL == 0.95
    narrower = ratio_interval(*_pairs(1.2, 0.2, 30), level=0.5)
    wider = ratio_interval(*_pairs(1.2, 0.2, 30))
    assert wider[0] <= narrower[0] and narrower[1] <= wider[1]


def _query(name: str, kind: str, ratio: float, spread: float = 0.05) -> dict:
    kip, cypher = _pairs(ratio, spread, 20, seed=len(name))
    ci = ratio_interval(kip, cypher)
    return {
        "name": name,
        "feature": name,
        "kind": kind,
        "ratio": ratio,
        "ratio_ci": [round(v, 3) for v in ci],
        "kip_samples_ms": kip,
        "cypher_samples_ms": cypher,
    }


def test_summary_decides_each_target_by_its_interval_and_the_tables_show_it():
    from bench.__main__ import summarize
    from bench.markdown import queries_table, targets_table

    report = {
        "scale": "10k",
        "concepts": 10_000,
        "queries": [_query("point", "read", 1.0), _query("upsert_attributes", "write", 1.9), _query("noisy", "write", 1.2, spread=0.4)],
    }
    summary = summarize(report)
    report["summary"] = summary
    decisions = {q["name"]: q["decision"] for q in report["queries"]}
    assert decisions == {"point": MET, "upsert_attributes": MISSED, "noisy": UNDECIDED}
    assert summary["targets"]["write_ratio"]["decision"] == MISSED
    assert summary["targets"]["attribute_upsert_ratio"]["decision"] == MISSED
    assert summary["missed"] == ["upsert_attributes"] and summary["undecided"] == ["noisy"]
    rows = {line.split(" | ")[0]: line for line in queries_table([report]).splitlines()}
    assert "**✗**" in rows["| `upsert_attributes`"] and " ?" in rows["| `noisy`"]
    assert "| write_ratio | 1.900 |" in targets_table(report) and "**missed**" in targets_table(report)
