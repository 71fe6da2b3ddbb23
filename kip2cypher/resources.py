"""Access to the files shipped with the package: the grammar and the official capsules.

``grammar/`` and ``capsules/`` live at the repository top level and are mapped
into the package as ``kip2cypher.grammar`` / ``kip2cypher.capsules`` by
pyproject.toml, so they load the same way from a checkout, an editable install
and a wheel. ``capsules/<profile>/`` holds the KIP authors' capsule files of one
version byte for byte, with their licence (``kip2cypher.profiles``).
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


#: The capsules the official sets keep in ``persons/`` (the two actor instances).
PERSONS = ("self", "system")


def capsule_names(profile: str) -> list[str]:
    """Every capsule of ``profile``'s folder, by file stem (``self`` / ``system`` for ``persons/``)."""
    folder = _root("kip2cypher.capsules") / profile
    return sorted([p.name[:-4] for p in folder.iterdir() if p.name.endswith(".kip")] + [n for n in PERSONS if (folder / "persons" / f"{n}.kip").is_file()])


def capsule_text(name: str, profile: str) -> str:
    folder = _root("kip2cypher.capsules") / profile
    return ((folder / "persons") if name in PERSONS else folder).joinpath(f"{name}.kip").read_text(encoding="utf-8")
