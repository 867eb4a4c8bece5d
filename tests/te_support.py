"""Harness for the TE lowering tests: build each case's PrimFunc, compile many at once, compare with numpy_impl."""

from __future__ import annotations

import os

from dataclasses import dataclass, field

import numpy as np

from transpile.relay.op.registry import get, normalize_attrs
from transpile.relay.ty import TensorType, TupleType


@dataclass
class Case:
    """One operator call: argument arrays (a list of arrays for a tuple argument) and attributes."""

    op: str
    args: list
    attrs: dict = field(default_factory=dict)
    rtol: float | None = None
    atol: float | None = None

    def label(self) -> str:
        def describe(a):
            if isinstance(a, (list, tuple)):
                return "(" + ", ".join(describe(x) for x in a) + ")"
            return f"{a.dtype}{list(a.shape)}"

        return f"{self.op}({', '.join(describe(a) for a in self.args)}; {self.attrs})"


def _arg_type(arg):
    if isinstance(arg, (list, tuple)):
        return TupleType([_arg_type(a) for a in arg])
    return TensorType(arg.shape, arg.dtype.name)


def _placeholders(arg, name):
    from tvm import te

    if isinstance(arg, (list, tuple)):
        return [_placeholders(a, f"{name}_{i}") for i, a in enumerate(arg)]
    return te.placeholder(arg.shape, arg.dtype.name, name=name)


def _flat(items):
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flat(item)
        else:
            yield item


_TOLERANCE = {"float16": (2e-3, 1e-3), "float32": (2e-6, 1e-6), "float64": (1e-12, 1e-12)}


def kernel_target():
    """Plain "llvm" by default; TRANSPILE_TE_TARGET=host tests with the host's vector ISA (AVX, FMA)."""
    import tvm

    if os.environ.get("TRANSPILE_TE_TARGET", "llvm") != "host":
        return "llvm"
    from tvm.target.detect_target import detect_target_from_device

    detected = detect_target_from_device(tvm.cpu())
    return tvm.target.Target(
        {"kind": "llvm", "mtriple": str(detected.attrs["mtriple"]), "mcpu": str(detected.attrs["mcpu"])}
    )


def run_cases(cases: list[Case]) -> list[str]:
    """Compile every case into one module, run it, and return a description of every mismatch."""
    import tvm
    from tvm import te

    funcs, plans = {}, []
    for i, case in enumerate(cases):
        opdef = get(case.op)
        attrs = normalize_attrs(opdef, case.attrs)
        out_type = opdef.type_rel([_arg_type(a) for a in case.args], attrs)
        inputs = [_placeholders(a, f"in{k}") for k, a in enumerate(case.args)]
        result = opdef.te_impl(inputs, attrs, out_type)
        outputs = list(result) if isinstance(result, (list, tuple)) else [result]
        out_types = list(out_type.fields) if isinstance(out_type, TupleType) else [out_type]
        name = f"case{i}"
        funcs[name] = te.create_prim_func([*_flat(inputs), *outputs]).with_attr("global_symbol", name)
        plans.append((name, case, attrs, out_type, out_types))
    executable = tvm.compile(tvm.IRModule(funcs), target=kernel_target())
    failures = []
    for name, case, attrs, out_type, out_types in plans:
        expected = get(case.op).numpy_impl(case.args, attrs, out_type)
        expected = list(expected) if isinstance(out_type, TupleType) else [expected]
        args = [tvm.runtime.tensor(np.array(a, order="C")) for a in _flat(case.args)]
        outs = [tvm.runtime.empty(tuple(int(d) for d in t.shape), t.dtype) for t in out_types]
        executable[name](*args, *outs)
        for k, (got, want, ty) in enumerate(zip(outs, expected, out_types)):
            got = got.numpy()
            problem = _compare(got, np.asarray(want), ty.dtype, case)
            if problem:
                failures.append(f"{case.label()} output {k}: {problem}")
    return failures


def _compare(got, want, dtype, case) -> str | None:
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if dtype in _TOLERANCE:
        rtol, atol = _TOLERANCE[dtype]
        rtol = case.rtol if case.rtol is not None else rtol
        atol = case.atol if case.atol is not None else atol
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = np.array_equal(got, want)
    if ok:
        return None
    return f"got {got.ravel()[:8]}... expected {want.ravel()[:8]}..."
