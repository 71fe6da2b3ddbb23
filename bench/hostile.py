"""What hostile command text costs, in seconds (not a test: tests/test_reliability_load.py
asserts the same passes by counting their work, never by a clock).

    python -m bench.hostile [--repeat N]

Each line is the median of N runs, on this machine as it is now, next to the benign input of
the same size it should cost about as much as: the issue's 40 KB of escaped quotes through the
compiler (the plan-template shape scan and the parse) beside a benign 40 KB string value; the
comment run that once backtracked exponentially beside a small command; keyword scoring of 300
fields with a 400-word term beside a 32-word one; listing the words of a 200,000-word term
beside folding it. No Neo4j.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

#: The issue's 40 KB command: a quote then 20,000 escaped quotes (8 s in the old quoted-placeholder
#: scan, 65 s in the first shape scan of the plan templates).
ESCAPED_QUOTES = '"' + '\\"' * 20_000
#: Block comments before an unterminated one: the command-kind sniffer's regex backtracked exponentially.
COMMENT_RUN = "/**/" * 40 + "/*"
SMALL = 'FIND(?t.name) WHERE { ?t {type: "$ConceptType", name: "Domain"} }'


def seconds(call: Callable[[], object], repeat: int) -> float:
    """The median wall-clock time of ``call`` over ``repeat`` runs."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _compile(text: str) -> Callable[[], object]:
    """A cold compile of ``text`` (caches cleared first), its KipError included."""
    from kip2cypher.errors import KipError
    from kip2cypher.lower.compile import compile_plan

    from .compile_bench import clear_caches

    def call() -> object:
        clear_caches()
        try:
            return compile_plan(text)
        except KipError as error:
            return error

    return call


def measurements() -> list[tuple[str, Callable[[], object], str, Callable[[], object]]]:
    """(hostile label, its call, benign label, its call) pairs."""
    from kip2cypher.execution.scoring import Scorer
    from kip2cypher.text import fold, query_words, words

    fields = [f"concept number {i} about hostile search terms and their words" for i in range(300)]
    short, long_term = " ".join(f"w{i}" for i in range(32)), " ".join(f"w{i}" for i in range(400))[:2048]
    huge = " ".join(f"w{i}" for i in range(200_000))

    def score(term: str, field: str) -> float:
        return Scorer(words(term)).field(field, True)

    benign = _compile(f'FIND(?d) WHERE {{ ?d {{name: "{"ab" * 20_000}"}} }}')
    return [
        ("40 KB of escaped quotes", _compile(ESCAPED_QUOTES), "a 40 KB string value", benign),
        ("the same as a string value", _compile(f'FIND(?d) WHERE {{ ?d {{name: "{ESCAPED_QUOTES[1:]}"}} }}'), "a 40 KB string value", benign),
        ("the comment run", _compile(COMMENT_RUN), "a small FIND", _compile(SMALL)),
        ("scoring 300 fields, 400-word term", lambda: [score(long_term, f) for f in fields], "32-word term", lambda: [score(short, f) for f in fields]),
        ("the words of a 200,000-word term", lambda: query_words(huge, 32), "folding it", lambda: fold(huge)),
    ]


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.splitlines()[0])
    options.add_argument("--repeat", type=int, default=5, help="runs per measurement (the median is printed)")
    args = options.parse_args(argv)
    for hostile, call, benign, baseline in measurements():
        h, b = seconds(call, args.repeat), seconds(baseline, args.repeat)
        print(f"{hostile}: {h * 1000:.1f} ms   ({benign}: {b * 1000:.1f} ms, ratio {h / max(b, 1e-9):.1f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
