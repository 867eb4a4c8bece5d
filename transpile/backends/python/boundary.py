"""The Python boundary of generated modules: the checked entry wrapper around the generated entry function.

The generated file holds only the program. Calling it through an artifact adds, around the entry
function (see transpile.backends.signature): an arity check, conversion of every argument to its
parameter type (numpy scalars, Python numbers without loss, DLPack tensors) with an
EvaluationError naming the argument before any kernel runs, numpy's error state of the reference
kernels (no warnings), a big-stack thread for programs that recurse, and the same treatment for
closures crossing the boundary.
"""

from __future__ import annotations

from ..signature import Converters, type_from_json

__all__ = ["make_entry"]


def _direct(fn, *args):
    return fn(*args)


def make_entry(fn, signature: dict):
    """The user-facing callable for the generated entry function `fn` described by `signature`."""
    from ...relay.deep import run_deep

    converters = Converters(
        {
            name: {ctor: [type_from_json(t) for t in fields] for ctor, fields in layout.items()}
            for name, layout in signature["adts"].items()
        },
        run_deep if signature.get("big_stack") else _direct,
    )
    params = [type_from_json(p["type"]) for p in signature["params"]]
    names = ", ".join(f"%{p['name']}" for p in signature["params"])
    what = f"@{signature['relay_entry']}({names})"
    entry = converters.checked(fn, params, type_from_json(signature["result"]), what)
    entry.__transpile_signature__ = signature
    return entry
