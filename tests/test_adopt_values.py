"""Adopted values read exactly (docs/adopt.md, "Values"), on a real Neo4j.

The team's graph holds what Neo4j stores and JSON lacks: every temporal type (on nodes and on
relationships), points, byte arrays and lists of dates, next to a node whose property of the
same name is a string. FIND must show each value as documented, and every FILTER, IN and
ORDER BY over them must give the exact answer or a KIP error naming the FILTER and the Neo4j
types — never the silently empty answer a ``datetime`` compared with a string gave before.
Also: an unmapped attribute of an adopted type gets a did-you-mean in ``warnings``, and
``kip2cypher adopt`` warns about labels, relationship types and properties no element carries.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from test_adopt import World, _open, _wipe

import kip2cypher
from kip2cypher import adoption
from kip2cypher.cli import main

MAPPING = """
[types.Incident]
label = "Incident"
key = "code"
attributes = ["opened_at", "day", "local", "at", "clock", "took", "spot", "geo", "blob", "days", "tags", "sev"]

[types.Service]
label = "Service"

[predicates.hit]
type = "HIT"
subject = "Incident"
object = "Service"
attributes = ["since", "lasted", "first_day"]
"""

TEAM_GRAPH = """
CREATE (a:Incident {code: 'I1', name: 'outage', opened_at: datetime('2026-01-05T10:00:00Z'), day: date('2026-01-05'),
          local: localdatetime('2026-01-05T10:00:00'), at: time('10:00:00+01:00'), clock: localtime('10:00:00'), took: duration('P1DT2H'),
          spot: point({x: 1.5, y: 2.0}), geo: point({longitude: 12.5, latitude: 55.75}), blob: $blob,
          days: [date('2026-01-05'), date('2026-01-06')], tags: ['db', 'eu'], sev: 2, owner: 'ops'}),
       (b:Incident {code: 'I2', name: 'slow', opened_at: datetime('2026-01-05T10:30:00.5+01:00'), day: date('2025-12-31'),
          local: localdatetime('2025-12-31T23:59:59.5'), at: time('08:00:00Z'), clock: localtime('23:00:00'), took: duration('PT90M'), sev: 1}),
       (c:Incident {code: 'I3', name: 'legacy', opened_at: '2026-01-07 by phone', sev: 3}),
       (s:Service {name: 'api'}),
       (a)-[:HIT {since: datetime('2026-01-05T10:05:00Z'), lasted: duration('PT2H'), first_day: date('2026-01-05')}]->(s),
       (b)-[:HIT {since: datetime('2026-01-05T09:40:00Z'), lasted: duration('PT30M'), first_day: date('2026-01-05')}]->(s)
