"""The official capsule sets (profiles rc10 / rc11): bootstrap, re-application as an agent,
upgrades forward only, and DESCRIBE PRIMER naming the profile (docs/kml.md, "Profiles")."""

from __future__ import annotations

from pathlib import Path

import pytest
from kml_helpers import concept, err, ok, snapshot

from kip2cypher import profiles, resources
from kip2cypher.cli.target import capsule_elements
from kip2cypher.cypher import storage
from kip2cypher.errors import KipError

SPEC = Path(__file__).resolve().parent.parent.parent / "shared" / "spec"


def _spec_file(profile: str, name: str) -> Path:
    folder = SPEC / f"kip-{profile}" / "capsules"
    return folder / "persons" / f"{name}.kip" if name in profiles.ACTORS else folder / f"{name}.kip"


@pytest.mark.parametrize("profile", profiles.ORDER)
def test_the_shipped_capsules_are_the_official_files_byte_for_byte(profile):
    folder = SPEC / f"kip-{profile}" / "capsules"
    official = sorted(p.stem for p in folder.rglob("*.kip"))
    assert sorted(resources.capsule_names(profile)) == official == sorted(profiles.PROFILES[profile].order)
    for name in official:
        assert profiles.capsule_text(name, profile).encode() == _spec_file(profile, name).read_bytes(), name
    shipped = Path(resources.__file__).resolve().parent.parent / "capsules" / profile / "LICENSE"
    assert shipped.read_bytes() == (SPEC / f"kip-{profile}" / "LICENSE").read_bytes()


def _ids(nexus, text: str) -> list[str]:
    """The ids of a capsule's concept blocks, in order (what its UPSERT answers)."""
    out = []
    for element in capsule_elements(text)[0]:
        type_, _, name = element.partition(":")
        out.append(concept(nexus, type_, name)["id"])
    return out


@pytest.mark.parametrize("profile", profiles.ORDER)
def test_a_bootstrapped_set_re_applies_as_an_agent_unchanged_genesis_included(nexus, profile):
    """Regression: the bootstrapped Genesis was the RC10 appendix's printing, not the published
    file, so an agent applying the official Genesis got KIP_3004."""
    applied = nexus.bootstrap(profile=profile, capsules=True)
    assert list(applied) == list(profiles.PROFILES[profile].order)
    before = snapshot(nexus)
    for name in profiles.PROFILES[profile].order:
        text = profiles.capsule_text(name, profile)
        blocks = sum(line.startswith("UPSERT") for line in text.splitlines())
        response = nexus.execute_kip(text)
        assert response == {"result": {"blocks": blocks, "upsert_concept_nodes": _ids(nexus, text), "upsert_proposition_links": []}}, name
    assert snapshot(nexus) == before  # a no-op: nothing written, no _version bumped


def _core(nexus) -> dict:
    return ok(nexus.execute_kip_readonly("DESCRIBE PRIMER"))["identity"]["capabilities"]["core"]


def _protocol(nexus) -> str:
    return ok(nexus.execute_kip_readonly("DESCRIBE PRIMER"))["identity"]["capabilities"]["protocol"]


def _key_types(nexus) -> list[str]:
    return concept(nexus, "$ConceptType", "$ConceptType")["attributes"]["key_instances"]


def test_describe_primer_names_the_core_version_and_profile(nexus):
    assert _core(nexus) == {"version": None, "profile": None}  # schema only, never bootstrapped
    assert _protocol(nexus) == "KIP v1.0-RC11"  # the default profile's version
    nexus.bootstrap(profile="rc10")
    assert _core(nexus) == {"version": "v1.0-RC10", "profile": "rc10"}
    assert _protocol(nexus) == "KIP v1.0-RC10"  # regression: said RC10 whatever the profile
    nexus.bootstrap(profile="rc11", upgrade=True)
    assert _core(nexus) == {"version": "v1.0-RC11", "profile": "rc11"}
    assert _protocol(nexus) == "KIP v1.0-RC11"


def test_upgrade_moves_forward_only_and_a_plain_bootstrap_keeps_the_newer_profile(nexus):
    nexus.bootstrap(profile="rc10", capsules=True)
    assert _core(nexus) == {"version": "v1.0-RC10", "profile": "rc10"}
    assert "Experience" not in _key_types(nexus) and concept(nexus, "$ConceptType", "Experience") is None
    # an agent cannot move the protected definitions to RC11 itself
    e = err(nexus.execute_kip(profiles.capsule_text("Genesis", "rc11")), "KIP_3004")
    assert "$ConceptType" in e["message"]
    nexus.bootstrap()  # plain, default rc11: the nexus keeps rc10
    assert _core(nexus)["profile"] == "rc10" and "Experience" not in _key_types(nexus)

    nexus.bootstrap(upgrade=True, capsules=True)
    assert _core(nexus) == {"version": "v1.0-RC11", "profile": "rc11"}
    assert "Experience" in _key_types(nexus) and concept(nexus, "$ConceptType", "Skill") is not None
    upgraded = snapshot(nexus)
    nexus.bootstrap(upgrade=True, capsules=True)  # "upgrade" to the same version: a no-op
    nexus.bootstrap()  # regression: a plain bootstrap after an upgrade failed with KIP_3004
    nexus.bootstrap(profile="rc10", capsules=True)  # asks for the older one: leaves the newer alone
    assert snapshot(nexus) == upgraded

    with pytest.raises(KipError) as refused:
        nexus.bootstrap(profile="rc10", upgrade=True)
    assert refused.value.code == "KIP_3004"
    assert "rc11 (KIP v1.0-RC11)" in refused.value.message and "rc10 (KIP v1.0-RC10)" in refused.value.message
    assert snapshot(nexus) == upgraded


