"""Opaque, tamper-evident CURSOR tokens (spec §3.5, §6.2.1).

A token carries a *position* (any JSON value — FIND uses an offset) and an
HMAC-SHA256 over the position and a *fingerprint* of the query it belongs to,
keyed with ``Settings.cursor_secret``. Presenting a token to a different query
(other pattern, other parameter values, other ORDER BY), altering it, or using
one signed with another secret fails with KIP_1001.

Usage (FIND, DESCRIBE … TYPES, EXPORT)::

    fp = cursor.fingerprint("FIND", core_cypher_text, core_params)
    offset = cursor.decode(settings, fp, token) if token else 0
    ...
    response["next_cursor"] = cursor.encode(settings, fp, offset + limit)

The fingerprint must exclude the paging itself (LIMIT, SKIP and the cursor) so
that page N+1 of the same query matches page N's fingerprint.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any

from .config import Settings
from .errors import INVALID_SYNTAX, KipError

_VERSION = "k1"


#: What ``json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)``
#: builds for each call (a plan template's fill recomputes a FIND's fingerprint: built once).
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)


def fingerprint(*parts: Any) -> str:
    """A stable digest of whatever identifies a query (JSON-serializable parts)."""
    return hashlib.sha256(_ENCODER.encode(parts).encode("utf-8")).hexdigest()


def fingerprint_head(*head: Any) -> Any:
    """The digest of ``fingerprint(*head, *tail)`` up to its tail, for ``fingerprint_tail``: a plan
    template's fill recomputes a FIND's fingerprint whose head (the query's text) is fixed, and the
    text is most of what is encoded and hashed. A list's JSON is its items' JSON between ``[``
    and ``]``, separated by ``,`` (the encoder's separator), so the digest is the same."""
    return hashlib.sha256(("[" + "".join(_ENCODER.encode(part) + "," for part in head)).encode("utf-8"))


def fingerprint_tail(head: Any, *tail: Any) -> str:
    """``fingerprint(*head, *tail)`` from ``fingerprint_head(*head)``; ``tail`` is not empty."""
    digest = head.copy()
    digest.update((",".join(map(_ENCODER.encode, tail)) + "]").encode("utf-8"))
    return digest.hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


#: Signs cursors when no secret is configured and none is stored (compiling outside a Nexus, or a
#: database that was never bootstrapped): such cursors live as long as this process.
_PROCESS_KEY = secrets.token_bytes(32)


def signing_key(settings: Settings) -> bytes:
    """``Settings.cursor_secret``; unset (empty): this process's own key."""
    return settings.cursor_secret or _PROCESS_KEY


def _mac(settings: Settings, fp: str, payload: str) -> bytes:
    return hmac.new(signing_key(settings), f"{_VERSION}|{fp}|{payload}".encode(), hashlib.sha256).digest()[:18]


def encode(settings: Settings, fp: str, position: Any) -> str:
    """A token for ``position`` in the query identified by ``fp``."""
    payload = _b64(json.dumps(position, separators=(",", ":")).encode("utf-8"))
    return f"{_VERSION}.{payload}.{_b64(_mac(settings, fp, payload))}"


def _invalid(reason: str) -> KipError:
    return KipError(
        INVALID_SYNTAX,
        f"Invalid CURSOR token: {reason}.",
        "Pass the next_cursor value of the previous page unchanged, with the same command and parameters; omit CURSOR to start from the first page.",
    )


def decode(settings: Settings, fp: str, token: Any) -> Any:
    """The position inside ``token``; KIP_1001 unless it was issued for this very query."""
    if not isinstance(token, str) or token.count(".") != 2:
        raise _invalid("not a cursor issued by this engine")
    version, payload, mac = token.split(".")
    if version != _VERSION:
        raise _invalid("not a cursor issued by this engine")
    try:
        given = _unb64(mac)
    except (ValueError, TypeError):
        raise _invalid("malformed") from None
    if not hmac.compare_digest(given, _mac(settings, fp, payload)):
        raise _invalid("it was issued for a different query or by another nexus (or altered)")
    try:
        return json.loads(_unb64(payload))
    except (ValueError, TypeError):  # pragma: no cover - a valid MAC over garbage cannot happen
        raise _invalid("malformed") from None


def decode_offset(settings: Settings, fp: str, token: Any) -> int:
    """``decode`` for offset cursors: a non-negative integer."""
    position = decode(settings, fp, token)
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise _invalid("malformed position")
    return position
