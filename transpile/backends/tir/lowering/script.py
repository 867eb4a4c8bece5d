"""LIR functions -> TVMScript text of TIR PrimFuncs in destination-passing style (the backend's printer).

Calling convention of every function PrimFunc: flattened parameters (a tuple becomes its tensors
in order), then `weights` — the blob of all program constants (backends/weights.py layout) — if
the function needs constants (directly or through its callees), then one output buffer per
flattened result tensor. A function declares the constants it uses as buffers over the blob at
their offsets; one blob parameter rather than one per constant keeps the packed API's argument
checks (which LLVM compiles in time superlinear in their number) small for models with hundreds
of weights. Functions are public and called with `T.call_cpacked`, except scalar-only ones
(`direct_functions`), which are private PrimFuncs with pointer parameters called directly
(`Module.fn(a.data, ...)`), so scalar recursion needs no argument packing. Every LIR value is a
list of buffers: tensors one each (0-d for scalars), tuples their flattened fields, so
`MakeTuple`/`Proj` only regroup buffers. A value in tail
position of a block is computed straight into the block's destination buffers. Kernel results
placed by the shared memory plan (transpile.passes.memory_plan) live in one arena per
invocation; other intermediates get their own allocation. A function with self tail calls keeps
its parameters in state buffers and runs as a `while` loop: a tail call stores its arguments
into the state and sets the continue flag; the loop body's allocations are made once, before the
loop (TVM's StorageRewrite, which would hoist them, is off for functions: build.py). The
function's own reads and writes of bool elements go through int8 views of the bool buffers
(`declare_bytes`). Each kernel call is preceded by
asserts of the kernel's requirements that the call's shapes fail (checks.py), and a public
function's parameters without elements take any strides (`param`).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ....errors import UnsupportedFeatureError
from ....lir.nodes import AtomValue, Call, ConstRef, If, KernelCall, Literal, MakeTuple, Proj, Var
from ....lir.types import TensorType, TupleT, type_text
from ....lir.walk import iter_lets
from ....relay.ty import AnyDim

__all__ = ["flatten_type", "FunctionScript", "constants_needed", "direct_constants", "identifier", "BACKEND", "WEIGHTS"]

BACKEND = "tir"
WEIGHTS = "weights"  # the parameter holding the constants blob

_VALUE_FEATURES = {
    "ClosureCall": "closures",
    "MakeClosure": "closures",
    "MakeAdt": "adts",
    "AdtField": "adts",
    "Match": "adts",
    "RefNew": "refs",
    "RefGet": "refs",
    "RefSet": "refs",
}


STACK_LIMIT = 1024  # bytes: TVM allocates smaller constant-size buffers on the stack


def _storage_dtype(dtype: str) -> str:
    """How a tensor of `dtype` is held in memory: bool as int8 (one byte an element, 0 or 1)."""
    return "int8" if dtype == "bool" else dtype


def _nbytes(ty: TensorType) -> int:
    return int(np.prod([int(d) for d in ty.shape], dtype=np.int64)) * np.dtype(_storage_dtype(ty.dtype)).itemsize


def identifier(text: str) -> str:
    """A Python identifier spelling of an LIR name."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text) or "v"
    return name if not name[0].isdigit() else f"v{name}"


def flatten_type(ty, where: str) -> list[TensorType]:
    """The tensors a value of type `ty` is made of, in order; other types are unsupported."""
    if isinstance(ty, TensorType):
        if any(isinstance(d, AnyDim) for d in ty.shape):
            raise UnsupportedFeatureError("dynamic_shapes", BACKEND, detail=f"{where} has type {type_text(ty)}")
        return [ty]
    if isinstance(ty, TupleT):
        out: list[TensorType] = []
        for field in ty.fields:
            out.extend(flatten_type(field, where))
        return out
    raise UnsupportedFeatureError(f"values of type {type_text(ty)}", BACKEND, detail=f"{where}")


def buffer_type(ty: TensorType) -> str:
    dims = ", ".join(str(int(d)) for d in ty.shape)
    shape = f"({dims},)" if len(ty.shape) == 1 else f"({dims})"
    return f'{shape}, "{ty.dtype}"'


