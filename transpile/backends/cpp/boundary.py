"""The Python side of the native library's boundary: checked arguments in, flat arrays across, values out.

Arguments are checked and converted by the python backend's `Converters` (same messages, same
rules: arity, shapes, dtypes, constructors, lossless Python numbers) before any native code runs.
They then cross as one flat list in prefix order (transpile_rt.h): tensors as 64-byte aligned
DLPack views (copied only when unaligned, non-contiguous or read-only), scalars as Python
numbers, ADT values as their tag then fields, references as their index in the call's table of
references (then their contents, the first time), closures as TVM-FFI functions. After the
result come the final contents of the references the callee received: a RefValue passed in sees
the program's writes, one passed twice (or inside an ADT) is one cell, and a reference returned
is the RefValue passed in. Errors raised by native code reach the caller as EvaluationError.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvaluationError
from ...lir.types import AdtT, ClosureT, RefT, TensorType, TupleT
from ...runtime import ADTValue, RefValue
from ...runtime.boundary import aligned
from ..signature import Converters, tensor_fast_path, type_from_json
from .scalars import is_cpp_scalar

__all__ = ["Marshaller", "make_native_entry"]


class Crossing:
    """One call across the boundary: the flat data of each direction and the references numbered
    in the order they cross (the native side numbers them the same way)."""

    __slots__ = ("out", "items", "position", "refs", "ref_types", "ref_index")

    def __init__(self, items=None):
        self.out: list = []  # what this side sends
        self.items = items  # what it received
        self.position = 0
        self.refs: list = []  # RefValue objects by index
        self.ref_types: list = []  # their contents' types
        self.ref_index: dict = {}  # id(RefValue) -> index

    def next(self):
        value = self.items[self.position]
        self.position += 1
        return value

    def receive(self, items) -> None:
        self.items = items
        self.position = 0


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
            self._enc[ty] = lambda value, c: self._enc[ty](value, c)  # placeholder for recursive types
            fn = self._enc[ty] = self._make_encoder(ty)
        return fn

    def _make_encoder(self, ty):
        ffi = self.ffi
        if isinstance(ty, TensorType):
            if is_cpp_scalar(ty):
                if ty.dtype == "bool":
                    return lambda v, c: c.out.append(bool(v))
                if ty.dtype.startswith("float"):
                    return lambda v, c: c.out.append(float(v))
                if ty.dtype == "uint64":
                    return lambda v, c: c.out.append(int(np.asarray(v, np.uint64).view(np.int64)))
                return lambda v, c: c.out.append(int(v))
            return lambda v, c: c.out.append(ffi.from_dlpack(aligned(np.asarray(v))))
        if isinstance(ty, TupleT):
            fields = [self.encoder(f) for f in ty.fields]

            def tuple_enc(v, c):
                for enc, item in zip(fields, v):
                    enc(item, c)

            return tuple_enc
        if isinstance(ty, RefT):
            contents = self.encoder(ty.value)

            def ref_enc(v, c):
                k = c.ref_index.get(id(v))
                if k is not None:
                    c.out.append(k)
                    return
                k = c.ref_index[id(v)] = len(c.refs)
                c.refs.append(v)
                c.ref_types.append(ty.value)
                c.out.append(k)
                contents(v.value, c)

            return ref_enc
        if isinstance(ty, AdtT):
            tags = self.tags[ty.name]
            layout = self.adts[ty.name]
            fields = {}

            def adt_enc(v, c):
                ctor = v.constructor
                encs = fields.get(ctor)
                if encs is None:
                    encs = fields[ctor] = [self.encoder(t) for t in layout[ctor]]
                c.out.append(tags[ctor])
                for enc, item in zip(encs, v.fields):
                    enc(item, c)

            return adt_enc
        if isinstance(ty, ClosureT):
            return lambda v, c: c.out.append(self._python_function(ty, v))
        raise EvaluationError(f"cannot pass a value of type {ty} to native code")

    def _python_function(self, ty: ClosureT, callback):
        """A TVM-FFI function calling `callback` (already checked by Converters) with decoded args."""
        decs = [self.decoder(p) for p in ty.params]
        enc = self.encoder(ty.ret)

        def bridge(items):
            crossing = Crossing(items)
            args = [dec(crossing) for dec in decs]
            received = len(crossing.refs)
            enc(callback(*args), crossing)
            self.send_contents(crossing, received)
            return crossing.out

        return self.ffi.convert(bridge)

    # -------------------------------------------------------------- native -> Python

    def decoder(self, ty):
        fn = self._dec.get(ty)
        if fn is None:
            self._dec[ty] = lambda c: self._dec[ty](c)
            fn = self._dec[ty] = self._make_decoder(ty)
        return fn

    def _make_decoder(self, ty):
        if isinstance(ty, TensorType):
            dtype = np.dtype(ty.dtype)
            if is_cpp_scalar(ty):

                def scalar_dec(c):
                    value = c.next()
                    if dtype == np.uint64 and value < 0:
                        return np.asarray(value, np.int64).view(np.uint64)
                    return np.asarray(value, dtype)

                return scalar_dec

            def tensor_dec(c):
                return np.from_dlpack(c.next())

            return tensor_dec
        if isinstance(ty, TupleT):
            fields = [self.decoder(f) for f in ty.fields]
            return lambda c: tuple(dec(c) for dec in fields)
        if isinstance(ty, RefT):
            contents = self.decoder(ty.value)

            def ref_dec(c):
                k = c.next()
                if k < len(c.refs):
                    return c.refs[k]  # crossed before in this call: the same RefValue
                cell = RefValue(None)
                c.ref_index[id(cell)] = len(c.refs)
                c.refs.append(cell)  # before the contents, which may refer back to it
                c.ref_types.append(ty.value)
                cell.value = contents(c)
                return cell

            return ref_dec
        if isinstance(ty, AdtT):
            names = self.names[ty.name]
            layout = self.adts[ty.name]
            fields = {}

            def adt_dec(c):
                ctor = names[c.next()]
                decs = fields.get(ctor)
                if decs is None:
                    decs = fields[ctor] = [self.decoder(t) for t in layout[ctor]]
                return ADTValue(ctor, tuple(dec(c) for dec in decs))

            return adt_dec
        if isinstance(ty, ClosureT):
            encs = [self.encoder(p) for p in ty.params]
            ret = self.decoder(ty.ret)

            def closure_dec(c):
                function = c.next()
                return lambda *args: self.call(function, encs, args, ret)

            return closure_dec
        raise EvaluationError(f"cannot receive a value of type {ty} from native code")

    # -------------------------------------------------------------- whole calls

    def call(self, function, encoders, args, decoder):
        """Calls a native function: arguments out, result back, then the references it received."""
        crossing = Crossing()
        for enc, arg in zip(encoders, args):
            enc(arg, crossing)
        sent = len(crossing.refs)
        crossing.receive(self.call_native(function, crossing.out))
        result = decoder(crossing)
        for k in range(sent):  # what the native side left in the references passed to it
            crossing.refs[k].value = self.decoder(crossing.ref_types[k])(crossing)
        return result

    def send_contents(self, crossing: Crossing, received: int) -> None:
        """After a callback's result: the contents of the references it received, as it left them."""
        for k in range(received):
            self.encoder(crossing.ref_types[k])(crossing.refs[k].value, crossing)


