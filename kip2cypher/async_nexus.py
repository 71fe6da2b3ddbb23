"""``AsyncNexus``: the ``Nexus`` for asyncio applications, on ``neo4j.AsyncGraphDatabase``.

Every method returns exactly what the sync ``Nexus`` returns: both are the same class
(``face.Face``) over the same I/O-free core (``execution.core``), driven here by the asyncio
loop (``execution.loop.operate_async``). A request's parsing and compiling runs in one worker
thread hop, embedding inference in a worker thread, so a command never blocks the event loop::

    async with kip2cypher.connect_async() as nexus:
        await nexus.bootstrap()
        response = await nexus.execute_kip('FIND(?t.name) WHERE { ?t {type: "$ConceptType"} }')
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Unpack

from neo4j import AsyncDriver, AsyncGraphDatabase

from . import connection
from .config import Settings
from .connection import AuthLike, DriverOptions
from .execution import background, loop
from .face import AwaitingFace, Waiting


class AsyncNexus(AwaitingFace):
    """A Cognitive Nexus stored in one Neo4j database, for asyncio callers: every method of the
    ``Nexus`` (``face.Face``), awaited.

    ``driver``: an ``AsyncDriver`` the application already owns (its auth, TLS, pool, routing);
    it is used as is and never closed by the nexus.
    """

    _waiting = Waiting(
        connection.open_async_driver, connection.AsyncReachabilityCheck, AsyncGraphDatabase.bookmark_manager, background.AsyncRefresher, loop.operate_async
    )

    async def session(self, access: str = "WRITE", *, retries: bool = True) -> Any:
        """A session on this nexus's database; the first one proves the server answers (KIP_4003 fast if not).
        ``retries=False``: without the driver's retries of managed transactions (``Face._session``)."""
        await self._reachable.ensure()
        return self._session(access, retries)

    async def check_reachable(self) -> None:
        """``Nexus.check_reachable``, awaited."""
        await self._reachable.ensure()

    async def wait_for_embeddings(self, timeout: float | None = None) -> bool:
        """``Nexus.wait_for_embeddings``, awaited."""
        return await self._refresher.wait(timeout)

    async def close(self) -> None:
        """``Nexus.close``: the last writes' embeddings first (up to ``embedding_wait_s``)."""
        await self._refresher.close(self.settings.embedding_wait_s)
        if self._owns_driver:
            await self._driver.close()

    async def __aenter__(self) -> AsyncNexus:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class Connecting:
    """What ``connect_async`` returns: await it for the ``AsyncNexus``, or use it with ``async with``."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self._kwargs = kwargs
        self._nexus: AsyncNexus | None = None

    async def _open(self) -> AsyncNexus:
        self._nexus = AsyncNexus(**self._kwargs)
        return self._nexus

    def __await__(self) -> Generator[Any, None, AsyncNexus]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncNexus:
        return await self._open()

    async def __aexit__(self, *exc: Any) -> None:
        if self._nexus is not None:
            await self._nexus.close()


def connect_async(
    uri: str | None = None,
    *,
    auth: AuthLike = None,
    database: str | None = None,
    settings: Settings | None = None,
    driver: AsyncDriver | None = None,
    namespace: str | None = None,
    **driver_options: Unpack[DriverOptions],
) -> Connecting:
    """``await connect_async(…)`` → an ``AsyncNexus``; ``async with connect_async(…) as nexus`` closes it after."""
    return Connecting({"uri": uri, "auth": auth, "database": database, "driver": driver, "settings": settings, "namespace": namespace, **driver_options})