"""


class Team(World):
    def run(self, command, **params):
        return self.nexus.execute_kip(command, parameters=params or None)

    def names(self, where, **params):
        """The names of the incidents a WHERE body keeps, in name order."""
        return self.find(f'FIND(?i.name) WHERE {{ ?i {{type: "Incident"}} {where} }} ORDER BY ?i.name', **params)


@pytest.fixture(scope="module")
def team(neo4j_server):
    nexus = _open(neo4j_server)
    _wipe(nexus.driver, nexus.database)
    nexus.driver.execute_query(TEAM_GRAPH, blob=bytearray(b"\x00\xffkip"), database_=nexus.database)
    nexus.bootstrap()
    nexus.adopt(adoption.parse(MAPPING))
    t = Team(nexus, None)
    yield t
    t.assert_team_unchanged()
    nexus.close()


# ---------------------------------------------------------------- display
def test_find_shows_each_neo4j_type_as_documented_text_map_or_base64(team):
    assert team.find('FIND(?i) WHERE { ?i {id: "A:Incident:I1"} }') == [
        {
            "id": "A:Incident:I1",
            "type": "Incident",
            "name": "outage",
            "attributes": {
                "at": "10:00:00+01:00",
                "blob": "AP9raXA=",
                "clock": "10:00:00",
                "day": "2026-01-05",
                "days": ["2026-01-05", "2026-01-06"],
                "geo": {"srid": 4326, "x": 12.5, "y": 55.75},
                "local": "2026-01-05T10:00:00",
                "opened_at": "2026-01-05T10:00:00Z",
                "sev": 2,
                "spot": {"srid": 7203, "x": 1.5, "y": 2.0},
                "tags": ["db", "eu"],
                "took": "P1DT2H",
            },
            "metadata": {"adopted": True, "label": "Incident"},
        }
    ]


def test_find_of_one_adopted_temporal_value_and_of_a_relationship_shows_the_same_text(team):
    assert team.find('FIND(?i.attributes.opened_at, ?i.attributes.took) WHERE { ?i {id: "A:Incident:I2"} }') == [
        ["2026-01-05T10:30:00.5+01:00"],
        ["PT1H30M"],
    ]
    assert team.find('FIND(?l.attributes) WHERE { ?l (?i, "hit", ?s) FILTER(?i.name == "outage") }') == [
        {"first_day": "2026-01-05", "lasted": "PT2H", "since": "2026-01-05T10:05:00Z"}
    ]


def test_export_writes_the_values_as_find_shows_them_and_the_capsule_parses(team):
    exported = team.find('EXPORT ?i WHERE { ?i {id: "A:Incident:I1"} }')
    kip2cypher.parse(exported["capsule"])
    assert exported == {
        "capsule": 'UPSERT {\n  CONCEPT ?c1 {\n    {type: "Incident", name: "outage"}\n    SET ATTRIBUTES {at: "10:00:00+01:00", blob: "AP9raXA=", '
        'clock: "10:00:00", day: "2026-01-05", days: ["2026-01-05", "2026-01-06"], geo: {srid: 4326, x: 12.5, y: 55.75}, local: "2026-01-05T10:00:00", '
        'opened_at: "2026-01-05T10:00:00Z", sev: 2, spot: {srid: 7203, x: 1.5, y: 2.0}, tags: ["db", "eu"], took: "P1DT2H"}\n  }\n}',
        "concepts": 1,
        "propositions": 0,
    }


def test_the_shown_text_is_what_neo4j_tostring_writes_and_what_filter_reads_back(team):
    """Every text FIND shows compares equal to the value it came from (it round-trips)."""
    shown = team.find('FIND(?i.attributes.opened_at, ?i.attributes.day, ?i.attributes.local, ?i.attributes.at, ?i.attributes.clock, ?i.attributes.took) '
                      'WHERE { ?i {id: "A:Incident:I2"} }')  # fmt: skip
    keys = ["opened_at", "day", "local", "at", "clock", "took"]
    for key, text in zip(keys, shown):
        assert team.names(f"FILTER(?i.attributes.{key} == :v)", v=text[0]) == ["slow"], key


TEMPORAL_TEXTS = {
    "2026-01-05": "date",
    "2024-02-29": "date",
    "-0044-03-15": "date",
    "+12026-01-05": "date",
    "10:00": "localtime",
    "23:59:59.999999999": "localtime",
    "10:00:00.5+01:00": "time",
    "08:00Z": "time",
    "2026-01-05T10:00": "localdatetime",
    "2026-01-05T10:00:00Z": "datetime",
    "2026-01-05T10:00:00.123456789-05:30": "datetime",
    "2026-07-05T10:00:00+02:00[Europe/Berlin]": "datetime",
    "2026-07-05T10:00:00[Europe/Berlin]": "datetime",
    "P1DT2H": "duration",
    "-P1D": "duration",
    "P1Y2M3W4DT5H6M7.008S": "duration",
    "PT-1.5S": "duration",
    "PT0S": "duration",
}
NOT_TEMPORAL = ["2026-02-30", "24:00", "2026-07-05T10:00:00+01:00[Europe/Berlin]", "2026-07-05T10:00:00[Mars/Olympus]", "P", "PT", "P1D2H", "2026", "tomorrow"]


def test_every_text_read_as_temporal_is_one_neo4j_converts(team):
    """``adoption.temporal_kind`` lets only valid texts through, so the conversion a FILTER
    compiles never fails in Neo4j; texts it does not read as temporal stay text."""
    assert {text: adoption.temporal_kind(text) for text in TEMPORAL_TEXTS} == TEMPORAL_TEXTS
    assert [adoption.temporal_kind(text) for text in NOT_TEMPORAL] == [None] * len(NOT_TEMPORAL)
    for text, kind in TEMPORAL_TEXTS.items():
        record = team.driver.execute_query(f"RETURN valueType({kind}($t)) AS t", t=text, database_=team.database).records[0]
        assert record["t"].startswith(("DATE", "LOCAL", "ZONED", "DURATION")), (text, record["t"])


# ---------------------------------------------------------------- FILTER over temporal values
def test_filter_on_adopted_datetime_compares_with_iso_text_not_silently_empty(team):
    assert team.names('FILTER(?i.attributes.opened_at > "2026-01-01T00:00:00Z")') == ["legacy", "outage", "slow"]
    # I2 opened at 10:30:00.5+01:00 = 09:30:00.5Z: instants are compared, whatever the offset
    assert team.names('FILTER(?i.attributes.opened_at > "2026-01-05T09:45:00Z")') == ["legacy", "outage"]
    assert team.names('FILTER(?i.attributes.opened_at < "2026-01-05T11:00:00+01:00")') == ["slow"]


def test_filter_on_adopted_zoned_datetime_equality_is_the_same_instant_in_any_offset(team):
    assert team.names('FILTER(?i.attributes.opened_at == "2026-01-05T09:30:00.5Z")') == ["slow"]
    assert team.names('FILTER(?i.attributes.opened_at == "2026-01-05T11:00:00+01:00")') == ["outage"]
    assert team.names('FILTER(?i.attributes.opened_at != "2026-01-05T11:00:00+01:00")') == ["legacy", "slow"]


@pytest.mark.parametrize(
    "where, expected",
    [
        ('FILTER(?i.attributes.day >= "2026-01-01")', ["outage"]),
        ('FILTER(?i.attributes.day < "2026-01-01")', ["slow"]),
        ('FILTER(?i.attributes.day == "2025-12-31")', ["slow"]),
        ('FILTER(?i.attributes.local > "2025-12-31T23:59:59")', ["outage", "slow"]),
        ('FILTER(?i.attributes.local <= "2025-12-31T23:59:59.5")', ["slow"]),
        ('FILTER(?i.attributes.at == "09:00:00Z")', ["outage"]),
        ('FILTER(?i.attributes.at < "09:30:00+01:00")', ["slow"]),
        ('FILTER(?i.attributes.clock > "12:00")', ["slow"]),
        ('FILTER(?i.attributes.clock == "10:00:00")', ["outage"]),
        ('FILTER(?i.attributes.took == "PT1H30M")', ["slow"]),
        ('FILTER(?i.attributes.took == "PT90M")', ["slow"]),
        ('FILTER(?i.attributes.took != "P1DT2H")', ["slow"]),
        ('FILTER(?i.attributes.took == "PT26H")', []),  # Neo4j keeps days and seconds apart: a day is not always 24 hours
        ('FILTER(?i.attributes.clock == "10:00")', ["outage"]),
        ('FILTER(?i.attributes.opened_at == "2026-01-05T11:00:00[Europe/Berlin]")', ["outage"]),
        ('FILTER(IN(?i.attributes.day, ["2026-01-05", "2024-02-29"]))', ["outage"]),
        ('FILTER(IN(?i.attributes.took, ["P1DT2H", "PT1H"]))', ["outage"]),
        ('FILTER(IN(?i.attributes.opened_at, ["2026-01-05T11:00:00+01:00"]))', ["outage"]),
        ("FILTER(IN(?i.attributes.day, []))", []),
        ('FILTER(?i.attributes.opened_at == "2026-01-07 by phone")', ["legacy"]),
        ("FILTER(IS_NULL(?i.attributes.day))", ["legacy"]),
        ("FILTER(?i.attributes.sev < 3)", ["outage", "slow"]),
    ],
)
def test_filter_on_each_adopted_temporal_type_gives_the_exact_answer(team, where, expected):
    assert team.names(where) == expected


def test_filter_with_a_placeholder_for_an_adopted_datetime(team):
    assert team.names("FILTER(?i.attributes.opened_at >= :since && ?i.attributes.day == :day)", since="2026-01-05T10:00:00Z", day="2026-01-05") == ["outage"]
    assert team.names("FILTER(IN(?i.attributes.day, :days))", days=["2025-12-31"]) == ["slow"]


def test_filter_compares_two_adopted_temporal_values_of_one_type(team):
    # a relationship's datetime against its subject's: 10:05Z > 10:00Z and 09:40Z > 09:30:00.5Z
    assert team.find('FIND(?i.name) WHERE { (?i, "hit", ?s) ?l (?i, "hit", ?s) FILTER(?l.attributes.since > ?i.attributes.opened_at) } ORDER BY ?i.name') == [
        "outage",
        "slow",
    ]
    assert team.find('FIND(?i.name) WHERE { ?l (?i, "hit", ?s) FILTER(?l.attributes.first_day == ?i.attributes.day) }') == ["outage"]


def test_filter_on_adopted_relationship_temporal_properties(team):
    assert team.find('FIND(?i.name) WHERE { ?l (?i, "hit", ?s) FILTER(?l.attributes.since < "2026-01-05T10:00:00Z") }') == ["slow"]
    assert team.find('FIND(?i.name) WHERE { ?l (?i, "hit", ?s) FILTER(?l.attributes.lasted == "PT2H") }') == ["outage"]


def test_order_by_adopted_datetime_sorts_instants_not_texts(team):
    # as text "2026-01-05T10:00:00Z" < "2026-01-05T10:30:00.5+01:00"; as instants 09:30:00.5Z comes first
    query = 'FIND(?i.name, ?i.attributes.opened_at) WHERE { ?i {type: "Incident"} FILTER(IS_NOT_NULL(?i.attributes.day)) } ORDER BY ?i.attributes.opened_at'
    assert team.find(query) == [["slow", "outage"], ["2026-01-05T10:30:00.5+01:00", "2026-01-05T10:00:00Z"]]
    assert team.find(query + " DESC") == [["outage", "slow"], ["2026-01-05T10:00:00Z", "2026-01-05T10:30:00.5+01:00"]]
    assert team.find('FIND(?l.attributes.since) WHERE { ?l (?i, "hit", ?s) } ORDER BY ?l.attributes.since') == [
        "2026-01-05T09:40:00Z",
        "2026-01-05T10:05:00Z",
    ]


def test_min_and_max_of_adopted_datetimes_are_instants_shown_as_text(team):
    assert team.find('FIND(MIN(?l.attributes.since), MAX(?i.attributes.opened_at)) WHERE { ?l (?i, "hit", ?s) }') == [
        "2026-01-05T09:40:00Z",
        "2026-01-05T10:00:00Z",
    ]


# ---------------------------------------------------------------- refusals
NOT_COMPARABLE = "; KIP compares only strings, numbers, booleans, lists of them and temporal values, so this cannot answer exactly."
READ_IT = 'Test it with IS_NULL / IS_NOT_NULL, and read it with FIND (docs/adopt.md, "Values" lists how each Neo4j type is shown).'
DIFFERENT = ": values of different Neo4j types never compare equal or ordered, so this cannot answer exactly."
OWN_TYPE = (
    "Compare it with text of its own type, written as FIND shows it, e.g. {} (or another property of that type); "
    "use IS_NULL / IS_NOT_NULL to test presence, and FIND to read the value."
)
DATETIME_TEXT = '"2026-01-05T10:00:00Z" or "2026-01-05T10:00:00+01:00"'
RANGE = "Compare it with ==, <, >= … and text of its own type instead, e.g. {} (a range of two comparisons for a prefix)."


def _refusal(team, where):
    response = team.run(f'FIND(?i.name) WHERE {{ ?i {{type: "Incident"}} {where} }}')
    assert set(response) == {"error"}, response
    return response["error"]


def test_a_date_compared_with_datetime_text_is_a_kip_error_naming_both_types(team):
    assert _refusal(team, 'FILTER(?i.attributes.day > "2026-01-01T00:00:00Z")') == {
        "code": "KIP_2003",
        "message": 'FILTER ?i.attributes.day > "2026-01-01T00:00:00Z" reads a property of the team\'s graph that holds a Neo4j DATE, '
        "compared with a ZONED DATETIME: values of different Neo4j types never compare equal or ordered, so this cannot answer exactly.",
        "hint": 'Compare it with text of its own type, written as FIND shows it, e.g. "2026-01-05" (or another property of that type); '
        "use IS_NULL / IS_NOT_NULL to test presence, and FIND to read the value.",
    }


def test_a_datetime_equal_to_a_date_text_is_a_kip_error_not_an_empty_answer(team):
    assert _refusal(team, 'FILTER(?i.attributes.opened_at == "2026-01-05")') == {
        "code": "KIP_2003",
        "message": 'FILTER ?i.attributes.opened_at == "2026-01-05" reads a property of the team\'s graph '
        "that holds a Neo4j ZONED DATETIME, compared with a DATE" + DIFFERENT,
        "hint": OWN_TYPE.format(DATETIME_TEXT),
    }


def test_values_of_different_types_are_never_equal_which_is_exact(team):
    assert team.names('FILTER(?i.attributes.opened_at == "tomorrow" || ?i.attributes.spot == 1 || ?i.attributes.took == 5)') == []
    assert team.names('FILTER(?i.attributes.opened_at != "tomorrow")') == ["legacy", "outage", "slow"]
    assert team.names('FILTER(IN(?i.attributes.opened_at, ["tomorrow", 3, "2026-01-05T10:00:00Z"]))') == ["outage"]
    assert team.names('FILTER(IN("2026-01-06", ?i.attributes.days))') == ["outage"]
    assert team.names('FILTER(?i.attributes.blob == "AP9raXA=")') == []  # Neo4j's value is a list of integers, never text


def test_durations_are_not_ordered_a_kip_error_says_why(team):
    assert _refusal(team, 'FILTER(?i.attributes.took > "PT1H")') == {
        "code": "KIP_2003",
        "message": 'FILTER ?i.attributes.took > "PT1H" reads a property of the team\'s graph that holds a Neo4j DURATION: durations have no order '
        "(is P1M longer than P30D?), so <, <=, > and >= cannot answer exactly.",
        "hint": "Compare durations with == / != / IN only, or compare the dates they lead to.",
    }


@pytest.mark.parametrize(
    "where, holds, why, hint",
    [
        ('?i.attributes.spot < "point"', "POINT", NOT_COMPARABLE, READ_IT),
        ("?i.attributes.spot == ?i.attributes.geo", "POINT", NOT_COMPARABLE, READ_IT),
        ('?i.attributes.days > "2026-01-01"', "LIST<DATE>", NOT_COMPARABLE, READ_IT),
        (
            '?i.attributes.blob < "AP9raXA="',
            "LIST<INTEGER>",
            ", compared with a STRING: a byte array is a list of integers to Neo4j but shown as base64 text, so this cannot answer exactly.",
            "Test a byte array with IS_NULL / IS_NOT_NULL and read it with FIND; compare lists of integers with IN.",
        ),
        ('IN(?i.attributes.day, ["2026-01-05T10:00:00Z"])', "DATE", ", compared with a LIST<ZONED DATETIME>" + DIFFERENT, OWN_TYPE.format('"2026-01-05"')),
        ("?i.attributes.opened_at > 5", "ZONED DATETIME", ", compared with an INTEGER" + DIFFERENT, OWN_TYPE.format(DATETIME_TEXT)),
        ('CONTAINS(?i.attributes.opened_at, "2026")', "ZONED DATETIME", "; CONTAINS reads text, so it cannot answer exactly.", RANGE.format(DATETIME_TEXT)),
        ('REGEX(?i.attributes.day, "^2026")', "DATE", "; REGEX reads text, so it cannot answer exactly.", RANGE.format('"2026-01-05"')),
    ],
)
def test_points_bytes_temporal_lists_and_text_functions_refuse_with_the_neo4j_type(team, where, holds, why, hint):
    assert _refusal(team, f"FILTER({where})") == {
        "code": "KIP_2003",
        "message": f"FILTER {where} reads a property of the team's graph that holds a Neo4j {holds}{why}",
        "hint": hint,
    }


def test_is_null_over_points_and_bytes_works(team):
    assert team.names("FILTER(IS_NOT_NULL(?i.attributes.spot) && IS_NOT_NULL(?i.attributes.blob))") == ["outage"]


# ---------------------------------------------------------------- warnings
def test_misspelled_adopted_attribute_gets_a_did_you_mean_warning(team):
    assert team.run('FIND(?i.name) WHERE { ?i {type: "Incident"} FILTER(?i.attributes.opend_at > "2026-01-01T00:00:00Z") }') == {
        "result": [],
        "warnings": ['?i: attribute "opend_at" is not mapped for the adopted type Incident (label Incident), so it reads as null; did you mean "opened_at"?'],
    }


def test_unmapped_adopted_attribute_names_the_teams_property_and_the_mapping_fix(team):
    assert team.run('FIND(?i.attributes.ownr) WHERE { ?i {id: "A:Incident:I1"} }') == {
        "result": [None],
        "warnings": [
            '?i: attribute "ownr" is not mapped for the adopted type Incident (label Incident), so it reads as null; did you mean "owner"? '
            'The team\'s elements carry a property "owner" the mapping does not expose: add it to the attributes of [types.Incident] '
            "and run `kip2cypher adopt` again to read it."
        ],
    }
    assert team.run('FIND(?l.attributes.lastd) WHERE { ?l (?i, "hit", ?s) FILTER(?i.name == "outage") }') == {
        "result": [None],
        "warnings": ['?l: attribute "lastd" is not mapped for the adopted predicate hit (relationship type HIT), so it reads as null; did you mean "lasted"?'],
    }


# ---------------------------------------------------------------- adopt warns about names nothing carries
MISSPELLED = """
[types.Incident]
label = "Incidnet"
attributes = ["opened_at"]

