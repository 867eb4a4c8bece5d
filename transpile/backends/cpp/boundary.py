"""The Python side of the native library's boundary: checked arguments in, flat arrays across, values out.

Arguments are checked and converted by the python backend's `Converters` (same messages, same
rules: arity, shapes, dtypes, constructors, lossless Python numbers) before any native code runs.
They then cross as one flat list in prefix order (transpile_rt.h): tensors as 64-byte aligned
DLPack views (copied only when unaligned, non-contiguous or read-only), scalars as Python
numbers, ADT values as their tag then fields, references as their contents, closures as TVM-FFI
functions. Errors raised by native code reach the caller as EvaluationError.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvaluationError
from ...lir.types import AdtT, ClosureT, RefT, TensorType, TupleT
from ...runtime import ADTValue, RefValue
from ..python.boundary import Converters, type_from_json
from .codegen.types import is_cpp_scalar

__all__ = ["Marshaller", "make_native_entry", "aligned"]

ALIGNMENT = 64


def aligned(array: np.ndarray) -> np.ndarray:
    """`array` itself when kernels may use it in place, else a C-contiguous 64-byte aligned copy."""
    if array.flags.c_contiguous and array.flags.writeable and array.ctypes.data % ALIGNMENT == 0:
        return array
    nbytes = max(array.nbytes, 1)
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    copy = raw[offset : offset + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def _native_error(exc: BaseException) -> EvaluationError:
    if isinstance(exc, EvaluationError):
        return exc
    message = str(exc).strip() or type(exc).__name__
    return EvaluationError(message)


class Marshaller:
    """Encoders/decoders per LIR type, built once per type (closures over the layout)."""

    def __init__(self, adts: dict, tags: dict, converters: Converters, call_native):
        import tvm_ffi

        self.ffi = tvm_ffi
        self.adts = adts  # {adt: {relay ctor: [field types]}}
        self.tags = tags  # {adt: {relay ctor: tag}}
        self.names = {adt: {tag: ctor for ctor, tag in t.items()} for adt, t in tags.items()}
        self.converters = converters
        self.call_native = call_native  # runs a native function, mapping its errors
        self._enc: dict = {}
        self._dec: dict = {}

    # -------------------------------------------------------------- Python -> native

    def encoder(self, ty):
        fn = self._enc.get(ty)
        if fn is None:
            self._enc[ty] = lambda value, out: self._enc[ty](value, out)  # placeholder for recursive types
            fn = self._enc[ty] = self._make_encoder(ty)
        return fn

    def _make_encoder(self, ty):
        ffi = self.ffi
        if isinstance(ty, TensorType):
            if is_cpp_scalar(ty):
                if ty.dtype == "bool":
                    return lambda v, out: out.append(bool(v))
                if ty.dtype.startswith("float"):
                    return lambda v, out: out.append(float(v))
                if ty.dtype == "uint64":
                    return lambda v, out: out.append(int(np.asarray(v, np.uint64).view(np.int64)))
                return lambda v, out: out.append(int(v))
            return lambda v, out: out.append(ffi.from_dlpack(aligned(np.asarray(v))))
        if isinstance(ty, TupleT):
            fields = [self.encoder(f) for f in ty.fields]

            def tuple_enc(v, out):
                for enc, item in zip(fields, v):
                    enc(item, out)

            return tuple_enc
        if isinstance(ty, RefT):
            contents = self.encoder(ty.value)
            return lambda v, out: contents(v.value, out)
        if isinstance(ty, AdtT):
            tags = self.tags[ty.name]
            layout = self.adts[ty.name]
            fields = {}

            def adt_enc(v, out):
                ctor = v.constructor
                encs = fields.get(ctor)
                if encs is None:
                    encs = fields[ctor] = [self.encoder(t) for t in layout[ctor]]
                out.append(tags[ctor])
                for enc, item in zip(encs, v.fields):
                    enc(item, out)

            return adt_enc
        if isinstance(ty, ClosureT):
            return lambda v, out: out.append(self._python_function(ty, v))
        raise EvaluationError(f"cannot pass a value of type {ty} to native code")

    def _python_function(self, ty: ClosureT, callback):
        """A TVM-FFI function calling `callback` (already checked by Converters) with decoded args."""
        decs = [self.decoder(p) for p in ty.params]
        enc = self.encoder(ty.ret)

        def bridge(items):
            position = [0]
            args = [dec(items, position) for dec in decs]
            out: list = []
            enc(callback(*args), out)
            return out

        return self.ffi.convert(bridge)

    # -------------------------------------------------------------- native -> Python

    def decoder(self, ty):
        fn = self._dec.get(ty)
        if fn is None:
            self._dec[ty] = lambda items, pos: self._dec[ty](items, pos)
            fn = self._dec[ty] = self._make_decoder(ty)
        return fn

    def _make_decoder(self, ty):
        if isinstance(ty, TensorType):
            dtype = np.dtype(ty.dtype)
            if is_cpp_scalar(ty):

                def scalar_dec(items, pos):
                    value = items[pos[0]]
                    pos[0] += 1
                    if dtype == np.uint64 and value < 0:
                        return np.asarray(value, np.int64).view(np.uint64)
                    return np.asarray(value, dtype)

                return scalar_dec

            def tensor_dec(items, pos):
                value = items[pos[0]]
                pos[0] += 1
                return np.from_dlpack(value)

            return tensor_dec
        if isinstance(ty, TupleT):
            fields = [self.decoder(f) for f in ty.fields]
            return lambda items, pos: tuple(dec(items, pos) for dec in fields)
        if isinstance(ty, RefT):
            contents = self.decoder(ty.value)
            return lambda items, pos: RefValue(contents(items, pos))
        if isinstance(ty, AdtT):
            names = self.names[ty.name]
            layout = self.adts[ty.name]
            fields = {}

            def adt_dec(items, pos):
                tag = items[pos[0]]
                pos[0] += 1
                ctor = names[tag]
                decs = fields.get(ctor)
                if decs is None:
                    decs = fields[ctor] = [self.decoder(t) for t in layout[ctor]]
                return ADTValue(ctor, tuple(dec(items, pos) for dec in decs))

            return adt_dec
        if isinstance(ty, ClosureT):
            encs = [self.encoder(p) for p in ty.params]
            ret = self.decoder(ty.ret)

            def closure_dec(items, pos):
                function = items[pos[0]]
                pos[0] += 1

                def native_closure(*args):
                    flat: list = []
                    for enc, arg in zip(encs, args):
                        enc(arg, flat)
                    result = self.call_native(function, flat)
                    return ret(result, [0])

                return native_closure

            return closure_dec
        raise EvaluationError(f"cannot receive a value of type {ty} from native code")


def make_native_entry(function, info: dict):
    """The user-facing callable of the library's generic entry `function` (see marshal.py)."""
    from ...relay.deep import run_deep

    signature = info["signature"]
    adts = {
        name: {ctor: [type_from_json(t) for t in fields] for ctor, fields in layout.items()}
        for name, layout in signature["adts"].items()
    }

    def call_native(fn, flat):
        try:
            return fn(flat)
        except EvaluationError:
            raise
        except Exception as exc:  # ValueError/RuntimeError/RecursionError... from C++ or a callback
            raise _native_error(exc) from None

    deep = signature.get("big_stack")
    converters = Converters(adts, run_deep if deep else (lambda fn, *args: fn(*args)))
    marshaller = Marshaller(adts, info["tags"], converters, call_native)
    params = [type_from_json(p["type"]) for p in signature["params"]]
    result_type = type_from_json(signature["result"])
    encs = [marshaller.encoder(t) for t in params]
    dec = marshaller.decoder(result_type)

    def raw(*args):
        flat: list = []
        for enc, arg in zip(encs, args):
            enc(arg, flat)
        return dec(call_native(function, flat), [0])

    names = ", ".join(f"%{p['name']}" for p in signature["params"])
    what = f"@{signature['relay_entry']}({names})"
    entry = converters.checked(raw, params, result_type, what)
    entry.__transpile_signature__ = signature
    return entry
