"""The Python boundary of generated modules: the checked entry wrapper around the generated entry function.

The generated file holds only the program. Calling it through an artifact adds, around the entry
function (see transpile.backends.signature): an arity check, conversion of every argument to its
parameter type (numpy scalars, Python numbers without loss, DLPack tensors) with an
EvaluationError naming the argument before any kernel runs, numpy's error state of the reference
kernels (no warnings), a big-stack thread for programs that recurse, and the same treatment for
closures crossing the boundary.

Generated code computes with plain numpy, so a `?` dimension that turns out not to fit (an add
that does not broadcast, a dense with the wrong k) fails inside numpy, and a runaway recursion
ends in Python's RecursionError. Such failures are reported like the interpreter reports them: an
EvaluationError naming the failing kernel and the Relay source line (from the `# file:line:`
comment above the generated statement). Exceptions raised by the caller's own callbacks pass
through untouched, as they do on the interpreter.
"""

from __future__ import annotations

import functools
import re
import sys

from ...errors import EvaluationError, SourceRegistry, Span, TranspileError
from ..signature import Converters, type_from_json

__all__ = ["make_entry"]

_SOURCE_COMMENT = re.compile(r"^\s*# (?P<source>[^\s:][^:]*):(?P<line>\d+)(?::|$)")


def _direct(fn, *args):
    return fn(*args)


class _GuardedConverters(Converters):
    """Converters whose checked callables (the entry, returned closures) report failures as EvaluationErrors."""

    def __init__(self, adts, deep_call, kernels: dict):
        super().__init__(adts, deep_call)
        self.kernels = kernels

    def checked(self, fn, param_types, ret_type, what: str):
        return super().checked(_guarded(fn, self.kernels), param_types, ret_type, what)


def make_entry(fn, signature: dict):
    """The user-facing callable for the generated entry function `fn` described by `signature`."""
    from ...relay.deep import run_deep

    converters = _GuardedConverters(
        {
            name: {ctor: [type_from_json(t) for t in fields] for ctor, fields in layout.items()}
            for name, layout in signature["adts"].items()
        },
        run_deep if signature.get("big_stack") else _direct,
        signature.get("kernels") or {},
    )
    params = [type_from_json(p["type"]) for p in signature["params"]]
    names = ", ".join(f"%{p['name']}" for p in signature["params"])
    what = f"@{signature['relay_entry']}({names})"
    entry = converters.checked(fn, params, type_from_json(signature["result"]), what)
    entry.__transpile_signature__ = signature
    return entry


# ---------------------------------------------------------------- failures inside generated code


def _guarded(fn, kernels: dict):
    """`fn` with failures of generated code turned into EvaluationErrors (no cost unless one happens)."""
    filename = fn.__code__.co_filename

    @functools.wraps(fn)
    def guarded(*args):
        try:
            return fn(*args)
        except RecursionError as exc:
            if _raised_by_callback(exc, filename):
                raise
            depth = _generated_depth(exc, filename)
            raise EvaluationError(
                f"recursion too deep: the generated Python ran out of frames after {depth} nested calls"
                f" (the limit is {sys.getrecursionlimit()})"
            ) from None
        except TranspileError as exc:
            # An operator of transpile.runtime.ops failing inside a kernel knows no location; a
            # generated `raise EvaluationError(...)` (an incomplete match) stays as it is.
            if exc.span is not None or not isinstance(exc, EvaluationError):
                raise
            failure = _kernel_failure(exc, filename, kernels, str(exc), kernels_only=True)
            if failure is None:
                raise
            raise failure from exc
        except MemoryError:
            raise  # as the reference operators do: nothing about the program is wrong
        except Exception as exc:
            if _raised_by_callback(exc, filename):
                raise
            failure = _kernel_failure(exc, filename, kernels, f"{type(exc).__name__}: {exc}")
            if failure is None:
                raise
            raise failure from exc

    return guarded


def _frames(exc):
    tb = exc.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _generated_depth(exc, filename: str) -> int:
    return sum(1 for tb in _frames(exc) if tb.tb_frame.f_code.co_filename == filename)


def _raised_by_callback(exc, filename: str) -> bool:
    """Whether `exc` came out of a function the caller passed in (the signature's `callback`
    wrapper is between the innermost generated frame and the raise)."""
    from .. import signature

    after_generated = False
    for tb in _frames(exc):
        code = tb.tb_frame.f_code
        if code.co_filename == filename:
            after_generated = True
        elif after_generated and code.co_name == "callback" and code.co_filename == signature.__file__:
            return True
    return False


def _kernel_failure(exc, filename: str, kernels: dict, detail: str, kernels_only=False) -> EvaluationError | None:
    """An EvaluationError for `exc` at the innermost generated frame: the function (a kernel, with
    its operators, or a program function) and the Relay line of the nearest source comment.
    """
    innermost = None
    for tb in _frames(exc):
        if tb.tb_frame.f_code.co_filename == filename:
            innermost = tb
    if innermost is None:
        return None
    code = innermost.tb_frame.f_code
    name = code.co_name
    ops = kernels.get(name)
    if ops is None and kernels_only:
        return None
    if ops is not None:
        where = f"kernel {name} ({', '.join(ops)})" if ops else f"kernel {name}"
    else:
        where = f"function {name}"
    span = _source_span(filename, code.co_firstlineno, innermost.tb_lineno, ops or ())
    if span is None:
        detail += f" (generated line {filename}:{innermost.tb_lineno})"
    return EvaluationError(f"{where} failed: {detail}", span)


def _source_span(filename: str, first_line: int, line: int, ops=()) -> Span | None:
    """The Relay line named by the nearest `# file:line: text` comment above `line` in the function
    starting at `first_line` (or above the function itself); the column is the first call of one of
    the kernel's operators on that line, else the whole line."""
    import linecache

    lines = linecache.getlines(filename)
    for number in range(min(line, len(lines)), max(first_line - 2, 0), -1):
        match = _SOURCE_COMMENT.match(lines[number - 1])
        if match is None:
            continue
        source, source_line = match.group("source"), int(match.group("line"))
        # The comment carries the line's text (whitespace collapsed): quote that, not a registry
        # entry that another parse of the same name may have replaced.
        text = lines[number - 1][match.end() :].strip()
        if not text:
            return Span(source, source_line, 1)
        registered = SourceRegistry.line(source, source_line)
        if registered is not None and " ".join(registered.split()).startswith(text.removesuffix("...")):
            text = registered  # the same line with its indentation: columns as in the source
        own_text = "\n" * (source_line - 1) + text
        calls = [(at, op) for op in ops for at in [text.find(op + "(")] if at >= 0]
        if calls:
            at, op = min(calls)
            return Span(source, source_line, at + 1, source_line, at + 1 + len(op), own_text)
        column = len(text) - len(text.lstrip()) + 1
        return Span(source, source_line, column, source_line, len(text.rstrip()) + 1, own_text)
    return None
