"""The Relax VM peer (apache-tvm 0.27): static models as Relax dataflow graphs, fib as a recursive Relax function.

Pipeline (the best cheap one from the shared TVM cookbook): FuseTransposeMatmul, then the cpu_generic
library-dispatch and legalization passes, then dlight's CPU GEMV and Reduction schedules on the fused
TIR functions, then the cpu_generic dataflow-lowering and finalization passes. Target: the host CPU
with its vector ISA (detect_target_from_device). Weights are bound as constants, as in the Relay programs.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numpy as np

from .workloads import Native

PIPELINE_NOTE = "FuseTransposeMatmul + cpu_generic + dlight GEMV/Reduction"


@functools.cache
def host_target():
    import tvm
    from tvm.target.detect_target import detect_target_from_device

    detected = detect_target_from_device(tvm.cpu())
    return tvm.target.Target(
        {"kind": "llvm", "mtriple": str(detected.attrs["mtriple"]), "mcpu": str(detected.attrs["mcpu"])}
    )


def pipeline(target, gemv: bool = True):
    import tvm
    import tvm.s_tir.dlight as dl
    from tvm import relax
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod, _ctx):
        with target:
            passes = (
                [relax.transform.FuseTransposeMatmul()]
                + cpu.library_dispatch_passes(target)
                + cpu.legalize_passes(target)
                + [dl.ApplyDefaultSchedule(*([dl.cpu.GEMV()] if gemv else []), dl.cpu.Reduction())]
                + cpu.dataflow_lower_passes(target)
                + cpu.finalize_passes(target)
            )
            return tvm.transform.Sequential(passes)(mod)

    return _pipeline


CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "transpile-bench" / "relax"


def compile_vm(mod, gemv: bool = True):
    """A VM for `mod`; the compiled library is cached on disk by (module text, target, pipeline, tvm version)."""
    import tvm
    from tvm import relax

    target = host_target()
    key_text = "\n".join([mod.script(), str(target), f"gemv={gemv}", PIPELINE_NOTE, tvm.__version__])
    path = CACHE_DIR / f"{hashlib.sha256(key_text.encode()).hexdigest()[:24]}.so"
    if path.exists():
        try:
            return relax.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.cpu())
        except Exception:  # a damaged cache entry is rebuilt
            path.unlink(missing_ok=True)
    executable = tvm.compile(mod, target=target, relax_pipeline=pipeline(target, gemv))
    try:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp.so")
        executable.export_library(str(partial))
        os.replace(partial, path)  # atomic: concurrent runs never load a half-written library
    except Exception:  # caching is an optimization only
        pass
    return relax.VirtualMachine(executable, tvm.cpu())


def _to_tvm(args):
    import tvm

    return tuple(tvm.runtime.tensor(np.require(np.asarray(a), requirements="C")) for a in args)


def _to_numpy(result):
    return result.numpy()


# ---------------------------------------------------------------- fib
def fib_module():
    from tvm.script import ir as I
    from tvm.script import relax as R

    @I.ir_module
    class Fib:
        @R.function
        def main(n: R.Tensor((), "int32")) -> R.Tensor((), "int32"):
            if R.less(n, R.const(2, "int32")):
                result = n
            else:
                a = Fib.main(R.subtract(n, R.const(1, "int32")))
                b = Fib.main(R.subtract(n, R.const(2, "int32")))
                result = R.add(a, b)
            return result

    return Fib


def fib_native() -> Native:
    vm = compile_vm(fib_module())
    return Native(
        call=vm["main"],
        convert_in=_to_tvm,
        convert_out=_to_numpy,
        note="recursive Relax function with R.If, scalar ops as TIR kernels",
    )


# ---------------------------------------------------------------- static models
def _dense(bb, x, weight, bias=None):
    from tvm import relax
    from tvm.relax import op

    y = bb.emit(op.matmul(x, bb.emit(op.permute_dims(relax.const(weight)))))
    return y if bias is None else bb.emit(op.add(y, relax.const(bias)))


def _mlp(bb, inputs, weights):
    from tvm.relax import op

    w1, b1, w2, b2 = weights
    hidden = bb.emit(op.nn.relu(_dense(bb, inputs[0], w1, b1)))
    return _dense(bb, hidden, w2, b2)


def _cnn(bb, inputs, weights):
    from tvm import relax
    from tvm.relax import op

    w1, b1, w2, b2, wd, bd = weights
    y = inputs[0]
    for w, b in ((w1, b1), (w2, b2)):
        y = bb.emit(op.nn.conv2d(y, relax.const(w), padding=(1, 1)))
        y = bb.emit(op.nn.relu(bb.emit(op.add(y, relax.const(b.reshape(1, -1, 1, 1))))))
        y = bb.emit(op.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2)))
    y = bb.emit(op.reshape(y, (1, wd.shape[1])))
    return _dense(bb, y, wd, bd)


def _lstm(bb, inputs, weights):
    """The LSTM unrolled over its (static number of) steps: Relax has no List to fold over."""
    from tvm import relax
    from tvm.relax import op

    w_ih, w_hh, bias = weights
    hidden = w_hh.shape[1]
    h = c = relax.const(np.zeros((1, hidden), np.float32))
    for x in inputs:
        gates = bb.emit(op.add(_dense(bb, x, w_ih), _dense(bb, h, w_hh, bias)))
        i, f, g, o = (bb.emit(op.strided_slice(gates, [1], [k * hidden], [(k + 1) * hidden])) for k in range(4))
        c = bb.emit(
            op.add(
                bb.emit(op.multiply(bb.emit(op.sigmoid(f)), c)),
                bb.emit(op.multiply(bb.emit(op.sigmoid(i)), bb.emit(op.tanh(g)))),
            )
        )
        h = bb.emit(op.multiply(bb.emit(op.sigmoid(o)), bb.emit(op.tanh(c))))
    return h


_BUILDERS = {"mlp": _mlp, "cnn": _cnn, "lstm": _lstm}
_NOTES = {
    "lstm": "unrolled over the 5 steps (no List in Relax); dlight Reduction only: with dlight GEMV, LLVM code"
    " generation of the fused gate kernel did not finish in 7 minutes",
}


def model_module(kind: str, weights, input_shapes):
    from tvm import relax

    bb = relax.BlockBuilder()
    params = [relax.Var(f"x{i}", relax.TensorType(list(shape), "float32")) for i, shape in enumerate(input_shapes)]
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(_BUILDERS[kind](bb, params, weights))
        bb.emit_func_output(out)
    return bb.get()


def model_native(kind: str, weights, input_shapes) -> Native:
    vm = compile_vm(model_module(kind, weights, input_shapes), gemv=kind != "lstm")
    convert = _to_tvm
    if kind == "lstm":
        from .workloads.models import list_items

        convert = lambda args: _to_tvm(list_items(args[0]))  # noqa: E731 - one input per step
    return Native(call=vm["main"], convert_in=convert, convert_out=_to_numpy, note=_NOTES.get(kind, ""))
