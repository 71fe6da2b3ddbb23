"""docs/limits.md against the code (issue 30: "the limits docs match the code"; they had drifted:
hops "capped at max_hops" where only the minimum is, a REGEX bound that no longer existed).

Each row of the Engine-limits table that names a ``Settings`` field gives that field's default
and its variable; each row that names a constant (``lower.pattern.MAX_UNION_BLOCKS``) gives its
value; every ``Settings`` field is documented; and every module-level ``MAX_*`` bound of the
package is named in the page — or listed below as no limit on what a caller sends. Offline."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from kip2cypher.config import Settings

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
#: Settings fields documented on another page (the page must name them).
ELSEWHERE = {"namespace": "docs/namespaces.md"}
#: Module-level MAX_* constants that bound nothing a caller sends, and why.
NOT_LIMITS = {
    "MAX_DOUBLE": "lower/update.py: the largest double, written into arithmetic guards",
    "MAX_CELL": "cli/output.py: characters of a table cell the CLI prints",
    "MAX_REACH": "syntax/regex_guard.py: the longest Java string, a cap on a computed reach",
}


def engine_rows() -> list[list[str]]:
    """The cells of each row of the "Engine limits" table (header and rule left out)."""
    section = PAGE.split("## Engine limits", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]


def numbers(cell: str) -> set[float]:
    """Every number a default cell writes (``262 144``, ``5·10⁷``, ``30 s``; ``none`` is 0)."""
    cell = cell.replace("·10⁷", "e7")
    found = {float(n.replace(" ", "").replace("\u202f", "")) for n in re.findall(r"\d{1,3}(?:[ \u202f]\d{3})+(?!\d)|\d+(?:\.\d+)?(?:e\d+)?", cell)}
    return found | ({0.0} if cell.startswith("none") else set())


def constant(dotted: str):
    """The value of ``module.NAME`` (the module by its last name(s) under kip2cypher/)."""
    module, name = dotted.rsplit(".", 1)
    matches = [p for p in (ROOT / "kip2cypher").rglob(f"{module.split('.')[-1]}.py") if p.with_suffix("").as_posix().endswith(module.replace(".", "/"))]
    assert len(matches) == 1, (dotted, matches)
    path = matches[0].relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
    return getattr(importlib.import_module(path), name)


ROWS = engine_rows()


@pytest.mark.parametrize("row", ROWS, ids=[row[0][:40] for row in ROWS])
def test_each_engine_limit_row_states_the_default_variable_and_code_of_the_code(row):
    what, default, field, variable, code, _ = row
    assert re.fullmatch(r"KIP_\d{4}(?: .*)?|—", code), row
    named = re.match(r"`(\w+)`", field)
    if named:
        name = named.group(1)
        assert name in Settings.model_fields, row
        assert variable == f"`KIP2CYPHER_{name.upper()}`", row
        assert float(Settings.model_fields[name].default) in numbers(default), (what, Settings.model_fields[name].default, default)
    elif field == "—":  # a bound of Neo4j's own (64-bit integers)
        assert variable == "—", row
    else:
        dotted = re.fullmatch(r"— \(`([\w.]+)`\)", field)
        assert dotted and variable == "—", row
        assert float(constant(dotted.group(1))) in numbers(default), (what, dotted.group(1), default)


def test_every_setting_is_documented():
    for name in Settings.model_fields:
        page = (ROOT / ELSEWHERE[name]).read_text(encoding="utf-8") if name in ELSEWHERE else PAGE
        assert f"`{name}`" in page or f"Settings.{name}" in page, name


def _max_constants() -> set[str]:
    """Every module-level ``MAX_*`` name assigned in the package."""
    found = set()
    for path in (ROOT / "kip2cypher").rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            found |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.startswith("MAX_")}
    return found


def test_every_max_constant_of_the_package_is_a_documented_limit():
    undocumented = sorted(name for name in _max_constants() - NOT_LIMITS.keys() if not re.search(rf"\b{name}\b", PAGE))
    assert undocumented == [], "document these bounds in docs/limits.md (or list them in NOT_LIMITS with why)"
    assert NOT_LIMITS.keys() <= _max_constants()  # no stale exemption
