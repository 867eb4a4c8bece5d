"""Dataflow patterns over Relay expressions: build (is_op, wildcard...), match, rewrite (tvm.relay.dataflow_pattern)."""

from .patterns import *  # noqa: F401,F403
from .patterns import __all__ as _pattern_names
from .matcher import match
from .rewrite import DFPatternCallback, rewrite

__all__ = [*_pattern_names, "match", "DFPatternCallback", "rewrite"]
