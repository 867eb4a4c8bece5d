"""`from_exported_program` and `from_pytorch`: a PyTorch program into a Relay module and its params.

The importer lowers the `torch.export.ExportedProgram` to the core ATen opset
(`run_decompositions()`), checks every call_function node against the converter table first (so
an unsupported model fails once, listing all of its unsupported nodes), then converts the graph
in order through a `GraphBuilder`, which types and constant-folds as it goes.

Placeholders: user inputs become @main parameters named after the graph's input names, with the
example value's shape (symbolic dimensions become `?`) and dtype. Parameters, buffers and lifted
constants become constants (`freeze_params=True`), or @main parameters after the user inputs,
named after their state_dict keys, with their values in `params`. The result is @main's body:
one tensor, or the program's output structure (tuples, lists, dicts, model-output classes) as
nested Relay tuples. Buffer mutations (only train-mode programs have them) are not outputs.

Each converted value is checked against the dtype and static shape PyTorch recorded for the node
(`node.meta["val"]`), so a converter that disagrees with PyTorch fails at import, naming the node.
"""

from __future__ import annotations

import numpy as np

from ....errors import TranspileError
from ... import expr as E
from ...ty import AnyDim, TensorType
from ..common import FrontendError, GraphBuilder, UnsupportedOp, UnsupportedOperatorsError
from .converters import NodeContext, NodeUnsupported, lookup_converter, relay_dtype, target_name

__all__ = ["from_exported_program", "from_pytorch"]

SOURCE = "PyTorch"
INSTALL_HINT = "pip install 'transpile[torch]' (or pip install torch)"


def _torch():
    try:
        import torch
    except ImportError as exc:  # torch is an optional extra
        raise FrontendError(f"importing PyTorch programs needs the `torch` package: {INSTALL_HINT}") from exc
    return torch


class _Poisoned:
    """The value of a node that could not be converted: nodes reading it are skipped, not reported again."""


_POISONED = _Poisoned()


