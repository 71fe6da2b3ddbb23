"""`kip2cypher mcp --transport http --jwks …`: the OAuth 2.1 resource-server mode of the MCP
authorization spec, beside static tokens — JWTs signed with keys generated here (RSA and EC),
checked by the real server process on the real Neo4j: valid, expired, wrong audience, wrong
issuer, wrong signature, `none`, HS256 signed with the public key (algorithm confusion), missing
scope, the namespace claim, the RFC 9728 metadata and the `WWW-Authenticate` challenge."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import threading
import time
from contextlib import contextmanager

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp_http_helpers import ACCEPT, INIT, RW, count, http_server, in_session, payload, start_fails

from kip2cypher import mcp_auth

ISSUER = "https://idp.kip.test"
UPSERT = 'UPSERT { CONCEPT ?d { {type: "Domain", name: :name} } }'
FIND = {"command": 'FIND(?d.name) WHERE { ?d {type: "Domain", name: :name} }'}


class Keys:
    """An RSA and an EC signing key of the authorization server, their JWKS, and a stranger's RSA key."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        rsa_jwk = {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key())), "kid": "rsa1", "alg": "RS256", "use": "sig"}
        ec_jwk = {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key())), "kid": "ec1", "alg": "ES256", "use": "sig"}
        self.jwks = {"keys": [rsa_jwk, ec_jwk]}

    def token(self, audience: str, *, scope="kip:read kip:write", key=None, kid="rsa1", algorithm="RS256", **claims) -> str:
        body = {"iss": ISSUER, "aud": audience, "sub": "agent-1", "exp": int(time.time()) + 600, "iat": int(time.time()), "scope": scope, **claims}
        return jwt.encode({k: v for k, v in body.items() if v is not None}, key or self.rsa, algorithm=algorithm, headers={"kid": kid})

    def public_pem(self) -> bytes:
        return self.rsa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(header: dict, claims: dict, secret: bytes | None) -> str:
    """A JWT made by hand: ``none`` (no signature) or HS256 with ``secret`` — what PyJWT refuses to make."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = _b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()) if secret is not None else ""
    return f"{signing_input}.{signature}"


@pytest.fixture(scope="module")
def keys():
    return Keys()


@pytest.fixture()
def jwks_file(keys, tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(keys.jwks))
    return str(path)


def post(url, token, body=INIT):
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    return httpx2.post(url, timeout=60, json=body, headers=headers)


def challenge(response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer k="v", …`` header."""
    scheme, _, rest = response.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    return {key.strip(): value.strip('"') for key, _, value in (part.partition("=") for part in rest.split(", ") if part)}


def test_jwts_are_checked_for_signature_issuer_audience_expiry_and_algorithm(genesis, neo4j_server, keys, jwks_file):
    with http_server(neo4j_server, "--jwks", jwks_file, "--jwt-issuer", ISSUER) as served:
        aud = served.url
        metadata_url = served.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": aud, "sub": "agent-1", "exp": now + 600, "scope": "kip:read kip:write"}
        refused = {
            "expired": keys.token(aud, exp=now - 3600),
            "wrong audience": keys.token("https://other.example/mcp"),
            "wrong issuer": keys.token(aud, iss="https://evil.example"),
            "wrong signature": keys.token(aud, key=keys.stranger),
            "unknown kid": keys.token(aud, kid="nobody"),
            "no exp": keys.token(aud, exp=None),
            "alg none": forged({"alg": "none", "kid": "rsa1", "typ": "JWT"}, claims, None),
            "HS256 with the public key": forged({"alg": "HS256", "kid": "rsa1", "typ": "JWT"}, claims, keys.public_pem()),
            "not a JWT": "a.b.c",
        }
        for case, token in refused.items():
            response = post(served.url, token)
            assert response.status_code == 401, (case, response.text)
            assert challenge(response) | {"error_description": ""} == {"error": "invalid_token", "error_description": "", "resource_metadata": metadata_url}, (
                case
            )
        bare = post(served.url, None)  # no credentials: the bare challenge, no error code (RFC 6750 §3.1)
        assert bare.status_code == 401 and challenge(bare) == {"resource_metadata": metadata_url}
        no_kip_scope = post(served.url, keys.token(aud, scope="openid profile"))
        assert no_kip_scope.status_code == 403 and challenge(no_kip_scope)["error"] == "insufficient_scope"
        # the tool calls those tokens would have made ran nothing
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "execute_kip", "arguments": {"command": UPSERT, "parameters": {"name": "X"}}},
        }
        assert all(post(served.url, token, call).status_code == 401 for token in refused.values())

        async def write(session):
            names = [t.name for t in (await session.list_tools()).tools]
            return names, payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": "JwtWrite"}}))

        valid = keys.token(aud)
        rw_names, written = in_session(served.url, valid, write)
        ec_names, ec_written = in_session(served.url, keys.token(aud, key=keys.ec, kid="ec1", algorithm="ES256", scope="kip:read"), write)
        skewed = in_session(served.url, keys.token(aud, exp=now - 5), write)  # within the clock-skew leeway
        static_names, _ = in_session(served.url, RW, write)  # static tokens keep working beside JWTs
        log = "".join(served.log)
    assert rw_names == static_names == ["execute_kip", "execute_kip_readonly"] and len(written["result"]["upsert_concept_nodes"]) == 1
    assert ec_names == ["execute_kip_readonly"] and ec_written["error"]["code"] == "KIP_3004"  # kip:read only: the write tool is refused
    assert skewed[0] == rw_names
    assert count(genesis, "MATCH (d:KipConcept {type: 'Domain'}) WHERE d.name IN ['JwtWrite', 'X'] RETURN collect(d.name)") == ["JwtWrite"]
    assert "OAuth JWTs of https://idp.kip.test" in log
    assert not any(token in log for token in [*refused.values(), valid, RW])  # no token in any log line
    assert "client=agent-1 tool=execute_kip kinds=KML" in log and 'client="token #1" tool=execute_kip kinds=KML' in log  # the access lines name the subject


