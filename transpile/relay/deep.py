"""Run deeply recursive work (printing, inference, evaluation of deep programs) safely.

Recursive passes over real programs (chains of 1 500 graph bindings, 100 000 nested calls in the
interpreter) exceed Python's default recursion limit and the main thread's C stack. `deep_recursion`
runs the decorated function on a helper thread with a large stack and a high recursion limit, so
deep input raises a clean Python exception instead of crashing the process.
"""

from __future__ import annotations

import functools
import sys
import threading

__all__ = ["deep_recursion", "run_deep", "STACK_BYTES", "RECURSION_LIMIT"]

STACK_BYTES = 1 << 30  # virtual reservation; pages are only touched as the stack grows
RECURSION_LIMIT = 2_000_000

_state = threading.local()
# threading.stack_size is process-global: two threads starting deep work at once would otherwise
# restore each other's setting (and leave every later thread with a 1 GiB stack)
_stack_size_lock = threading.Lock()
_deep_workers = 0  # deep threads running now (guarded by _stack_size_lock)
_saved_limit = sys.getrecursionlimit()


def run_deep(fn, *args, **kwargs):
    """Call fn(*args, **kwargs) on a big-stack thread (or directly if already on one)."""
    if getattr(_state, "deep", False):
        return fn(*args, **kwargs)
    outcome: dict = {}

    def body():
        _state.deep = True
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised on the caller's thread
            outcome["error"] = exc

    global _deep_workers, _saved_limit
    with _stack_size_lock:
        # The recursion limit is per interpreter, not per thread: raised while any deep work runs and
        # restored by the last one, so ordinary threads (8 MB stacks) raise RecursionError, not crash.
        if _deep_workers == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _deep_workers += 1
        old_size = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            worker = threading.Thread(target=body, name="transpile-deep", daemon=True)
            worker.start()
        except BaseException:
            _release_limit()
            raise
        finally:
            threading.stack_size(old_size)
    try:
        worker.join()
    finally:
        with _stack_size_lock:
            _release_limit()
    if "error" in outcome:
        raise outcome["error"].with_traceback(outcome["error"].__traceback__)
    return outcome.get("value")


def _release_limit() -> None:
    """One deep worker ended (caller holds _stack_size_lock); the last one restores the limit."""
    global _deep_workers
    _deep_workers -= 1
    if _deep_workers == 0:
        sys.setrecursionlimit(_saved_limit)


def deep_recursion(fn):
    """Decorator form of run_deep for public entry points of recursive passes."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return run_deep(fn, *args, **kwargs)

    return wrapper
