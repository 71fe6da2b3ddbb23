"""``kip2cypher adopt``'s reports for people (docs/adopt.md); the work is the nexus's
(``Nexus.adopt``, ``Nexus.embed_adopted``: ``execution.programs.adopt``).
"""

from __future__ import annotations

from typing import Any


def embed_lines(report: dict[str, Any]) -> list[str]:
    """``embed``'s report for people."""
    lines = [f"vectors of type {c['type']}: {c['nodes']} node(s) with text, {c['embedded']} (re-)embedded with {report['model']}" for c in report["types"]]
    lines += [
        f"vectors of predicate {c['predicate']}: {c['relationships']} relationship(s), {c['embedded']} (re-)embedded with {report['model']}"
        for c in report["predicates"]
    ]
    return lines + [f"vectors dropped (node or relationship gone or no longer matching the mapping): {report['dropped']}"]


def report_lines(report: dict[str, Any]) -> list[str]:
    """``apply``'s report for people."""
    verb = "would register" if report["dry_run"] else "registered"
    lines = []
    for t in report["types"]:
        missing = f" ({t['without_name']} without the name property)" if t["without_name"] else ""
        lines.append(f"type {t['type']} {verb} — label {t['label']}: {t['nodes']} node(s){missing}")
    for p in report["predicates"]:
        other = f" ({p['not_exposed']} of that type between other labels are not exposed)" if p["not_exposed"] else ""
        lines.append(
            f"predicate {p['predicate']} {verb} — ({p['subject']})-[:{p['relationship_type']}]->({p['object']}): {p['relationships']} relationship(s){other}"
        )
    lines += [f"warning: {warning}" for warning in report.get("warnings", [])]
    lines.append(f"mapping: {report['mapping']}")
    link = report.get("link_memory")
    if link is not None and link["enabled"]:
        enables = "enables" if not report["dry_run"] else "would enable"
        lines.append(
            f"link_memory {enables}: memory propositions may have an adopted concept as subject or object — KIP then adds its own "
            "KIP_SUBJECT / KIP_OBJECT and predicate relationships at the team's nodes (never a label or a property); "
            f"{link['linked_propositions']} such proposition(s) now"
        )
        if link["dangling_propositions"]:
            lines.append(
                f"{link['dangling_propositions']} linked proposition(s) lost an adopted endpoint the team deleted: KIP does not read them; "
                "the same UPSERT links one again once a node with that adopted id exists, DELETE CONCEPT of its memory endpoint removes it"
            )
    elif link is not None:
        lines.append("link_memory: off (no memory proposition links to an adopted concept)")
    if report.get("no_longer_adopted"):
        lines.append(f"no longer adopted (their definitions stay, marked adopted): {', '.join(report['no_longer_adopted'])}")
    for key, what in (
        ("text_index", "keyword SEARCH over adopted types"),
        ("relationship_text_index", "keyword SEARCH PROPOSITION over adopted predicates' text"),
    ):
        index = report.get(key)
        if index is None:
            continue
        if index["state"] in ("present", "created"):
            lines.append(f"full-text index {index['name']}: {index['state']}")
        else:
            lines.append(f"full-text index {index['name']} is {index['state']}; {what} needs it: re-run with --create-index, or run:")
            lines.append(f"  {index['statement']}")
    return lines
