"""Round 3 attack on the OAuth resource-server mode (issue 30 item 6, kip2cypher/mcp_auth.py):
algorithm confusion, key confusion, replay outside the validity window, audience arrays, scope
string tricks and hostile namespace claims — each token offered to the verifier the server runs,
with its keys from a JWKS file and from a JWKS URL. No server is needed: ``JwtVerifier`` is the
whole decision (the SDK answers 401 for None, 403 for missing scopes); tests/test_mcp_oauth.py
runs the same verifier inside the real HTTP server.

Extend by adding a case to one of the tables (``REFUSED_HEADERS`` …): every case runs against
both key sources, and every refused token must leave no trace of itself in the log."""

from __future__ import annotations

import base64
import json
import logging
import time

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from test_mcp_oauth import ISSUER, Keys, _b64, forged, jwks_url

from kip2cypher import mcp_auth

AUD = "urn:kip:attack"


@pytest.fixture(scope="module")
def keys():
    return Keys()


@pytest.fixture(params=["file", "url"])
def verify(request, keys, tmp_path):
    """``verify(token)`` → the AccessToken the server would accept, or None; keys from a JWKS file or URL."""
    if request.param == "file":
        path = tmp_path / "jwks.json"
        path.write_text(json.dumps(keys.jwks))
        verifier = mcp_auth.JwtVerifier(mcp_auth.JwtOptions(str(path), ISSUER, (AUD,)), (AUD,))
        yield lambda token: anyio.run(verifier.verify_token, token)
        return
    with jwks_url(keys.jwks) as url:
        verifier = mcp_auth.JwtVerifier(mcp_auth.JwtOptions(url, ISSUER, (AUD,)), (AUD,))
        yield lambda token: anyio.run(verifier.verify_token, token)


def claims(**overrides) -> dict:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUD, "sub": "agent-1", "exp": now + 600, "iat": now, "scope": "kip:read kip:write", **overrides}
    return {k: v for k, v in body.items() if v is not None}


