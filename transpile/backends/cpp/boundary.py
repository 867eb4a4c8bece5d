"""The Python side of the native library's boundary: checked arguments in, flat columns across, values out.

Arguments are checked and converted by the python backend's `Converters` (same messages, same
rules: arity, shapes, dtypes, constructors, lossless Python numbers) before any native code runs.
They then cross in prefix order (transpile_rt.h), split into three columns: `ints` (ADT tags,
integer and bool scalars, reference indices) and `floats` (float scalars) as one int64 and one
float64 array, and `objects`: tensors as 64-byte aligned DLPack views (copied only when
unaligned, non-contiguous or read-only) and closures as TVM-FFI functions. ADT values are walked
with explicit stacks, so a list of millions of items costs well under a microsecond per item
each way and no recursion. After the result come the final contents of the references the callee
received: a RefValue passed in sees the program's writes, one passed twice (or inside an ADT) is
one cell, and a reference returned is the RefValue passed in. Errors raised by native code reach
the caller as EvaluationError.
"""

from __future__ import annotations

import threading

import numpy as np

from ...errors import EvaluationError
from ...lir.types import AdtT, ClosureT, RefT, TensorType, TupleT
from ...runtime import ADTValue, RefValue
from ...runtime.boundary import aligned, gc_paused
from ..signature import Converters, tensor_fast_path, type_from_json
from .scalars import is_cpp_scalar

__all__ = ["Marshaller", "make_native_entry"]


class Crossing:
    """One call across the boundary: the columns this side sends and reads, and the references
    numbered in the order they cross (the native side numbers them the same way)."""

    __slots__ = (
        "ints", "floats", "objects", "put_int", "put_float", "put_object",
        "next_int", "next_float", "next_object", "refs", "ref_types", "ref_index",
    )  # fmt: skip

    def __init__(self, items=None):
        self.ints: list = []  # what this side sends, by column
        self.floats: list = []
        self.objects: list = []
        self.put_int = self.ints.append
        self.put_float = self.floats.append
        self.put_object = self.objects.append
        self.refs: list = []  # RefValue objects by index
        self.ref_types: list = []  # their contents' types
        self.ref_index: dict = {}  # id(RefValue) -> index
        if items is not None:
            self.receive(items)

    def send(self, from_dlpack) -> list:
        """The crossing [ints, floats, objects] of what was put."""
        ints = np.array(self.ints, dtype=np.int64)  # fresh: DLPack cannot export read-only arrays
        floats = np.array(self.floats, dtype=np.float64)
        return [from_dlpack(ints), from_dlpack(floats), self.objects]

    def receive(self, items) -> None:
        """Reads what the other side sent: each column is then consumed in order."""
        if len(items) != 3:
            raise EvaluationError("boundary data: expected [ints, floats, objects]")
        self.next_int = iter(np.from_dlpack(items[0]).tolist()).__next__
        self.next_float = iter(np.from_dlpack(items[1]).tolist()).__next__
        objects = items[2]
        # An FFI Array's slice is read in one loop of element getters; iterating it goes through
        # its Python-level __getitem__ per element (3-4 times the cost).
        self.next_object = iter(objects[:] if not isinstance(objects, (list, tuple)) else objects).__next__


