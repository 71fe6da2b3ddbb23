"""The adoption mapping (docs/adopt.md): which labels and relationship types of a team's own graph
KIP reads as concept types and predicates, read from a TOML file and validated here.

``load(path)`` / ``parse(text)`` turn the file into an ``Adoption``: immutable, hashable data
that travels in ``Settings`` (part of the compile-cache key), so the lowering knows at compile
time which types and predicates are adopted. ``Adoption.to_json`` / ``from_json`` is the form
stored on the namespace's nexus node. Every mistake in the file is a ``KipError`` naming the
key, its line and the fix (the defined name it probably meant, when there is one).

    [types.Drug]
    label = "Drug"                    # the team's label
    name = "name"                     # the property that is the KIP name
    attributes = ["risk", "approved"] # exposed properties (or a table KIP key = property)
    key = "drug_id"                   # optional: ids "A:Drug:<value>" stable across dump/restore
    text = ["name", "summary"]        # optional: properties of the keyword SEARCH index
    description = "..."
    [predicates.treats]
    type = "TREATS"
    subject = "Drug"
    object = "Disease"
    attributes = ["evidence"]
    text = ["note"]                   # optional: relationship properties keyword SEARCH PROPOSITION reads
    [options]
    link_memory = false               # may memory propositions point at adopted concepts? (docs/adopt.md)
"""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import json
import math
import re
import tomllib
import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import errors
from .errors import KipError

#: Version of the stored JSON form (``Adoption.to_json``).
FORMAT = 1
#: A KIP identifier (spec §2.8.1): type names, predicate names and attribute keys.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Names Genesis defines: the type system itself cannot be adopted.
GENESIS_TYPES = ("Domain",)
GENESIS_PREDICATES = ("belongs_to_domain",)
#: The domain every adopted type and predicate belongs to (DESCRIBE DOMAINS lists it).
DOMAIN = "Adopted"
#: Engine label / relationship-type stems (``cypher.storage``); repeated here because the
#: foundation layer may not import the cypher layer. ``tests/test_reliability_labelspace_attack.py``
#: checks they agree (the shadow label of relationship vectors was once missing here).
ENGINE_STEMS = ("KipConcept", "KipProposition", "KipNexus", "KipAdoptedVector", "KipAdoptedRelationshipVector", "KIP_SUBJECT", "KIP_OBJECT")
#: Memory's own concept-type labels and predicate types (``kip:Drug``, ``kip.alice:treats``:
#: ``cypher.storage.is_vocabulary_name``, spelled here because the mapping sits below the storage layer).
VOCABULARY_NAME = re.compile(r"kip(?:\.[a-z][a-z0-9_]{0,31})?:")


@dataclass(frozen=True)
class AdoptedType:
    """A concept type backed by the nodes of one label."""

    name: str
    label: str
    name_property: str
    #: (KIP attribute key, node property), in the file's order.
    attributes: tuple[tuple[str, str], ...]
    description: str
    key: str | None = None
    #: Properties of the adopted full-text index (keyword SEARCH); the name property first.
    text: tuple[str, ...] = ()

    def property_of(self, key: str) -> str | None:
        """The node property behind attribute ``key`` (None: not exposed)."""
        return dict(self.attributes).get(key)


@dataclass(frozen=True)
class AdoptedPredicate:
    """A predicate backed by the relationships of one type between two adopted types."""

    name: str
    rel_type: str
    subject: str
    object: str
    attributes: tuple[tuple[str, str], ...]
    description: str
    #: Relationship properties of the adopted relationship full-text index (keyword SEARCH PROPOSITION).
    text: tuple[str, ...] = ()

    def property_of(self, key: str) -> str | None:
        return dict(self.attributes).get(key)


#: An adopted type or predicate.
Adopted = AdoptedType | AdoptedPredicate


