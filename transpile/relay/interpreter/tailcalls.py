"""Self tail calls as loops: a function calling itself in tail position reuses its Python frame.

A self tail call (`@loop(%i - 1, ...)` as the last thing `@loop` does, or `%f(...)` inside the
closure bound to `%f`) evaluates its arguments and returns a `TailCall` marker instead of
calling; the function's entry wrapper sees the marker and runs the body again on a fresh frame.
So a million-step loop costs no recursion, as on the compiled backends.
"""

from __future__ import annotations

from .. import expr as E

__all__ = ["TailCall", "tail_call_sites", "looping_body"]


class TailCall:
    """The arguments of a self tail call, returned to the function's entry wrapper."""

    __slots__ = ("args",)

    def __init__(self, args):
        self.args = args


def tail_call_sites(body, shared: set) -> set:
    """ids of the Call nodes in tail position of a function body: reached from the body through
    let bodies, if branches and match clauses. A node evaluated once and cached (`shared`)
    is no tail position: its value is kept, so it must be a value."""
    sites = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if id(node) in shared:
            continue
        kind = type(node)
        if kind is E.Let:
            stack.append(node.body)
        elif kind is E.If:
            stack.append(node.true_branch)
            stack.append(node.false_branch)
        elif kind is E.Match:
            stack.extend(clause.rhs for clause in node.clauses)
        elif kind is E.Call:
            sites.add(id(node))
    return sites


def looping_body(inner, template: list, arity: int):
    """The body of a function with self tail calls: re-run on a fresh frame (same environment,
    new arguments) while the body ends in a self tail call. A fresh frame, not the old one
    updated, because closures made in the previous round keep the old frame as environment."""
    end = arity + 1

    def run(frame):
        result = inner(frame)
        while type(result) is TailCall:
            env = frame[0]
            frame = template.copy()
            frame[0] = env
            frame[1:end] = result.args
            result = inner(frame)
        return result

    return run
