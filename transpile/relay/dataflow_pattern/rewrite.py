"""Pattern-directed rewriting: DFPatternCallback and rewrite (tvm.relay.dataflow_pattern)."""

from __future__ import annotations

from ..visitor import ExprMutator
from .matcher import PatternMatcher
from .patterns import DFPattern, DFPatternError

__all__ = ["DFPatternCallback", "rewrite"]

# A rewrite that keeps changing the expression after this many whole passes is not converging.
_MAX_REWRITE_PASSES = 100


class DFPatternCallback:
    """Subclass, set `self.pattern` and define `callback(pre, post, node_map)` returning the replacement.

    `node_map[p]` is the list of expressions pattern node `p` matched (one element, as in TVM).
    """

    def __init__(self, require_type: bool = False, rewrite_once: bool = False):
        self.pattern: DFPattern | None = None
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def rewrite(self, expr):
        return rewrite(self, expr)

    def callback(self, pre, post, node_map):
        raise NotImplementedError(f"{type(self).__name__} must define callback(pre, post, node_map)")


class _PatternRewriter(ExprMutator):
    def __init__(self, callbacks):
        super().__init__()
        self.callbacks = callbacks

    def visit(self, expr):
        key = id(expr)
        if key in self.memo:
            return self.memo[key]
        post = super().visit(expr)
        matcher = PatternMatcher()
        for callback in self.callbacks:
            if matcher.match(callback.pattern, post):
                node_map = {pattern: [matched] for pattern, matched in matcher.memo.values()}
                post = callback.callback(expr, post, node_map)
        self.memo[key] = post
        return post


def rewrite(callbacks, expr, mod=None):
    """Apply the callbacks bottom-up wherever their patterns match, until nothing changes."""
    from ..structural import structural_equal

    callbacks = [callbacks] if isinstance(callbacks, DFPatternCallback) else list(callbacks)
    for callback in callbacks:
        if not isinstance(getattr(callback, "pattern", None), DFPattern):
            raise DFPatternError(f"rewrite: {type(callback).__name__}.pattern is not a pattern")
    once = all(callback.rewrite_once for callback in callbacks)
    for _ in range(_MAX_REWRITE_PASSES):
        if any(callback.require_type for callback in callbacks):
            from ..typing import infer_type_expr

            expr = infer_type_expr(expr, mod)
        rewritten = _PatternRewriter(callbacks).visit(expr)
        if once or structural_equal(rewritten, expr):
            return rewritten
        expr = rewritten
    raise DFPatternError(f"rewrite: the expression still changed after {_MAX_REWRITE_PASSES} passes")
