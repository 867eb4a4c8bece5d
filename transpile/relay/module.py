"""IRModule: global functions, ADT definitions and their constructors, looked up by name."""

from __future__ import annotations

from typing import Iterator

from ..errors import RelayTypeError, TranspileError
from .expr import Constructor, Expr, Function, GlobalVar, TupleWrapper, TypeData, Var
from .ty import GlobalTypeVar

__all__ = ["IRModule", "Module"]


class IRModule:
    """A Relay module. Functions and type definitions are kept in insertion order.

    Unlike the immutable expression nodes, a module is a mutable container (as in TVM):
    `mod["f"] = func`, `mod.add_type_data(...)`. Passes return new modules.
    """

    def __init__(self, functions=None, type_definitions=None):
        self.functions: dict[GlobalVar, Function] = {}
        self.type_definitions: dict[GlobalTypeVar, TypeData] = {}
        self._constructors: dict[str, Constructor] = {}
        self.extern_types: dict[str, GlobalTypeVar] = {}
        self.attrs: dict = {}
        for gtv, data in (type_definitions or {}).items():
            self.add_type_data(gtv if isinstance(gtv, GlobalTypeVar) else GlobalTypeVar(gtv), data)
        for gv, func in (functions or {}).items():
            self[gv] = func

    # ----- functions -------------------------------------------------------------------------
    def __setitem__(self, key, value) -> None:
        """`mod[gv] = func` (any other expression is wrapped, as tvm did) or `mod[gtv] = TypeData`."""
        if isinstance(value, TypeData) or isinstance(key, GlobalTypeVar):
            if not isinstance(value, TypeData):
                raise TranspileError(f"type entry {_key_name(key)} must be a relay.TypeData, got {type(value).__name__}")
            gtv = key if isinstance(key, GlobalTypeVar) else GlobalTypeVar(str(key))
            self.add_type_data(gtv, value, update=True)
            return
        self.add(key, value, update=True)

    def _add(self, key, value, update: bool = True):
        """tvm's IRModule._add (used by some tvm code to add without replacing)."""
        if isinstance(value, TypeData):
            gtv = key if isinstance(key, GlobalTypeVar) else GlobalTypeVar(str(key))
            self.add_type_data(gtv, value, update=update)
        else:
            self.add(key, value, update=update)

    def add(self, key, func: Function, update: bool = False) -> GlobalVar:
        gv = key if isinstance(key, GlobalVar) else GlobalVar(str(key))
        if isinstance(func, TupleWrapper):
            func = func.astuple()
        if isinstance(func, GlobalVar):
            func = self._eta_expand(func)
        elif isinstance(func, Expr) and not isinstance(func, Function):
            # tvm wrapped a non-function expression as a function of no parameters.
            func = Function([], func)
        if not isinstance(func, Function):
            raise TranspileError(f"module entry @{gv.name_hint} must be a relay expression, got {type(func).__name__}")
        if not update and gv in self.functions:
            raise TranspileError(f"duplicate global function @{gv.name_hint}", func.span)
        self.functions[gv] = func
        return gv

    def _eta_expand(self, target: GlobalVar) -> Function:
        """`fn (params) { @target(params) }`: what tvm stored for `mod[gv] = other_global`."""
        if target not in self.functions:
            raise TranspileError(f"cannot add @{target.name_hint} under another name: it is not in the module")
        func = self.functions[target]
        params = [Var(p.name_hint, p.type_annotation) for p in func.params]
        return Function(params, target(*params), func.ret_type, func.type_params)

    def __getitem__(self, key) -> Function | TypeData:
        if isinstance(key, GlobalTypeVar):
            try:
                return self.type_definitions[key]
            except KeyError:
                raise KeyError(f"no type definition {key.name_hint} in the module") from None
        gv = key if isinstance(key, GlobalVar) else GlobalVar(str(key))
        try:
            return self.functions[gv]
        except KeyError:
            raise KeyError(f"no global function @{gv.name_hint} in the module") from None

    def __contains__(self, key) -> bool:
        if isinstance(key, GlobalTypeVar):
            return key in self.type_definitions
        gv = key if isinstance(key, GlobalVar) else GlobalVar(str(key))
        return gv in self.functions

    def __delitem__(self, key) -> None:
        gv = key if isinstance(key, GlobalVar) else self.get_global_var(str(key))
        if gv not in self.functions:
            raise KeyError(f"no global function @{gv.name_hint} in the module")
        del self.functions[gv]

    def __iter__(self) -> Iterator[tuple[GlobalVar, Function]]:
        return iter(list(self.functions.items()))

    def functions_items(self) -> list[tuple[GlobalVar, Function]]:
        """The functions sorted by name, as tvm's IRModule.functions_items."""
        return sorted(self.functions.items(), key=lambda item: item[0].name_hint)

    def update_func(self, gv: GlobalVar, func: Function) -> None:
        self.add(gv, func, update=True)

    def get_global_var(self, name: str) -> GlobalVar:
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        raise KeyError(f"no global function @{name} in the module")

    def get_global_vars(self) -> list[GlobalVar]:
        return list(self.functions)

    # ----- type definitions ------------------------------------------------------------------
    def add_type_data(self, gtv: GlobalTypeVar, data: TypeData, update: bool = False) -> None:
        if not update and gtv in self.type_definitions:
            raise TranspileError(f"duplicate definition of type {gtv.name_hint}", data.span)
        for ctor in data.constructors:
            other = self._constructors.get(ctor.name_hint)
            if other is not None and other.belong_to != gtv:
                raise TranspileError(
                    f"constructor {ctor.name_hint} is already defined by type {other.belong_to.name_hint}", ctor.span
                )
        if update and gtv in self.type_definitions:
            for ctor in self.type_definitions[gtv].constructors:
                self._constructors.pop(ctor.name_hint, None)
        data.assign_tags()
        self.type_definitions[gtv] = data
        for ctor in data.constructors:
            self._constructors[ctor.name_hint] = ctor

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        for gtv in self.type_definitions:
            if gtv.name_hint == name:
                return gtv
        if name in self.extern_types:
            return self.extern_types[name]
        raise KeyError(f"no type definition {name} in the module")

    def get_global_type_vars(self) -> list[GlobalTypeVar]:
        return list(self.type_definitions)

    def get_type(self, name: str):
        """Like tvm's IRModule.get_type: (GlobalTypeVar, *constructors)."""
        gtv = self.get_global_type_var(name)
        return (gtv, *self.type_definitions[gtv].constructors)

    def get_constructor(self, name_or_tag) -> Constructor:
        """A constructor by name, or (as tvm's get_constructor) by tag when that tag is unambiguous.

        Tags number the constructors of one type from 0, so a tag alone names a constructor only
        in a module where one type has it.
        """
        if isinstance(name_or_tag, str):
            try:
                return self._constructors[name_or_tag]
            except KeyError:
                raise KeyError(f"no constructor {name_or_tag} in the module") from None
        matches = [ctor for ctor in self._constructors.values() if ctor.tag == name_or_tag]
        if len(matches) != 1:
            names = ", ".join(c.name_hint for c in matches) or "none"
            raise KeyError(
                f"tag {name_or_tag!r} does not name one constructor of the module (constructors with it: {names});"
                " look the constructor up by name"
            )
        return matches[0]

    def has_constructor(self, name: str) -> bool:
        return name in self._constructors

    def constructors(self) -> list[Constructor]:
        return list(self._constructors.values())

    def import_from_std(self, file_name: str) -> "IRModule":
        """Adds a file of Relay's standard library (prelude.rly, nat.rly, core.rly, gradient.rly), type-checked.

        Like tvm, this module is updated in place (definitions it already has stay) and the
        type-checked module is also returned.
        """
        from .prelude import import_std_file

        import_std_file(self, file_name)
        from .transform import InferType

        return InferType()(self)

    def _import(self, path) -> "IRModule":
        """Adds the definitions of a Relay text file (tvm's IRModule._import)."""
        from .prelude import import_text_file

        import_text_file(self, path)
        return self

    def add_extern_type(self, name: str) -> GlobalTypeVar:
        gtv = self.extern_types.get(name) or GlobalTypeVar(name)
        self.extern_types[name] = gtv
        return gtv

    # ----- whole-module helpers --------------------------------------------------------------
    def copy(self) -> "IRModule":
        new = IRModule()
        new.type_definitions = dict(self.type_definitions)
        new._constructors = dict(self._constructors)
        new.extern_types = dict(self.extern_types)
        new.functions = dict(self.functions)
        new.attrs = dict(self.attrs)
        return new

    def update(self, other: "IRModule") -> None:
        for gtv, data in other.type_definitions.items():
            self.add_type_data(gtv, data, update=True)
        self.extern_types.update(other.extern_types)
        for gv, func in other.functions.items():
            self.functions[gv] = func

    @staticmethod
    def from_expr(expr: Expr, functions=None, type_defs=None) -> "IRModule":
        """Wrap an expression as @main (a Function stays as it is), like tvm.IRModule.from_expr."""
        mod = IRModule(functions, type_defs)
        if isinstance(expr, TupleWrapper):
            expr = expr.astuple()
        if not isinstance(expr, Function):
            from .analysis import free_vars

            expr = Function(free_vars(expr), expr)
        mod["main"] = expr
        return mod

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        """Relay text with version header and metadata section; known types as `/* ty=T */`."""
        from .printer import astext

        return astext(self, show_meta_data, annotate)

    def __str__(self) -> str:
        # tvm's str()/repr() of a module: its text without header or metadata section.
        from .printer import pretty_print

        return pretty_print(self)

    __repr__ = __str__

    def check_entry(self, entry: str) -> Function:
        if entry not in self:
            raise RelayTypeError(f"the module has no function @{entry}")
        return self[entry]


def _key_name(key) -> str:
    return getattr(key, "name_hint", None) or str(key)


Module = IRModule
