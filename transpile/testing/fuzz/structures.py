"""Generator producers of program structure: if, tuples, helper globals, recursion, closures, refs, Lists and Options."""

from __future__ import annotations

from .gentypes import FuncT, ListT, OptionT, RefT, TensorT, TupleT, is_static, scalar, type_dims

__all__ = ["StructureProducers"]

UNIT = TupleT(())
MAX_RECURSIVE_HELPERS = 2


def _indent(text: str, by: str = "  ") -> str:
    return by + text.replace("\n", "\n" + by)


def _braced(text: str) -> str:
    return "{\n" + _indent(text) + "\n}"


class StructureProducers:
    """Mixin of ProgramGenerator: each `s_*` method returns an expression of type `t` or None."""

    def structure_producers(self, t) -> list:
        weighted = [(1, self.s_if), (1, self.s_call_helper)]
        if isinstance(t, TensorT):
            weighted.append((1, self.s_tuple_proj))
            if self.on("recursion"):
                weighted.append((0.8, self.s_recursion))
            if self.on("closures"):
                weighted += [(1, self.s_closure_call), (0.5, self.s_apply_helper), (0.5, self.s_make_closure)]
                if self.on("recursion"):
                    weighted.append((0.4, self.s_local_recursion))
            if self.on("refs"):
                weighted.append((1.2, self.s_ref_read))
            if self.on("adts"):
                weighted += [(0.7, self.s_match_option), (0.7, self.s_match_list)]
                if self.on("closures"):
                    weighted.append((0.7, self.s_foldl))
                if t == scalar("int32"):
                    weighted.append((0.5, self.s_length))
        elif isinstance(t, TupleT):
            weighted.append((4, self.s_tuple_literal))
        elif isinstance(t, FuncT):
            weighted += [(4, self.s_closure_literal), (1, self.s_make_closure_value)]
        elif isinstance(t, RefT):
            weighted.append((4, self.s_ref_create))
        elif isinstance(t, ListT):
            weighted += [(3, self.s_cons), (1, self.s_rev)] + ([(1.5, self.s_map)] if self.on("closures") else [])
        elif isinstance(t, OptionT):
            weighted.append((3, self.s_some))
        return weighted

    # ------------------------------------------------------------------ helpers
    def passable(self, t, blk) -> bool:
        """Whether a value of `t` can be built in `blk` and inside a function receiving it (dims in scope)."""
        if isinstance(t, TensorT):
            return self.constructible(t, blk)
        return not type_dims(t)

    def pick_arguments(self, blk, count: int, must_cover=None) -> list:
        """(binding type, exact, argument text) for a helper's parameters, drawn from the scope."""
        candidates = [b for b in blk.scope if self.passable(b.type, blk) and b.type != UNIT]
        self.rng.shuffle(candidates)
        chosen = candidates[:count]
        if must_cover is not None and must_cover.shape not in [
            b.type.shape for b in chosen if isinstance(b.type, TensorT)
        ]:
            cover = [b for b in blk.scope if isinstance(b.type, TensorT) and b.type.shape == must_cover.shape]
            if not cover:
                return None
            chosen.append(self.rng.choice(cover))
        args = []
        for b in chosen:
            if isinstance(b.type, TensorT) and self.chance(0.3):
                exact = self.chance(0.5)
                args.append((b.type, exact, self.expr(b.type, blk, 1, exact)))
            else:
                args.append((b.type, b.exact, f"%{b.name}"))
        return args

    def define(self, name: str, params, ret, body: str) -> None:
        self.helpers.append(self.function_text(name, params, ret, body))

    def param_bindings(self, types_and_exact, stem: str = "a"):
        from .generator import Binding

        return [Binding(self.fresh(stem), t, exact) for t, exact in types_and_exact]

    def s_call_helper(self, t, blk, depth, exact):
        if len(self.global_names) > self.config.max_helpers or (type_dims(t) and not isinstance(t, TensorT)):
            return None
        cover = t if isinstance(t, TensorT) and not is_static(t) else None
        args = self.pick_arguments(blk, self.rng.randint(0, 3), cover)
        if args is None:
            return None
        name = self.new_global("f")
        params = self.param_bindings([(ty, ex) for ty, ex, _ in args])
        self.note("call")
        self.define(name, params, t, self.block(t, params, depth, exact, max_lets=3))
        return f"@{name}({', '.join(text for _, _, text in args)})"

    # ------------------------------------------------------------------ control flow and tuples
    def s_if(self, t, blk, depth, exact):
        if type_dims(t) and not isinstance(t, TensorT):
            return None
        self.note("if")
        cond = self.expr(scalar("bool"), blk, depth, True)
        then = self.block(t, blk.scope, depth, exact, max_lets=2)
        otherwise = self.block(t, blk.scope, depth, exact, max_lets=2)
        return f"if ({cond}) {_braced(then)} else {_braced(otherwise)}"

    def s_tuple_proj(self, t, blk, depth, exact):
        options = [
            (b, i)
            for b in blk.bindings(TupleT)
            for i, f in enumerate(b.type.fields)
            if f == t and (b.exact or not exact)
        ]
        self.note("tuple_proj")
        if options and self.chance(0.6):
            b, i = self.rng.choice(options)
            return f"%{b.name}.{i}"
        others = [self.random_tensor_type() for _ in range(self.rng.randint(0, 2))]
        i = self.rng.randint(0, len(others))
        tuple_t = TupleT(tuple(others[:i] + [t] + others[i:]))
        name = blk.bind(self.expr(tuple_t, blk, depth, exact), tuple_t, exact)
        return f"{name}.{i}"

    def s_tuple_literal(self, t, blk, depth, exact):
        self.note("tuple")
        fields = [self.expr(f, blk, depth, exact) for f in t.fields]
        return f"({fields[0]},)" if len(fields) == 1 else "(" + ", ".join(fields) + ")"

    # ------------------------------------------------------------------ recursion
    def s_recursion(self, t, blk, depth, exact):
        recursive = sum(1 for n in self.global_names if n.startswith("rec"))
        if (exact and not isinstance(t, TensorT)) or (exact and t.is_float) or recursive >= MAX_RECURSIVE_HELPERS:
            return None
        if len(self.global_names) > self.config.max_helpers or not self.constructible(t, blk):
            return None
        extra = self.pick_arguments(blk, self.rng.randint(0, 2))
        name = self.new_global("rec")
        tail = self.chance(0.5)
        self.note("recursion:tail" if tail else "recursion:nontail")
        counter, acc, *rest = self.param_bindings(
            [(scalar("int32"), True), (t, not t.is_float)] + [(ty, ex) for ty, ex, _ in extra]
        )
        scope = [counter, acc, *rest]
        base = self.block(t, scope, depth, max_lets=1)
        from .generator import Block

        step = Block(self, scope)
        next_acc = self.expr(t, step, depth)
        passed = "".join(f", %{b.name}" for b in rest)
        decrement = f"subtract(%{counter.name}, 1)" if self.chance(0.5) else f"%{counter.name} - 1"
        call = f"@{name}({decrement}, {next_acc}{passed})"
        if tail:
            recurse = step.render(call)
        else:
            step.bind(call, t, not t.is_float)
            recurse = step.render(self.expr(t, step, depth))
        test = f"%{counter.name} <= 0" if self.chance(0.5) else f"less_equal(%{counter.name}, 0)"
        self.define(name, scope, t, f"if ({test}) {_braced(base)} else {_braced(recurse)}")
        limit = 40 if tail else 10
        count = self.expr(scalar("int32"), blk, depth, True)
        init = self.expr(t, blk, depth)
        args = "".join(f", {text}" for _, _, text in extra)
        return f"@{name}(minimum({count}, {limit}), {init}{args})"

    def s_local_recursion(self, t, blk, depth, exact):
        if (exact and t.is_float) or not self.constructible(t, blk):
            return None
        self.note("recursion:closure")
        counter, acc = self.param_bindings([(scalar("int32"), True), (t, not t.is_float)], "l")
        func = self.fresh("loop")
        # The loop's own variable stays out of every scope: only the decrementing call below uses it
        # (anything else could call it with an unbounded counter).
        inner = blk.scope + [counter, acc]
        base = self.block(t, inner, depth, max_lets=1)
        step_block = _block(self, inner)
        step = step_block.render(f"%{func}(%{counter.name} - 1, {self.expr(t, step_block, depth)})")
        body = f"if (%{counter.name} <= 0) {_braced(base)} else {_braced(step)}"
        text = f"fn (%{counter.name}: int32, %{acc.name}: {t.text()}) -> {t.text()} {_braced(body)}"
        blk.lines.append(f"let %{func} = {text};")
        count = self.expr(scalar("int32"), blk, depth, True)
        return f"%{func}(minimum({count}, 30), {self.expr(t, blk, depth)})"

    # ------------------------------------------------------------------ closures
    def closure_type(self, ret, blk) -> FuncT:
        params = []
        for _ in range(self.rng.randint(0, 2)):
            shapes = blk.tensor_shapes()
            if shapes and self.chance(0.5):
                params.append(TensorT(self.random_dtype(), self.rng.choice(shapes)))
            else:
                params.append(self.random_tensor_type())
        return FuncT(tuple(params), ret)

    def closure_literal(self, t: FuncT, blk, depth) -> str:
        params = self.param_bindings([(p, not p.is_float) for p in t.params], "x")
        self.note("closure")
        if any(b.type != UNIT for b in blk.scope):
            self.note("closure:capture")
        body = self.block(t.ret, blk.scope + params, depth, max_lets=2)
        plist = ", ".join(f"%{b.name}: {b.type.text()}" for b in params)
        return f"fn ({plist}) -> {t.ret.text()} {_braced(body)}"

    def s_closure_literal(self, t, blk, depth, exact):
        if any(not self.passable(p, blk) for p in t.params) or (type_dims(t.ret) and not isinstance(t.ret, TensorT)):
            return None
        return self.closure_literal(t, blk, depth)

    def s_closure_call(self, t, blk, depth, exact):
        if exact and t.is_float:
            return None
        funcs = [
            b for b in blk.bindings(FuncT) if b.type.ret == t and all(self.passable(p, blk) for p in b.type.params)
        ]
        if funcs and self.chance(0.6):
            func = f"%{self.rng.choice(funcs).name}"
            fn_t = next(b.type for b in funcs if f"%{b.name}" == func)
        else:
            fn_t = self.closure_type(t, blk)
            func = blk.bind(self.closure_literal(fn_t, blk, depth), fn_t)
        self.note("closure:call")
        return f"{func}({', '.join(self.expr(p, blk, depth) for p in fn_t.params)})"

    def s_apply_helper(self, t, blk, depth, exact):
        if (exact and t.is_float) or len(self.global_names) > self.config.max_helpers or not self.constructible(t, blk):
            return None
        arg_t = t if self.chance(0.5) else self.random_tensor_type()
        fn_t = FuncT((arg_t,), t)
        name = self.new_global("apply")
        func, arg = self.param_bindings([(fn_t, False), (arg_t, not arg_t.is_float)], "h")
        if arg_t == t and self.chance(0.5):
            body = f"%{func.name}(%{func.name}(%{arg.name}))"
        else:
            body = f"%{func.name}(%{arg.name})"
        self.define(name, [func, arg], t, body)
        self.note("closure:passed")
        closures = [b for b in blk.bindings(FuncT) if b.type == fn_t]
        closure = (
            f"%{self.rng.choice(closures).name}"
            if closures and self.chance(0.5)
            else self.closure_literal(fn_t, blk, depth)
        )
        return f"@{name}({closure}, {self.expr(arg_t, blk, depth)})"

    def make_closure_helper(self, fn_t: FuncT, blk, depth):
        """A global returning a closure over its parameters: (name, argument texts)."""
        args = self.pick_arguments(blk, self.rng.randint(1, 2))
        name = self.new_global("mk")
        params = self.param_bindings([(ty, ex) for ty, ex, _ in args], "c")
        from .generator import Block

        self.define(name, params, fn_t, self.closure_literal(fn_t, Block(self, params), depth))
        self.note("closure:returned")
        return name, [text for _, _, text in args]

    def s_make_closure(self, t, blk, depth, exact):
        if (exact and t.is_float) or len(self.global_names) > self.config.max_helpers or type_dims(t):
            return None
        fn_t = FuncT(tuple(self.random_tensor_type() for _ in range(self.rng.randint(0, 1))), t)
        name, args = self.make_closure_helper(fn_t, blk, depth)
        func = blk.bind(f"@{name}({', '.join(args)})", fn_t)
        return f"{func}({', '.join(self.expr(p, blk, depth) for p in fn_t.params)})"

    def s_make_closure_value(self, t, blk, depth, exact):
        if len(self.global_names) > self.config.max_helpers or type_dims(t):
            return None
        name, args = self.make_closure_helper(t, blk, depth)
        return f"@{name}({', '.join(args)})"

    # ------------------------------------------------------------------ references
    def s_ref_read(self, t, blk, depth, exact):
        refs = [b for b in blk.bindings(RefT) if b.type.inner == t and (b.exact or not exact)]
        if refs and self.chance(0.6):
            ref_binding = self.rng.choice(refs)
            ref, ref_exact = f"%{ref_binding.name}", ref_binding.exact
        else:
            ref_exact = exact or not t.is_float
            ref = blk.bind(f"ref({self.expr(t, blk, depth, ref_exact)})", RefT(t), ref_exact)
        self.note("ref")
        if self.chance(0.5):
            value = self.expr(t, blk, depth, ref_exact)
            self.note("ref_write")
            if self.on("closures") and self.chance(0.4):
                writer = blk.bind(f"fn () -> () {_braced(f'ref_write({ref}, {value})')}", FuncT((), UNIT))
                blk.bind(f"{writer}()", UNIT)
                self.note("closure:ref_write")
            else:
                blk.bind(f"ref_write({ref}, {value})", UNIT)
        return f"ref_read({ref})"

    def s_ref_create(self, t, blk, depth, exact):
        self.note("ref")
        return f"ref({self.expr(t.inner, blk, depth, exact)})"

    # ------------------------------------------------------------------ Lists and Options (the Prelude)
    def adt_value(self, adt_t, blk, depth, exact):
        """A variable holding a value of the List/Option type (an existing one or a new binding)."""
        existing = [b for b in blk.scope if b.type == adt_t and (b.exact or not exact)]
        if existing and self.chance(0.5):
            return f"%{self.rng.choice(existing).name}"
        return blk.bind(self.expr(adt_t, blk, depth, exact), adt_t, exact, annotate=True)

    def element_type(self, blk):
        shapes = blk.tensor_shapes()
        if shapes and self.chance(0.4):
            return TensorT(self.random_dtype(), self.rng.choice(shapes))
        return self.random_tensor_type()

    def s_match_option(self, t, blk, depth, exact):
        from .generator import Binding

        elem = self.element_type(blk)
        value = self.adt_value(OptionT(elem), blk, depth, exact)
        x = Binding(self.fresh("x"), elem, exact or not elem.is_float)
        self.note("match")
        some = f"Some(%{x.name}) => {_braced(self.block(t, blk.scope + [x], depth, exact, max_lets=1))}"
        other = "None" if self.chance(0.7) else "_"
        none = f"{other} => {_braced(self.block(t, blk.scope, depth, exact, max_lets=1))}"
        return _match(value, [some, none])

    def s_match_list(self, t, blk, depth, exact):
        from .generator import Binding

        elem = self.element_type(blk)
        value = self.adt_value(ListT(elem), blk, depth, exact)
        head_exact = exact or not elem.is_float
        head, second = (Binding(self.fresh("h"), elem, head_exact) for _ in range(2))
        rest = Binding(self.fresh("t"), ListT(elem), head_exact)
        self.note("match")
        if self.chance(0.3):
            self.note("match:nested")
            first = f"Cons(%{head.name}, Cons(%{second.name}, _)) => {_braced(self.block(t, blk.scope + [head, second], depth, exact, max_lets=1))}"
            last = f"_ => {_braced(self.block(t, blk.scope, depth, exact, max_lets=1))}"
        else:
            first = f"Cons(%{head.name}, %{rest.name}) => {_braced(self.block(t, blk.scope + [head, rest], depth, exact, max_lets=1))}"
            last = f"Nil => {_braced(self.block(t, blk.scope, depth, exact, max_lets=1))}"
        return _match(value, [first, last])

    def s_foldl(self, t, blk, depth, exact):
        if exact and t.is_float or not self.constructible(t, blk):
            return None
        from .generator import Binding

        elem = self.element_type(blk)
        items = self.adt_value(ListT(elem), blk, depth, False)
        acc, x = Binding(self.fresh("acc"), t, not t.is_float), Binding(self.fresh("x"), elem, not elem.is_float)
        body = self.block(t, blk.scope + [acc, x], depth, max_lets=1)
        self.note("foldl")
        func = f"fn (%{acc.name}: {t.text()}, %{x.name}: {elem.text()}) -> {t.text()} {_braced(body)}"
        return f"@foldl({func}, {self.expr(t, blk, depth)}, {items})"

    def s_length(self, t, blk, depth, exact):
        self.note("length")
        return f"@length({self.adt_value(ListT(self.element_type(blk)), blk, depth, False)})"

    def s_cons(self, t, blk, depth, exact):
        if type_dims(t):
            return None
        self.note("list")
        return f"Cons({self.expr(t.elem, blk, depth, exact)}, {self.expr(t, blk, depth, exact)})"

    def s_rev(self, t, blk, depth, exact):
        if type_dims(t):
            return None
        self.note("rev")
        return f"@rev({self.expr(t, blk, depth, exact)})"

    def s_map(self, t, blk, depth, exact):
        if exact and t.elem.is_float or type_dims(t):
            return None
        source = self.random_tensor_type()
        self.note("map")
        func = self.closure_literal(FuncT((source,), t.elem), blk, depth)
        return f"@map({func}, {self.expr(ListT(source), blk, depth)})"

    def s_some(self, t, blk, depth, exact):
        if type_dims(t):
            return None
        self.note("option")
        return f"Some({self.expr(t.elem, blk, depth, exact)})"


def _match(value: str, clauses) -> str:
    return f"match ({value}) " + _braced("".join(clause + ",\n" for clause in clauses).rstrip("\n"))


def _block(gen, scope):
    from .generator import Block

    return Block(gen, scope)