class ExportedProgramImporter:
    """Converts one decomposed ExportedProgram; see the module docstring."""

    def __init__(self, program, freeze_params: bool):
        self.program = program
        self.freeze_params = freeze_params
        self.builder = GraphBuilder(SOURCE)
        self.values: dict = {}  # fx.Node -> converted value
        self.inputs: list[E.Var] = []
        self.param_vars: list[E.Var] = []
        self.params: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ driver
    def run(self):
        graph = self.program.graph
        self.check_supported(graph)
        specs = {spec.arg.name: spec for spec in self.program.graph_signature.input_specs if hasattr(spec.arg, "name")}
        unsupported = []
        output_node = None
        for node in graph.nodes:
            if node.op == "placeholder":
                self.placeholder(node, specs.get(node.name))
            elif node.op == "call_function":
                failure = self.convert(node)
                if failure is not None:
                    unsupported.append(failure)
            elif node.op == "output":
                output_node = node
        if unsupported:
            raise UnsupportedOperatorsError(SOURCE, unsupported)
        if output_node is None:
            raise FrontendError(f"{SOURCE}: the graph has no output node")
        body = self.outputs(output_node)
        mod = self.builder.module(self.inputs + self.param_vars, [body])
        return mod, self.params

    def check_supported(self, graph) -> None:
        """Every call_function node has a converter, or all that do not are listed."""
        missing = []
        for node in graph.nodes:
            if node.op == "call_function":
                name = target_name(node.target)
                if lookup_converter(name) is None:
                    missing.append(UnsupportedOp(name, node.name))
            elif node.op in ("get_attr", "call_module", "call_method"):
                missing.append(
                    UnsupportedOp(f"{node.op} {node.target}", node.name, "submodules and attributes are not imported")
                )
        if missing:
            raise UnsupportedOperatorsError(SOURCE, missing)

    # ------------------------------------------------------------------ placeholders
    def placeholder(self, node, spec) -> None:
        torch = _torch()
        kinds = torch.export.graph_signature.InputKind
        kind = spec.kind if spec is not None else kinds.USER_INPUT
        if kind == kinds.USER_INPUT:
            self.values[node] = self.user_input(node, spec)
        elif kind in (kinds.PARAMETER, kinds.BUFFER, kinds.CONSTANT_TENSOR):
            if not node.users:
                return
            self.values[node] = self.weight(node, spec.target)
        else:
            raise FrontendError(f"{SOURCE}: input {node.name!r} is a {kind.name.lower()}, which Relay cannot take")

    def user_input(self, node, spec):
        torch = _torch()
        if spec is not None and isinstance(spec.arg, torch.export.graph_signature.ConstantArgument):
            return spec.arg.value  # a non-tensor example input, specialized by torch.export
        meta = node.meta.get("val")
        if not isinstance(meta, torch.Tensor):
            raise FrontendError(
                f"{SOURCE}: input {node.name!r} is a {type(meta).__name__}, not a tensor; only tensor inputs are imported"
            )
        try:
            dtype = relay_dtype(meta.dtype)
        except NodeUnsupported as exc:
            raise FrontendError(f"{SOURCE}: input {node.name!r}: {exc.message}") from None
        shape = [int(d) if isinstance(d, int) else None for d in meta.shape]
        var = self.builder.input(node.name, shape, dtype)
        self.inputs.append(var)
        return var

    def weight(self, node, key: str):
        """A parameter, buffer or lifted constant: a constant, or a parameter named `key` with its value in params."""
        value = self.program.state_dict.get(key)
        if value is None:
            value = self.program.constants.get(key)
        if value is None:
            raise FrontendError(
                f"{SOURCE}: no value for {key!r} (input {node.name!r}) in the program's state_dict or constants"
            )
        try:
            relay_dtype(value.dtype)
        except NodeUnsupported as exc:
            raise FrontendError(f"{SOURCE}: {key!r}: {exc.message}") from None
        array = np.array(value.detach().cpu().resolve_conj().resolve_neg().numpy(), order="C")
        if self.freeze_params:
            return self.builder.const(array)
        var = self.builder.input(key, array.shape, array.dtype.name)
        self.param_vars.append(var)
        self.params[key] = array
        return var

    # ------------------------------------------------------------------ operators
    def convert(self, node) -> UnsupportedOp | None:
        """Convert one call_function node; an UnsupportedOp when its converter cannot express it."""
        name = target_name(node.target)
        if any(a is _POISONED for a in self._input_values(node)):
            self.values[node] = _POISONED
            return None
        with self.builder.at(f"node {node.name!r} ({name})"):
            try:
                ctx = NodeContext(self.builder, node, name, self.arguments(node), self)
                value = lookup_converter(name)(ctx)
                self.check_against_meta(node, value)
            except NodeUnsupported as exc:
                self.values[node] = _POISONED
                return UnsupportedOp(name, node.name, exc.message)
            except FrontendError:
                raise
            except TranspileError as exc:
                raise self.builder.error(exc.message) from None
        self.values[node] = value
        return None

    def _input_values(self, node):
        for arg in node.all_input_nodes:
            yield self.values.get(arg)

    def arguments(self, node) -> dict:
        """The node's arguments by schema name (ATen) or position (Python callables), defaults filled in."""
        args = [self.value(a) for a in node.args]
        kwargs = {k: self.value(v) for k, v in node.kwargs.items()}
        schema = getattr(node.target, "_schema", None)
        if schema is None:
            bound = dict(enumerate(args))
            bound.update(kwargs)
            return bound
        bound = {}
        for index, argument in enumerate(schema.arguments):
            if not argument.kwarg_only and index < len(args):
                bound[argument.name] = args[index]
            elif argument.name in kwargs:
                bound[argument.name] = kwargs[argument.name]
            elif argument.has_default_value():
                bound[argument.name] = argument.default_value
            else:
                bound[argument.name] = None
        return bound

    def value(self, arg):
        """An argument with graph nodes replaced by their converted values."""
        import torch.fx

        if isinstance(arg, torch.fx.Node):
            if arg not in self.values:
                raise self.builder.error(f"argument {arg.name!r} is produced by no earlier node")
            return self.values[arg]
        if isinstance(arg, (list, tuple)):
            return [self.value(a) for a in arg]
        return arg

    def check_against_meta(self, node, value) -> None:
        """The converted value has the dtype and static shape PyTorch recorded for the node."""
        torch = _torch()
        meta = node.meta.get("val")
        pairs = zip(value, meta) if isinstance(value, list) and isinstance(meta, (list, tuple)) else [(value, meta)]
        for built, expected in pairs:
            if not isinstance(built, E.Expr) or not isinstance(expected, torch.Tensor):
                continue
            ty = self.builder.type_of(built)
            if not isinstance(ty, TensorType):
                continue
            dtype = relay_dtype(expected.dtype)
            shape = list(ty.shape)
            agrees = ty.dtype == dtype and len(shape) == expected.dim()
            if agrees:
                for ours, theirs in zip(shape, expected.shape):
                    if not isinstance(ours, AnyDim) and isinstance(theirs, int) and int(ours) != theirs:
                        agrees = False
            if not agrees:
                theirs = "(" + ", ".join(str(d) if isinstance(d, int) else "?" for d in expected.shape) + ")"
                raise self.builder.error(
                    f"the conversion gives {ty}, PyTorch computes a {theirs} {dtype} tensor (importer bug)"
                )

    # ------------------------------------------------------------------ outputs
    def outputs(self, node):
        torch = _torch()
        kinds = torch.export.graph_signature.OutputKind
        flat = list(node.args[0]) if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
        specs = self.program.graph_signature.output_specs
        if len(specs) == len(flat):
            flat = [f for f, s in zip(flat, specs) if s.kind in (kinds.USER_OUTPUT, kinds.LOSS_OUTPUT)]
        leaves = [self.output_leaf(self.value(f) if isinstance(f, torch.fx.Node) else f) for f in flat]
        spec = getattr(self.program.call_spec, "out_spec", None)
        if spec is None or spec.num_leaves != len(leaves):
            return leaves[0] if len(leaves) == 1 else self.builder.tuple(leaves)
        remaining = iter(leaves)
        return self._nest(spec, remaining)

    def _nest(self, spec, leaves):
        """The output pytree as nested Relay tuples (any container becomes a tuple of its children in order)."""
        if spec.is_leaf():
            return next(leaves)
        children = spec.children() if callable(getattr(spec, "children", None)) else spec.children_specs
        return self.builder.tuple([self._nest(child, leaves) for child in children])

    def output_leaf(self, value):
        if isinstance(value, E.Expr):
            return value
        if isinstance(value, (bool, int, float)):
            return self.builder.const(value)
        raise FrontendError(f"{SOURCE}: an output of the program is a {type(value).__name__}, not a tensor")