def rsa_signed(keys, header: dict, body: dict, hash_=None, pss=False) -> str:
    """A token whose header says whatever ``header`` says, RSA-signed with the issuer's key (SHA-256 PKCS#1 v1.5 unless told otherwise)."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}"
    pad = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32) if pss else padding.PKCS1v15()
    signature = keys.rsa.sign(signing_input.encode(), pad, hash_ or hashes.SHA256())
    return f"{signing_input}.{_b64(signature)}"


def jwk_of(key) -> dict:
    return json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))


# ----------------------------------------------------------------------------- algorithm confusion
def confusion_tokens(keys) -> dict[str, str]:
    body = claims()
    public_jwk = json.dumps(keys.jwks["keys"][0]).encode()
    modulus = base64.urlsafe_b64decode(keys.jwks["keys"][0]["n"] + "==")
    real = keys.token(AUD)
    head, payload, signature = real.split(".")
    return {
        "HS256 with the PEM public key": forged({"alg": "HS256", "kid": "rsa1", "typ": "JWT"}, body, keys.public_pem()),
        "HS256 with the JWK text": forged({"alg": "HS256", "kid": "rsa1"}, body, public_jwk),
        "HS256 with the modulus": forged({"alg": "HS256", "kid": "rsa1"}, body, modulus),
        "HS512 header, HS256 body": forged({"alg": "HS512", "kid": "rsa1"}, body, keys.public_pem()),
        "alg none": forged({"alg": "none", "kid": "rsa1"}, body, None),
        "alg None": forged({"alg": "None", "kid": "rsa1"}, body, None),
        "alg NONE": forged({"alg": "NONE", "kid": "rsa1"}, body, None),
        "alg nOnE": forged({"alg": "nOnE", "kid": "rsa1"}, body, None),
        "alg empty": forged({"alg": "", "kid": "rsa1"}, body, None),
        "no alg": forged({"kid": "rsa1"}, body, None),
        "alg null": forged({"alg": None, "kid": "rsa1"}, body, None),
        "alg list": forged({"alg": ["RS256"], "kid": "rsa1"}, body, None),
        "none with a real signature kept": f"{_b64(json.dumps({'alg': 'none', 'kid': 'rsa1'}).encode())}.{payload}.{signature}",
        "RS256 signature, header RS512": rsa_signed(keys, {"alg": "RS512", "kid": "rsa1"}, body),
        "RS256 signature, header PS256": rsa_signed(keys, {"alg": "PS256", "kid": "rsa1"}, body),
        "PS256 signature on an RS256 key": rsa_signed(keys, {"alg": "PS256", "kid": "rsa1"}, body, pss=True),
        "RS512 signature on an RS256 key": rsa_signed(keys, {"alg": "RS512", "kid": "rsa1"}, body, hash_=hashes.SHA512()),
        "RSA-signed, header ES256, kid of the EC key": rsa_signed(keys, {"alg": "ES256", "kid": "ec1"}, body),
        "RSA-signed, header RS256, kid of the EC key": rsa_signed(keys, {"alg": "RS256", "kid": "ec1"}, body),
        "EC-signed, kid of the RSA key": keys.token(AUD, key=keys.ec, kid="rsa1", algorithm="ES256"),
        "signature stripped": f"{head}.{payload}.",
        "payload swapped under a real signature": f"{head}.{_b64(json.dumps(claims(scope='kip:write', sub='root')).encode())}.{signature}",
    }


def test_algorithm_confusion_is_refused(verify, keys, caplog):
    tokens = confusion_tokens(keys)
    with caplog.at_level(logging.INFO, logger="kip2cypher.mcp"):
        accepted = {case: verify(token) for case, token in tokens.items()}
    assert {case for case, found in accepted.items() if found is not None} == set()
    assert len(tokens) == 22
    log = caplog.text
    assert not any(token in log or token.split(".")[-1] in log for token in tokens.values() if token.split(".")[-1])
    assert verify(keys.token(AUD)) is not None  # the same verifier accepts the genuine token


# ----------------------------------------------------------------------------- key confusion
def key_tokens(keys) -> dict[str, str]:
    stranger = jwk_of(keys.stranger)
    body = claims()

    def by_stranger(**header) -> str:
        return jwt.encode(body, keys.stranger, algorithm="RS256", headers=header)

    return {
        "kid of the issuer, stranger's key": by_stranger(kid="rsa1"),
        "jku pointing at the stranger's JWKS": by_stranger(kid="rsa1", jku="https://evil.example/jwks.json"),
        "x5u pointing at the stranger's certificate": by_stranger(kid="rsa1", x5u="https://evil.example/cert.pem"),
        "jwk header carrying the stranger's key": by_stranger(kid="rsa1", jwk=stranger),
        "jwk header without kid": by_stranger(jwk=stranger),
        "x5c header, no kid": by_stranger(x5c=["MIIB"]),
        "kid traversal": by_stranger(kid="../../../../dev/null"),
        "kid injection": by_stranger(kid="rsa1' OR '1'='1"),
        "kid null": rsa_signed(keys, {"alg": "RS256", "kid": None}, body),  # two keys: no kid, no key
        "kid number": rsa_signed(keys, {"alg": "RS256", "kid": 1}, body),
        "kid list": rsa_signed(keys, {"alg": "RS256", "kid": ["rsa1"]}, body),
        "kid of the issuer with a newline": jwt.encode(body, keys.rsa, algorithm="RS256", headers={"kid": "rsa1\n"}),
    }


def test_key_confusion_is_refused_and_jku_x5u_jwk_headers_are_ignored(verify, keys, caplog):
    tokens = key_tokens(keys)
    with caplog.at_level(logging.INFO, logger="kip2cypher.mcp"):
        accepted = {case for case, token in tokens.items() if verify(token) is not None}
    assert accepted == set()
    assert all("\n" not in record.getMessage() for record in caplog.records)  # a hostile kid forges no log line
    # the genuine key with the same hostile headers: they are ignored, the token is judged on its own signature
    ignored = jwt.encode(claims(), keys.rsa, algorithm="RS256", headers={"kid": "rsa1", "jku": "https://evil.example/j", "x5u": "https://evil.example/c"})
    assert verify(ignored) is not None


# ----------------------------------------------------------------------------- replay and validity window
def window_cases() -> dict[str, tuple[dict, bool]]:
    now = int(time.time())
    leeway = mcp_auth.LEEWAY_S
    return {
        "expired an hour ago": ({"exp": now - 3600}, False),
        "expired just past the leeway": ({"exp": now - leeway - 30}, False),
        "expired within the leeway": ({"exp": now - leeway // 3}, True),
        "exp a numeric string (PyJWT reads it; the issuer signed it)": ({"exp": str(now + 600)}, True),
        "exp a past numeric string": ({"exp": str(now - 3600)}, False),
        "exp not a number": ({"exp": "tomorrow"}, False),
        "exp null": ({"exp": None, "drop": "exp"}, False),
        "exp a list": ({"exp": [now + 600]}, False),
        "exp true": ({"exp": True}, False),
        "exp far future float": ({"exp": 1e18}, True),
        "nbf an hour ahead": ({"nbf": now + 3600}, False),
        "nbf past the leeway": ({"nbf": now + leeway + 30}, False),
        "nbf within the leeway": ({"nbf": now + leeway // 3}, True),
        "nbf not a number": ({"nbf": "soon"}, False),
        "nbf a future numeric string": ({"nbf": str(now + 3600)}, False),
        "iat an hour ahead": ({"iat": now + 3600}, False),
        "iat a string": ({"iat": "yesterday"}, False),
    }


def test_tokens_outside_their_validity_window_are_refused(verify, keys):
    outcome = {}
    for case, (overrides, expected) in window_cases().items():
        body = claims(**{k: v for k, v in overrides.items() if k != "drop"})
        body.pop(overrides.get("drop", "-"), None)
        outcome[case] = (verify(jwt.encode(body, keys.rsa, algorithm="RS256", headers={"kid": "rsa1"})) is not None) == expected
    assert {case for case, as_expected in outcome.items() if not as_expected} == set()


# ----------------------------------------------------------------------------- audience and issuer
AUDIENCES = {
    "ours in an array with others": ([AUD, "https://other.example"], True),
    "ours alone in an array": ([AUD], True),
    "others only": (["https://other.example", "urn:kip"], False),
    "empty array": ([], False),
    "empty string": ("", False),
    "ours with a trailing slash": (AUD + "/", False),
    "ours in upper case": (AUD.upper(), False),
    "ours nested in an array": ([[AUD]], False),
    "ours as an object key": ({AUD: True}, False),
    "ours with a NUL": (AUD + "\x00", False),
}
ISSUERS = {
    "with a trailing slash": ISSUER + "/",
    "in an array": [ISSUER],
    "upper case": ISSUER.upper(),
    "http instead of https": ISSUER.replace("https", "http"),
}


def test_audience_arrays_and_issuer_look_alikes(verify, keys):
    wrong = {case for case, (aud, expected) in AUDIENCES.items() if (verify(keys.token("-", aud=aud)) is not None) != expected}
    assert wrong == set()
    assert {case for case, iss in ISSUERS.items() if verify(rsa_signed(keys, {"alg": "RS256", "kid": "rsa1"}, claims(iss=iss))) is not None} == set()


# ----------------------------------------------------------------------------- scopes
SCOPES = {
    "kip:read kip:write": ["kip:read", "kip:write"],
    "kip:write": ["kip:read", "kip:write"],
    "kip:readkip:write": [],
    "kip:read,kip:write": [],
    "KIP:WRITE": [],
    "Kip:Read": [],
    "kip:write:all": [],
    "kip:writer": [],
    " kip:read ": ["kip:read"],
    "kip:read\tkip:write": [],  # a tab is not a scope delimiter (RFC 6749 §3.3: SP)
    "kip:read\u00a0kip:write": [],  # nor a no-break space
    "kip:read\u2003kip:write": [],  # nor an em space
    "kip:read\nkip:write": [],
    "kip:wr\u0456te": [],  # Cyrillic i
    "kip:read kip:namespace:bob": ["kip:read"],  # the namespace comes from the claim only
    "openid kip:read profile": ["kip:read"],
}


def scope_cases() -> dict[str, tuple[dict, list[str]]]:
    cases = {repr(scope): ({"scope": scope}, expected) for scope, expected in SCOPES.items()}
    cases |= {
        "list with one spaced item": ({"scope": ["kip:read kip:write"]}, []),
        "list": ({"scope": ["kip:read", "kip:write"]}, ["kip:read", "kip:write"]),
        "scp list": ({"scope": None, "scp": ["kip:write"]}, ["kip:read", "kip:write"]),
        "scope wins over scp": ({"scope": "kip:read", "scp": ["kip:write"]}, ["kip:read"]),
        "scope a number": ({"scope": 7}, []),
        "scope an object": ({"scope": {"kip:write": True}}, []),
        "list of non-strings": ({"scope": [["kip:write"], 1]}, []),
    }
    return cases


def test_scope_string_tricks_grant_nothing_more(verify, keys):
    wrong = {}
    for case, (overrides, expected) in scope_cases().items():
        found = verify(jwt.encode(claims(**overrides), keys.rsa, algorithm="RS256", headers={"kid": "rsa1"}))
        if found is None or found.scopes != expected:
            wrong[case] = found.scopes if found is not None else None
    assert wrong == {}


def test_a_scope_joined_by_a_unicode_space_granted_kip_write(verify, keys):
    """``"kip:read\\u00a0kip:write"`` is one scope-token (RFC 6749 §3.3 delimits scopes by SP only),
    but ``str.split()`` cut it at the no-break space and granted kip:write."""
    found = verify(jwt.encode(claims(scope="kip:read\u00a0kip:write"), keys.rsa, algorithm="RS256", headers={"kid": "rsa1"}))
    assert found is not None and found.scopes == []


# ----------------------------------------------------------------------------- namespace claim
NAMESPACE_CLAIMS = {
    "empty": "",
    "upper case": "Alice",
    "trailing newline": "alice\n",
    "leading space": " alice",
    "injection": "alice`) MATCH (n) DETACH DELETE n //",
    "engine label": "KipConcept__alice",
    "label-space prefix": "kip.alice:",
    "dotted": "a.b",
    "33 characters": "a" * 33,
    "list": ["alice"],
    "object": {"namespace": "alice"},
    "number": 7,
    "true": True,
    "full-width": "\uff41lice",
    "null": None,
}


def test_hostile_namespace_claims_are_refused(verify, keys, caplog):
    with caplog.at_level(logging.INFO, logger="kip2cypher.mcp"):
        accepted = {case: verify(keys.token(AUD, kip_namespace=value)) for case, value in NAMESPACE_CLAIMS.items() if value is not None}
    assert {case for case, found in accepted.items() if found is not None} == set()
    assert "DETACH DELETE" not in caplog.text
    bound = verify(keys.token(AUD, kip_namespace="bob"))
    assert bound.scopes == ["kip:read", "kip:write", "kip:namespace:bob"]  # another namespace is what the issuer said: bound to it


def test_a_null_namespace_claim_gave_the_token_the_default_namespace(verify, keys):
    """``"kip_namespace": null`` was read as "no claim": the token reached the default namespace
    although its issuer named a (missing) namespace. A present claim must be a namespace name."""
    token = jwt.encode(claims(), keys.rsa, algorithm="RS256", headers={"kid": "rsa1"})
    nulled = jwt.encode({**claims(), "kip_namespace": None}, keys.rsa, algorithm="RS256", headers={"kid": "rsa1"})
    assert verify(nulled) is None
    assert verify(token) is not None and not any(s.startswith("kip:namespace:") for s in verify(token).scopes)
