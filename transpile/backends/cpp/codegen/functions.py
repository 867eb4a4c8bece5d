"""C++ for LIR functions: one `static` function each; closures are structs holding their captured values.

Reading guide: a Let becomes a typed local; `If` an if/else; `Match` a `switch` on the ADT tag
(a constructor's fields are read through a `static_cast` to its struct); a self tail call
reassigns the parameters and `continue`s the function's `while (true)` loop; `Fail` throws.
Every function starts with TRT_STACK_CHECK(), the guard that turns runaway recursion into an
error instead of a crash.

Memory: kernel results that never leave the function (transpile.passes.memory_plan) are
`trt::View`s into the invocation's `trt::Arena` (one per call, declared after the guard) at
offsets planned by liveness; their kernels run through the `into_` wrappers. Every other kernel
result is a freshly allocated `trt::Tensor`.
"""

from __future__ import annotations

from ....errors import UnsupportedFeatureError
from ....lir.nodes import (
    AdtField,
    AtomValue,
    Block,
    Call,
    ClosureCall,
    ConstRef,
    Fail,
    If,
    KernelCall,
    Let,
    Literal,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    Var,
)
from ....lir.printer import stmt_text
from ....lir.types import TupleT, type_text
from ....lir.walk import iter_lets
from ....passes.memory_plan import EMPTY_PLAN, plan_function
from .kernels import has_into_variant, scalar_literal
from .names import c_string, comment
from .types import dtype_expr, holds_objects, is_cpp_scalar, release_fields

__all__ = ["FunctionWriter", "c_string"]


