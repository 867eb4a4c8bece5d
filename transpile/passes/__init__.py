"""Shared normalization passes (Relay -> Relay), each a pure function in its own module."""

from .anf import to_anf, to_anf_expr
from .match_compile import MATCH_FAIL_OP, compile_matches, is_match_fail, match_fail
from .monomorphize import monomorphize
from .closure import captured_vars
from .lower import LoweringError
from .tailcall import mark_tail_calls

# `fuse` and `lower` are both modules and functions: import the functions from their modules
# (transpile.passes.fuse.fuse, transpile.passes.lower.lower) so the module names stay importable.
