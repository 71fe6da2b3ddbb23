"""One request's record: its id, who sent it and what ran — for transaction metadata and the access line.

A request id (16 hex characters) is made once per ``execute`` / ``execute_command`` call. Every
Neo4j transaction the request runs carries it in its metadata, with the namespace and the
client's name (``core.metadata``), and the access line of the call names it too, so a DBA who
finds a transaction in ``SHOW TRANSACTIONS`` or the query log finds the call in the service's log,
and back (docs/interfaces.md, "Operating the service"). The MCP server logs one access line per
tool call at INFO; a library request logs its own at DEBUG. The line holds counts, codes and
names — never the command text, its parameters, a token or a credential.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import KipError
from .neo4j_errors import unavailable

#: The logger of the access lines (``KIP2CYPHER_LOG_LEVEL`` / ``KIP2CYPHER_LOG_FORMAT`` apply).
ACCESS = logging.getLogger("kip2cypher.access")


def new_request_id() -> str:
    """16 hex characters, random: unique enough to find one call among a day's."""
    return secrets.token_hex(8)


@dataclass
class Call:
    """What one request is and did. ``client``: the MCP token's name or the OAuth subject (never
    the token), or the application's name (``Settings.app_name``) for the Python API; ``tool``:
    execute_kip or execute_kip_readonly."""

    client: str
    tool: str
    namespace: str = ""
    request_id: str = field(default_factory=new_request_id)
    #: the arguments held a ``commands`` array (the response's ``result`` is one answer per command)
    batch: bool = False
    #: the kinds (KQL / KML / META) of the commands that ran, in order of first appearance
    kinds: list[str] = field(default_factory=list)
    #: commands run against Neo4j (one transaction each)
    statements: int = 0
    #: whether Neo4j answered the request's last transaction (None: it ran none), and if not, why
    answered: bool | None = None
    outage: str | None = None
    started: float = field(default_factory=time.monotonic)

    def record(self, kind: str | None, reply: Any) -> None:
        """A command the request ran (its plan's kind) and its reply (its response, or the KipError)."""
        self.statements += 1
        if kind and kind not in self.kinds:
            self.kinds.append(kind)
        down = isinstance(reply, KipError) and unavailable(reply)
        self.answered, self.outage = not down, reply.message if down else None

    def fields(self, response: dict[str, Any]) -> dict[str, Any]:
        """The access line's fields for the request's ``response``."""
        answers = response.get("result") if self.batch and "error" not in response else None
        answers = answers if isinstance(answers, list) else [response]
        return {
            "request_id": self.request_id,
            "namespace": self.namespace,
            "client": self.client,
            "tool": self.tool,
            "kinds": ",".join(self.kinds),
            "statements": self.statements,
            "rows": sum(_rows(answer) for answer in answers if isinstance(answer, dict)),
            "duration_ms": round((time.monotonic() - self.started) * 1000, 1),
            "outcome": next((str(a["error"].get("code")) for a in answers if isinstance(a, dict) and isinstance(a.get("error"), dict)), "ok"),
        }

    def log(self, response: dict[str, Any], level: int = logging.INFO) -> None:
        """Log the access line of this request (``fields``) on ``kip2cypher.access``."""
        if ACCESS.isEnabledFor(level):
            fields = self.fields(response)
            ACCESS.log(level, "%s", Line(fields), extra={"kip": fields})


class Line:
    """An access line's fields as ``key=value`` text (the text format; the JSON format has one key each)."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        return " ".join(f"{key}={_quoted(value)}" for key, value in self.fields.items())


def _quoted(value: Any) -> str:
    """``value`` as is when it is one printable word, else as a JSON string (a JWT subject with a
    space or a line break cannot split or forge a line)."""
    text = str(value)
    return text if text and text.isprintable() and not any(c in text for c in ' "=\\') else json.dumps(text, ensure_ascii=False)


def _rows(answer: dict[str, Any]) -> int:
    """Rows of one command's answer: a list result's length, 1 for any other result, 0 for none."""
    result = answer.get("result")
    return len(result) if isinstance(result, list) else int(result is not None)
