"""Comments after printed nodes: TVM's `/* ty=T span=S */` and the text of `astext(annotate=...)` callbacks.

TVM's printer appended, once per node, either its own comment (the checked type and the span of
constants, calls, variables, functions, tuples and projections) or, when the caller passed an
`annotate` callback, that callback's string verbatim. A verbatim string that is no comment would
make the text unparsable, so a result that is not already one `/* ... */` block is wrapped in one.
"""

from __future__ import annotations

from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var

__all__ = ["annotation_comment", "span_text", "DEFAULT_INFO_KINDS"]

# The node kinds TVM's printer gave a `/* ty=... */` comment when no callback was passed.
DEFAULT_INFO_KINDS = (Constant, Call, Var, Function, Tuple, TupleGetItem)


def _is_one_block_comment(text: str) -> bool:
    body = text.strip()
    return body.startswith("/*") and body.endswith("*/") and "*/" not in body[2:-2] and len(body) >= 4


def annotation_comment(text) -> str:
    """The comment written for an annotate callback's result ("" prints nothing)."""
    if text is None:
        return ""
    text = str(text)
    if not text.strip():
        return ""
    if _is_one_block_comment(text):
        return text if text[0].isspace() else " " + text
    # `*/` inside would end the comment early; block comments nest in the lexer, so `/*` is split too.
    safe = text.replace("*/", "* /").replace("/*", "/ *")
    return f" /* {safe} */"


def span_text(span) -> str | None:
    """`name:line:column` of a span set by a frontend or a user, as TVM printed it.

    Spans the parser made point into the text being reprinted; printing them would make every
    reprint differ from its source, so they are left out (None).
    """
    if span is None or getattr(span, "source_text", None) is not None:
        return None
    source = getattr(span, "source_name", None)
    name = getattr(source, "name", source)  # tvm's Span holds a SourceName object
    line = getattr(span, "line", None)
    column = getattr(span, "column", None)
    if name is None or line is None or column is None:
        return None
    return f"{name}:{line}:{column}".replace("*/", "* /")