class FunctionWriter:
    """Writes one FunctionDef; `module` gives global names (functions, kernels, constants, types)."""

    def __init__(self, module, func):
        self.module = module
        self.types = module.types
        self.func = func
        self.name = module.function_name(func.name)
        self.locals = module.names.child()
        self.loops = False
        self.env_names = [self.locals.bind(p.name, p.name) for p in (func.env or ())]
        self.param_names = [self.locals.bind(p.name, p.name) for p in func.params]
        self.indent = 1
        self.plan = self._memory_plan()
        self.arena = self.locals.bind(("arena",), "arena") if self.plan.arena_bytes else None

    def _memory_plan(self):
        """The function's memory plan over the kernel calls that have an `into_` wrapper."""
        program = self.module.program
        calls = [let.value for let in iter_lets(self.func.body) if isinstance(let.value, KernelCall)]
        if not any(has_into_variant(program.kernel(c.kernel)) for c in calls):
            return EMPTY_PLAN
        # Kernels without the wrapper have scalar or dynamic results, which are not planned anyway.
        return plan_function(self.func, plannable=lambda ty: not is_cpp_scalar(ty))

    # ------------------------------------------------------------ signatures

    def prototype(self) -> str:
        func = self.func
        params = [f"{self.types.cpp(p.type)} {n}" for p, n in zip(func.params, self.param_names)]
        if func.env is not None:
            params.insert(0, f"const {self.module.closure_struct(func.name)}& env")
        return f"static {self.types.cpp(func.ret)} {self.name}({', '.join(params)})"

    def closure_struct(self) -> list[str]:
        func = self.func
        struct = self.module.closure_struct(func.name)
        base = self.types.cpp(func.closure_type)[len("trt::Fn<") : -1]
        lines = [f"struct {struct} final : trt::FnObj<{base}> {{"]
        fields = [(n, self.types.cpp(p.type)) for p, n in zip(func.env, self.env_names)]
        for name, cty in fields:
            lines.append(f"  {cty} {name};")
        if fields:
            params = ", ".join(f"{cty} {name}" for name, cty in fields)
            inits = ", ".join(f"{name}(std::move({name}))" for name, _ in fields)
            lines.append(f"  explicit {struct}({params}) : {inits} {{}}")
            held = [name for p, name in zip(func.env, self.env_names) if holds_objects(p.type)]
            lines += release_fields(held, struct)  # a chain of closures releases in a loop
        call_params = ", ".join(f"{self.types.cpp(p.type)} {n}" for p, n in zip(func.params, self.param_names))
        args = ", ".join(["*this"] + [f"std::move({n})" for n in self.param_names])
        lines.append(
            f"  {self.types.cpp(func.ret)} call({call_params}) const override {{ return {self.name}({args}); }}"
        )
        lines.append("};")
        return lines

    def definition(self) -> list[str]:
        func = self.func
        doc = ", ".join(f"%{p.name}: {type_text(p.type)}" for p in func.params)
        env = ""
        if func.env is not None:
            env = " env(" + ", ".join(f"%{p.name}: {type_text(p.type)}" for p in func.env) + ")"
        origin = f"  (from @{func.relay_name})" if func.relay_name and func.relay_name != func.name else ""
        lines = [
            "// " + comment(f"fn @{func.name}{env} ({doc}) -> {type_text(func.ret)}{origin}"),
            self.prototype() + " {",
        ]
        lines.append("  TRT_STACK_CHECK();")
        if self.arena is not None:
            lines.append(f"  trt::Arena {self.arena}({self.plan.arena_bytes});  // {comment(self.plan.summary())}")
        for p, n in zip(func.env or (), self.env_names):
            lines.append(f"  const {self.types.cpp(p.type)}& {n} = env.{n};")
        self.indent = 2
        body = self.block(func.body, None)
        if self.loops:
            lines.append("  while (true) {")
            lines.extend(body)
            lines.append("  }")
        else:
            lines.extend(line[2:] for line in body)
        lines.append("}")
        return lines

    # ------------------------------------------------------------ blocks

    def _pad(self) -> str:
        return "  " * self.indent

    def block(self, block: Block, target: str | None) -> list[str]:
        """Statements of `block`; its value is returned (target None) or assigned to `target`."""
        out: list[str] = []
        stmts = block.stmts
        for index, let in enumerate(stmts):
            tail = (
                target is None
                and index == len(stmts) - 1
                and isinstance(block.result, Var)
                and block.result.name == let.var.name
            )
            if self.statement(let, tail, out):
                return out
        result = self.atom(block.result)
        if target is None:
            out.append(f"{self._pad()}return {result};")
        elif result != target:
            out.append(f"{self._pad()}{target} = {result};")
        return out

    def _declare(self, let: Let) -> str:
        name = self.locals.get(let.var.name)
        if name is None:
            name = self.locals.bind(let.var.name, let.var.name)
        return name

    def statement(self, let: Let, tail: bool, out: list) -> bool:
        """Append the C++ of `let`; True when control cannot continue past it."""
        pad = self._pad()
        value = let.value
        cty = self.types.cpp(let.var.type)
        if isinstance(value, (If, Match)):
            target = None
            if not tail:
                target = self._declare(let)
                out.append(f"{pad}{cty} {target};")
            if isinstance(value, If):
                out.extend(self._if(value, target))
            else:
                out.extend(self._match(value, target))
            return tail
        if isinstance(value, Fail):
            out.append(f"{pad}trt::fail({c_string(value.message)});")
            if not tail:
                out.append(f"{pad}{cty} {self._declare(let)}{{}};  // not reached")
            return tail
        if isinstance(value, Call) and value.tail and tail and value.func == self.func.name:
            out.extend(self._self_tail_call(value))
            return True
        if isinstance(value, RefSet):
            out.append(f"{pad}{self.atom(value.ref)}->value = {self.atom(value.value)};")
            if tail:
                out.append(f"{pad}return trt::Unit{{}};")
                return True
            out.append(f"{pad}[[maybe_unused]] trt::Unit {self._declare(let)}{{}};")
            return False
        if let.var.name in self.plan.outputs:
            out.extend(self._planned_call(let))
            return False
        if let.var.name in self.plan.views:
            cty = "trt::View"
        text = self.expression(value)
        if tail:
            out.append(f"{pad}return {text};")
            return True
        out.append(f"{pad}{cty} {self._declare(let)} = {text};")
        return False

    def _planned_call(self, let: Let) -> list[str]:
        """A kernel call writing into the arena: a View per result tensor, then the `into_` wrapper."""
        pad = self._pad()
        value = let.value
        buffers = self.plan.outputs[let.var.name]
        tuple_result = isinstance(let.var.type, TupleT)
        lines, views = [], []
        for j, buf in enumerate(buffers):
            if tuple_result:
                name = self.locals.bind((let.var.name, j), f"{let.var.name}_{j}")
            else:
                name = self._declare(let)
            shape = self.locals.bind((let.var.name, j, "shape"), f"{name}_shape")
            dims = ", ".join(str(int(d)) for d in buf.type.shape) or "0"
            lines.append(f"{pad}static const int64_t {shape}[] = {{{dims}}};")
            lines.append(
                f"{pad}const trt::View {name}({self.arena}.at({buf.offset}), {shape}, {len(buf.type.shape)}, "
                f"{dtype_expr(buf.type.dtype)});"
            )
            views.append(name)
        args = [self.atom(a) for a in value.args] + views
        lines.append(f"{pad}{self.module.into_name(value.kernel)}({', '.join(args)});")
        return lines

    def _nested(self, block: Block, target: str | None) -> list[str]:
        self.indent += 1
        try:
            return self.block(block, target)
        finally:
            self.indent -= 1

    def _if(self, value: If, target: str | None) -> list[str]:
        pad = self._pad()
        lines = [f"{pad}if ({self.atom(value.cond)}) {{"]
        lines.extend(self._nested(value.then, target))
        lines.append(f"{pad}}} else {{")
        lines.extend(self._nested(value.else_, target))
        lines.append(f"{pad}}}")
        return lines

    def _match(self, value: Match, target: str | None) -> list[str]:
        pad = self._pad()
        scrutinee = self.atom(value.scrutinee)
        adt_name = value.scrutinee.type.name
        adt = self.module.program.adt(adt_name)
        arms = []
        for case in value.cases:
            ctor = adt.constructor(case.ctor)
            arms.append((ctor, case))
        if value.default is None and len(arms) == 1:
            ctor, case = arms[0]
            lines = [f"{pad}{{  // {scrutinee} is always {comment(ctor.relay_name)}"]
            self.indent += 1
            lines.extend(self._unpack(scrutinee, adt_name, case))
            lines.extend(self.block(case.body, target))
            self.indent -= 1
            lines.append(f"{pad}}}")
            return lines
        lines = [f"{pad}switch ({scrutinee}->tag) {{"]
        for position, (ctor, case) in enumerate(arms):
            last = position == len(arms) - 1 and value.default is None
            label = "default" if last else f"case {ctor.tag}"
            lines.append(f"{pad}  {label}: {{  // {comment(ctor.relay_name)}")
            self.indent += 2
            lines.extend(self._unpack(scrutinee, adt_name, case))
            lines.extend(self.block(case.body, target))
            if target is not None:
                lines.append(f"{self._pad()}break;")
            self.indent -= 2
            lines.append(f"{pad}  }}")
        if value.default is not None:
            lines.append(f"{pad}  default: {{")
            self.indent += 2
            lines.extend(self.block(value.default, target))
            if target is not None:
                lines.append(f"{self._pad()}break;")
            self.indent -= 2
            lines.append(f"{pad}  }}")
        lines.append(f"{pad}}}")
        return lines

    def _unpack(self, scrutinee: str, adt_name: str, case) -> list[str]:
        binders = [(i, b) for i, b in enumerate(case.binders) if b is not None]
        if not binders:
            return []
        struct = self.types.ctor_struct(adt_name, case.ctor)
        pad = self._pad()
        lines = []
        for i, binder in binders:
            name = self.locals.bind(binder.name, binder.name)
            lines.append(
                f"{pad}{self.types.cpp(binder.type)} {name} = static_cast<const {struct}&>(*{scrutinee}).f{i};"
            )
        return lines

    def _self_tail_call(self, value: Call) -> list[str]:
        """Rebind the parameters (through temporaries: new values may read old ones) and loop."""
        self.loops = True
        pad = self._pad()
        call = stmt_text(Let(Var("_", None), value)).split("= ", 1)[-1]
        lines = [f"{pad}{{  // {comment(call)}"]
        pairs = list(zip(self.param_names, value.args, self.func.params))
        changed = [(n, self.atom(a), p) for n, a, p in pairs if self.atom(a) != n]
        scope = self.locals.child()  # the temporaries: distinct from every name the arguments use
        temporaries = [scope.bind(n, f"next_{n}") for n, _, _ in changed]
        for (n, arg, p), temporary in zip(changed, temporaries):
            lines.append(f"{pad}  {self.types.cpp(p.type)} {temporary} = {arg};")
        for (n, _, _), temporary in zip(changed, temporaries):
            lines.append(f"{pad}  {n} = std::move({temporary});")
        lines.append(f"{pad}  continue;")
        lines.append(f"{pad}}}")
        return lines

    # ------------------------------------------------------------ values and atoms

    def expression(self, value) -> str:
        module = self.module
        if isinstance(value, AtomValue):
            return self.atom(value.atom)
        if isinstance(value, KernelCall):
            return f"{module.kernel_name(value.kernel)}({self._args(value.args)})"
        if isinstance(value, Call):
            args = self._args(value.args)
            if value.func == self.func.name and self.func.env is not None:
                return f"{self.name}(env{', ' if args else ''}{args})"
            return f"{module.function_name(value.func)}({args})"
        if isinstance(value, ClosureCall):
            return f"{self.atom(value.closure)}->call({self._args(value.args)})"
        if isinstance(value, MakeClosure):
            return f"std::make_shared<{module.closure_struct(value.func)}>({self._args(value.captured)})"
        if isinstance(value, MakeTuple):
            ty = self.types.cpp(_tuple_type(value))
            return f"{ty}{{{self._args(value.fields)}}}"
        if isinstance(value, Proj):
            source = value.tuple_value
            if isinstance(source, Var) and source.name in self.plan.outputs:
                return self.locals.lookup((source.name, value.index))  # a planned buffer's View
            return f"std::get<{value.index}>({self.atom(value.tuple_value)})"
        if isinstance(value, MakeAdt):
            struct = self.types.ctor_struct(value.adt, value.ctor)
            return (
                f"trt::Adt<{self.types.adt_names[value.adt]}>(std::make_shared<{struct}>({self._args(value.fields)}))"
            )
        if isinstance(value, AdtField):
            adt = value.value.type.name
            struct = self.types.ctor_struct(adt, value.ctor)
            return f"static_cast<const {struct}&>(*{self.atom(value.value)}).f{value.index}"
        if isinstance(value, RefNew):
            return f"trt::ref_new<{self.types.cpp(value.value.type)}>({self.atom(value.value)})"
        if isinstance(value, RefGet):
            return f"{self.atom(value.ref)}->value"
        raise UnsupportedFeatureError(f"the LIR value {type(value).__name__}", "cpp")

    def _args(self, atoms) -> str:
        return ", ".join(self.atom(a) for a in atoms)

    def atom(self, atom) -> str:
        if isinstance(atom, Var):
            name = self.locals.get(atom.name)
            if name is None:
                raise UnsupportedFeatureError(
                    f"fn @{self.func.name}: %{atom.name} is not defined (run lir.verify)", "cpp"
                )
            return name
        if isinstance(atom, ConstRef):
            return self.module.constant_name(atom.name)
        if isinstance(atom, Literal):
            if not is_cpp_scalar(atom.type):
                raise UnsupportedFeatureError(f"a literal of type {type_text(atom.type)}", "cpp")
            return scalar_literal(atom.value, atom.type.dtype)
        raise UnsupportedFeatureError(f"the LIR atom {atom!r}", "cpp")


def _tuple_type(value: MakeTuple):
    from ....lir.types import TupleT

    return TupleT(tuple(a.type for a in value.fields))
