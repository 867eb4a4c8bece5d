"""Redirects a Python file's `tvm` imports (and relay-aot's `aot`) to transpile, leaving every other byte as it was."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from . import PortToolError

__all__ = ["Redirect", "TVM_REDIRECT", "AOT_REDIRECT", "DEFAULT_REDIRECTS", "rewrite_imports"]


@dataclass(frozen=True)
class Redirect:
    """Imports of the top-level package `source` (and its submodules) go to the module `target` instead."""

    source: str
    target: str

    def matches(self, module: str) -> bool:
        return module == self.source or module.startswith(self.source + ".")

    def redirected(self, module: str) -> str:
        return self.target + module[len(self.source) :]


TVM_REDIRECT = Redirect("tvm", "transpile.tvm_compat")
# relay-aot's test imports its compiler as the top-level package `aot`; its executor comes from transpile.
AOT_REDIRECT = Redirect("aot", "transpile.tvm_compat.aot")
DEFAULT_REDIRECTS = (TVM_REDIRECT, AOT_REDIRECT)

_BLANK = rb"(?:[ \t\f]|\\(?:\r\n|\n|\r))"  # whitespace a statement may contain, backslash continuations too
_FROM_MODULE = re.compile(
    rb"from" + _BLANK + rb"+(?P<module>[A-Za-z_]\w*(?:" + _BLANK + rb"*\." + _BLANK + rb"*[A-Za-z_]\w*)*)"
)
_BLANKS = re.compile(_BLANK)
_UTF8_BOM = b"\xef\xbb\xbf"


def rewrite_imports(source: bytes, redirects=DEFAULT_REDIRECTS, filename: str = "<source>") -> bytes:
    """`source` with each import of a redirected package pointing at its target; no line is added or removed.

    Only the module names of `import`/`from … import` statements change (anywhere in the file, inside
    functions too), so every other byte — and every line number in a traceback — stays as it was.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as error:
        raise PortToolError(
            f"{filename}: cannot rewrite its imports, it does not parse ({error.msg}, line {error.lineno})"
        ) from None
    offsets = _LineOffsets(source)
    edits: list[tuple[int, int, bytes]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edits.extend(_import_edits(node, redirects, offsets))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            edit = _from_import_edit(node, redirects, offsets, source, filename)
            if edit is not None:
                edits.append(edit)
    rewritten = source
    for start, end, text in sorted(edits, reverse=True):
        rewritten = rewritten[:start] + text + rewritten[end:]
    return rewritten


class _LineOffsets:
    """Byte offsets of (line, column) positions as `ast` reports them (columns are UTF-8 byte offsets)."""

    def __init__(self, source: bytes):
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        # ast columns on the first line do not count a byte-order mark.
        self.first_line_shift = len(_UTF8_BOM) if source.startswith(_UTF8_BOM) else 0

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column + (self.first_line_shift if line == 1 else 0)


def _redirect_for(module: str, redirects) -> Redirect | None:
    return next((redirect for redirect in redirects if redirect.matches(module)), None)


def _import_edits(node: ast.Import, redirects, offsets: _LineOffsets) -> list[tuple[int, int, bytes]]:
    edits = []
    unbound_packages: list[Redirect] = []
    for alias in node.names:
        redirect = _redirect_for(alias.name, redirects)
        if redirect is None:
            continue
        target = redirect.redirected(alias.name)
        if alias.asname:
            text = f"{target} as {alias.asname}"
        elif alias.name == redirect.source:
            text = f"{target} as {redirect.source}"
        else:
            # `import tvm.testing` bound the name `tvm`; `import transpile.tvm_compat.testing` binds `transpile`.
            text = target
            if redirect not in unbound_packages:
                unbound_packages.append(redirect)
        start = offsets.offset(alias.lineno, alias.col_offset)
        end = offsets.offset(alias.end_lineno, alias.end_col_offset)
        edits.append((start, end, text.encode()))
    bindings = [redirect for redirect in unbound_packages if not _binds_package_itself(node, redirect)]
    if bindings:
        last = node.names[-1]
        end = offsets.offset(last.end_lineno, last.end_col_offset)
        text = "".join(f", {redirect.target} as {redirect.source}" for redirect in bindings)
        edits.append((end, end, text.encode()))
    return edits


def _binds_package_itself(node: ast.Import, redirect: Redirect) -> bool:
    """Whether the statement already binds the package's own name (`import tvm, tvm.testing`)."""
    return any(alias.name == redirect.source and not alias.asname for alias in node.names) or any(
        alias.asname == redirect.source for alias in node.names
    )


def _from_import_edit(node: ast.ImportFrom, redirects, offsets: _LineOffsets, source: bytes, filename: str):
    redirect = _redirect_for(node.module, redirects)
    if redirect is None:
        return None
    start = offsets.offset(node.lineno, node.col_offset)
    match = _FROM_MODULE.match(source, start)
    if match is None or _BLANKS.sub(b"", match.group("module")).decode() != node.module:
        raise PortToolError(f"{filename}:{node.lineno}: cannot find the module name of `from {node.module} import …`")
    return match.start("module"), match.end("module"), redirect.redirected(node.module).encode()