@dataclass(frozen=True)
class Adoption:
    """A validated mapping: what KIP reads of the team's graph, and the options."""

    types: tuple[AdoptedType, ...]
    predicates: tuple[AdoptedPredicate, ...]
    #: Memory propositions may have an adopted concept as subject or object.
    link_memory: bool = False
    #: The full-text index over the text properties exists (set by ``kip2cypher adopt``, not
    #: by the file): keyword SEARCH CONCEPT then also finds adopted concepts.
    text_indexed: bool = False
    #: The adopted concepts' vectors exist (``kip2cypher adopt --embed``, docs/adopt.md): semantic
    #: and hybrid SEARCH CONCEPT then also query their shadow vector index.
    embedded: bool = False
    #: The relationship full-text index over the predicates' ``text`` exists (``adopt
    #: --create-index``): keyword SEARCH PROPOSITION then also finds adopted relationships by it.
    relationships_indexed: bool = False
    #: The adopted relationships' vectors exist (``adopt --embed`` since they are embedded too):
    #: semantic and hybrid SEARCH PROPOSITION then also query their shadow vector index.
    relationships_embedded: bool = False

    def type(self, name: str) -> AdoptedType | None:
        return next((t for t in self.types if t.name == name), None)

    def predicate(self, name: str) -> AdoptedPredicate | None:
        return next((p for p in self.predicates if p.name == name), None)

    @property
    def rel_types(self) -> tuple[str, ...]:
        """Every relationship type the mapping reads (each once)."""
        return tuple(dict.fromkeys(p.rel_type for p in self.predicates))

    def sharing(self, rel_type: str) -> tuple[AdoptedPredicate, ...]:
        """The predicates read from relationships of ``rel_type``."""
        return tuple(p for p in self.predicates if p.rel_type == rel_type)

    def to_json(self) -> str:
        """The form stored on the nexus node (compact, keys sorted: equal mappings, equal text)."""
        return json.dumps(
            {
                "format": FORMAT,
                "types": [_type_json(t) for t in self.types],
                "predicates": [_predicate_json(p) for p in self.predicates],
                "options": {"link_memory": self.link_memory},
                "text_indexed": self.text_indexed,
                "embedded": self.embedded,
                "relationships_indexed": self.relationships_indexed,
                "relationships_embedded": self.relationships_embedded,
            },
            ensure_ascii=False,
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Adoption:
        """The stored form back; KIP_4003 when it was written by an incompatible version."""
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}")
            return cls(
                types=tuple(
                    AdoptedType(t["name"], t["label"], t["name_property"], _pairs(t["attributes"]), t["description"], t.get("key"), tuple(t["text"]))
                    for t in data["types"]
                ),
                predicates=tuple(
                    AdoptedPredicate(p["name"], p["rel_type"], p["subject"], p["object"], _pairs(p["attributes"]), p["description"], tuple(p.get("text", ())))
                    for p in data["predicates"]
                ),
                link_memory=bool(data["options"]["link_memory"]),
                text_indexed=bool(data.get("text_indexed", False)),
                embedded=bool(data.get("embedded", False)),
                relationships_indexed=bool(data.get("relationships_indexed", False)),
                relationships_embedded=bool(data.get("relationships_embedded", False)),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise KipError(
                errors.INTERNAL_ERROR,
                f"The adoption mapping stored on this namespace's nexus node cannot be read ({exc}).",
                "Re-run `kip2cypher adopt <mapping.toml>` with this version of kip2cypher.",
            ) from None


def _type_json(t: AdoptedType) -> dict[str, Any]:
    return {
        "name": t.name,
        "label": t.label,
        "name_property": t.name_property,
        "attributes": [list(a) for a in t.attributes],
        "description": t.description,
        "key": t.key,
        "text": list(t.text),
    }


def _predicate_json(p: AdoptedPredicate) -> dict[str, Any]:
    return {
        "name": p.name,
        "rel_type": p.rel_type,
        "subject": p.subject,
        "object": p.object,
        "attributes": [list(a) for a in p.attributes],
        "description": p.description,
        "text": list(p.text),
    }


def _pairs(items: list) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in items)


# ------------------------------------------------------------------ ids and values
#: Every adopted id starts with this (memory ids start with "C:" / "P:": they never collide).
ID_PREFIX = "A:"
#: Marks an id value that is a Neo4j elementId (no ``key`` property, or the node lacks it).
ELEMENT_MARK = "@"
_DECIMAL = re.compile(r"-?(0|[1-9][0-9]{0,18})\Z")


def id_prefix(name: str) -> str:
    """``A:<Type>:`` / ``A:<predicate>:``: the start of every id of an adopted type or predicate."""
    return f"{ID_PREFIX}{name}:"


def split_id(value: Any) -> tuple[str, str] | None:
    """``"A:Drug:D001"`` → ``("Drug", "D001")``; None for anything that is not an adopted id."""
    if not isinstance(value, str) or not value.startswith(ID_PREFIX):
        return None
    name, sep, rest = value[len(ID_PREFIX) :].partition(":")
    return (name, rest) if sep and IDENTIFIER.match(name) else None


