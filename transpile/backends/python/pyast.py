"""Small helpers over Python's `ast`: expressions from text, comment markers, rendering with astor + black.

`ast` has no comments, so a comment is a placeholder statement (a bare name) that rendering
replaces by `# text` on its own line, or appends to the line above (`trailing=True`).
"""

from __future__ import annotations

import ast
import re

__all__ = ["parse_expr", "comment", "docstring", "readable", "source_comment", "render", "signature_doc"]

_MARKER = "__transpile_comment_{}__"
_MARKER_LINE = re.compile(r"^(\s*)__transpile_comment_(\d+)__\s*$")
_MAX_SOURCE_TEXT = 80


def readable(text, keep_newlines: bool = False) -> str:
    """`text` with every unprintable character escaped (`\\x00`, `\\n`, `\\ud800`): names chosen by
    users may hold anything, and comments and docstrings must stay one valid, encodable line each.
    """
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or (keep_newlines and ch == "\n"):
            out.append(ch)
        else:
            out.append(ascii(ch)[1:-1])
    return "".join(out)


def docstring(text: str) -> ast.Expr:
    """A docstring statement; its own line breaks stay, anything else unprintable is escaped."""
    return ast.Expr(ast.Constant(readable(text, keep_newlines=True)))


def parse_expr(text: str) -> ast.expr:
    """The expression node for `text` (generated from sanitized names and literal spellings)."""
    return ast.parse(text, mode="eval").body


def signature_doc(head: str, params: list[str], result: str, note: str = "", width: int = 88) -> str:
    """`head(p1, p2) -> result`, one parameter per line when that is too long for one line."""
    line = f"{head}({', '.join(params)}) -> {result}{note}"
    if len(line) <= width or not params:
        return line
    inner = "".join(f"    {p},\n" for p in params)
    return f"{head}(\n{inner}) -> {result}{note}\n"


def comment(text: str, trailing: bool = False, section: bool = False) -> ast.Expr:
    """A comment statement; a `section` comment stays apart from the definition that follows it."""
    node = ast.Expr(ast.Name("__transpile_comment__", ast.Load()))
    node.transpile_comment = (readable(" ".join(str(text).split())), trailing, section)
    return node


def short_source_name(name) -> str:
    """Only a source's file name: absolute paths would make the output depend on the machine."""
    return str(name).replace("\\", "/").rsplit("/", 1)[-1]


def source_comment(span) -> str | None:
    """`prog.rly:12: %3 = nn.dense(%x, %w)`: where a statement came from, with the source text."""
    if span is None:
        return None
    where = f"{short_source_name(span.source_name)}:{span.line}"
    try:
        line = span.source_line()  # the span's own parse, not whichever parse shares its name
    except Exception:  # a span naming unknown text still gives its position
        line = None
    line = " ".join(line.split()) if line else ""
    if len(line) > _MAX_SOURCE_TEXT:
        line = line[: _MAX_SOURCE_TEXT - 3].rstrip() + "..."
    return f"{where}: {line}" if line else where


def _generator_class():
    import astor

    class Generator(astor.code_gen.SourceGenerator):
        """astor's generator, but tuples that are values keep their parentheses: `pair = (a, b)`."""

        def visit_Tuple(self, node):
            if not isinstance(node.ctx, ast.Load) or getattr(node, "bare", False):
                return super().visit_Tuple(node)
            self.write("(")
            self.comma_list(node.elts, len(node.elts) == 1)
            self.write(")")

    return Generator


def render(module: ast.Module, line_length: int = 100, blobs: dict | None = None, format: bool = True) -> str:
    """Source text of `module`: astor renders, markers become comments, black formats (unless not
    `format`: black is most of a build's time, which bulk builds such as fuzzing may not want).

    `blobs` maps placeholder strings in the tree to long string data put in after formatting.
    """
    import astor

    comments: list[tuple[str, bool, bool]] = []
    for node in ast.walk(module):
        note = getattr(node, "transpile_comment", None)
        if note is not None:
            node.value.id = _MARKER.format(len(comments))
            comments.append(note)
    source = astor.to_source(module, source_generator_class=_generator_class())
    lines: list[str] = []
    sections: set[int] = set()
    for line in source.splitlines():
        match = _MARKER_LINE.match(line)
        if match is None:
            lines.append(line)
            continue
        text, trailing, section = comments[int(match.group(2))]
        if section:
            sections.add(len(lines))
        if text == "" and not trailing:
            lines.append("")
        elif trailing and lines:
            lines[-1] = f"{lines[-1]}  # {text}"
        else:
            lines.append(f"{match.group(1)}# {text}")
    text = "\n".join(_attach_comments(lines, sections)) + "\n"
    if format:
        import black

        text = black.format_str(text, mode=black.Mode(line_length=line_length))
    for placeholder, data in (blobs or {}).items():
        # Placeholders carry a random token, so no user-chosen string in the program can equal one.
        text = text.replace(f'"{placeholder}"', f'"{data}"', 1)
    return text


def _attach_comments(lines: list[str], sections: set[int]) -> list[str]:
    """Drop the blank lines astor puts between a comment and the `def` it describes."""
    out: list[str] = []
    for index, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "class ")):
            end = len(out)
            while end and not out[end - 1].strip():
                end -= 1
            if end < len(out) and end and out[end - 1].lstrip().startswith("#") and (end - 1) not in sections:
                del out[end:]
        out.append(line)
    return out
