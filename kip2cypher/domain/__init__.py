"""KML's domain rules, shared by the lowering and the programs that run its plans.

``rules``: what KIP protects (the core types, the actors, the meta-types …) and the KIP errors
a guarded write reports; ``writes``: the statement pieces of a guarded write (lock, protect,
apply, the status column) that UPSERT, UPDATE and MERGE share. Both depend only on the
foundation and the Cypher builder, so ``lower/`` and ``execution/`` may import them alike.
"""
