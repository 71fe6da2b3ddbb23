"""docs/architecture.md stays true: its worked example runs as a doctest, and every
``package.module.name`` it mentions in backticks exists. No Neo4j."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

import kip2cypher

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
#: The top-level modules and packages of kip2cypher (``execution`` has no ``__init__``): a dotted
#: name in backticks starting with one is a reference.
TOP_LEVEL = {path.stem for path in Path(kip2cypher.__file__).parent.iterdir() if path.suffix == ".py" or (path.is_dir() and path.name[0] != "_")}
_DOTTED = re.compile(r"`([a-z0-9_]+(?:\.[A-Za-z0-9_]+)+)(?:\(…?[^`]*\)|\[[^`]*\])?`")


def test_the_worked_example_runs():
    text = DOC.read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, {}, DOC.name, str(DOC), 0)
    assert len(test.examples) > 10, "the worked example lost its doctest lines"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def references() -> list[str]:
    names = {m.group(1) for m in _DOTTED.finditer(DOC.read_text(encoding="utf-8"))}
    return sorted(name for name in names if name.split(".")[0] in TOP_LEVEL)


def resolve(dotted: str) -> object:
    """Import the longest module prefix of ``kip2cypher.<dotted>``, then follow the attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module("kip2cypher." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(dotted)


@pytest.mark.parametrize("dotted", references())
def test_a_name_the_page_mentions_exists(dotted):
    assert resolve(dotted) is not None
