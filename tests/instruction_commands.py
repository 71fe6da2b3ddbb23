"""The KIP commands of the official RC11 agent instruction documents, read from ``../shared/spec/kip-rc11/``
at test time (SystemInstructions.md, SelfInstructions.md, brain/*.md): every fenced block tagged
``prolog`` / ``kip``, and every other fenced block whose first line (comments aside) starts with a
KIP command word, split into commands the way ``kip2cypher run`` splits a script."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kip2cypher.syntax import ast
from kip2cypher.syntax.script import split_script

SPEC = Path(__file__).resolve().parent.parent.parent / "shared" / "spec" / "kip-rc11"
DOCUMENTS = ("SystemInstructions.md", "SelfInstructions.md", *(f"brain/{p.name}" for p in sorted((SPEC / "brain").glob("*.md"))))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
KIP_WORDS = tuple(ast.command_words())


@dataclass(frozen=True)
class Command:
    document: str
    line: int  # where the command starts in the document (1-based)
    text: str

    @property
    def id(self) -> str:
        return f"{self.document}:{self.line}"


def _is_kip(language: str, body: str) -> bool:
    if language in ("prolog", "kip"):
        return True
    lines = [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("//")]
    return bool(lines) and lines[0].startswith(KIP_WORDS)


def commands() -> list[Command]:
    found = []
    for document in DOCUMENTS:
        text = (SPEC / document).read_text(encoding="utf-8")
        for fence in FENCE.finditer(text):
            language, body = fence.group(1), fence.group(2)
            if not _is_kip(language, body):
                continue
            start = text.count("\n", 0, fence.start(2)) + 1
            for command, offset in split_script(body):
                found.append(Command(document, start + body.count("\n", 0, offset), command.strip()))
    return found


def placeholders(node: object) -> set[str]:
    """The placeholder names of a parsed command (every ``ast.Placeholder`` in its tree)."""
    if isinstance(node, ast.Placeholder):
        return {node.name}
    if isinstance(node, (tuple, list)):
        return set().union(*(placeholders(n) for n in node)) if node else set()
    fields = getattr(type(node), "__dataclass_fields__", None)
    if not fields:
        return set()
    return set().union(*(placeholders(getattr(node, f)) for f in fields)) if fields else set()


#: A value for each kind of placeholder the documents use, by name (``value_for``).
TIME = "2026-07-04T10:00:00Z"
LISTS = {"participants", "key_concepts", "aliases", "issues_list", "summary_of_actions", "appended_maintenance_log", "merged_behavior_preferences"}
NUMBERS = {"v": 1, "index": 1, "count": 1, "priority": 1, "decay_factor": 0.9, "score": 0.5, "threshold": 0.7, "salience": 50}


def value_for(name: str) -> object:
    """A plausible value for the placeholder ``name``: a timestamp for times, a defined type for
    types, ``prefers`` for a predicate, a number, a list, a boolean, else a string."""
    if name in NUMBERS:
        return NUMBERS[name]
    if name in LISTS or name.startswith("refined_") and name.endswith(("strengths", "weaknesses", "values")):
        return []
    if "timestamp" in name or name.endswith(("_at", "cutoff", "_date")) or name in ("now", "since", "last_sleep_cycle", "started_at", "ended_at"):
        return TIME
    if name == "type" or name.endswith("_type"):
        return "Event"
    if name == "predicate":
        return "prefers"
    if "confidence" in name or name in ("prediction_error", "surprise_score", "learning_value", "memory_strength"):
        return 0.5
    if name == "success":
        return True
    if name in ("schema", "context", "state", "interaction_summary"):
        return {}
    return f"example {name}"
