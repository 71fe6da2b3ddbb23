"""Access to the files shipped with the package: the grammar and the capsules.

``grammar/`` and ``capsules/`` live at the repository top level and are mapped
into the package as ``kip2cypher.grammar`` / ``kip2cypher.capsules`` by
pyproject.toml, so they load the same way from a checkout, an editable install
and a wheel.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _root(package: str):
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file():
        # Running from a checkout (a git worktree too): its own folder, not the one an editable
        # install of another checkout maps the data package to.
        return checkout / package.rsplit(".", 1)[-1]
    return resources.files(package)


def grammar_text() -> str:
    return (_root("kip2cypher.grammar") / "kip.peg").read_text(encoding="utf-8")


def capsule_names() -> list[str]:
    return sorted(p.name[:-4] for p in _root("kip2cypher.capsules").iterdir() if p.name.endswith(".kip"))


def capsule_text(name: str) -> str:
    return (_root("kip2cypher.capsules") / f"{name}.kip").read_text(encoding="utf-8")
