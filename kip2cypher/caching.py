"""Caches keyed by caller text, bounded by the characters they hold as well as by count.

``functools.lru_cache(maxsize=n)`` bounds entries, not memory: 2,048 cached parses of distinct
60 KB commands held ~5 GB (an AST costs 20–40 bytes per character of its text), and a readonly
client chooses the texts (issue 18). ``text_cache`` evicts the least recently used entries
until the total length of the cached texts is within ``max_chars``; an entry larger than the
whole bound is computed and not kept. docs/limits.md lists each cache with its bound.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple


class CacheInfo(NamedTuple):
    currsize: int
    chars: int
    max_chars: int


class TextCache:
    """An LRU map whose entries each count the characters of the text they were computed from."""

    def __init__(self, max_chars: int, max_entries: int) -> None:
        self.max_chars, self.max_entries = max_chars, max_entries
        self._entries: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return default
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Any, value: Any, chars: int) -> None:
        """Keep ``value`` (unless ``chars`` alone exceeds the bound), evicting the oldest entries."""
        if chars > self.max_chars:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._chars -= old[1]
            self._entries[key] = (value, chars)
            self._chars += chars
            while self._chars > self.max_chars or len(self._entries) > self.max_entries:
                _, (_, freed) = self._entries.popitem(last=False)
                self._chars -= freed

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0

    def info(self) -> CacheInfo:
        return CacheInfo(len(self._entries), self._chars, self.max_chars)


_MISSING = object()


def text_cache(max_chars: int, max_entries: int) -> Callable[[Callable[..., Any]], Any]:
    """``lru_cache`` for a function of hashable arguments whose strings are caller text: an
    entry counts the length of its string arguments. The wrapper has ``cache_clear``,
    ``cache_info`` (``currsize``, ``chars``, ``max_chars``), ``cache_get`` and ``cache_put``
    (an argument tuple)."""

    def decorate(function: Callable[..., Any]) -> Any:
        cache = TextCache(max_chars, max_entries)

        @functools.wraps(function)
        def cached(*args: Any) -> Any:
            value = cache.get(args, _MISSING)
            if value is _MISSING:
                value = function(*args)
                cache_put(args, value)
            return value

        def cache_get(args: tuple[Any, ...]) -> Any:
            """The cached value for these arguments, or None: the caller decides whether to compute."""
            return cache.get(args)

        def cache_put(args: tuple[Any, ...], value: Any) -> None:
            """Keep a value computed elsewhere (a large parse kept aside until its text came again)."""
            cache.put(args, value, sum([len(a) for a in args if isinstance(a, str)]))

        cached.cache_get = cache_get  # type: ignore[attr-defined]
        cached.cache_put = cache_put  # type: ignore[attr-defined]
        cached.cache_clear = cache.clear  # type: ignore[attr-defined]
        cached.cache_info = cache.info  # type: ignore[attr-defined]
        return cached

    return decorate
