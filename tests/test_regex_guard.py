"""REGEX patterns that backtrack catastrophically are refused before Neo4j runs them (KIP_4001)."""
from __future__ import annotations

import pytest

from kip2cypher.errors import KipError
from kip2cypher.lower.regex_guard import check_backtracking

REFUSED = [
    r"(a+)+$",
    r"(a*)*b",
    r"(x+y?)+",
    r"(\w+\s?){2,}",
    r"((ab)*c)+",
    r"(?:a+)+",
    r"(?<w>a+)*",
    r"(a+)\1b",
    r"(?<q>a)\k<q>",
    r".*.*.*.*.*x",
    r"a+b+c+d+",
]

ACCEPTED = [
    "aspirin",
    r"^Asp.*n$",
    r"(?i)head(ache)?",
    r"(https?://)?example\.com",
    r"(foo|bar)+",
    r"[a-z]+@[a-z]+\.com",
    r"(a++)+",
    r"\d{4}-\d{2}-\d{2}",
    r"[(+*)]+x",
    r"\(a+\)+",
    r"(a+)?b",
    r"\0",
]


@pytest.mark.parametrize("pattern", REFUSED)
def test_catastrophic_pattern_is_refused_with_kip_4001(pattern):
    with pytest.raises(KipError) as info:
        check_backtracking(pattern)
    assert info.value.code == "KIP_4001"
    assert "CONTAINS" in info.value.hint


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_ordinary_pattern_is_accepted(pattern):
    check_backtracking(pattern)


def test_find_with_a_catastrophic_regex_answers_at_once_instead_of_burning_cpu(nexus):
    response = nexus.execute_kip('FIND(?c.name) WHERE { ?c {type: "$ConceptType"} FILTER(REGEX(?c.name, "(a+)+$")) }')
    assert response["error"]["code"] == "KIP_4001"
    response = nexus.execute_kip('FIND(?c.name) WHERE { ?c {type: "$ConceptType"} FILTER(REGEX(?c.name, :p)) }', parameters={"p": ".*.*.*.*.*x"})
    assert response["error"]["code"] == "KIP_4001"