def from_exported_program(exported_program, freeze_params: bool = True):
    """Convert a `torch.export.ExportedProgram` into `(IRModule, params)`.

    The program is lowered to the core ATen opset (`run_decompositions()`) first.
    freeze_params: parameters, buffers and lifted constants become constants (params is then
        empty); otherwise they become parameters of @main after the user inputs, named after
        their state_dict keys, with their values (numpy arrays) in params.
    """
    torch = _torch()
    if not isinstance(exported_program, torch.export.ExportedProgram):
        raise FrontendError(
            f"from_exported_program expects a torch.export.ExportedProgram, got {type(exported_program).__name__}"
        )
    try:
        program = exported_program.run_decompositions()
    except Exception as exc:  # decomposition failures are torch's; report them as import failures
        raise FrontendError(f"{SOURCE}: run_decompositions() failed: {type(exc).__name__}: {exc}") from None
    return ExportedProgramImporter(program, freeze_params).run()


def from_pytorch(module, example_inputs, freeze_params: bool = True):
    """Convert a `torch.nn.Module` into `(IRModule, params)`: `torch.export.export(module.eval(), example_inputs)`.

    example_inputs: the positional inputs (a tuple or list; a single tensor is taken as one input);
        their shapes and dtypes become @main's parameter types.
    freeze_params: as in `from_exported_program`.
    """
    torch = _torch()
    if not isinstance(module, torch.nn.Module):
        raise FrontendError(f"from_pytorch expects a torch.nn.Module, got {type(module).__name__}")
    if isinstance(example_inputs, (list, tuple)):
        inputs = tuple(example_inputs)
    else:
        inputs = (example_inputs,)
    try:
        program = torch.export.export(module.eval(), inputs)
    except Exception as exc:  # export failures (graph breaks, data-dependent control flow) are torch's
        raise FrontendError(f"{SOURCE}: torch.export.export failed: {type(exc).__name__}: {exc}") from None
    return from_exported_program(program, freeze_params=freeze_params)
