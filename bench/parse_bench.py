"""Micro-benchmark of the KIP parser (not a test).

For every entry of tests/fixtures/parser/valid.kip (all spec examples plus extra
coverage): the median cold parse (LRU cache cleared before each run: grammar
match + AST build + validation) and the median cached re-parse. Targets: median
cold ≤ 1 ms, cached ≤ 20 µs.

Then the large cases: the Genesis capsule (9.4 KB) and a generated ~200 KB
knowledge import (``large_capsule``: 1,000 CONCEPT blocks and 2,000 propositions,
half as SET PROPOSITIONS entries, half as PROPOSITION blocks). Target for the
import: well under 0.3 s cold, so that parsing stays a small part of the
end-to-end import budget.

    python bench/parse_bench.py [--repeat N] [--spec-only] [--large-only] [--cpu] [--profile]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import parser_fixtures  # noqa: E402

from kip2cypher.profiles import capsule_text  # noqa: E402
from kip2cypher.syntax.parser import clear_cache, parse  # noqa: E402

_TYPES = ("Drug", "Symptom", "Person", "Event", "Topic")
_PREDICATES = ("treats", "has_side_effect", "knows", "mentions", "related_to")
_WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
    "upsilon phi chi psi omega headache fever aspirin relief dose daily acute chronic mild severe"
).split()


def large_capsule(concepts: int = 1000, propositions: int = 2000, seed: int = 7) -> str:
    """A typical knowledge import as one capsule: ``concepts`` CONCEPT blocks and ``propositions`` links.

    Every concept has a handle, a ``{type, name}`` identity, a few attributes (strings,
    some with escapes and non-ASCII text, numbers, booleans, lists; every 20th a nested
    object with quoted keys) and one or two SET PROPOSITIONS entries (three quarters of
    the links, to earlier handles); the last quarter are PROPOSITION blocks between
    handles, some with attributes and metadata. Comments are sprinkled in. 1,000/2,000
    give ~200 KB (under the 256 KiB input bound).
    """
    rnd = random.Random(seed)
    quote = lambda value: json.dumps(value, ensure_ascii=False)  # noqa: E731
    sentence = lambda n: " ".join(rnd.choice(_WORDS) for _ in range(n)).capitalize() + "."  # noqa: E731
    lines = ["// Generated knowledge import (bench/parse_bench.py: large_capsule)", "UPSERT {"]
    blocks = propositions // 4
    entries = [(propositions - blocks) * (i + 1) // concepts - (propositions - blocks) * i // concepts for i in range(concepts)]
    for i in range(concepts):
        type_ = _TYPES[i % len(_TYPES)]
        if i % 50 == 0:
            lines.append(f"  // --- concepts {i}..{i + 49} ---")
        description = sentence(rnd.randint(1, 3)) + (' (größer, \\"quoted\\")' if i % 7 == 0 else "")
        attributes = [f'description: "{description}"', f"score: {rnd.random():.2f}"]
        if i % 2:
            attributes.append(f"aliases: [{', '.join(quote(rnd.choice(_WORDS)) for _ in range(rnd.randint(1, 2)))}]")
        if i % 5 == 0:
            attributes.append(f"active: {'true' if i % 2 else 'false'}")
        if i % 20 == 0:
            attributes.append(f'details: {{ "unit": "mg", "dose": {rnd.randint(1, 500)}, "tags": [null, -1.5e2] }}')
        lines.append(f"  CONCEPT ?c{i} {{ {{type: {quote(type_)}, name: {quote(f'{type_} {i}')}}}")
        lines.append(f"  SET ATTRIBUTES {{ {', '.join(attributes)} }}")
        if entries[i]:
            targets = [f"?c{rnd.randrange(i)}" if i else '{type: "Domain", name: "CoreSchema"}' for _ in range(entries[i])]
            links = " ".join(f'("{_PREDICATES[(i + k) % len(_PREDICATES)]}", {target})' for k, target in enumerate(targets))
            lines.append(f"  SET PROPOSITIONS {{ {links} }}")
        lines.append("  }" + (f" WITH METADATA {{ confidence: {rnd.randint(50, 100) / 100} }}" if i % 5 == 0 else ""))
    for j in range(blocks):
        if j % 100 == 0:
            lines.append(f"  /* --- propositions {j}..{j + 99} --- */")
        subject, obj = rnd.randrange(concepts), rnd.randrange(concepts)
        attributes = f" SET ATTRIBUTES {{ weight: {rnd.random():.2f} }}" if j % 4 == 0 else ""
        metadata = f' WITH METADATA {{ observed_at: "2025-01-{1 + j % 28:02d}" }}' if j % 10 == 0 else ""
        lines.append(f"  PROPOSITION {{ (?c{subject}, {quote(_PREDICATES[j % len(_PREDICATES)])}, ?c{obj}){attributes} }}{metadata}")
    lines.append("}")
    lines.append('WITH METADATA { source: "bench", author: "$system" }')
    return "\n".join(lines) + "\n"


CLOCK = time.perf_counter


def cold(text: str, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        clear_cache()
        start = CLOCK()
        parse(text)
        samples.append(CLOCK() - start)
    return statistics.median(samples)


def cached(text: str, repeat: int) -> float:
    parse(text)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        parse(text)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def large(repeat: int) -> None:
    for name, text in (("Genesis capsule", capsule_text("Genesis", None)), ("large capsule (1,000 concepts, 2,000 propositions)", large_capsule())):
        runs = max(3, repeat // (1 if len(text) < 50_000 else 5))
        seconds = cold(text, runs)
        print(f"{name}: {len(text):,} chars, median cold {seconds * 1e3:.2f} ms ({seconds / len(text) * 1e6:.2f} µs/char, {runs} runs)")


def profile() -> None:
    import cProfile
    import pstats

    text = large_capsule()
    clear_cache()
    profiler = cProfile.Profile()
    profiler.runcall(parse, text)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeat", type=int, default=25, help="runs per entry (default 25)")
    options.add_argument("--spec-only", action="store_true", help="only the spec's own examples, not the extra coverage")
    options.add_argument("--large-only", action="store_true", help="only Genesis and the generated large capsule")
    options.add_argument("--profile", action="store_true", help="cProfile one cold parse of the large capsule")
    options.add_argument("--cpu", action="store_true", help="time cold parses in process CPU time (steadier on a busy machine)")
    args = options.parse_args()
    if args.cpu:
        global CLOCK
        CLOCK = time.process_time

    if args.profile:
        profile()
        return
    if args.large_only:
        large(args.repeat)
        return
    entries = [e for e in parser_fixtures.valid() if not (args.spec_only and e.name.startswith("extra:"))]
    rows = [(e.name, len(e.text), cold(e.text, args.repeat), cached(e.text, args.repeat * 40)) for e in entries]

    print(f"{'entry':<62} {'chars':>6} {'cold ms':>8} {'cached µs':>10}")
    for name, chars, cold_s, cached_s in rows:
        print(f"{name[:62]:<62} {chars:>6} {cold_s * 1e3:>8.3f} {cached_s * 1e6:>10.2f}")
    cold_median = statistics.median(r[2] for r in rows) * 1e3
    cached_median = statistics.median(r[3] for r in rows) * 1e6
    print(
        f"\n{len(rows)} entries: median cold {cold_median:.3f} ms (target ≤ 1 ms), "
        f"median cached {cached_median:.2f} µs (target ≤ 20 µs), slowest cold {max(r[2] for r in rows) * 1e3:.2f} ms\n"
    )
    large(args.repeat)


if __name__ == "__main__":
    main()
