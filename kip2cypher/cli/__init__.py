"""The ``kip2cypher`` command line and interactive shell (entry point ``kip2cypher.cli:main``)."""

from .app import main

__all__ = ["main"]