def key_candidates(value: str) -> list[Any]:
    """The ``key`` property values an id value stands for: the string, and the integer it spells
    when it is written in canonical decimal (ids are text; a team's keys are often integers)."""
    number = int(value) if _DECIMAL.match(value) else None
    return [value, number] if number is not None and -(2**63) <= number < 2**63 else [value]


def jsonable(value: Any) -> Any:
    """A property value of the team's graph as a JSON value (docs/adopt.md, "Values"): temporal
    values arrive as Neo4j's own ISO 8601 text (``lower.adopted_values.display`` converts them in
    Cypher), a point as ``{"srid", "x", "y"[, "z"]}``, a byte array as base64 text, NaN /
    ±Infinity as text; lists and maps are converted item by item."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")  # JSON has no such number
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, tuple) and hasattr(value, "srid"):  # the driver's Point: a tuple of coordinates with an SRID
        return {"srid": value.srid, **dict(zip(("x", "y", "z"), (jsonable(c) for c in value)))}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if hasattr(value, "iso_format"):
        return value.iso_format()
    return str(value)


#: ISO 8601 texts of Neo4j's temporal types, as Neo4j's ``toString()`` writes them (what FIND
#: shows) and the common variants Neo4j's own parsers accept: ``2026-01-05``, ``10:00``,
#: ``10:00:00.5+01:00``, ``2026-01-05T10:00:00Z``, ``…T10:00:00+01:00[Europe/Berlin]``, ``P1DT2H``.
_DATE = r"(?P<year>[+-]\d{4,9}|\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
_TIME = r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.\d{1,9})?)?"
_OFFSET = r"(?P<offset>Z|[+-](?P<oh>\d{2}):(?P<om>\d{2}))"
_TEMPORAL_TEXT = (
    ("date", re.compile(_DATE + r"\Z")),
    ("localtime", re.compile(_TIME + r"\Z")),
    ("time", re.compile(_TIME + _OFFSET + r"\Z")),
    ("localdatetime", re.compile(_DATE + "T" + _TIME + r"\Z")),
    ("datetime", re.compile(_DATE + "T" + _TIME + r"(?:" + _OFFSET + r"(?:\[(?P<zone>[A-Za-z0-9_+\-/]+)\])?|\[(?P<zone_only>[A-Za-z0-9_+\-/]+)\])\Z")),
)
_NUMBER = r"[+-]?\d{1,18}"
_DURATION = re.compile(
    rf"-?P(?=.)(?:{_NUMBER}Y)?(?:{_NUMBER}M)?(?:{_NUMBER}W)?(?:{_NUMBER}D)?(?:T(?=.)(?:{_NUMBER}H)?(?:{_NUMBER}M)?(?:{_NUMBER}(?:\.\d{{1,9}})?S)?)?\Z"
)


def temporal_kind(text: str) -> str | None:
    """The Neo4j temporal type ``text`` spells — its Cypher constructor (``date``, ``localtime``,
    ``time``, ``localdatetime``, ``datetime``, ``duration``) — or None. Only valid values count
    (no February 30th, no unknown time zone), so converting the text in Cypher never fails."""
    if _DURATION.match(text):
        return "duration"
    for kind, pattern in _TEMPORAL_TEXT:
        found = pattern.match(text)
        if found is not None:
            return kind if _valid(found.groupdict()) else None
    return None


def _valid(parts: dict[str, str | None]) -> bool:
    """The fields of a matched temporal text are in range (a zone id must be one Python knows;
    with an offset too, the offset must be the zone's at that time, as Neo4j requires)."""
    if parts.get("year") is not None:
        year, month, day = int(parts["year"]), int(parts["month"]), int(parts["day"])
        if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year if 1 <= year <= 9999 else 2000 + year % 400, month)[1]:
            return False
    if parts.get("hour") is not None and (int(parts["hour"]) > 23 or int(parts["minute"]) > 59 or int(parts["second"] or 0) > 59):
        return False
    if parts.get("oh") is not None and (int(parts["oh"]) > 18 or int(parts["om"]) > 59):
        return False
    zone = parts.get("zone") or parts.get("zone_only")
    return zone is None or _zone_fits(zone, parts)


