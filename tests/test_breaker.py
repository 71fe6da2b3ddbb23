"""The circuit breaker (execution/breaker.py) on a hand-driven clock: when it opens, what it
refuses, its one trial per interval, and what closes it. No Neo4j: the failures are the driver's
own exception classes, raised by the attempts; the outage on a real Neo4j is
tests/test_reliability_outage.py."""

from __future__ import annotations

import asyncio

import pytest
from neo4j.exceptions import ClientError, IncompleteCommit, ServiceUnavailable, TransientError

from kip2cypher.errors import KipError
from kip2cypher.execution import breaker as breaking
from kip2cypher.execution import loop
from kip2cypher.execution.breaker import Breaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(loop.time, "sleep", lambda s: setattr(clock, "now", clock.now + s))
    monkeypatch.setattr(loop.random, "uniform", lambda low, high: 1.0)  # no jitter: pauses of 1 s, 2 s, 4 s …
    return clock


def down():
    raise ServiceUnavailable("Couldn't connect to 127.0.0.1:7687")


def refused(call) -> KipError:
    with pytest.raises(KipError) as caught:
        call()
    assert caught.value.code == "KIP_4003"
    return caught.value


def test_an_outage_opens_the_breaker_after_open_after_s_and_later_calls_do_not_attempt(clock):
    breaker = Breaker(clock)
    tries = []
    error = refused(lambda: loop.retrying(lambda: tries.append(1) or down(), 30.0, breaker))
    assert breaker.open and len(tries) == 2  # the first retry, ≥ OPEN_AFTER_S after the first failure, found it gone
    assert "unreachable" in error.message and "not carried out, and nothing of it was written" in error.message and "in the background" in error.hint
    tries.clear()
    refused(lambda: loop.retrying(lambda: tries.append(1), 30.0, breaker))
    assert tries == []  # refused before it started: nothing ran


def test_one_trial_per_interval_and_its_success_closes_the_breaker(clock):
    breaker = Breaker(clock)
    refused(lambda: loop.retrying(down, 30.0, breaker))
    clock.now += breaking.PROBE_INTERVAL_S
    tries = []
    refused(lambda: loop.retrying(lambda: tries.append(1) or down(), 30.0, breaker))  # the trial: one attempt, no retries
    assert tries == [1] and breaker.open
    refused(lambda: loop.retrying(lambda: tries.append(1), 30.0, breaker))  # within the interval: no second trial
    assert tries == [1]
    clock.now += breaking.PROBE_INTERVAL_S
    assert loop.retrying(lambda: "rows", 30.0, breaker) == "rows" and not breaker.open
    assert loop.retrying(lambda: "rows", 30.0, breaker) == "rows"


def test_a_neo4j_error_proves_the_server_answers_and_closes_the_breaker(clock):
    breaker = Breaker(clock)
    refused(lambda: loop.retrying(down, 30.0, breaker))
    clock.now += breaking.PROBE_INTERVAL_S

    def bad_query():
        raise ClientError("bad")

    with pytest.raises(ClientError):
        loop.retrying(bad_query, 30.0, breaker)
    assert not breaker.open


def test_a_trial_that_ends_without_a_verdict_frees_the_next_trial(clock):
    breaker = Breaker(clock)
    refused(lambda: loop.retrying(down, 30.0, breaker))
    clock.now += breaking.PROBE_INTERVAL_S

    def cut():
        raise KipError("KIP_4001", "budget spent")

    with pytest.raises(KipError):
        loop.retrying(cut, 30.0, breaker)
    clock.now += breaking.PROBE_INTERVAL_S
    assert loop.retrying(lambda: "rows", 30.0, breaker) == "rows"


def test_a_commit_cut_mid_way_keeps_its_own_answer(clock):
    """IncompleteCommit is not retried and says the write may or may not be applied; the breaker counts it."""
    breaker = Breaker(clock)

    def cut():
        raise IncompleteCommit("connection lost during commit")

    with pytest.raises(IncompleteCommit):
        loop.retrying(cut, 30.0, breaker)
    assert not breaker.open


def test_a_transient_error_is_retried_as_before(clock):
    breaker = Breaker(clock)
    tries = []

    def deadlock():
        tries.append(1)
        if len(tries) < 3:
            raise TransientError("deadlock")
        return "done"

    assert loop.retrying(deadlock, 30.0, breaker) == "done" and len(tries) == 3 and not breaker.open


def test_a_retry_stops_when_another_call_opened_the_breaker(clock):
    breaker = Breaker(clock)
    tries = []

    def first():
        tries.append(1)
        if len(tries) == 1:
            breaker.open = True  # meanwhile another caller found Neo4j gone
        down()

    refused(lambda: loop.retrying(first, 30.0, breaker))
    assert tries == [1]


def test_the_asyncio_loop_shares_the_same_breaker(clock, monkeypatch):
    async def no_sleep(seconds):
        clock.now += seconds

    monkeypatch.setattr(loop.asyncio, "sleep", no_sleep)
    breaker = Breaker(clock)

    async def adown():
        down()

    async def rows():
        return "rows"

    refused(lambda: asyncio.run(loop.retrying_async(adown, 30.0, breaker)))
    refused(lambda: loop.retrying(lambda: "never", 30.0, breaker))  # the sync loop sees the async loop's verdict
    clock.now += breaking.PROBE_INTERVAL_S
    assert asyncio.run(loop.retrying_async(rows, 30.0, breaker)) == "rows" and not breaker.open