def make_native_entry(function, info: dict, typed=None):
    """The user-facing callable of the library's generic entry `function` (see marshal.py); calls
    whose arguments are plain numpy arrays go to `typed`, the tensor-only export, when there is one."""
    from ...relay.deep import run_deep

    signature = info["signature"]
    adts = {
        name: {ctor: [type_from_json(t) for t in fields] for ctor, fields in layout.items()}
        for name, layout in signature["adts"].items()
    }

    def call_native(fn, *flat):
        try:
            return fn(*flat)
        except EvaluationError:
            raise
        except Exception as exc:  # ValueError/RuntimeError/RecursionError... from C++ or a callback
            raise _native_error(exc) from None

    deep = signature.get("big_stack")
    result_nests = _nests(type_from_json(signature["result"]))

    def deep_call(fn, *args):
        # The library runs deep recursion on a big stack of the calling thread by itself; a
        # big-stack Python thread (costly to start per call) is only needed for converting
        # deeply nested values in Python.
        if not deep or (not result_nests and _shallow(args)):
            return fn(*args)
        return run_deep(fn, *args)

    converters = Converters(adts, deep_call)
    marshaller = Marshaller(adts, info["tags"], converters, call_native)
    params = [type_from_json(p["type"]) for p in signature["params"]]
    result_type = type_from_json(signature["result"])
    encs = [marshaller.encoder(t) for t in params]
    dec = marshaller.decoder(result_type)

    def raw(*args):
        return marshaller.call(function, encs, args, dec)

    names = ", ".join(f"%{p['name']}" for p in signature["params"])
    what = f"@{signature['relay_entry']}({names})"
    entry = converters.checked(raw, params, result_type, what)
    if typed is not None and all(isinstance(t, TensorType) for t in params):
        entry = tensor_fast_path(typed, params, result_type, entry, call_native)
    entry.__transpile_signature__ = signature
    return entry


SHALLOW_NESTING = 100  # nesting levels the Python-side conversion handles on any thread's stack


def _nests(ty) -> bool:
    """Whether values of type `ty` may nest arbitrarily deep (they contain ADT values)."""
    if isinstance(ty, AdtT):
        return True
    if isinstance(ty, TupleT):
        return any(_nests(f) for f in ty.fields)
    if isinstance(ty, RefT):
        return _nests(ty.value)
    if isinstance(ty, ClosureT):
        return any(_nests(p) for p in ty.params) or _nests(ty.ret)
    return False


def _shallow(value, limit: int = SHALLOW_NESTING) -> bool:
    """Whether `value` (ADT values, tuples, lists, references) nests at most `limit` levels deep."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, ADTValue):
            stack.extend((f, depth + 1) for f in item.fields)
        elif isinstance(item, (tuple, list)):
            stack.extend((f, depth + 1) for f in item)
        elif isinstance(item, RefValue):
            stack.append((item.value, depth + 1))
    return True