def _zone_fits(zone: str, parts: dict[str, str | None]) -> bool:
    """``zone`` is a time zone id, and an offset written with it is the zone's offset at that
    local time (Neo4j refuses ``…+05:00[Europe/Berlin]``: the conversion must never fail)."""
    try:
        tz = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    if parts.get("offset") is None:
        return True
    year = int(parts["year"])
    if not 1 <= year <= 9999:
        return False  # Python cannot tell the zone's offset then: refuse rather than guess
    local = dt.datetime(year, int(parts["month"]), int(parts["day"]), int(parts["hour"]), int(parts["minute"]), int(parts["second"] or 0))
    sign = -1 if parts["offset"].startswith("-") else 1
    offset = dt.timedelta(0) if parts["offset"] == "Z" else sign * dt.timedelta(hours=int(parts["oh"]), minutes=int(parts["om"]))
    return any(local.replace(tzinfo=tz, fold=fold).utcoffset() == offset for fold in (0, 1))


def element_object(value: Any) -> Any:
    """Decode an adopted element built by ``lower.adopted.element`` (null stays null): its
    attributes without the properties a node lacks."""
    if value is None:
        return None
    out = jsonable(value)
    out["attributes"] = {k: v for k, v in sorted(out["attributes"].items()) if v is not None}
    return out


def value_object(value: Any) -> Any:
    """Decode a value read from an adopted element (a whole attributes map loses its nulls)."""
    out = jsonable(value)
    return {k: v for k, v in sorted(out.items()) if v is not None} if isinstance(out, dict) else out


# ------------------------------------------------------------------ the file
Attributes = Union[list[str], dict[str, str]]


class _Entry(BaseModel):
    # strict: "yes" is not a boolean, 5 is not a label
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _TypeEntry(_Entry):
    label: str = Field(min_length=1)
    name: str = Field(default="name", min_length=1)
    attributes: Attributes = Field(default_factory=list)
    description: str | None = None
    key: str | None = Field(default=None, min_length=1)
    text: list[str] | None = None


class _PredicateEntry(_Entry):
    type: str = Field(min_length=1)
    subject: str
    object: str
    attributes: Attributes = Field(default_factory=list)
    text: list[str] | None = None
    description: str | None = None


class _Options(_Entry):
    link_memory: bool = False


class _File(_Entry):
    types: dict[str, _TypeEntry] = Field(default_factory=dict)
    predicates: dict[str, _PredicateEntry] = Field(default_factory=dict)
    options: _Options = Field(default_factory=_Options)


def load(path: str | Path) -> Adoption:
    """Read and validate a mapping file (KipError naming the key and line of the first mistake)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise KipError(
            errors.NOT_FOUND, f"Cannot read the mapping file {str(path)!r}: {exc.strerror or exc}.", "Give the path of a TOML mapping file (docs/adopt.md)."
        ) from None
    return parse(text, str(path))


def parse(text: str, source: str = "the mapping") -> Adoption:
    """Validate mapping text; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KipError(
            errors.INVALID_SYNTAX, f"{source} is not valid TOML: {exc}.", "Fix the TOML syntax (https://toml.io); docs/adopt.md shows a complete mapping."
        ) from None
    where = _Locator(text, source)
    try:
        file = _File.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        # pydantic names the branch of a union it tried ("list[str]"); the file has no such key
        loc = tuple(str(part) for part in first["loc"] if not str(part).startswith(("list[", "dict[")))
        raise KipError(
            errors.INVALID_SYNTAX,
            f"{where.key(loc)}: {_pydantic_message(first)}.",
            _pydantic_hint(loc, first),
        ) from None
    return _Checker(file, where).adoption()


