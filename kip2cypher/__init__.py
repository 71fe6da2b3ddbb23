"""kip2cypher: KIP v1.0-RC10 compiled to parameterized Cypher and executed on Neo4j."""

from .errors import KipError
from .responses import BatchResponse, CommandResponse, ErrorObject, KipResponse
from .version import __version__

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


def parse(text: str):
    """Parse one KIP command into its typed AST (cached by text)."""
    from .syntax.parser import parse as _parse

    return _parse(text)


def compile(text: str, parameters=None, *, namespace=None, keep_placeholders=False, adoption=None):  # noqa: A001 - public API name fixed by the project
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


def connect(uri=None, *, auth=None, database=None, **options):
    """Open a ``Nexus`` on Neo4j; defaults come from NEO4J_URI/USERNAME/PASSWORD/DATABASE.
    ``namespace="alice"`` opens one of the database's isolated nexuses (docs/namespaces.md)."""
    from .nexus import Nexus

    return Nexus(uri, auth=auth, database=database, **options)


def connect_async(uri=None, *, auth=None, database=None, driver=None, settings=None, **options):
    """``await connect_async()`` → an ``AsyncNexus`` (also ``async with connect_async() as nexus``)."""
    from .async_nexus import connect_async as _connect_async

    return _connect_async(uri, auth=auth, database=database, driver=driver, settings=settings, **options)


def __getattr__(name):
    if name == "Nexus":
        from .nexus import Nexus

        return Nexus
    if name == "AsyncNexus":
        from .async_nexus import AsyncNexus

        return AsyncNexus
    raise AttributeError(name)
