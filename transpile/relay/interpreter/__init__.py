"""The reference interpreter: runs any well-typed Relay program with numpy under Relay's semantics."""

from .evaluate import Interpreter, evaluate
from .values import Closure

__all__ = ["evaluate", "Interpreter", "Closure"]
