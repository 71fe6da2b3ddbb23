"""Text helpers shared by keyword SEARCH (tokens, scoring) and the embedding tokenizer.

Both treat CJK ideographs the same way — each one a word of its own (Chinese and Japanese
text has no spaces) — and read identifiers as words (``belongs_to_domain`` → ``belongs to
domain``, ``MedicalDevice`` → ``Medical Device``).
"""

from __future__ import annotations

import re
import unicodedata

from .caching import text_cache

_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_WORD = re.compile(r"\w+", re.UNICODE)
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_cjk(char: str) -> bool:
    """A CJK unified ideograph (the ranges BERT's basic tokenizer splits on)."""
    cp = ord(char)
    return any(low <= cp <= high for low, high in _CJK_RANGES)


def cjk_spaced(text: str) -> str:
    """``text`` with a space on each side of every CJK ideograph, so each becomes a word."""
    if text.isascii():
        return text
    return "".join(f" {c} " if is_cjk(c) else c for c in text)


def fold(text: str) -> str:
    """Lower-case and strip accents (what the full-text index's ASCII folding does, near enough)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def identifier_words(name: str) -> str:
    """``belongs_to_domain`` → ``belongs to domain``; ``MedicalDevice`` → ``Medical Device``."""
    out: list[str] = []
    previous = ""
    for char in name.lstrip("$"):
        if char == "_":
            out.append(" ")
        elif char.isupper() and previous and (previous.islower() or previous.isdigit()):
            out.append(" " + char)
        else:
            out.append(char)
        previous = char
    return " ".join("".join(out).split())


@text_cache(1 << 21, 32768)
def _words(text: str) -> tuple[str, ...]:
    if text.isascii():
        # Fast path, same result as below: ASCII has no accents and no CJK; CamelCase and
        # snake_case split exactly as identifier_words does.
        return tuple(_ASCII_WORD.findall(_CAMEL.sub(" ", text).lower()))
    spaced = cjk_spaced(fold(identifier_words(text)))
    return tuple(part for word in _WORD.findall(spaced) for part in word.replace("_", " ").split())


def words(text: str) -> list[str]:
    """Word tokens of a text or identifier: folded, snake_case and CamelCase split, CJK per character.

    Memoized per text (candidates' names and descriptions recur across searches)."""
    return list(_words(text)) if text else []


#: How much of one word of a SEARCH term is searched for and scored: a Lucene query's prefix,
#: infix and fuzzy forms of a word become automatons Lucene refuses beyond 1,000 states ("input
#: automaton is too large" for a 2,000-character word: an internal error before), and a longer
#: word is no word; it is matched by its first 64 characters (as a prefix).
MAX_QUERY_WORD_CHARS = 64


def query_words(term: str, max_tokens: int) -> list[str]:
    """The distinct folded words of a search term, at most ``max_tokens`` of them (the first;
    one pass: the membership test of a list made a 20,000-word term quadratic)."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(fold(term)):
        seen.setdefault(match.group())
        if len(seen) == max_tokens:
            break
    return list(seen)
