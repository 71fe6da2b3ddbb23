"""The read path: READ programs run as auto-commit statements, retried like the driver retries
managed transactions (execution/loop.py). No Neo4j needed for the retry policy."""

from __future__ import annotations

import functools
import operator
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from neo4j.exceptions import ClientError, ServiceUnavailable

from kip2cypher import metrics
from kip2cypher.errors import KipError
from kip2cypher.execution import loop
from kip2cypher.execution.breaker import Breaker


def test_retry_delays_follow_the_driver_policy_within_max_retry_s():
    pauses = list(loop.retry_delays(30.0))
    assert 4 <= len(pauses) <= 5 and sum(pauses) <= 30.0
    assert all(0.8 * 2**i <= p <= 1.2 * 2**i for i, p in enumerate(pauses))
    assert list(loop.retry_delays(0.0)) == []


@given(seed=st.integers(0, 2**32 - 1), budget=st.floats(0.0, 600.0, allow_nan=False))
@settings(max_examples=300, deadline=None)
def test_five_jittered_retry_delays_summed_to_30_48_s_of_a_30_s_budget(seed, budget):
    """The jitter is drawn from a seeded generator (no clock): whatever it draws, the pauses stay
    within the budget, each within its ±20 % of the doubling schedule, never negative."""
    pauses = list(loop.retry_delays(budget, random.Random(seed).uniform))
    assert functools.reduce(operator.add, pauses, 0.0) <= budget  # added in order, as the sleeps add up
    assert all(0.0 <= p <= 1.2 * 2**i for i, p in enumerate(pauses))
    assert budget - sum(pauses) < 2 ** len(pauses)  # it stops only when the next nominal pause no longer fits


def test_retry_delays_low_then_high_jitter_end_at_the_budget():
    """The case that was seen: four short pauses left room for a fifth nominal 16 s, whose +20 %
    jitter carried the sum past 30 s; the fifth is now cut to what is left."""
    jitter = iter([0.8, 0.8, 0.8, 0.8, 1.2])
    pauses = list(loop.retry_delays(30.0, lambda low, high: next(jitter)))
    assert pauses[:4] == [0.8, 1.6, 3.2, 6.4] and len(pauses) == 5 and sum(pauses) == pytest.approx(30.0) and sum(pauses) <= 30.0


def test_a_retryable_read_failure_is_retried_and_a_client_error_is_not(monkeypatch):
    slept = []
    monkeypatch.setattr(loop.time, "sleep", slept.append)
    calls = []
    counted = ("kip2cypher_neo4j_transient_errors_total", "kip2cypher_neo4j_retries_total")
    before = [metrics.sample(name, access="READ") for name in counted]

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ServiceUnavailable("leader switch")
        return "rows"

    assert loop.retrying(flaky, 30.0) == "rows" and len(calls) == 3 and len(slept) == 2
    assert [metrics.sample(name, access="READ") - was for name, was in zip(counted, before)] == [2, 2]  # docs/interfaces.md, "Metrics"

    def wrong():
        calls.append(1)
        raise ClientError("bad query")

    calls.clear()
    with pytest.raises(ClientError):
        loop.retrying(wrong, 30.0)
    assert len(calls) == 1


def test_a_read_that_keeps_failing_gives_up_after_max_retry_s(monkeypatch):
    slept = []
    monkeypatch.setattr(loop.time, "sleep", slept.append)
    monkeypatch.setattr(loop.random, "uniform", lambda low, high: 1.0)  # no jitter: 1 s, then 2 s
    calls = []

    def down():
        calls.append(1)
        raise ServiceUnavailable("down")

    breaker = Breaker(clock=lambda: 0.0)  # no time passes: only running out of retries opens it
    with pytest.raises(KipError) as refused:
        loop.retrying(down, 3.0, breaker)
    assert (len(calls), slept) == (3, [1.0, 2.0])
    assert refused.value.code == "KIP_4003" and "unreachable" in refused.value.message and breaker.open


def test_reads_run_as_auto_commit_statements_and_writes_in_a_managed_transaction(genesis, monkeypatch):
    """One round trip per read statement: no managed read transaction is opened."""
    import neo4j

    opened = []
    real = neo4j.Session.execute_read
    monkeypatch.setattr(neo4j.Session, "execute_read", lambda self, *a, **k: opened.append("read") or real(self, *a, **k))
    genesis.settings = genesis.settings.replace(embedder=False)
    assert "error" not in genesis.execute_kip('FIND(?t.name) WHERE { ?t {type: "$ConceptType"} }')
    assert "error" not in genesis.execute_kip('SEARCH CONCEPT "domain" LIMIT 2')
    assert opened == []
