"""AST → JSON-able dicts (``kip2cypher parse``), keeping the class name and the source span."""

from __future__ import annotations

import dataclasses
from typing import Any

from .ast import Span


def ast_to_json(node: Any) -> Any:
    if isinstance(node, Span):
        return [node.start, node.end]
    if dataclasses.is_dataclass(node):
        out: dict[str, Any] = {"node": type(node).__name__}
        for f in dataclasses.fields(node):
            out[f.name] = ast_to_json(getattr(node, f.name))
        return out
    if isinstance(node, tuple):
        return [ast_to_json(item) for item in node]
    return node