def literal_text(value, dtype: str) -> str:
    """A TVMScript expression for a 0-d literal of `dtype`."""
    if dtype == "bool":
        return f"T.bool({bool(value)})"
    if dtype.startswith("float"):
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            return f'T.{dtype}("{value}")'
        return f"T.{dtype}({value!r})"
    return f"T.{dtype}({int(value)})"


def _direct_constants(func) -> set[str]:
    from ....lir.walk import atoms_of

    names = set()
    for let in iter_lets(func.body):
        for atom in atoms_of(let.value):
            if isinstance(atom, ConstRef):
                names.add(atom.name)
    for block_result in _block_results(func.body):
        if isinstance(block_result, ConstRef):
            names.add(block_result.name)
    return names


def _block_results(block):
    yield block.result
    for stmt in block.stmts:
        if isinstance(stmt.value, If):
            yield from _block_results(stmt.value.then)
            yield from _block_results(stmt.value.else_)


def direct_constants(program, func) -> list[str]:
    """The constants `func` itself uses, in program order."""
    used = _direct_constants(func)
    return [c.name for c in program.constants if c.name in used]


def constants_needed(program) -> dict[str, list[str]]:
    """Function name -> the constants it uses directly or through its callees (program order)."""
    direct = {f.name: _direct_constants(f) for f in program.functions}
    callees = {
        f.name: {let.value.func for let in iter_lets(f.body) if isinstance(let.value, Call)} for f in program.functions
    }
    changed = True
    while changed:
        changed = False
        for name, uses in direct.items():
            for callee in callees[name]:
                extra = direct.get(callee, set()) - uses
                if extra:
                    uses |= extra
                    changed = True
    order = [c.name for c in program.constants]
    return {name: [c for c in order if c in uses] for name, uses in direct.items()}


def direct_functions(program, direct_kernels, checks=None) -> set[str]:
    """Functions on scalars only (every value 0-d, no constants) that call only such functions and
    direct kernels with nothing to check (`checks`: KernelChecks): they become private PrimFuncs
    called directly, so scalar recursion stays in registers. (Private PrimFuncs cannot allocate
    workspace memory, and a failed assert in one would reach no caller, hence the restriction.)"""

    def scalar(ty) -> bool:
        try:
            return all(not t.shape for t in flatten_type(ty, ""))
        except UnsupportedFeatureError:
            return False

    candidates = set()
    for func in program.functions:
        if func.name == program.entry or func.env is not None:
            continue
        if not all(scalar(p.type) for p in func.params) or not scalar(func.ret):
            continue
        lets = list(iter_lets(func.body))
        if not all(scalar(let.var.type) for let in lets):
            continue
        kernels = {let.value.kernel for let in lets if isinstance(let.value, KernelCall)}
        if not kernels <= set(direct_kernels):
            continue
        if checks is not None and any(checks.may_fail(k) for k in kernels):
            continue
        if _direct_constants(func):
            continue
        candidates.add(func.name)
    changed = True
    while changed:
        changed = False
        for func in program.functions:
            if func.name in candidates:
                calls = {let.value.func for let in iter_lets(func.body) if isinstance(let.value, Call)}
                if not calls <= candidates:
                    candidates.discard(func.name)
                    changed = True
    return candidates


def recursive_functions(program) -> set[str]:
    """Functions on a cycle of calls that stay calls (a self tail call is a loop): they can nest
    without bound, so each starts with the stack check (STACK_CHECK)."""
    edges = {
        f.name: {
            let.value.func
            for let in iter_lets(f.body)
            if isinstance(let.value, Call) and not (let.value.tail and let.value.func == f.name)
        }
        for f in program.functions
    }

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(edges.get(start, ()))
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            if name not in seen:
                seen.add(name)
                todo.extend(edges.get(name, ()))
        return False

    return {name for name in edges if reaches(name, name)}


# Compares the caller's frame with the per-thread stack limit set by the library's entry
# (runtime/tir_shim.cc); past it, the shim raises RecursionError and unwinds to that entry.
STACK_CHECK = 'T.evaluate(T.call_extern("int32", "transpile_tir_stack_check"))'


def has_self_tail_call(func) -> bool:
    return any(
        isinstance(let.value, Call) and let.value.tail and let.value.func == func.name for let in iter_lets(func.body)
    )


