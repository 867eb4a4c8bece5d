"""Parser for the Relay text format 0.0.5: `parse` (modules), `parse_expr`, `fromtext`.

Conventions other parts rely on:
- every parsed node has a Span (line/column of its first token, end exclusive); Ops are interned
  and spanless, and meta-table constants are the table's own objects;
- `%N = e;` graph bindings share the Expr object (no Let); `e1; e2` is `let %_ = e1; e2`;
- a bare nullary constructor (`Nil`) is `Call(Nil, [])`, as in TVM; `Cons` unapplied is the Constructor;
- an ADT or extern type name is a TypeCall (`List[A]`, `Storage[]`, bare `nat` = `TypeCall(nat, [])`);
- calls of registered operators carry normalized Attrs (defaults filled); other operators keep the
  written attributes raw (None when there are none); constructor/global/closure calls have None unless
  attributes were written;
- parameter attributes (`%x {virtual_device=...}: T`) are read and dropped (a Var has no place for them);
  function attributes, `virtual_device=` included, go to Function.attrs.
"""

from .api import fromtext, parse, parse_expr

__all__ = ["parse", "parse_expr", "fromtext"]
