"""The layer rules of docs/architecture.md, checked on the package's own imports (no Neo4j).

Every import counts, at module level or inside a function: a lazy import hides a dependency
from a reader as much as from Python's import machinery.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kip2cypher"

#: layer → the layers (besides itself) its modules may import; docs/architecture.md's table.
FOUNDATION = {"errors", "config", "version", "resources", "profiles", "cursor", "text", "models", "caching", "adoption", "metrics", "tracing"}
LAYERS = {
    "foundation": set(),
    "syntax": {"foundation"},
    "cypher": {"foundation"},
    "domain": {"foundation", "syntax", "cypher"},
    "embedding": {"foundation", "cypher"},
    "lowering": {"foundation", "syntax", "cypher", "domain"},
    "execution": {"foundation", "syntax", "cypher", "domain", "lowering", "embedding"},
}


def layer_of(module: str) -> str:
    """The layer of ``kip2cypher.<module>`` (dotted, without the package)."""
    head = module.split(".")[0]
    if head in FOUNDATION:
        return "foundation"
    return {"syntax": "syntax", "cypher": "cypher", "domain": "domain", "lower": "lowering", "execution": "execution", "embedding": "embedding"}.get(
        head, "interfaces"
    )


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        out[".".join(p for p in parts if p != "__init__") or "__init__"] = path
    return out


MODULES = modules()
INTERNAL = set(MODULES)


@functools.cache
def imports(module: str, path: Path) -> frozenset[str]:
    """The ``kip2cypher`` modules and the third-party top-level packages ``module`` imports."""
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name if not alias.name.startswith("kip2cypher.") else alias.name[len("kip2cypher.") :] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                name = node.module or ""
                found.add(name[len("kip2cypher.") :] if name.startswith("kip2cypher.") else name)
                continue
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = ".".join([*base, node.module] if node.module else base)
            names = [alias.name for alias in node.names]
            # ``from . import grounding`` imports a module; ``from .plan import Plan`` a name
            submodules = [f"{target}.{n}" if target else n for n in names if (f"{target}.{n}" if target else n) in MODULES]
            found |= set(submodules) or {target or "__init__"}
    return frozenset(found)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer_of(m) != "interfaces"))
def test_a_module_imports_only_the_layers_below_it(module):
    layer = layer_of(module)
    allowed = LAYERS.get(layer, set()) | {layer}
    wrong = sorted(i for i in imports(module, MODULES[module]) if i in INTERNAL and layer_of(i) not in allowed)
    assert not wrong, f"{module} ({layer}) imports {wrong}; {layer} may import only {sorted(allowed)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer_of(m) in ("foundation", "syntax", "cypher", "domain", "lowering")))
def test_nothing_below_the_executor_imports_the_driver(module):
    assert not {i for i in imports(module, MODULES[module]) if i.split(".")[0] == "neo4j"}, f"{module} imports the neo4j driver"


def test_no_import_cycle_between_modules():
    graph = {m: {i for i in imports(m, p) if i in INTERNAL and i != m and i != "__init__"} for m, p in MODULES.items()}
    # a package's __init__ re-exporting its submodules is not a cycle of the code
    graph = {
        m: {i for i in deps if not m.startswith(i + ".") and not (MODULES[m].name == "__init__.py" and i.startswith(m + "."))} for m, deps in graph.items()
    }
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles: " + "; ".join(" → ".join(c) for c in cycles)


def lower_names(module: str, path: Path) -> set[tuple[str, str]]:
    """``(lower module, name)`` for every name ``module`` imports from ``lower/``."""
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                target = (node.module or "").removeprefix("kip2cypher.")
            else:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, node.module] if node.module else base)
            if target.split(".")[0] == "lower":
                found |= {(target, alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {(a.name.removeprefix("kip2cypher."), "*") for a in node.names if a.name.startswith("kip2cypher.lower")}
    return found


def is_plan_type(target: str, name: str) -> bool:
    """``lower.plan``, the plan dataclasses of the family modules (``FindPlan`` …) and a plan's data module (``upsert_plan``)."""
    return target in ("lower.plan", "lower.upsert_plan") or name.endswith("Plan")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("execution.programs")))
def test_programs_import_only_plan_types_from_lower(module):
    """A plan carries every statement its program runs: a program takes nothing else from lower/
    (rules and statements shared by the lowering and the programs live in domain/ or cypher/)."""
    taken = sorted((target, name) for target, name in lower_names(module, MODULES[module]) if not is_plan_type(target, name))
    assert not taken, f"{module} imports {taken} from lower/; put the statement on its plan (or in cypher/ / domain/)"


#: A call that runs a statement on the neo4j driver.
DRIVER_CALL = re.compile(r"\b(?:session|tx)\.run\(|\bexecute_query\(")
#: The modules that may make one: the driver loops (docs/architecture.md), and ``localneo4j``,
#: whose launcher asks the server it just started for its version on a throw-away driver of its
#: own — before any nexus exists, to tell whether the port answers with that server at all.
RUNS_STATEMENTS = {"execution.loop", "localneo4j"}


def test_only_the_driver_loops_run_statements():
    found = sorted(
        f"{module}:{number}"
        for module, path in MODULES.items()
        if module not in RUNS_STATEMENTS
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if DRIVER_CALL.search(line)
    )
    assert not found, f"driver calls outside execution/loop.py: {found}; yield Run(...) from a program instead"


#: Text that reads as Cypher (and not as KIP, whose MERGE CONCEPT / SET ATTRIBUTES / DELETE share words).
CYPHER = re.compile(
    r"\b(?:OPTIONAL MATCH|MATCH|MERGE|CREATE)\s*\(|\bCREATE (?:\w+ )?(?:CONSTRAINT|INDEX)\b|\bDROP (?:CONSTRAINT|INDEX)\b"
    r"|\bCALL\s*[({]|\bCALL db\.|\bSHOW [A-Z]+|\bUNWIND\b|\bRETURN\b.*\bAS\b|\bYIELD\b|\bEXPLAIN\b"
)


def _formatted_text(node: ast.AST) -> str | None:
    """The literal text of a string being formatted: an f-string, ``"…".format(…)``, ``"…" % …`` or ``"…" + …``."""
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        node = node.func.value
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        sides = [side.value for side in (node.left, node.right) if isinstance(side, ast.Constant) and isinstance(side.value, str)]
        return " ".join(sides) or None
    return None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer_of(m) != "cypher"))
def test_no_cypher_is_formatted_outside_the_cypher_package(module):
    """Cypher is built by ``cypher.builder`` (values as parameters, names quoted) or written in
    ``cypher.catalog``: nowhere else is Cypher text formatted from pieces."""
    found = [
        f"{module}:{node.lineno}"
        for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8")))
        if (text := _formatted_text(node)) is not None and CYPHER.search(text)
    ]
    assert not found, f"Cypher formatted outside kip2cypher/cypher/ at {found}: use cypher.builder or cypher.catalog"