def test_a_nexus_bootstrapped_before_profiles_takes_the_official_genesis(nexus):
    """Earlier builds bootstrapped the RC10 appendix's Genesis (another Domain display_hint) and
    recorded no profile: the next bootstrap replaces it with the official file as the engine."""
    nexus.bootstrap()
    nexus.driver.execute_query(f"MATCH (n:{storage.NEXUS}) REMOVE n.{storage.PROFILE_KEY}", database_=nexus.database)
    nexus.driver.execute_query(
        "MATCH (d:KipConcept {type: '$ConceptType', name: 'Domain'}) SET d[$key] = $hint",
        key=storage.ATTR_PREFIX + "display_hint",
        hint=storage.encode("🗺️"),
        database_=nexus.database,
    )
    err(nexus.execute_kip(profiles.capsule_text("Genesis", "rc11")), "KIP_3004")
    nexus.bootstrap()
    assert _core(nexus)["profile"] == "rc11"
    assert concept(nexus, "$ConceptType", "Domain")["attributes"]["display_hint"] == "🗺"
    ok(nexus.execute_kip(profiles.capsule_text("Genesis", "rc11")))


def test_bootstrap_seeds_each_actor_once(nexus):
    """The official self/system capsules write every attribute of the actor; a bootstrap replay
    must not reset what the agent learned (an agent may still re-apply them on purpose)."""
    nexus.bootstrap(capsules=True)
    ok(nexus.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} SET ATTRIBUTES { persona: "curious", strengths: ["graphs"] } } }'))
    applied = nexus.bootstrap(capsules=True)
    assert "self" not in applied and "system" not in applied and "Genesis" in applied
    attrs = concept(nexus, "Person", "$self")["attributes"]
    assert attrs["persona"] == "curious" and attrs["strengths"] == ["graphs"]


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry_run"])
def test_an_older_official_genesis_re_applied_by_an_agent_is_a_no_op(nexus, dry_run):
    """The RC10 Genesis lists fewer key_instances than RC11's: on an RC11 nexus it would change
    the protected meta-types, yet it is an official definition the nexus has superseded — it
    answers like an unchanged replay and writes nothing; any other change stays KIP_3004."""
    nexus.bootstrap(capsules=True)
    before = snapshot(nexus)
    text = profiles.capsule_text("Genesis", "rc10")
    response = nexus.execute_kip(text, dry_run=dry_run)
    ids = [] if dry_run else _ids(nexus, text)
    assert response == {"result": {"blocks": 2, "upsert_concept_nodes": ids, "upsert_proposition_links": []}}
    assert snapshot(nexus) == before and "Experience" in _key_types(nexus)
    changed = text.replace('"SleepTask"\n            ]', '"SleepTask",\n                "Mine"\n            ]', 1)
    assert changed != text
    err(nexus.execute_kip(changed, dry_run=dry_run), "KIP_3004")


def test_cli_bootstrap_profile_upgrade_and_refused_downgrade(nexus):
    import json

    from click.testing import CliRunner

    from kip2cypher.cli import main

    def bootstrap(*args: str):
        return CliRunner().invoke(main, ["bootstrap", "--uri", nexus.uri, *args])

    first = bootstrap("--profile", "rc10", "--with-capsules")
    assert first.exit_code == 0, first.output
    assert "profile: rc10 (KIP v1.0-RC10)" in first.output and "applied SleepTask:" in first.output
    upgraded = bootstrap("--upgrade", "--with-capsules")
    assert upgraded.exit_code == 0 and "profile: rc11 (KIP v1.0-RC11)" in upgraded.output and "applied Skill:" in upgraded.output
    refused = bootstrap("--upgrade", "--profile", "rc10")
    assert refused.exit_code == 1
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "KIP_3004" and "rc10 (KIP v1.0-RC10)" in error["message"] and "rc11 (KIP v1.0-RC11)" in error["message"]
    plain = bootstrap("--profile", "rc10")
    assert plain.exit_code == 0 and "profile: rc11 (KIP v1.0-RC11)" in plain.output


def test_cli_bootstrap_dry_run_lists_what_it_skips_and_names_an_unknown_profile(nexus):
    from click.testing import CliRunner

    from kip2cypher.cli import main

    def bootstrap(*args: str):
        return CliRunner().invoke(main, ["bootstrap", "--uri", nexus.uri, *args])

    assert bootstrap("--with-capsules").exit_code == 0
    dry = bootstrap("--with-capsules", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "  skips capsule self: $self exists already (an actor is seeded once; a replay would reset what it learned)" in dry.output
    assert "  skips capsule system: $system exists already" in dry.output and "  capsule Genesis: upserts" in dry.output
    assert "--dry-run: nothing was written." in dry.output
    # a nexus bootstrapped by a newer kip2cypher: kept, and said plainly (it printed "KIP None")
    nexus.driver.execute_query(f"MATCH (n:{storage.NEXUS}) SET n.{storage.PROFILE_KEY} = 'rc99'", database_=nexus.database)
    unknown = f"rc99 (unknown to this kip2cypher {profiles.__version__}, which knows rc10, rc11)"
    dry = bootstrap("--dry-run")
    assert f"  profile: this nexus is bootstrapped with profile {unknown}; it keeps it" in dry.output, dry.output
    assert "capsule Genesis" not in dry.output
    plain = bootstrap()
    assert plain.exit_code == 0 and f"profile: {unknown}" in plain.output and "KIP None" not in plain.output
    assert _protocol(nexus) == "KIP v1.0-RC11" and _core(nexus) == {"version": None, "profile": "rc99"}