class FunctionScript:
    """Writes one LIR FunctionDef as a TVMScript PrimFunc method of the module class."""

    def __init__(self, module, func):
        self.module = module  # ModuleScript: names of functions/kernels, constants per function
        self.func = func
        self.lines: list[str] = []
        self.taken: set[str] = set()
        self.env: dict[str, list[str]] = {}  # LIR var name -> buffer names
        self.types: dict[str, TensorType] = {}  # buffer name -> type
        self.state: list[str] | None = None  # loop state buffers of a self-tail-recursive function
        self.flag: str | None = None
        self.plan = module.memory_plan.of(func.name)
        self.arena: str | None = None
        self.pointers: dict[str, str] = {}  # planned view expression -> its data pointer
        self.bytes_views: dict[str, str] = {}  # bool buffer -> its int8 view (declare_bytes)
        self.compact_decls: list[str] = []  # compact buffers over parameters taking any strides (param)
        self.hoisted: list[str] | None = None  # allocations of a tail-call loop's body, emitted before it
        self.hoist_indent = ""

    # ---------------------------------------------------------------- names and buffers
    def fresh(self, base: str) -> str:
        base = identifier(base)
        name, n = base, 1
        while name in self.taken or name in ("T", "I", "Module", WEIGHTS):
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def alloc(self, ty: TensorType, base: str, indent: str) -> str:
        name = self.fresh(base)
        self.types[name] = ty
        lines = []
        if ty.shape and _nbytes(ty) <= STACK_LIMIT:
            # TVM puts small allocations on the stack with 16-byte alignment, but kernels assume
            # 64: pad them past the stack limit so they come from the (64-aligned) workspace.
            raw = self.fresh(f"{name}_storage")
            elements = STACK_LIMIT // np.dtype(_storage_dtype(ty.dtype)).itemsize + 1
            lines.append(f'{raw} = T.alloc_buffer(({elements},), "{ty.dtype}")')
            lines.append(f"{name} = T.decl_buffer({buffer_type(ty)}, data={raw}.data)")
        else:
            lines.append(f"{name} = T.alloc_buffer({buffer_type(ty)})")
        if self.hoisted is not None:
            # In a tail-call loop: allocated once before the loop, not per iteration (StorageRewrite,
            # which used to hoist them, is off for functions: see build.py _CALLERS_PASS_CONFIG).
            self.hoisted.extend(self.hoist_indent + line for line in lines)
        else:
            for line in lines:
                self.emit(indent, line)
        self.declare_bytes(name, indent)
        return name

    def declare_bytes(self, name: str, indent: str) -> None:
        """For a bool buffer: a flat int8 buffer over its memory, through which this function reads
        and writes its elements (`scalar`, `copy`). TVM's StorageRewrite retypes bool memory as
        int8 when it merges allocations and then builds bool stores of int8 values ("dtype
        mismatch on BufferStore"), so no element is accessed as bool here; kernels and callees
        still get the bool buffer, whose dtype their argument checks compare."""
        ty = self.types[name]
        if ty.dtype != "bool":
            return
        view = self.fresh(f"{name}_bytes")
        # Flat and at least one element: TVMScript prints other int8 views of bool buffers in
        # forms that do not parse back (`.view("int8")` of a 0-d buffer) or not to the same buffer.
        size = max(int(np.prod([int(d) for d in ty.shape], dtype=np.int64)), 1)
        self.types[view] = TensorType((size,), _storage_dtype(ty.dtype))
        self.bytes_views[name] = view
        self.emit(indent, f"{view} = T.decl_buffer({buffer_type(self.types[view])}, data={self.pointer(name)})")

    def scalar(self, name: str) -> str:
        """The element of a 0-d buffer, as an expression (read or assigned)."""
        return f"{self.bytes_views[name]}[0]" if name in self.bytes_views else f"{name}[()]"

    def element_value(self, value, dtype: str) -> str:
        """A literal to store through `scalar` (a bool as its int8 byte)."""
        if dtype == "bool":
            return f"T.int8({int(bool(value))})"
        return literal_text(value, dtype)

    def alloc_like(self, types, base: str, indent: str) -> list[str]:
        return [self.alloc(t, f"{base}_{i}" if len(types) > 1 else base, indent) for i, t in enumerate(types)]

    def view(self, buffer, base: str, indent: str) -> str:
        """A planned tensor: a DLTensor argument over the function's arena at the planned byte offset.

        The plan only places values that are passed to kernels (memory_plan's rule), so a packed
        argument is all a view needs to be; kernels want byte_offset 0, hence the moved pointer."""
        ty = buffer.type
        dims = ", ".join(str(int(d)) for d in ty.shape)
        pointer = f"T.handle_add_byte_offset({self.arena}.data, {buffer.offset})"
        dtype_hint = literal_text(0, ty.dtype)
        expr = f"T.tvm_stack_make_array({pointer}, T.tvm_stack_make_shape({dims}), 0, {len(ty.shape)}, {dtype_hint}, 0)"
        self.types[expr] = ty
        self.pointers[expr] = pointer
        return expr

    def pointer(self, buffer: str) -> str:
        """The data pointer of a buffer or planned view (for direct calls of private PrimFuncs)."""
        return self.pointers.get(buffer, f"{buffer}.data")

    def emit(self, indent: str, text: str) -> None:
        self.lines.append(indent + text)

    def declare_constant(self, const: str, indent: str) -> None:
        """The constant as a buffer over the weights blob at its offset (64-byte aligned, as kernels assume)."""
        name = self.module.constant_param(const)
        self.taken.add(name)
        ty = self.module.program.constant(const).type
        self.types[name] = ty
        pointer = self.fresh(f"{name}_ptr")
        offset = self.module.weights_layout.offset(const)
        self.emit(indent, f"{pointer}: T.let[T.handle()] = T.handle_add_byte_offset({WEIGHTS}.data, {offset})")
        self.emit(indent, f"{name} = T.decl_buffer({buffer_type(ty)}, data={pointer})")
        self.declare_bytes(name, indent)

    def atom(self, atom, indent: str) -> list[str]:
        if isinstance(atom, Var):
            return self.env[atom.name]
        if isinstance(atom, ConstRef):
            return [self.module.constant_param(atom.name)]
        if isinstance(atom, Literal):
            name = self.alloc(atom.type, "lit", indent)
            self.emit(indent, f"{self.scalar(name)} = {self.element_value(atom.value, atom.type.dtype)}")
            return [name]
        raise UnsupportedFeatureError(f"the atom {atom!r}", BACKEND)

    def copy(self, src: str, dst: str, indent: str) -> None:
        if src == dst:
            return
        ty = self.types[dst]
        if not ty.shape:
            self.emit(indent, f"{self.scalar(dst)} = {self.scalar(src)}")
            return
        if dst in self.bytes_views and src in self.bytes_views:
            # Bools as bytes, in one flat loop (both sides are contiguous buffers of one shape).
            index = self.fresh("i")
            self.emit(indent, f"for {index} in range({self.types[self.bytes_views[dst]].shape[0]}):")
            self.emit(indent + "    ", f"{self.bytes_views[dst]}[{index}] = {self.bytes_views[src]}[{index}]")
            return
        index = [self.fresh(f"i{k}") for k in range(len(ty.shape))]
        extents = ", ".join(str(int(d)) for d in ty.shape)
        loop_vars = ", ".join(index)
        if len(index) == 1:
            self.emit(indent, f"for {loop_vars} in range({extents}):")
        else:
            self.emit(indent, f"for {loop_vars} in T.grid({extents}):")
        self.emit(indent + "    ", f"{dst}[{loop_vars}] = {src}[{loop_vars}]")

    def param(self, name: str, ty: TensorType) -> str:
        """The parameter declaring buffer `name`. A public function's buffer of no elements is
        declared over a parameter that takes any strides (vars its packed ABI binds and nothing
        reads): numpy gives empty arrays strides of 0, which the ABI's check for a compact array
        would reject, and the call reads no element, so the layout cannot matter. The body sees a
        compact buffer (`compact_decls`), which is what kernels and callees get."""
        if self.module.is_direct(self.func.name) or all(int(d) != 0 for d in ty.shape):
            return f"{name}: T.Buffer({buffer_type(ty)})"
        raw = self.fresh(f"{name}_strided")
        strides = ", ".join(f'"{self.fresh(f"{raw}{axis}")}"' for axis in range(len(ty.shape)))
        self.compact_decls.append(f"{name} = T.decl_buffer({buffer_type(ty)}, data={raw}.data)")
        return f"{raw}: T.Buffer({buffer_type(ty)}, strides=({strides},))"

    # ---------------------------------------------------------------- the function
    def write(self) -> list[str]:
        func = self.func
        module = self.module
        where = f"function @{func.name}"
        params, self.lines = [], []
        param_buffers: list[list[str]] = []
        for p in func.params:
            types = flatten_type(p.type, f"parameter %{p.name} of {where}")
            names = []
            for i, ty in enumerate(types):
                name = self.fresh(f"p_{p.name}" + (f"_{i}" if len(types) > 1 else ""))
                self.types[name] = ty
                params.append(self.param(name, ty))
                names.append(name)
            param_buffers.append(names)
        if module.constants_of(func.name):
            self.types[WEIGHTS] = module.weights_type
            params.append(f"{WEIGHTS}: T.Buffer({buffer_type(module.weights_type)})")
        outputs = []
        for i, ty in enumerate(flatten_type(func.ret, f"the result of {where}")):
            name = self.fresh(f"out_{i}")
            self.types[name] = ty
            params.append(self.param(name, ty))
            outputs.append(name)
        if module.is_direct(func.name):
            # A private PrimFunc takes pointers; its buffers are declared over them.
            pointers, decls = [], []
            for param in params:
                name, _, spec = param.partition(": T.Buffer(")
                dtype = self.types[name].dtype
                pointer = self.fresh(f"{name}_ptr")  # fresh: a parameter may be called `<name>_ptr`
                pointers.append(f'{pointer}: T.handle("{dtype}")')
                decls.append(f"        {name} = T.decl_buffer({spec[:-1]}, data={pointer})")
            head = [
                "    @T.prim_func(private=True)",
                f"    def {module.function_name(func.name)}({', '.join(pointers)}):",
            ]
            head += decls
        else:
            head = [
                "    @T.prim_func",
                f"    def {module.function_name(func.name)}({', '.join(params)}):",
                f'        T.func_attr({{"global_symbol": "{module.symbol(func.name)}"}})',
            ]
        body_indent = "        "
        if func.name in module.stack_checked:
            self.emit(body_indent, STACK_CHECK)
        for decl in self.compact_decls:
            self.emit(body_indent, decl)
        for name in [b for names in param_buffers for b in names] + outputs:
            self.declare_bytes(name, body_indent)
        for const in direct_constants(module.program, func):
            self.declare_constant(const, body_indent)
        if self.plan.outputs:
            # One arena per invocation holds the planned intermediates (transpile.passes.memory_plan);
            # past the stack limit, so it comes 64-byte aligned from the workspace.
            self.arena = self.fresh("arena")
            size = max(self.plan.arena_bytes, STACK_LIMIT + 1)
            self.emit(body_indent, f'{self.arena} = T.alloc_buffer(({size},), "uint8")')
        if has_self_tail_call(func):
            self.state = []
            for p, names in zip(func.params, param_buffers):
                state_names = []
                for name in names:
                    state = self.alloc(self.types[name], f"s_{p.name}", body_indent)
                    self.copy(name, state, body_indent)
                    state_names.append(state)
                self.env[p.name] = state_names
                self.state.extend(state_names)
            # Read as bool, unlike other bools (declare_bytes): it lives through the whole loop,
            # so StorageRewrite has nothing to merge it with.
            self.flag = self.fresh("again")
            self.emit(body_indent, f'{self.flag} = T.alloc_buffer((), "bool")')
            self.emit(body_indent, f"{self.flag}[()] = True")
            loop_at = len(self.lines)
            self.hoisted, self.hoist_indent = [], body_indent
            self.emit(body_indent, f"while {self.flag}[()]:")
            inner = body_indent + "    "
            self.emit(inner, f"{self.flag}[()] = False")
            self.block(func.body, outputs, inner)
            self.lines[loop_at:loop_at] = self.hoisted
            self.hoisted = None
        else:
            for p, names in zip(func.params, param_buffers):
                self.env[p.name] = names
            self.block(func.body, outputs, body_indent)
        return head + self.lines

    def block(self, block, dest: list[str], indent: str) -> None:
        """Runs the block's statements and leaves its result in `dest`."""
        result = block.result
        start = len(self.lines)
        for let in block.stmts:
            target = dest if isinstance(result, Var) and result.name == let.var.name else None
            self.let(let, target, indent)
        if isinstance(result, Var) and self.env.get(result.name) is dest:
            pass  # computed in place (or a loop's tail call, which leaves nothing)
        else:
            for src, dst in zip(self.atom(result, indent), dest):
                self.copy(src, dst, indent)
        if len(self.lines) == start:
            self.emit(indent, "T.evaluate(0)")

    def let(self, let, dest: list[str] | None, indent: str) -> None:
        value = let.value
        name = let.var.name
        kind = type(value).__name__
        if kind in _VALUE_FEATURES:
            raise UnsupportedFeatureError(_VALUE_FEATURES[kind], BACKEND, detail=f"{kind} in @{self.func.name}")
        if isinstance(value, AtomValue):
            self.env[name] = self.atom(value.atom, indent)
            return
        if isinstance(value, MakeTuple):
            buffers: list[str] = []
            for field in value.fields:
                buffers.extend(self.atom(field, indent))
            self.env[name] = buffers
            return
        if isinstance(value, Proj):
            whole = self.atom(value.tuple_value, indent)
            fields = value.tuple_value.type.fields
            start = sum(len(flatten_type(f, "a tuple field")) for f in fields[: value.index])
            size = len(flatten_type(fields[value.index], "a tuple field"))
            self.env[name] = whole[start : start + size]
            return
        types = flatten_type(let.var.type, f"%{name} in @{self.func.name}")
        if isinstance(value, Call) and value.tail and value.func == self.func.name and self.state is not None:
            self.tail_call(value, indent)
            self.env[name] = dest if dest is not None else []
            return
        planned = self.plan.outputs.get(name) if dest is None else None
        if planned is not None:
            outs = [self.view(buffer, f"t_{name}", indent) for buffer in planned]
        else:
            outs = dest if dest is not None else self.alloc_like(types, f"t_{name}", indent)
        self.env[name] = outs
        if isinstance(value, KernelCall):
            args = [b for a in value.args for b in self.atom(a, indent)]
            for line in self.module.checks.assert_lines(value.kernel, [self.types[b].shape for b in args]):
                self.emit(indent, line)
            if value.kernel in self.module.direct_kernels:
                pointers = ", ".join(self.pointer(b) for b in args + outs)
                self.emit(indent, f"Module.{value.kernel}({pointers})")
            else:
                self.emit(indent, f'T.call_cpacked("{value.kernel}", {", ".join(args + outs)})')
        elif isinstance(value, Call):
            callee = self.module.program.find_function(value.func)
            if callee is None or callee.env is not None:
                raise UnsupportedFeatureError("closures", BACKEND, detail=f"@{self.func.name} calls @{value.func}")
            args = [b for a in value.args for b in self.atom(a, indent)]
            consts = [WEIGHTS] if self.module.constants_of(value.func) else []
            if self.module.is_direct(value.func):
                pointers = ", ".join(self.pointer(b) for b in args + consts + outs)
                self.emit(indent, f"Module.{self.module.function_name(value.func)}({pointers})")
            else:
                symbol = self.module.symbol(value.func)
                self.emit(indent, f'T.call_cpacked("{symbol}", {", ".join(args + consts + outs)})')
        elif isinstance(value, If):
            cond = self.atom(value.cond, indent)[0]
            test = f"{self.scalar(cond)} != T.int8(0)" if cond in self.bytes_views else f"{cond}[()]"
            self.emit(indent, f"if {test}:")
            self.block(value.then, outs, indent + "    ")
            self.emit(indent, "else:")
            self.block(value.else_, outs, indent + "    ")
        else:
            raise UnsupportedFeatureError(f"{kind} values", BACKEND, detail=f"in @{self.func.name}")

    def tail_call(self, call, indent: str) -> None:
        """Stores the arguments into the loop state (simultaneously) and asks for another iteration."""
        args = [b for a in call.args for b in self.atom(a, indent)]
        state = self.state
        staged = []
        for position, src in enumerate(args):
            # A state buffer read at another position must be saved before the state is overwritten.
            if src in state and state.index(src) != position:
                tmp = self.alloc(self.types[src], "tmp", indent)
                self.copy(src, tmp, indent)
                src = tmp
            staged.append(src)
        for src, dst in zip(staged, state):
            self.copy(src, dst, indent)
        self.emit(indent, f"{self.flag}[()] = True")