def _native_error(exc: BaseException) -> EvaluationError:
    if isinstance(exc, EvaluationError):
        return exc
    if isinstance(exc, StopIteration):  # a column read past its end
        return EvaluationError("boundary data too short")
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
                    return lambda v, c: c.put_int(bool(v))
                if ty.dtype.startswith("float"):
                    return lambda v, c: c.put_float(float(v))
                if ty.dtype == "uint64":
                    return lambda v, c: c.put_int(int(np.asarray(v, np.uint64).view(np.int64)))
                return lambda v, c: c.put_int(int(v))
            from_dlpack = ffi.from_dlpack

            def tensor_enc(v, c):
                # As it is: the native side copies a tensor that is unaligned or strided itself
                # (trt::checked_tensor), which costs less than an aligned copy made here.
                try:
                    c.put_object(from_dlpack(v))
                except BufferError:  # read-only arrays cannot be exported through DLPack
                    c.put_object(from_dlpack(aligned(np.asarray(v))))

            return tensor_enc
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
                    c.put_int(k)
                    return
                k = c.ref_index[id(v)] = len(c.refs)
                c.refs.append(v)
                c.ref_types.append(ty.value)
                c.put_int(k)
                contents(v.value, c)

            return ref_enc
        if isinstance(ty, AdtT):
            return self._adt_encoder(ty)
        if isinstance(ty, ClosureT):
            return lambda v, c: c.put_object(self._python_function(ty, v))
        raise EvaluationError(f"cannot pass a value of type {ty} to native code")

    def _adt_plans(self, ty: AdtT, coder):
        """{constructor: tuple of field coders, None for fields of type `ty` itself}, built on
        first use (a field's coder may be this very ADT's)."""
        layout = self.adts[ty.name]
        plans: dict = {}

        def plan_of(ctor):
            plan = plans.get(ctor)
            if plan is None:
                plan = plans[ctor] = tuple(None if t == ty else coder(t) for t in layout[ctor])
            return plan

        return plan_of

    def _adt_encoder(self, ty: AdtT):
        tags = self.tags[ty.name]
        plan_of = self._adt_plans(ty, self.encoder)

        def adt_enc(value, c):
            # Prefix order without recursion: fields of this ADT's type are descended into in a
            # loop; the fields after one wait on `pending` (a list's tail is its last field, so
            # lists never wait).
            put_int = c.put_int
            pending = []
            while True:
                put_int(tags[value.constructor])
                plan, fields, i = plan_of(value.constructor), value.fields, 0
                while True:
                    n = len(plan)
                    while i < n and plan[i] is not None:
                        plan[i](fields[i], c)
                        i += 1
                    if i < n:
                        if i + 1 < n:
                            pending.append((plan, fields, i + 1))
                        value = fields[i]
                        break
                    if not pending:
                        return
                    plan, fields, i = pending.pop()

        return adt_enc

    def _python_function(self, ty: ClosureT, callback):
        """A TVM-FFI function calling `callback` (already checked by Converters) with decoded args."""
        decs = [self.decoder(p) for p in ty.params]
        enc = self.encoder(ty.ret)
        from_dlpack = self.ffi.from_dlpack

        def bridge(items):
            crossing = Crossing(items)
            running = _running_crossings()
            if running:  # the native side numbered the running call's references first (RunningRefs)
                self.adopt(crossing, running[-1].refs, running[-1].ref_types)
                for cell, content_type in zip(running[-1].refs, running[-1].ref_types):
                    cell.value = self.decoder(content_type)(crossing)
            args = [dec(crossing) for dec in decs]
            received = len(crossing.refs)
            enc(callback(*args), crossing)
            self.send_contents(crossing, received)
            return crossing.send(from_dlpack)

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
                if dtype == np.uint64:
                    return lambda c: np.asarray(c.next_int(), np.int64).view(np.uint64)
                if dtype.kind == "f":
                    return lambda c: np.asarray(c.next_float(), dtype)
                return lambda c: np.asarray(c.next_int(), dtype)
            return lambda c: np.from_dlpack(c.next_object())
        if isinstance(ty, TupleT):
            fields = [self.decoder(f) for f in ty.fields]
            return lambda c: tuple([dec(c) for dec in fields])  # a list: StopIteration must not become RuntimeError
        if isinstance(ty, RefT):
            contents = self.decoder(ty.value)

            def ref_dec(c):
                k = c.next_int()
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
            return self._adt_decoder(ty)
        if isinstance(ty, ClosureT):
            encs = [self.encoder(p) for p in ty.params]
            ret = self.decoder(ty.ret)

            def closure_dec(c):
                function = c.next_object()
                known = (c.refs, c.ref_types)  # the crossing's references, maybe captured (see RefTable)
                return lambda *args: self.call(function, encs, args, ret, known)

            return closure_dec
        raise EvaluationError(f"cannot receive a value of type {ty} from native code")

    def _adt_decoder(self, ty: AdtT):
        names = self.names[ty.name]
        plan_of = self._adt_plans(ty, self.decoder)
        heads: dict = {}  # constructor -> its fields' decoders but the last if list-like, else None

        def heads_of(ctor):
            if ctor not in heads:
                plan = plan_of(ctor)
                list_like = plan and plan[-1] is None and None not in plan[:-1]
                heads[ctor] = plan[:-1] if list_like else None
            return heads[ctor]

        def constructor(tag):
            ctor = names.get(tag)
            if ctor is None:
                raise EvaluationError(f"boundary data: no constructor with tag {tag} in {ty.name}")
            return ctor

        def adt_dec(c):
            # The mirror of adt_enc. A run of list-like nodes (one field of this type, the last:
            # Cons(head, tail)) is read into flat lists and built innermost first, so each node
            # costs its ADTValue and fields tuple only (allocations are what the GC walks);
            # other nodes whose fields are still being read wait on `pending`.
            next_int = c.next_int
            pending = []  # (ctor, plan, fields read so far, next field index), or a run of list-like nodes
            while True:
                tag = next_int()
                ctor = names.get(tag) or constructor(tag)
                decs = heads[ctor] if ctor in heads else heads_of(ctor)
                if decs is not None:
                    run_ctors, run_fields = [], []
                    while decs is not None:
                        run_ctors.append(ctor)
                        for dec in decs:
                            run_fields.append(dec(c))
                        tag = next_int()
                        ctor = names.get(tag) or constructor(tag)
                        decs = heads[ctor] if ctor in heads else heads_of(ctor)
                    pending.append((run_ctors, run_fields))
                plan, fields, i = plan_of(ctor), [], 0
                while True:
                    n = len(plan)
                    while i < n and plan[i] is not None:
                        fields.append(plan[i](c))
                        i += 1
                    if i < n:
                        pending.append((ctor, plan, fields, i + 1))
                        break  # read the field's value: a new node
                    value = ADTValue(ctor, fields)
                    while pending and len(pending[-1]) == 2:  # wrap completed runs around it
                        run_ctors, run_fields = pending.pop()
                        end = len(run_fields)
                        for run_ctor in reversed(run_ctors):
                            k = len(heads[run_ctor])
                            if k == 1:
                                end -= 1
                                value = ADTValue(run_ctor, (run_fields[end], value))
                            else:
                                value = ADTValue(run_ctor, (*run_fields[end - k : end], value))
                                end -= k
                    if not pending:
                        return value
                    ctor, plan, fields, i = pending.pop()
                    fields.append(value)

        return adt_dec

    # -------------------------------------------------------------- whole calls

    def call(self, function, encoders, args, decoder, known=((), ())):
        """Calls a native function: arguments out, result back, then the references it received.

        `known`: (RefValues, their content types) a closure's native side numbers first, with their
        contents sent ahead of the arguments and received back like theirs."""
        crossing = Crossing()
        self.adopt(crossing, *known)
        for cell, content_type in zip(*known):
            self.encoder(content_type)(cell.value, crossing)
        for enc, arg in zip(encoders, args):
            enc(arg, crossing)
        sent = len(crossing.refs)
        running = _running_crossings()
        running.append(crossing)  # callbacks made during the call start from its references
        try:
            received = self.call_native(function, crossing.send(self.ffi.from_dlpack))
        finally:
            running.pop()
        with gc_paused():  # what comes back may be millions of new ADT values (see gc_paused)
            crossing.receive(received)
            try:
                result = decoder(crossing)
                for k in range(sent):  # what the native side left in the references passed to it
                    crossing.refs[k].value = self.decoder(crossing.ref_types[k])(crossing)
            except StopIteration:
                raise EvaluationError("boundary data too short") from None
        return result

    @staticmethod
    def adopt(crossing: Crossing, refs, ref_types) -> None:
        """Numbers `refs` (RefValues, with their content types) first in a new crossing."""
        for cell, content_type in zip(list(refs), list(ref_types)):
            crossing.ref_index[id(cell)] = len(crossing.refs)
            crossing.refs.append(cell)
            crossing.ref_types.append(content_type)

    def send_contents(self, crossing: Crossing, received: int) -> None:
        """After a callback's result: the contents of the references it received, as it left them."""
        for k in range(received):
            self.encoder(crossing.ref_types[k])(crossing.refs[k].value, crossing)


_running = threading.local()


def _running_crossings() -> list:
    """This thread's boundary calls in progress, innermost last (see RunningRefs in transpile_rt.h)."""
    stack = getattr(_running, "crossings", None)
    if stack is None:
        stack = _running.crossings = []
    return stack


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

    converters = Converters(adts, deep_call, ints_for_scalars=True)  # 0-d ints cross as C integers
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
