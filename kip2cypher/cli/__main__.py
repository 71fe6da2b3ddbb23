"""``python -m kip2cypher.cli``."""

from .app import main

main()
