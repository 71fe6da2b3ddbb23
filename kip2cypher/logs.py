"""Where kip2cypher's log records go when it runs as a program (the CLI, ``kip2cypher mcp``).

The package logs on the standard ``logging`` module under ``kip2cypher`` (``kip2cypher.access``:
one access line per call, ``kip2cypher.neo4j``: Neo4j down/up, ``kip2cypher.cypher``: each
statement at DEBUG …) and configures nothing on import: an application that embeds the library
keeps its own handlers. Only the entry points call ``configure``, which reads
``KIP2CYPHER_LOG_LEVEL`` (the level of the ``kip2cypher`` loggers) and ``KIP2CYPHER_LOG_FORMAT``
(``text`` or ``json``: one JSON object a line, an access line's fields one key each) and puts one
stderr handler on the root logger — other libraries' records at WARNING and above share the
format. The stdlib's ``logging.Formatter`` is enough for one JSON object a line: no dependency.
docs/interfaces.md, "Logs".
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from .config import SettingsError, lookup

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("text", "json")
#: The server's text lines: when, how bad, which logger, what.
SERVER_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: A one-shot CLI command's text lines (its stderr is a terminal).
COMMAND_TEXT = "%(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (UTC, ISO-8601), ``level``, ``logger``, and ``message`` — or,
    for a record carrying fields (``extra={"kip": {...}}``: the access line), each field a key."""

    def __init__(self, tracebacks: bool = True) -> None:
        super().__init__()
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, "kip", None)
        if isinstance(fields, dict):
            line.update(fields)
        else:
            line["message"] = record.getMessage()
        if record.exc_info and self.tracebacks:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class OneLine(logging.Formatter):
    """A text record as one line: the engine logs an internal error with its traceback, shown on
    a CLI command's stderr only with KIP2CYPHER_DEBUG=1."""

    def formatException(self, ei: Any) -> str:
        return ""

    def formatStack(self, stack_info: str) -> str:
        return ""


def configure(default_level: str = "WARNING", *, text: str = COMMAND_TEXT, tracebacks: bool | None = None) -> None:
    """Send log records to stderr as the settings say: ``KIP2CYPHER_LOG_LEVEL`` (else
    ``default_level``) for the ``kip2cypher`` loggers, WARNING for everything else;
    ``KIP2CYPHER_LOG_FORMAT`` ``text`` (lines of ``text``) or ``json``. ``tracebacks``: show them
    (default: only with KIP2CYPHER_DEBUG=1). A value outside the choices is a ``SettingsError``."""
    level = _choice("KIP2CYPHER_LOG_LEVEL", LEVELS, default_level.upper())
    form = _choice("KIP2CYPHER_LOG_FORMAT", FORMATS, "text")
    if tracebacks is None:
        tracebacks = lookup("KIP2CYPHER_DEBUG") == "1"
    handler = logging.StreamHandler(sys.stderr)
    if form == "json":
        handler.setFormatter(JsonFormatter(tracebacks))
    else:
        handler.setFormatter((logging.Formatter if tracebacks else OneLine)(text))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    # At the root's own level the package's loggers inherit it (NOTSET): an earlier command of the
    # same process (``-v``, CliRunner) leaves nothing behind.
    logging.getLogger("kip2cypher").setLevel(logging.NOTSET if level == "WARNING" else level)


def _choice(name: str, choices: tuple[str, ...], default: str) -> str:
    value = lookup(name)
    if value is None:
        return default
    chosen = value.upper() if choices is LEVELS else value.lower()
    if chosen not in choices:
        raise SettingsError(f"{name}={value!r} must be one of {', '.join(choices)}.")
    return chosen
