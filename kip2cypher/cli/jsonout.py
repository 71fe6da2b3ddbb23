"""JSON on stdout and the KIP-error exit, without rich (``parse`` / ``compile`` stay light)."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click


def dump(obj: Any) -> str:
    """JSON for people and for pipes alike: indented, non-ASCII kept as written."""
    return json.dumps(obj, ensure_ascii=False, indent=2, default=str)


def fail(error: dict[str, Any], *, err: bool = False) -> NoReturn:
    """Print a KIP error object as the spec's error JSON and exit 1."""
    click.echo(dump({"error": error}), err=err)
    sys.exit(1)
