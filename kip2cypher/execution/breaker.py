"""The circuit breaker of one driver: once Neo4j is known unreachable, answer at once.

Why: a read retries a lost server for ``Settings.max_retry_s`` (1 s, 2 s, 4 s, 8 s … pauses,
``loop.retry_delays``), so during an outage every call used to wait ~15 s before its KIP_4003,
and callers piled up behind the retries. The breaker opens when an attempt fails to reach Neo4j
(``neo4j_errors.is_unreachable``: the driver's own connection attempts failed) after the same
failure has lasted ``OPEN_AFTER_S`` without any success in between, or when a caller has no
retry left. While it is open every transaction is refused before it starts (KIP_4003, nothing
of it written), except one *trial* per ``PROBE_INTERVAL_S``: a caller let through with a single
attempt. The trial is the probe, triggered lazily by the traffic (a readiness probe counts): its
answer from Neo4j — any answer, even a Neo4j error — closes the breaker, so the first call after
Neo4j is back succeeds without a restart. All-or-nothing is untouched: an attempt is one whole
transaction, and a refused one never began.

One ``Breaker`` serves both faces (the sync and the asyncio loop of ``loop.py`` call the same
methods: its critical sections never wait) and every namespace's nexus on one driver.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator

from .. import errors, metrics
from ..errors import KipError
from .neo4j_errors import is_retryable, is_unreachable

log = logging.getLogger("kip2cypher.neo4j")

#: Seconds an unreachable failure must last (no success since its first) before the breaker opens:
#: a fail-over or a brief network blip is still retried as before.
OPEN_AFTER_S = 1.0
#: Seconds between two trials of an open breaker.
PROBE_INTERVAL_S = 1.0


class Breaker:
    """Closed (calls run, retried as usual) or open (calls refused, one trial per interval)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        #: when the current run of unreachable failures began (None: the last attempt reached Neo4j)
        self._failing_since: float | None = None
        self.open = False
        self._trying = False
        self._tried_at = -math.inf

    def attempts(self, delays: Iterator[float], access: str = "READ") -> Attempts:
        """The attempts of one transaction of ``access``, retried after ``delays``; refused
        (KIP_4003) while open, except for the trial of the interval, which gets a single attempt."""
        with self._lock:
            if not self.open:
                return Attempts(self, delays, trial=False, access=access)
            now = self._clock()
            if self._trying or now - self._tried_at < PROBE_INTERVAL_S:
                raise self.refusal()
            self._trying, self._tried_at = True, now
        return Attempts(self, iter(()), trial=True, access=access)

    def refusal(self) -> KipError:
        """The answer while open: Neo4j is unreachable, the server checks again by itself."""
        since = self._failing_since if self._failing_since is not None else self._clock()
        return KipError(
            errors.INTERNAL_ERROR,
            f"Neo4j is unreachable (no answer for {max(self._clock() - since, 0.0):.0f} s): the command was not carried out, and nothing of it was written.",
            f"The server retries in the background (every {PROBE_INTERVAL_S:g} s) and serves again as soon as Neo4j answers, "
            "without a restart: retry the same request in a few seconds.",
        )

    def _reached(self, trial: bool) -> None:
        with self._lock:
            if self.open:
                log.debug("Neo4j answers again: the circuit breaker closes")
            self.open, self._failing_since = False, None
            self._trying = self._trying and not trial

    def _lost(self, trial: bool, last_try: bool) -> bool:
        """Record an unreachable failure; whether the breaker is (now) open."""
        with self._lock:
            now = self._clock()
            self._failing_since = now if self._failing_since is None else self._failing_since
            if not self.open and (last_try or now - self._failing_since >= OPEN_AFTER_S):
                log.debug("Neo4j is unreachable: the circuit breaker opens (calls refused at once, one trial every %g s)", PROBE_INTERVAL_S)
                self.open, self._tried_at = True, now  # this failure was the latest probe
            self._trying = self._trying and not trial
            return self.open

    def _release(self, trial: bool) -> None:
        with self._lock:
            self._trying = self._trying and not trial


class Attempts:
    """One transaction's attempts (a ``with`` block): after each failure, ``failed`` says the
    pause before the next attempt or raises; ``succeeded`` after the answer."""

    def __init__(self, breaker: Breaker, delays: Iterator[float], trial: bool, access: str) -> None:
        self._breaker, self._delays, self._trial, self._access = breaker, delays, trial, access

    def __enter__(self) -> Attempts:
        return self

    def __exit__(self, *exc: object) -> None:
        self._breaker._release(self._trial)  # a trial that ended without a verdict (a KipError, a cancel)

    def succeeded(self) -> None:
        self._breaker._reached(self._trial)

    def failed(self, exc: BaseException) -> float:
        """The pause before the next attempt after ``exc``; raises ``exc`` when it is not retried,
        the breaker's refusal when Neo4j is unreachable and no attempt follows. A retry is
        counted (``metrics.transient``)."""
        pause = next(self._delays, None)
        if not is_unreachable(exc):
            self._breaker._reached(self._trial)  # Neo4j answered, with an error
        elif self._breaker._lost(self._trial, pause is None) and is_retryable(exc):
            raise self._breaker.refusal() from None
        if pause is None or not is_retryable(exc):
            raise exc
        log.debug("transaction failed with a retryable error (%s); retrying in %.1f s", type(exc).__name__, pause)
        metrics.transient(self._access, retried=True)
        return pause

    def resume(self) -> None:
        """Before a retry: refused when the breaker opened meanwhile (another caller found Neo4j gone)."""
        if self._breaker.open:
            raise self._breaker.refusal()