[types.Service]
label = "Service"
attributes = ["tier"]
text = ["nmae"]

[predicates.hit]
type = "HITS"
subject = "Incident"
object = "Service"

[predicates.runs]
type = "HIT"
subject = "Incident"
object = "Service"
attributes = ["lastd"]
"""

MISSPELLED_WARNINGS = [
    "types.Incident: no node carries the label 'Incidnet'; did you mean 'Incident'?",
    "types.Service: no Service node carries the property 'tier' (attribute tier).",
    "types.Service: no Service node carries the property 'nmae' (text); did you mean 'name'?",
    "predicates.hit: no relationship has the type 'HITS'; did you mean 'HIT'?",
    "predicates.runs: no HIT relationship carries the property 'lastd' (attribute lastd); did you mean 'lasted'?",
]


def test_adopt_dry_run_warns_about_names_no_element_carries_with_the_nearest_name(team, neo4j_server, tmp_path):
    report = team.nexus.adopt(adoption.parse(MISSPELLED), dry_run=True)
    assert report["warnings"] == MISSPELLED_WARNINGS
    path = tmp_path / "mapping.toml"
    path.write_text(MISSPELLED, encoding="utf-8")
    env = {"NEO4J_URI": neo4j_server.uri, "NEO4J_DATABASE": neo4j_server.database}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    dry = CliRunner().invoke(main, ["adopt", str(path), "--dry-run"], env=env, catch_exceptions=False)
    assert dry.exit_code == 0, dry.output
    assert [line for line in dry.output.splitlines() if line.startswith("warning: ")] == [f"warning: {w}" for w in MISSPELLED_WARNINGS]
    dry = CliRunner().invoke(main, ["adopt", str(path), "--dry-run", "--format", "json"], env=env, catch_exceptions=False)
    assert json.loads(dry.stdout)["warnings"] == MISSPELLED_WARNINGS
    assert team.nexus.adopt(adoption.parse(MAPPING), dry_run=True)["warnings"] == []
    nothing = team.nexus.adopt(adoption.parse('[types.Ghost]\nlabel = "Incidents"\n'), dry_run=True)
    assert nothing["warnings"] == ["types.Ghost: no node carries the label 'Incidents'; did you mean 'Incident'?"]


# ---------------------------------------------------------------- beyond what the driver can hold, grouping, kept placeholders
def test_dates_outside_years_1_to_9999_are_shown_not_a_broken_record(team):
    """The Python driver cannot hold a date of year 10000 or -44 (it raised BrokenRecordError):
    the text is made in Cypher."""
    team.driver.execute_query(
        "CREATE (:Incident {code: 'I9', name: 'ancient', day: date('-0044-03-15'), opened_at: datetime('+12026-01-05T10:00:00Z')})", database_=team.database
    )
    try:
        assert team.find('FIND(?i.attributes) WHERE { ?i {id: "A:Incident:I9"} }') == [{"day": "-0044-03-15", "opened_at": "+12026-01-05T10:00:00Z"}]
        assert team.names('FILTER(?i.attributes.day < "0001-01-01")') == ["ancient"]
    finally:
        team.driver.execute_query("MATCH (n:Incident {code: 'I9'}) DELETE n", database_=team.database)


def test_grouping_by_an_adopted_temporal_value_orders_by_the_value(team):
    assert team.find('FIND(?l.attributes.first_day, COUNT(?i)) WHERE { ?l (?i, "hit", ?s) } ORDER BY ?l.attributes.first_day') == [["2026-01-05"], [2]]
    assert team.find('FIND(?i.attributes.opened_at, COUNT(?l)) WHERE { ?l (?i, "hit", ?s) } ORDER BY ?i.attributes.opened_at') == [
        ["2026-01-05T10:30:00.5+01:00", "2026-01-05T10:00:00Z"],
        [1, 1],
    ]


def test_a_kept_placeholder_bound_to_a_neo4j_datetime_compares_exactly(team):
    """``compile(…, keep_placeholders=True)``: the caller binds ``$since`` with its driver; a Neo4j
    datetime compares as an instant, text of another type is refused like a literal."""
    import neo4j.exceptions
    import neo4j.time

    from kip2cypher import compile as compile_kip

    command = 'FIND(?i.name) WHERE { ?l (?i, "hit", ?s) FILTER(?l.attributes.since >= :since) } ORDER BY ?i.name'
    statement = compile_kip(command, adoption=adoption.parse(MAPPING), keep_placeholders=True)[0]
    since = neo4j.time.DateTime(2026, 1, 5, 9, 45, 0, tzinfo=__import__("datetime").timezone.utc)
    records = team.driver.execute_query(statement["cypher"], {**statement["parameters"], "since": since}, database_=team.database).records
    assert [r["c0"] for r in records] == ["outage"]
    with pytest.raises(neo4j.exceptions.ClientError, match="KIP_ADOPTED_VALUE"):  # the caller's driver sees Neo4j's report
        team.driver.execute_query(statement["cypher"], {**statement["parameters"], "since": "2026-01-05T09:45:00Z"}, database_=team.database)
