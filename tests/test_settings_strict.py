"""Settings are strict and read from one set of places: an unknown `Settings` keyword, an unknown
`KIP2CYPHER_*` variable (environment or `.env`) or an unknown `kip2cypher.toml` key is an error
naming the nearest valid name; every variable read outside `Settings` (NEO4J_*, the MCP server's,
the launcher's) comes from the environment, `.env` or `kip2cypher.toml`, in that order. No Neo4j."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kip2cypher import config, face, localneo4j
from kip2cypher.cli import main
from kip2cypher.config import Settings, SettingsError, lookup

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def clean(monkeypatch, tmp_path):
    """No KIP2CYPHER_* or NEO4J_* variable from the caller's environment; an empty working directory."""
    for name in list(os.environ):
        if (name.startswith("KIP2CYPHER_") and name != "KIP2CYPHER_REQUIRE_NEO4J") or name.startswith("NEO4J_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_an_unknown_settings_keyword_names_the_nearest_field(clean):
    with pytest.raises(SettingsError) as raised:
        Settings(querytimeout=3)
    assert "'querytimeout'" in raised.value.message and "query_timeout_s" in raised.value.message
    with pytest.raises(SettingsError, match="max_hops"):
        Settings().replace(max_hop=3)


def test_an_unknown_environment_variable_names_the_nearest_one_in_the_library_and_the_cli(clean, monkeypatch):
    monkeypatch.setenv("KIP2CYPHER_QUERY_TIMOUT_S", "5")
    with pytest.raises(SettingsError) as raised:
        Settings()
    assert "KIP2CYPHER_QUERY_TIMOUT_S" in raised.value.message and "did you mean KIP2CYPHER_QUERY_TIMEOUT_S?" in raised.value.message
    out = CliRunner().invoke(main, ["compile", "DESCRIBE PRIMER"])
    assert out.exit_code == 1 and "did you mean KIP2CYPHER_QUERY_TIMEOUT_S?" in out.output
    monkeypatch.delenv("KIP2CYPHER_QUERY_TIMOUT_S")
    monkeypatch.setenv("KIP2CYPHER_MCP_PROT", "80")  # one of the server's, misspelt
    with pytest.raises(SettingsError, match="did you mean KIP2CYPHER_MCP_PORT"):
        Settings()


def test_variables_read_outside_settings_are_not_refused(clean, monkeypatch):
    for name in (
        "KIP2CYPHER_MCP_PORT",
        "KIP2CYPHER_MCP_JWT_ISSUER",
        "KIP2CYPHER_NEO4J_HEAP",
        "KIP2CYPHER_EMBEDDER",
        "KIP2CYPHER_TEST_ANYTHING",
        "KIP2CYPHER_BENCH_PORT",
    ):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("NOT_OURS_AT_ALL", "x")
    assert Settings().query_timeout_s == 30.0


def test_dotenv_and_toml_entries_are_checked_like_the_environment(clean):
    (clean / ".env").write_text("OTHER_APP_SETTING=1\nKIP2CYPHER_MAX_HOSP=3\n")
    with pytest.raises(SettingsError, match=r"\.env entry KIP2CYPHER_MAX_HOSP \(did you mean KIP2CYPHER_MAX_HOPS\?\)"):
        Settings()
    (clean / ".env").write_text("KIP2CYPHER_QUERY_TIMEOUT_S=soon\n")
    with pytest.raises(SettingsError, match="KIP2CYPHER_QUERY_TIMEOUT_S='soon'"):  # a bad value still names its variable
        Settings()
    (clean / ".env").unlink()
    (clean / "kip2cypher.toml").write_text("querytimeout_s = 3\n")
    with pytest.raises(SettingsError, match=r"'querytimeout_s' in kip2cypher.toml \(did you mean query_timeout_s\?\)"):
        Settings()


def test_neo4j_and_other_environment_only_settings_come_from_dotenv_and_toml_too(clean, monkeypatch):
    assert face.default_uri() == "bolt://127.0.0.1:7687" and face.env_auth() is None
    (clean / "kip2cypher.toml").write_text(
        'neo4j_uri = "bolt://from-toml:7687"\nneo4j_database = "tomldb"\nmcp_port = 9000\nneo4j_heap = "3g"\nreadonly = true\nmax_hops = 4\n'
    )
    assert (face.default_uri(), face.default_database(), lookup("KIP2CYPHER_MCP_PORT"), lookup("KIP2CYPHER_READONLY")) == (
        "bolt://from-toml:7687",
        "tomldb",
        "9000",
        "true",
    )
    assert localneo4j.LocalConfig.from_env().heap == "3g" and Settings().max_hops == 4
    (clean / ".env").write_text("NEO4J_URI=bolt://from-dotenv:7687\nNEO4J_USERNAME=neo4j\nNEO4J_PASSWORD=pw\n")
    assert face.default_uri() == "bolt://from-dotenv:7687" and face.env_auth() == ("neo4j", "pw")  # .env before toml
    monkeypatch.setenv("NEO4J_URI", "bolt://from-env:7687")
    assert face.default_uri() == "bolt://from-env:7687"  # the environment before both


def test_the_cli_reads_its_options_from_dotenv_and_a_bad_value_names_the_variable(clean):
    (clean / ".env").write_text("KIP2CYPHER_MCP_PORT=eighty\n")
    out = CliRunner().invoke(main, ["mcp", "--transport", "http"])
    assert out.exit_code == 2 and "KIP2CYPHER_MCP_PORT" in out.output and "eighty" in out.output


#: Names the scan below must not see as variables: this file's deliberate misspellings.
NAME = re.compile(r"(?<![A-Za-z0-9_])KIP2CYPHER_[A-Z0-9_]*[A-Z0-9]\b")


def test_every_variable_the_project_mentions_is_registered():
    """A KIP2CYPHER_* name in the code, tests, docs or packaging that the registry does not know
    would be refused as a typo at start: every one must be a Settings field or in
    config.OTHER_VARIABLES / OTHER_PREFIXES."""
    files = [p for p in ROOT.rglob("*") if p.is_file() and p.suffix in (".py", ".md", ".toml", ".yaml", ".yml", ".sh", "") and ".git" not in p.parts]
    files = [p for p in files if p.name != Path(__file__).name and "results" not in p.parts and "egg-info" not in str(p)]
    seen = {name for path in files for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace"))}
    assert len(seen) > 30
    assert sorted(name for name in seen if not config.is_known(name)) == []


def cli_env_options():
    """Every option of every CLI command that names an environment variable, with its command."""
    import click

    found = []

    def walk(command, path):
        for param in command.params:
            if isinstance(param, click.Option) and param.envvar:
                found.append((path, command, param))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(main, "kip2cypher")
    return found


def test_every_cli_option_read_from_the_environment_is_read_from_dotenv_and_toml_too(clean):
    """An option's variable (NEO4J_*, KIP2CYPHER_MCP_*, KIP2CYPHER_HISTORY, _READONLY, _PROFILE,
    _NAMESPACE …) is found in .env and in kip2cypher.toml the same way, for every command."""
    import click

    from kip2cypher.cli.app import _EnvOption

    options = cli_env_options()
    names = {name for _, _, option in options for name in option._envvars()}
    assert {"NEO4J_URI", "KIP2CYPHER_HISTORY", "KIP2CYPHER_MCP_PORT", "KIP2CYPHER_MCP_JWT_ISSUER", "KIP2CYPHER_READONLY"} <= names
    assert [f"{path} --{option.name}" for path, _, option in options if not isinstance(option, _EnvOption)] == []
    assert sorted(name for name in names if not config.is_known(name)) == []
    for source in ("dotenv", "toml"):
        for path, command, option in options:
            name = option._envvars()[-1]
            value = "1" if option.is_flag else "from-" + source
            if source == "dotenv":
                (clean / ".env").write_text(f"{name}={value}\n")
            else:
                (clean / "kip2cypher.toml").write_text(f'{config.toml_key(name)} = "{value}"\n')
            found = option.resolve_envvar_value(click.Context(command))
            assert found == value, f"{path} --{option.name}: {name} from {source} read as {found!r}"
            (clean / (".env" if source == "dotenv" else "kip2cypher.toml")).unlink()


def test_the_embedder_and_the_java_of_the_launcher_come_from_dotenv_and_toml(clean, monkeypatch):
    from kip2cypher import embedding

    (clean / "kip2cypher.toml").write_text('embedder = "none"\nneo4j_java = "/opt/from-toml/bin/java"\n')
    monkeypatch.setattr(embedding, "_default", {})  # the process default is read again, then restored
    monkeypatch.setattr(embedding, "_unavailable_reason", {})
    assert embedding.default_embedder() is None and "KIP2CYPHER_EMBEDDER='none'" in embedding.unavailable_reason()
    assert localneo4j._java_candidates()[0] == "/opt/from-toml/bin/java"
    (clean / ".env").write_text("KIP2CYPHER_NEO4J_JAVA=/opt/from-dotenv/bin/java\n")
    assert localneo4j._java_candidates()[0] == "/opt/from-dotenv/bin/java"
