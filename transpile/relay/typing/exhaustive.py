"""Exhaustiveness of `match` (TVM rejected a complete `match` that misses a case; `match?` allows it).

A usefulness check over the pattern matrix (Maranget's algorithm): a case is missing when a
wildcard row is still useful after all clauses; the search also builds an example of that case.
"""

from __future__ import annotations

from .. import expr as E

__all__ = ["missing_case", "pattern_text"]

_WILD = E.PatternWildcard()


def missing_case(clauses, mod):
    """A pattern no clause matches, or None when the clauses cover every value."""
    rows = [[clause.lhs] for clause in clauses]
    witness = _missing(rows, 1, mod)
    return None if witness is None else witness[0]


def _missing(rows, arity, mod):
    """A vector of `arity` patterns matched by no row, or None if the rows cover everything."""
    if arity == 0:
        return None if rows else []
    heads = [row[0] for row in rows]
    tuple_head = next((h for h in heads if isinstance(h, E.PatternTuple)), None)
    if tuple_head is not None:
        # A tuple type has a single "constructor": expand the first column into its fields.
        width = len(tuple_head.patterns)
        expanded = [_specialize(row, width, lambda head: isinstance(head, E.PatternTuple)) for row in rows]
        witness = _missing([r for r in expanded if r is not None], width + arity - 1, mod)
        if witness is None:
            return None
        return [E.PatternTuple(witness[:width])] + witness[width:]
    ctor_head = next((h for h in heads if isinstance(h, E.PatternConstructor)), None)
    defaults = [row[1:] for row in rows if _is_wild(row[0])]
    if ctor_head is None:
        witness = _missing(defaults, arity - 1, mod)
        return None if witness is None else [_WILD] + witness
    data = mod.type_definitions.get(ctor_head.constructor.belong_to) if mod is not None else None
    if data is None:
        return None  # without the definition we cannot enumerate constructors: accept
    used = {h.constructor.name_hint for h in heads if isinstance(h, E.PatternConstructor)}
    unused = [c for c in data.constructors if c.name_hint not in used]
    if unused:
        # Some constructor is matched only by wildcard rows: the rest of those rows decides.
        witness = _missing(defaults, arity - 1, mod)
        if witness is None:
            return None
        ctor = unused[0]
        return [E.PatternConstructor(ctor, [_WILD] * len(ctor.inputs))] + witness
    for ctor in data.constructors:
        width = len(ctor.inputs)
        name = ctor.name_hint

        def matches(head, name=name):
            return isinstance(head, E.PatternConstructor) and head.constructor.name_hint == name

        specialized = [_specialize(row, width, matches) for row in rows]
        witness = _missing([r for r in specialized if r is not None], width + arity - 1, mod)
        if witness is not None:
            return [E.PatternConstructor(ctor, witness[:width])] + witness[width:]
    return None


def _specialize(row, width, matches):
    """The row seen under a head of `width` fields: None when its head is another constructor."""
    head = row[0]
    if _is_wild(head):
        return [_WILD] * width + row[1:]
    if matches(head):
        return list(head.patterns) + row[1:]
    return None


def _is_wild(pattern) -> bool:
    return isinstance(pattern, (E.PatternWildcard, E.PatternVar))


def pattern_text(pattern) -> str:
    if isinstance(pattern, E.PatternConstructor):
        if not pattern.patterns:
            return pattern.constructor.name_hint
        return f"{pattern.constructor.name_hint}({', '.join(pattern_text(p) for p in pattern.patterns)})"
    if isinstance(pattern, E.PatternTuple):
        inner = ", ".join(pattern_text(p) for p in pattern.patterns)
        return f"({inner},)" if len(pattern.patterns) == 1 else f"({inner})"
    if isinstance(pattern, E.PatternVar):
        return f"%{pattern.var.name_hint}"
    return "_"
