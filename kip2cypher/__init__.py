"""kip2cypher: KIP v1.0-RC10 compiled to parameterized Cypher and executed on Neo4j.

Importing it stays light: the driver, the compiler and the nexus load on first use. The imports
under ``TYPE_CHECKING`` are for the annotations (type checkers read them); at run time
``__getattr__`` serves ``Nexus`` and ``AsyncNexus``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

from .errors import KipError
from .responses import BatchResponse, CommandResponse, ErrorObject, KipResponse
from .version import __version__

if TYPE_CHECKING:
    import neo4j

    from .adoption import Adoption
    from .async_nexus import AsyncNexus, Connecting
    from .config import Settings
    from .connection import AuthLike, DriverOptions
    from .nexus import Nexus
    from .syntax.ast import Command

__all__ = [
    "KipError",
    "parse",
    "compile",
    "connect",
    "connect_async",
    "Nexus",
    "AsyncNexus",
    "KipResponse",
    "CommandResponse",
    "BatchResponse",
    "ErrorObject",
    "__version__",
]


def parse(text: str) -> Command:
    """Parse one KIP command into its typed AST (cached by text)."""
    from .syntax.parser import parse as _parse

    return _parse(text)


def compile(  # noqa: A001 - public API name fixed by the project
    text: str, parameters: dict[str, Any] | None = None, *, namespace: str | None = None, keep_placeholders: bool = False, adoption: Adoption | None = None
) -> list[dict[str, Any]]:
    """Compile one KIP command into its Cypher statement(s) and parameters (for ``namespace``:
    default KIP2CYPHER_NAMESPACE, else the default namespace).

    ``keep_placeholders=True``: a placeholder without a value in ``parameters`` stays the Cypher
    parameter ``$name`` (listed in each statement's ``runtime_parameters``) for the caller to bind
    at run time; a placeholder whose value shapes the statement (a type, a predicate, LIMIT …)
    still needs its value (KIP_1001 says which and where). ``adoption``: an adoption mapping
    (``kip2cypher.adoption.load(path)``) to compile as a namespace that adopted it (docs/adopt.md)."""
    from .config import Settings
    from .lower.compile import compile_command

    settings = Settings(adoption=adoption) if namespace is None else Settings(namespace=namespace, adoption=adoption)
    return compile_command(text, parameters, settings, keep_placeholders)


def connect(
    uri: str | None = None,
    *,
    auth: AuthLike = None,
    database: str | None = None,
    settings: Settings | None = None,
    driver: neo4j.Driver | None = None,
    namespace: str | None = None,
    **driver_options: Unpack[DriverOptions],
) -> Nexus:
    """Open a ``Nexus`` on Neo4j; defaults come from NEO4J_URI/USERNAME/PASSWORD/DATABASE
    (``Nexus`` says what each parameter does). ``namespace="alice"`` opens one of the database's
    isolated nexuses (docs/namespaces.md); ``driver_options``: the neo4j driver's configuration."""
    from .nexus import Nexus

    return Nexus(uri, auth=auth, database=database, settings=settings, driver=driver, namespace=namespace, **driver_options)


def connect_async(
    uri: str | None = None,
    *,
    auth: AuthLike = None,
    database: str | None = None,
    settings: Settings | None = None,
    driver: neo4j.AsyncDriver | None = None,
    namespace: str | None = None,
    **driver_options: Unpack[DriverOptions],
) -> Connecting:
    """``await connect_async()`` → an ``AsyncNexus`` (also ``async with connect_async() as nexus``);
    the parameters are ``connect``'s, ``driver`` an ``AsyncDriver``."""
    from .async_nexus import connect_async as _connect_async

    return _connect_async(uri, auth=auth, database=database, settings=settings, driver=driver, namespace=namespace, **driver_options)


def __getattr__(name: str) -> Any:
    if name == "Nexus":
        from .nexus import Nexus

        return Nexus
    if name == "AsyncNexus":
        from .async_nexus import AsyncNexus

        return AsyncNexus
    raise AttributeError(name)