def _pydantic_message(error: dict[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key"
    if any(str(part).startswith(("list[", "dict[")) for part in error["loc"]):
        return f'attributes must be a list of property names or a table of KIP key = "property" (got {error.get("input")!r})'
    if error["type"] == "model_type":
        return f"must be a table (got {error.get('input')!r})"
    if error["type"] == "missing":
        return "required key is missing"
    return f"{error['msg'][0].lower()}{error['msg'][1:]} (got {error.get('input')!r})"


def _pydantic_hint(loc: tuple[str, ...], error: dict[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        section = loc[0] if loc else ""
        allowed = {
            "types": "label, name, attributes, key, text, description",
            "predicates": "type, subject, object, attributes, text, description",
            "options": "link_memory",
        }.get(section, "types, predicates, options")
        return f"The keys allowed here are: {allowed} (docs/adopt.md)."
    key = loc[-1] if loc else ""
    if any(str(part).startswith(("list[", "dict[")) for part in error["loc"]):
        return 'Write attributes = ["risk", "approved"] or attributes = { risk = "risk_level" }.'
    if error["type"] == "missing":
        return f'Add {key} = "…" to the [{".".join(loc[:-1])}] table (docs/adopt.md).'
    if error["type"] in ("string_type", "string_too_short"):
        return f'Write {key} = "…": a non-empty quoted string (docs/adopt.md).'
    if error["type"] == "bool_type":
        return f"Write {key} = true or {key} = false."
    if error["type"] == "model_type":
        return f"Write [{'.'.join(loc)}] as a table header followed by its keys (docs/adopt.md)."
    return "docs/adopt.md describes every key of a mapping file."


class _Locator:
    """Line numbers of TOML keys for error messages (``tomllib`` keeps none): the line of the
    ``[types.Drug]`` header, or of a key below it."""

    def __init__(self, text: str, source: str) -> None:
        self.lines = text.splitlines()
        self.source = source

    def key(self, loc: tuple[str, ...]) -> str:
        dotted = ".".join(loc) if loc else "(top level)"
        line = self.line(loc)
        return f"{self.source}, key {dotted}" + (f" (line {line})" if line else "")

    def line(self, loc: tuple[str, ...]) -> int | None:
        if not loc:
            return None
        table = loc[:2] if loc[0] in ("types", "predicates") else loc[:1]
        header = re.compile(r"\s*\[\s*" + r"\s*\.\s*".join(re.escape(p) + r'|"' + re.escape(p) + '"' for p in table) + r"\s*\]")
        start = next((i for i, line in enumerate(self.lines) if header.match(line)), None)
        if start is None:  # a key outside any table
            top = re.compile(r"\s*\"?" + re.escape(loc[0]) + r"\"?\s*=")
            return next((i + 1 for i, line in enumerate(self.lines) if top.match(line)), None)
        rest = loc[len(table) :]
        if not rest:
            return start + 1
        key = re.compile(r"\s*\"?" + re.escape(rest[0]) + r"\"?\s*=")
        for i in range(start + 1, len(self.lines)):
            if self.lines[i].lstrip().startswith("["):
                break
            if key.match(self.lines[i]):
                return i + 1
        return start + 1


class _Checker:
    """The rules pydantic cannot state: identifiers, cross-references, reserved names."""

    def __init__(self, file: _File, where: _Locator) -> None:
        self.file = file
        self.where = where

    def fail(self, loc: tuple[str, ...], message: str, hint: str, code: str = errors.INVALID_IDENTIFIER) -> KipError:
        return KipError(code, f"{self.where.key(loc)}: {message}", hint)

    def adoption(self) -> Adoption:
        types = tuple(self.type_entry(name, entry) for name, entry in self.file.types.items())
        predicates = tuple(self.predicate_entry(name, entry) for name, entry in self.file.predicates.items())
        if not types:
            raise self.fail(
                ("types",), "the mapping adopts no type.", "Add at least one [types.<Name>] table with a label (docs/adopt.md).", errors.CONSTRAINT_VIOLATION
            )
        labels: dict[str, str] = {}
        for t in types:
            if t.label in labels:
                raise self.fail(
                    ("types", t.name, "label"),
                    f"the label {t.label!r} is already mapped by type {labels[t.label]!r}.",
                    "Map each label to one concept type.",
                    errors.CONSTRAINT_VIOLATION,
                )
            labels[t.label] = t.name
        seen: dict[tuple[str, str, str], str] = {}
        for p in predicates:
            same = seen.setdefault((p.rel_type, p.subject, p.object), p.name)
            if same != p.name:
                raise self.fail(
                    ("predicates", p.name),
                    f"it reads the same relationships as predicate {same!r} (({p.subject})-[:{p.rel_type}]->({p.object})).",
                    "Map each relationship type between two types to one predicate.",
                    errors.CONSTRAINT_VIOLATION,
                )
            if p.name in self.file.types:
                raise self.fail(
                    ("predicates", p.name),
                    f"{p.name!r} names both a type and a predicate of this mapping.",
                    'Give the predicate another name (adopted ids "A:<name>:…" must say which one they belong to).',
                    errors.CONSTRAINT_VIOLATION,
                )
        return Adoption(types, predicates, self.file.options.link_memory)

    def identifier(self, loc: tuple[str, ...], name: str, what: str) -> None:
        if not IDENTIFIER.match(name):
            raise self.fail(
                loc,
                f"{name!r} is not a valid {what}: KIP names match [A-Za-z_][A-Za-z0-9_]*.",
                f"Rename it, e.g. {re.sub(r'[^A-Za-z0-9_]', '_', name) or 'x'!r}"
                + (' (use a table `attributes = { kip_key = "property" }` to expose a property under another key).' if what == "attribute key" else "."),
            )

    def engine_name(self, loc: tuple[str, ...], name: str, what: str) -> None:
        if any(name == stem or name.startswith(stem + "__") for stem in ENGINE_STEMS) or VOCABULARY_NAME.match(name):
            raise self.fail(
                loc,
                f"{name!r} is a {what} the engine owns.",
                f"Adopt only the team's own labels and relationship types; {', '.join(ENGINE_STEMS)} (and those names with a __namespace suffix) and the "
                "names beginning with kip: or kip.<namespace>: (memory's own types and predicates) are the engine's.",
                errors.IMMUTABLE_TARGET,
            )

    def attributes(self, loc: tuple[str, ...], attributes: Attributes) -> tuple[tuple[str, str], ...]:
        pairs = [(a, a) for a in attributes] if isinstance(attributes, list) else list(attributes.items())
        seen: set[str] = set()
        for key, prop in pairs:
            self.identifier(loc + ("attributes",), key, "attribute key")
            if not prop:
                raise self.fail(
                    loc + ("attributes", key), "the property name is empty.", "Name the node or relationship property to expose.", errors.INVALID_SYNTAX
                )
            if key in seen:
                raise self.fail(loc + ("attributes",), f"the attribute {key!r} is listed twice.", "List each attribute once.", errors.CONSTRAINT_VIOLATION)
            seen.add(key)
        return tuple(pairs)

    def entry_name(self, loc: tuple, name: str, noun: str, genesis: Any, why: str, engine: tuple[str, str, str]) -> None:
        """The checks a type and a predicate entry share: a KIP identifier, not a Genesis name,
        and a Neo4j name (``engine``: its key, value and kind) that is not the engine's."""
        self.identifier(loc, name, f"{noun} name")
        if name in genesis:
            raise self.fail(loc, f"{name!r} is defined by Genesis ({why}).", f"Choose another {noun.split()[-1]} name.", errors.IMMUTABLE_TARGET)
        key, value, kind = engine
        self.engine_name(loc + (key,), value, kind)

    def text_properties(self, loc: tuple, properties: list[str], reads: str) -> tuple[str, ...]:
        """The properties a keyword index reads, once each; none may be empty."""
        text = tuple(dict.fromkeys(properties))
        if any(not p for p in text):
            raise self.fail(loc + ("text",), "a property name is empty.", f"List the {reads}.", errors.INVALID_SYNTAX)
        return text

    def type_entry(self, name: str, entry: _TypeEntry) -> AdoptedType:
        loc = ("types", name)
        self.entry_name(loc, name, "concept type", GENESIS_TYPES, "the type system itself", ("label", entry.label, "label"))
        attributes = self.attributes(loc, entry.attributes)
        text = self.text_properties(loc, [entry.name, *(entry.text or [])], "properties keyword SEARCH reads")
        description = entry.description or f"Adopted from the Neo4j label {entry.label!r} (read-only)."
        return AdoptedType(name, entry.label, entry.name, attributes, description, entry.key, text)

    def predicate_entry(self, name: str, entry: _PredicateEntry) -> AdoptedPredicate:
        loc = ("predicates", name)
        self.entry_name(loc, name, "predicate", GENESIS_PREDICATES, "domain membership", ("type", entry.type, "relationship type"))
        for role in ("subject", "object"):
            ref = getattr(entry, role)
            if ref not in self.file.types:
                guess = errors.closest(ref, list(self.file.types))
                raise self.fail(
                    loc + (role,),
                    f"{ref!r} is not a type of this mapping.",
                    (f"Did you mean {guess!r}? " if guess else "")
                    + f"A predicate's {role} must be one of the [types.…] tables: {', '.join(self.file.types) or '(none)'}.",
                    errors.TYPE_MISMATCH,
                )
        attributes = self.attributes(loc, entry.attributes)
        description = (
            entry.description or f"Adopted from the Neo4j relationship type {entry.type!r}, ({entry.subject})-[:{entry.type}]->({entry.object}) (read-only)."
        )
        text = self.text_properties(loc, entry.text or [], "relationship properties keyword SEARCH PROPOSITION reads")
        return AdoptedPredicate(name, entry.type, entry.subject, entry.object, attributes, description, text)
