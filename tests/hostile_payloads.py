"""The hostile-input corpus and the graph fingerprint used by the reliability tests.

``NAMES`` are strings that go everywhere a KIP command takes a string: concept type
names, concept names, predicates, attribute and metadata values, nested object keys
and parameters. Each one tries to break out of somewhere: a backtick-quoted Cypher
identifier, a Cypher string, a KIP string, the engine's JSON marker, a regex, a
terminal, a Unicode normalizer. ``VALUES`` are too large to be names (Neo4j indexes
names) and go into values and parameters only. ``INVALID_TOKENS`` cannot be Neo4j
labels or relationship types at all (empty, NUL) and must be refused cleanly.

``fingerprint`` hashes every node and relationship with all its properties, so a
test can prove that a request changed nothing, or exactly what it meant to.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from typing import Any, NamedTuple

from kip2cypher.execution.background import wait_all


class Payload(NamedTuple):
    id: str
    text: str


_RAW: list[tuple[str, str]] = [
    # --- breaking out of a backtick-quoted identifier (labels, relationship types, keys)
    ("bt-detach", "Drug` DETACH DELETE"),
    ("bt-close-paren", "Drug`) DETACH DELETE n //"),
    ("bt-close-rel", "x`})-[r]-() DELETE r //"),
    ("bt-one", "`"),
    ("bt-two", "``"),
    ("bt-three", "```"),
    ("bt-inner", "a`b`c"),
    ("bt-match-all", "` MATCH (n) DETACH DELETE n RETURN 1 //"),
    ("bt-many", "`" * 500),
    ("uesc-backtick", "Drug\\u0060) DETACH DELETE a //"),
    ("uesc-bare", "\\u0060"),
    ("uesc-even-backslash", "\\\\u0060"),
    ("uesc-multi-u", "\\uuuu0060) DETACH DELETE a //"),
    ("uesc-backslash", "\\u005c"),
    ("uesc-upper", "\\U00000060"),
    ("uesc-hex", "\\x60"),
    ("uesc-many", "\\u0060" * 200),
    ("backslash", "\\"),
    ("backslash-two", "\\\\"),
    ("backslash-mid", "a\\b"),
    ("backslash-bt", "\\`"),
    ("bt-backslash", "`\\"),
    ("backslash-n-literal", "\\n"),
    ("backslash-nul-literal", "\\u0000"),
    ("backslash-quote-literal", "\\u0022"),
    # --- breaking out of patterns, maps, strings, statements
    ("close-node-subject", "})<-[:KIP_SUBJECT]-(p) DETACH DELETE p //"),
    ("squote-close", "'}) DETACH DELETE n //"),
    ("dquote-close", '"}) DETACH DELETE n //'),
    ("semicolon", "; MATCH (n) DETACH DELETE n"),
    ("block-comment", "/* */ DETACH DELETE"),
    ("line-comment", "// comment"),
    ("comment-close", "*/"),
    ("call-proc", "CALL db.clearQueryCaches()"),
    ("call-kill", "CALL dbms.killQueries([])"),
    ("load-csv", "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l"),
    ("drop-constraint", "DROP CONSTRAINT kip_concept_id"),
    ("union-return", "UNION MATCH (n) RETURN n"),
    ("foreach", "FOREACH (x IN [1] | CREATE (:Pwned))"),
    ("create-pwned", "}) CREATE (:Pwned {x: 1}) //"),
    ("param-rows", "$rows"),
    ("param-dynamic", "$(row.type)"),
    ("param-old", "{p0}"),
    ("param-p0", "$p0"),
    ("jndi", "${jndi:ldap://127.0.0.1/a}"),
    ("sql", "Robert'); DROP TABLE Students;--"),
    ("sql-or", "' OR 1=1 --"),
    ("format", "%s%n%x%d"),
    ("template", "{{7*7}}"),
    ("proto", "__proto__"),
    ("constructor", "constructor"),
    # --- engine-owned names
    ("label-colon", ":KipConcept"),
    ("label-var", "n:KipConcept"),
    ("prop-attr", "attr.description"),
    ("prop-meta", "meta._version"),
    ("prop-id", "id"),
    ("prop-name", "name"),
    ("prop-type", "type"),
    ("meta-version", "_version"),
    ("kip-embedding", "kip_embedding"),
    ("meta-like", "$Concept`Type"),
    ("actor-like", "$self "),
    ("id-like", "C:00000000000000000000000000000000"),
    ("pid-like", "P:0:treats"),
    # --- KIP syntax inside strings
    ("kip-placeholder", ":p"),
    ("kip-var", "?x"),
    ("kip-dotpath", "?x.attributes.name"),
    ("kip-find", 'FIND(?x) WHERE { ?x {type: "Drug"} }'),
    ("kip-upsert", 'UPSERT { CONCEPT ?a { {type: "Drug", name: "x"} } }'),
    ("kip-delete", 'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug"} }'),
    ("kip-breakout", '" } } DELETE CONCEPT ?x DETACH WHERE { ?x {type: "$ConceptType"} } //'),
    ("lbrace", "{"),
    ("rbrace", "}"),
    ("close-both", "})"),
    ("open-both", "({"),
    ("json-list", "[]"),
    ("json-object", "{}"),
    ("json-null", "null"),
    ("json-true", "true"),
    ("json-zero", "0"),
    ("json-huge", "-1e309"),
    ("json-nan", "NaN"),
    ("json-inf", "Infinity"),
    ("json-obj-text", '{"a": 1}'),
    ("json-mixed-text", '[1, "2", null]'),
    # --- quotes
    ("squote", "'"),
    ("squote-two", "''"),
    ("dquote", '"'),
    ("escaped-dquote", '\\"'),
    # --- whitespace and control characters
    ("space", " "),
    ("padded", "  leading and trailing  "),
    ("tab", "\t"),
    ("newline", "line1\nline2"),
    ("crlf", "\r\n"),
    ("newlines-first", "\n\n\nx"),
    ("nel", "\u0085"),
    ("line-separators", "\u2028\u2029"),
    ("c0-controls", "\x01\x02\x1f"),
    ("del", "\x7f"),
    ("ansi", "\x1b[31mred\x1b[0m"),
    ("marker-json", '\u001eKIPJSON\u001e{"a":1}'),
    ("marker-bare", "\u001eKIPJSON\u001e"),
    ("record-separator", "\u001e"),
    # --- Unicode
    ("latin-accents", "Ünïcødé"),
    ("cjk", "日本語の薬"),
    ("arabic", "مرحبا"),
    ("rtl-override", "\u202eevil\u202c"),
    ("zero-width", "a\u200bb"),
    ("bom", "\ufeffBOM"),
    ("nfd", "e\u0301"),
    ("nfc", "\u00e9"),
    ("emoji", "😀"),
    ("zwj-family", "👨‍👩‍👧‍👦"),
    ("astral-fraktur", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),
    ("max-codepoint", "\U0010ffff"),
    ("replacement", "\ufffd"),
    ("noncharacter", "\uffff"),
    ("fullwidth-backtick", "Ｄｒｕｇ｀"),
    ("modifier-apostrophe", "ʼ"),
    ("dotted-i", "İstanbul"),
    ("sharp-s", "ß"),
    ("titlecase-dz", "ǅ"),
    ("ohm-sign", "\u2126"),
    ("omega", "\u03a9"),
    # --- lengths
    ("len-255", "x" * 255),
    ("len-1000", "x" * 1000),
    ("len-4000-bytes", "é" * 2000),
    # --- regex / LIKE metacharacters
    ("regex-any", ".*"),
    ("regex-evil", "(a+)+$"),
    ("like-percent", "%"),
    ("underscore", "_"),
    ("regex-anchors", "^$"),
    # --- paths, URLs, markup
    ("path-traversal", "../../../../etc/passwd"),
    ("file-url", "file:///etc/passwd"),
    ("http-url", "http://127.0.0.1:7474/db/neo4j/tx"),
    ("html", "<script>alert(1)</script>"),
]

NAMES: list[Payload] = [Payload(pid, text) for pid, text in _RAW]
#: NAMES that are a concept type, a name or a value but never a predicate: "/" separates a
#: namespace from a predicate in a native relationship type (docs/namespaces.md), KIP_1002.
SLASHED: list[Payload] = [p for p in NAMES if "/" in p.text]
#: NAMES that break the naming rule of types and predicates (empty, only whitespace, a control
#: character; spec §2.8.1): refused when defined (KIP_1002), fine as a name or value.
UNNAMEABLE: list[Payload] = [p for p in NAMES if not p.text.strip() or any(unicodedata.category(ch) == "Cc" for ch in p.text)]
#: NAMES that go into every string position, predicates included.
TOKEN_NAMES: list[Payload] = [p for p in NAMES if "/" not in p.text and p not in UNNAMEABLE]

MIB = 1 << 20
#: Too large for an index, fine as a value: 1 MiB strings (the spec puts no bound on values).
VALUES: list[Payload] = [
    Payload("1mib-ascii", "y" * MIB),
    Payload("1mib-hostile", ("`}) DETACH DELETE n //\n\"'\\u0060 " * (MIB // 28 + 1))[:MIB]),
    Payload("1mib-emoji", "😀" * (MIB // 4)),
]

#: Not storable as a Neo4j label / relationship type: refused with KIP_1002, nothing written.
INVALID_TOKENS: list[Payload] = [
    Payload("empty", ""),
    Payload("nul", "\x00"),
    Payload("nul-inside", "Drug\x00DETACH DELETE"),
]

#: The engine's own labels / relationship types: refused as concept types and predicates (KIP_3004).
RESERVED_NAMES: list[Payload] = [
    Payload("label-concept", "KipConcept"),
    Payload("label-proposition", "KipProposition"),
    Payload("reltype-subject", "KIP_SUBJECT"),
    Payload("reltype-object", "KIP_OBJECT"),
]

#: Over Neo4j's index key limit (~8 KB) as a name: refused with KIP_2002, nothing written.
TOO_LONG_NAMES: list[Payload] = [Payload("name-9000-bytes", "z" * 9000)]

ALL: list[Payload] = NAMES + VALUES + INVALID_TOKENS + RESERVED_NAMES + TOO_LONG_NAMES

assert len({p.id for p in ALL}) == len(ALL), "payload ids are unique"
assert len({p.text for p in NAMES}) == len(NAMES), "name payloads are distinct"


def kip_string(text: str) -> str:
    """A KIP string literal (JSON syntax) holding exactly ``text``."""
    return json.dumps(text, ensure_ascii=False)


# ------------------------------------------------------------------ graph fingerprint
_NODES = (
    "MATCH (n) WHERE NOT any(l IN labels(n) WHERE l IN $skip) AND NOT (n:KipNexus AND n.namespace = $namespace) "
    "RETURN elementId(n) AS e, labels(n) AS l, properties(n) AS p"
)
_RELS = (
    "MATCH (a)-[r]->(b) WHERE NOT any(l IN labels(a) + labels(b) WHERE l IN $skip) "
    "RETURN elementId(a) AS a, type(r) AS t, properties(r) AS p, elementId(b) AS b"
)


def _canon(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return repr(value)


def fingerprint(driver, database=None, *, skip=None) -> dict[str, Any]:
    """Counts plus a SHA-256 over every node (labels, properties) and relationship
    (endpoints, type, properties), plus the names of all constraints and indexes. Element
    ids are part of it: a node deleted and re-created identically still changes it.

    ``skip`` (a ``storage.Names``): leave out that namespace — its elements, the relationships
    that touch them, its nexus node and its schema objects — to fingerprint everything *else*."""
    # vectors are derived data written after a commit (execution.background): settle them first
    assert wait_all(120), "the background embedding refresh did not settle"
    labels = [skip.concept, skip.proposition] if skip is not None else []
    nodes = driver.execute_query(_NODES, skip=labels, namespace=skip.namespace if skip is not None else None, database_=database).records
    rels = driver.execute_query(_RELS, skip=labels, database_=database).records
    node_items = sorted(json.dumps([r["e"], sorted(r["l"]), _canon(dict(r["p"]))], ensure_ascii=False) for r in nodes)
    rel_items = sorted(json.dumps([r["a"], r["t"], _canon(dict(r["p"])), r["b"]], ensure_ascii=False) for r in rels)
    digest = hashlib.sha256("\n".join(node_items + ["--"] + rel_items).encode("utf-8", "surrogatepass")).hexdigest()
    schema = sorted(
        f"{kind}:{r['name']}"
        for kind in ("CONSTRAINTS", "INDEXES")
        for r in driver.execute_query(f"SHOW {kind} YIELD name RETURN name", database_=database).records
        if skip is None or not r["name"].endswith(f"__{skip.namespace}")
    )
    return {"nodes": len(node_items), "relationships": len(rel_items), "sha256": digest, "schema": schema}
