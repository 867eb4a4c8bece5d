"""LIR kernels as small numpy functions: one statement per operator call, readable numpy where exact.

Common operators are spelled as the numpy a person would write (`a + b`, `x @ w.T`,
`np.maximum(x, 0)`), but only when that spelling computes exactly what the registry's reference
implementation computes for these dtypes; every other operator (and every other dtype) calls the
registry's implementation through `transpile.runtime.ops` with Relay's name and attributes.

Every spelling keeps the exact dtype (numpy 2 promotion rules, same-dtype operands, typed
scalar literals). On 0-d operands numpy returns numpy scalars: inside generated code a 0-d
tensor is a numpy scalar or a 0-d array, both of the exact dtype; the artifact's boundary turns
scalars into 0-d arrays for the caller.
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ...relay.ty import AnyDim, TensorType, TupleType
from .names import Namespace
from .problems import ill_formed, unsupported
from .pyast import comment, docstring, parse_expr, readable, source_comment

__all__ = ["KernelWriter", "scalar_literal", "dtype_expr"]

_NUMPY_DTYPES = {
    "bool": "np.bool_",
    **{f"int{b}": f"np.int{b}" for b in (8, 16, 32, 64)},
    **{f"uint{b}": f"np.uint{b}" for b in (8, 16, 32, 64)},
    **{f"float{b}": f"np.float{b}" for b in (16, 32, 64)},
}


def dtype_expr(dtype: str) -> str:
    return _NUMPY_DTYPES.get(dtype, repr(dtype))


def _float_text(value: float, dtype: str) -> str:
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    typed = np.dtype(dtype).type(value) if dtype in _NUMPY_DTYPES else value
    short = str(typed) if dtype in _NUMPY_DTYPES else repr(float(value))
    try:
        if np.dtype(dtype).type(float(short)) == typed:
            return short
    except (ValueError, TypeError):
        pass
    return repr(float(value))


def _value_text(value, dtype: str) -> str:
    if dtype == "bool":
        return "True" if bool(value) else "False"
    if dtype.startswith(("float", "bfloat")):
        return _float_text(float(value), dtype)
    return str(int(value))


def scalar_literal(value, dtype: str) -> str:
    """`np.int32(3)`, `np.float32(0.5)`, `np.True_`: a numpy scalar of exactly this dtype."""
    if dtype == "bool":
        return "np.True_" if bool(value) else "np.False_"
    return f"{dtype_expr(dtype)}({_value_text(value, dtype)})"


def array_literal(value, dtype: str) -> str:
    """`np.array(3, dtype=np.int32)`: a 0-d array, the form values take outside kernels."""
    if dtype == "bool":
        return f"np.array({_value_text(value, dtype)})"
    return f"np.array({_value_text(value, dtype)}, dtype={dtype_expr(dtype)})"


def _static(shape) -> bool:
    return not any(isinstance(d, AnyDim) for d in shape)


def _is_float(dtype: str) -> bool:
    return dtype in ("float16", "float32", "float64")


# ---------------------------------------------------------------- readable spellings

_BINARY_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*"}
_COMPARISONS = {
    "equal": "==",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
_NUMPY_BINARY = {
    "maximum": "np.maximum",
    "minimum": "np.minimum",
    "logical_and": "np.logical_and",
    "logical_or": "np.logical_or",
    "logical_xor": "np.logical_xor",
}
_FLOAT_UNARY = {
    name: f"np.{name}"
    for name in ("exp", "log", "log2", "log10", "sqrt", "tanh", "sin", "cos", "tan", "sinh", "cosh", "floor", "ceil")
}
_FLOAT_UNARY.update({"fast_exp": "np.exp", "fast_tanh": "np.tanh", "trunc": "np.trunc", "abs": "np.abs"})


def _spell(name: str, args: list[str], types: list, attrs, out) -> str | None:
    """Readable numpy text for one operator call, or None when only the reference is exact."""
    if not isinstance(out, TensorType) or not all(isinstance(t, TensorType) for t in types):
        return None
    dtype = out.dtype
    if name in _BINARY_OPERATORS and dtype != "bool":
        return f"{args[0]} {_BINARY_OPERATORS[name]} {args[1]}"
    if name == "divide" and _is_float(dtype):
        return f"{args[0]} / {args[1]}"
    if name in _COMPARISONS:
        return f"{args[0]} {_COMPARISONS[name]} {args[1]}"
    if name in _NUMPY_BINARY:
        return f"{_NUMPY_BINARY[name]}({args[0]}, {args[1]})"
    if name == "logical_not" and dtype == "bool":
        return f"np.logical_not({args[0]})"
    if name == "negative" and dtype != "bool":
        return f"-{args[0]}"
    if name in _FLOAT_UNARY and _is_float(dtype):
        return f"{_FLOAT_UNARY[name]}({args[0]})"
    if name == "sigmoid" and _is_float(dtype):
        return f"1.0 / (1.0 + np.exp(-{args[0]}))"
    if name == "rsqrt" and _is_float(dtype):
        return f"1.0 / np.sqrt({args[0]})"
    if name == "nn.relu" and dtype != "bool":
        return f"np.maximum({args[0]}, 0)"
    if name == "nn.dense" and dtype in ("float32", "float64") and types[0].dtype == dtype and types[1].ndim == 2:
        return f"{args[0]} @ {args[1]}.T"
    if name == "nn.bias_add" and _static(types[0].shape) and _static(types[1].shape):
        # (with `?` dims `+` would broadcast a length-1 bias that the reference rejects)
        data = types[0]
        axis = attrs.axis % data.ndim if data.ndim else 0
        trailing = data.ndim - 1 - axis
        if trailing == 0:
            return f"{args[0]} + {args[1]}"
        return f"{args[0]} + {args[1]}.reshape({', '.join(['-1'] + ['1'] * trailing)})"
    if name == "nn.batch_flatten":
        return f"{args[0]}.reshape({args[0]}.shape[0], -1)"
    if name in ("reshape", "expand_dims", "squeeze", "reshape_like") and _static(out.shape):
        return f"np.reshape({args[0]}, {tuple(int(d) for d in out.shape)!r})"
    if name == "reshape" and not attrs.allowzero:
        # Relay's special values 0, -2, -3, -4 have no numpy meaning; plain sizes and one -1 do.
        newshape = tuple(int(d) for d in attrs.newshape)
        if all(d > 0 or d == -1 for d in newshape) and newshape.count(-1) <= 1:
            return f"np.reshape({args[0]}, {newshape!r})"
    if name == "transpose":
        axes = attrs.axes
        if axes is None or len(axes) == 0:
            return f"np.transpose({args[0]})"
        return f"np.transpose({args[0]}, {tuple(int(a) for a in axes)!r})"
    if name == "cast" and not (_is_float(types[0].dtype) and not _is_float(dtype)):
        # float -> integer is the registry's (nan, inf and out-of-range values are defined there;
        # numpy's astype gives them by position: SIMD body and tail differ)
        return f"{args[0]}.astype({dtype_expr(dtype)})"
    if name == "where" and types[0].dtype == "bool":
        return f"np.where({args[0]}, {args[1]}, {args[2]})"
    return None


# ---------------------------------------------------------------- fallback through transpile.runtime.ops


def _attr_text(value, op_name: str, attr: str, span=None) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if isinstance(value, (tuple, list)):
        items = [_attr_text(v, op_name, attr, span) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    raise unsupported(f"attribute values of type {type(value).__name__}", span, f"{op_name}({attr}={value!r})")


def _non_default_attrs(opdef, attrs) -> list[tuple[str, object]]:
    from ...relay.attrs import freeze_attr_value
    from ...relay.op.registry import REQUIRED

    shown = []
    for field in opdef.attrs:
        value = attrs[field.name] if attrs is not None and field.name in attrs else None
        if field.default is not REQUIRED:
            default = field.default
            if field.convert is not None and default is not None:
                default = field.convert(default)
            if freeze_attr_value(default) == value:
                continue
        shown.append((field.name, value))
    return shown


def _out_spec(ty, op_name: str, span=None) -> str:
    if isinstance(ty, TensorType):
        dims = tuple(None if isinstance(d, AnyDim) else int(d) for d in ty.shape)
        return f"({dims!r}, {ty.dtype!r})"
    if isinstance(ty, TupleType):
        fields = [_out_spec(f, op_name, span) for f in ty.fields]
        return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
    raise unsupported(f"operator results of type {ty!r}", span, f"the result of {op_name}")


def _op_path(name: str) -> str:
    parts = name.split(".")
    if all(p.isidentifier() and not p.startswith("_") for p in parts):
        return "ops." + name
    return f"ops.op({name!r})"


# ---------------------------------------------------------------- kernel functions


class KernelWriter:
    """Turns Kernel units into `def` nodes; remembers whether any needed `transpile.runtime.ops`."""

    def __init__(self):
        self.uses_ops = False

    def function(self, kernel, py_name: str, param_names=None) -> ast.FunctionDef:
        """`def py_name(...)` computing `kernel`; `param_names` overrides the kernel's own names."""
        from ...relay import expr as E

        # A kernel reads nothing of the module but numpy and ops, so only those must not be shadowed.
        from .codegen import IMPORTED_NAMES

        names = Namespace(IMPORTED_NAMES)
        func = kernel.body
        if not isinstance(func, E.Function):
            raise ill_formed(f"kernel {kernel.name}: its body is a {type(func).__name__}, not a relay.Function")
        wanted = list(param_names) if param_names else [p.name for p in kernel.params]
        params = [names.bind(id(v), n, "a") for v, n in zip(func.params, wanted)]
        body: list[ast.stmt] = [_docstring(kernel, params)]
        text: dict[int, str] = {}  # relay node id -> expression text (a name or an inline expression)
        for i, v in enumerate(func.params):
            text[id(v)] = params[i]
        last_comment = [None]
        temp = [0]

        def name_for(node, value: str) -> str:
            temp[0] += 1
            return names.fresh(f"t{temp[0] - 1}", "t")

        order = _post_order(func.body)
        root = func.body
        for node in order:
            if isinstance(node, E.Var):
                if id(node) not in text:
                    raise ill_formed(f"kernel {kernel.name} uses the free variable %{node.name_hint}", node.span)
            elif isinstance(node, E.Constant):
                data = node.data
                if data.ndim != 0:
                    raise ill_formed(f"kernel {kernel.name} holds a non-scalar constant", node.span)
                text[id(node)] = scalar_literal(data.item(), data.dtype.name)
            elif isinstance(node, E.Tuple):
                items = [text[id(f)] for f in node.fields]
                text[id(node)] = f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
            elif isinstance(node, E.TupleGetItem):
                text[id(node)] = f"{text[id(node.tuple_value)]}[{node.index}]"
            elif isinstance(node, E.Let):
                text[id(node.var)] = text[id(node.value)]
                text[id(node)] = text[id(node.body)]
            elif isinstance(node, E.Call) and isinstance(node.op, E.Op):
                value = self._call_text(node, [text[id(a)] for a in node.args])
                note = source_comment(node.span)
                if note is not None and note != last_comment[0]:
                    body.append(comment(note))
                    last_comment[0] = note
                if node is root:
                    text[id(node)] = value
                    break
                target = name_for(node, value)
                body.append(ast.Assign(targets=[ast.Name(target, ast.Store())], value=parse_expr(value)))
                text[id(node)] = target
            else:
                raise ill_formed(
                    f"kernel {kernel.name}: a kernel body holds only operator calls, tuples and lets, not "
                    f"{type(node).__name__}",
                    getattr(node, "span", None),
                )
        body.append(ast.Return(parse_expr(text[id(root)])))
        return ast.FunctionDef(
            name=py_name,
            args=_arguments(params),
            body=body,
            decorator_list=[],
            returns=None,
            type_comment=None,
        )

    def _call_text(self, call, args: list[str]) -> str:
        from ...relay.op.registry import lookup

        name = call.op.name
        opdef = lookup(name)
        if opdef is None:
            raise unsupported(f"operator {name}", call.span, "it is not in the operator registry")
        types = [getattr(a, "checked_type_", None) for a in call.args]
        out = call.checked_type
        attrs = call.attrs
        if attrs is None:
            from ...relay.op.registry import normalize_attrs

            try:
                attrs = normalize_attrs(opdef, {})
            except ValueError as exc:
                raise unsupported(f"the attributes of operator {name}", call.span, str(exc)) from None
        spelled = _spell(name, args, types, attrs, out)
        if spelled is not None:
            return spelled
        self.uses_ops = True
        pieces = list(args)
        pieces += [f"{k}={_attr_text(v, name, k, call.span)}" for k, v in _non_default_attrs(opdef, attrs)]
        pieces.append(f"out={_out_spec(out, name, call.span)}")
        return f"{_op_path(name)}({', '.join(pieces)})"


def _arguments(names: list[str]) -> ast.arguments:
    return ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=n, annotation=None) for n in names],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )


def _docstring(kernel, names: list[str]) -> ast.Expr:
    from ...lir.types import type_text

    ops = ", ".join(kernel.ops) if kernel.ops else "no operators"
    params = [f"{n}: {readable(type_text(p.type))}" for n, p in zip(names, kernel.params)]
    result = readable(type_text(kernel.result))
    line = f"{ops}: ({', '.join(params)}) -> {result}"
    if len(line) > 88:
        line = f"{ops}.\n\n" + "".join(f"{p}\n" for p in params) + f"returns {result}\n"
    return docstring(line)


def _post_order(root) -> list:
    """Relay nodes of a kernel body in evaluation order, each once (bodies are DAGs)."""
    from ...relay import expr as E

    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in seen:
            continue
        if done:
            seen.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        if isinstance(node, E.Call):
            children = node.args
        elif isinstance(node, E.Tuple):
            children = node.fields
        elif isinstance(node, E.TupleGetItem):
            children = (node.tuple_value,)
        elif isinstance(node, E.Let):
            children = (node.value, node.body)
        else:
            children = ()
        stack.extend((child, False) for child in reversed(tuple(children)))
    return order
