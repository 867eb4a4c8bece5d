"""The standalone flavour of the cpp backend: a source bundle that builds with only a C++ compiler.

`transpile build -b cpp --standalone -o DIR FILE.rly`, or from Python:

    from transpile.backends.cpp.standalone import build_bundle
    bundle = build_bundle(mod, "out/cnn")          # or write_bundle(lir_program, "out/cnn")

DIR then holds program.cc (the same C++ the cpp backend generates, in its TVM-free flavour:
it includes transpile_rt_standalone.h and exports only the plain C API), kernels.c (the fused
kernels from TVM's `c` target, with TVM's headers replaced by runtime/tvm_shim.h), the runtime
headers, a Makefile (lib<entry>.so, lib<entry>.a, <entry>_demo), README.txt and
transpile-bundle.json. Building and running it needs no TVM and no Python. The entry must take
and return tensors (or tuples of tensors) with static shapes; inside, the program may use every
language feature the cpp backend supports (closures, ADTs, refs, recursion).

A bundle is not an Artifact: transpile.load cannot load it (it is built by `make`, elsewhere).
"""

from __future__ import annotations

from .bundle import MANIFEST, Bundle, write_bundle

__all__ = ["build_bundle", "write_bundle", "Bundle", "MANIFEST"]


def build_bundle(target, out_dir, mod=None, *, entry: str = "main", **options) -> Bundle:
    """Type-check and lower `entry` of a Relay module (or function, as transpile.build takes it) for
    the cpp backend, then write its standalone bundle to `out_dir`. Options: the cpp backend's
    (`verify`, `schedule`) and the pipeline's knobs."""
    from ...api import _lower, prepare
    from .. import _checked

    selected, typed, entry = prepare(target, mod, backend="cpp", entry=entry)
    options = dict(options)
    # The portable C kernels keep NCHW convolutions: their c-target schedules are made for gcc's
    # auto-vectorizer (guard-free tiles, local accumulators); packed NCHWc is for TVM's LLVM kernels.
    options.setdefault("alter_layout", False)
    program = _lower(selected, typed, entry, options)
    options = _checked(options)
    return write_bundle(program, out_dir, schedule=options.get("schedule", True), verify=options.get("verify", True))