def test_the_protected_resource_metadata_names_the_issuer_scopes_and_resource(genesis, neo4j_server, jwks_file):
    with http_server(neo4j_server, "--jwks", jwks_file, "--jwt-issuer", ISSUER, tokens=None) as served:
        root = served.url.replace("/mcp", "")
        documents = [httpx2.get(root + path, timeout=30) for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource")]
    for document in documents:
        assert document.status_code == 200
        body = document.json()
        assert body["resource"] == served.url and body["authorization_servers"] == [ISSUER]
        assert body["scopes_supported"] == ["kip:read", "kip:write"] and body["bearer_methods_supported"] == ["header"]


@contextmanager
def jwks_url(jwks):
    """Serve ``jwks`` at http://127.0.0.1:<port>/jwks.json (the authorization server's key endpoint)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(jwks).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    finally:
        server.shutdown()


def test_a_namespace_claim_binds_the_token_to_that_namespace_only(genesis, neo4j_server, keys):
    """A token whose claim says alice reaches alice's memory and nothing else — not bob's, not the
    default namespace, not even with `kip:namespace:bob` smuggled into its own scope; a claim that is
    not a namespace name is refused. Keys come from a JWKS URL here."""
    find = {**FIND, "parameters": {"name": "AliceOnly"}}

    def write_then_read(name):
        async def body(session):
            written = payload(await session.call_tool("execute_kip", {"command": UPSERT, "parameters": {"name": name}}))
            return written, payload(await session.call_tool("execute_kip_readonly", find))

        return body

    with jwks_url(keys.jwks) as url, http_server(neo4j_server, "--bootstrap", "--jwks", url, "--jwt-issuer", ISSUER, tokens=None) as served:
        aud = served.url
        alice_write, alice_read = in_session(served.url, keys.token(aud, kip_namespace="alice"), write_then_read("AliceOnly"))
        bob_write, bob_read = in_session(served.url, keys.token(aud, kip_namespace="bob", sub="agent-2"), write_then_read("BobOnly"))
        smuggled = keys.token(aud, kip_namespace="alice", scope="kip:read kip:write kip:namespace:bob")
        smuggled_write, smuggled_read = in_session(served.url, smuggled, write_then_read("Smuggled"))
        default_read = in_session(served.url, keys.token(aud, scope="kip:read"), lambda s: s.call_tool("execute_kip_readonly", find))
        bad_claims = [post(served.url, keys.token(aud, kip_namespace=value)).status_code for value in ("Bob", "bob) MATCH (n", 7, "")]
    assert len(alice_write["result"]["upsert_concept_nodes"]) == 1 and alice_read["result"] == ["AliceOnly"]
    assert len(bob_write["result"]["upsert_concept_nodes"]) == 1 and bob_read["result"] == []
    assert "result" in smuggled_write and smuggled_read["result"] == ["AliceOnly"]  # it ran in alice, not bob
    assert payload(default_read)["result"] == []
    assert bad_claims == [401, 401, 401, 401]
    labels = genesis.driver.execute_query(
        "MATCH (d {type: 'Domain'}) WHERE d.name IN ['AliceOnly', 'BobOnly', 'Smuggled'] RETURN d.name AS name, labels(d) AS labels ORDER BY name",
        database_=genesis.database,
    ).records
    assert [(r["name"], sorted(r["labels"])) for r in labels] == [
        ("AliceOnly", ["KipConcept__alice", "kip.alice:Domain"]),
        ("BobOnly", ["KipConcept__bob", "kip.bob:Domain"]),
        ("Smuggled", ["KipConcept__alice", "kip.alice:Domain"]),
    ]


def test_jwt_settings_that_cannot_work_refuse_to_start(genesis, neo4j_server, tmp_path, jwks_file):
    assert "--jwt-issuer" in start_fails(neo4j_server, "--jwks", jwks_file)
    assert "Cannot read the JWKS file" in start_fails(neo4j_server, "--jwks", str(tmp_path / "missing.json"), "--jwt-issuer", ISSUER)
    (tmp_path / "secret.json").write_text(json.dumps({"keys": [{"kty": "oct", "k": _b64(b"0123456789abcdef0123456789abcdef"), "kid": "h"}]}))
    refused = start_fails(neo4j_server, "--jwks", str(tmp_path / "secret.json"), "--jwt-issuer", ISSUER)
    assert "no public key" in refused and "0123456789abcdef" not in refused and _b64(b"0123456789abcdef0123456789abcdef") not in refused
    assert "--resource-url" in start_fails(neo4j_server, "--jwks", jwks_file, "--jwt-issuer", ISSUER, "--host", "0.0.0.0")
    assert "contradict" in start_fails(neo4j_server, "--jwks", jwks_file, "--jwt-issuer", ISSUER, "--no-auth")


def test_jwt_scopes_map_to_the_two_tools_offline(keys, jwks_file):
    """The scope → tool mapping and the namespace claim, on the verifier alone (no server)."""
    import anyio

    verifier = mcp_auth.JwtVerifier(mcp_auth.JwtOptions(jwks_file, ISSUER, ("urn:kip",)), ("urn:kip",))
    cases = {
        "kip:read": ["kip:read"],
        "kip:write": ["kip:read", "kip:write"],
        "kip:read kip:write kip:namespace:bob": ["kip:read", "kip:write"],
        "openid": [],
    }
    for scope, expected in cases.items():
        assert anyio.run(verifier.verify_token, keys.token("urn:kip", scope=scope)).scopes == expected, scope
    bound = anyio.run(verifier.verify_token, keys.token("urn:kip", kip_namespace="alice", scp=["kip:read"], scope=None))
    assert bound.scopes == ["kip:read", "kip:namespace:alice"] and bound.subject == "agent-1" and bound.claims == {"iss": ISSUER}
    assert "eyJ" not in bound.token  # the AccessToken carries a label, never the JWT


def test_an_unreachable_key_endpoint_refuses_the_token_and_warns_without_quoting_it(keys, caplog):
    """The JWKS URL down: the token is refused (401), the operator gets one WARNING naming the
    failure, never the token; a forged kid with line breaks (PyJWT quotes the kid) stays on one line."""
    import logging
    import socket

    import anyio

    def verifier(url):
        return mcp_auth.JwtVerifier(mcp_auth.JwtOptions(url, ISSUER, ("urn:kip",)), ("urn:kip",))

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = keys.token("urn:kip")
    with caplog.at_level(logging.INFO, logger="kip2cypher.mcp"):
        assert anyio.run(verifier(f"http://127.0.0.1:{port}/jwks.json").verify_token, token) is None
    assert [r.levelname for r in caplog.records] == ["WARNING"] and "PyJWKClientConnectionError" in caplog.records[0].getMessage()
    caplog.clear()
    forged_kid = keys.token("urn:kip", kid="x\n2026-01-01 INFO all good")
    with jwks_url(keys.jwks) as url, caplog.at_level(logging.INFO, logger="kip2cypher.mcp"):
        assert anyio.run(verifier(url).verify_token, forged_kid) is None
    message = caplog.records[0].getMessage()
    assert [r.levelname for r in caplog.records] == ["INFO"] and "all good" in message and "\n" not in message
    assert not any(t in r.getMessage() for r in caplog.records for t in (token, forged_kid))
