"""The syntax layer: KIP text → immutable, validated AST (and back, with the printer).

Nothing here knows about Cypher or Neo4j. Modules: ``ast`` (the node classes), ``grammars`` +
``parser`` (text → AST, cached), ``validate`` (what the grammar cannot say), ``values`` (value
nodes → JSON once parameters are known), ``placeholders`` (the quoted-placeholder rule),
``printer`` (AST → canonical KIP text), ``serialize`` (AST → JSON for ``kip2cypher parse``) and
``script`` (splitting ``.kip`` scripts, command kinds).
"""
