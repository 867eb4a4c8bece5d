"""The `transpile` command line: check, emit, build and run Relay programs; list backends."""

from __future__ import annotations

import argparse
import ast
import sys
import traceback
from pathlib import Path

import numpy as np

from . import __version__
from .errors import TranspileError

__all__ = ["main", "build_parser"]


class CliError(TranspileError):
    """A bad command line (missing file, unreadable argument)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="transpile",
        description="Ahead-of-time compiler for TVM's Relay language.",
    )
    parser.add_argument("--version", action="version", version=f"transpile {__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser("check", help="parse and type-check FILE, print it with types")
    _add_source_options(check)
    check.add_argument("--no-types", action="store_true", help="print without /* ty=... */ comments")

    commands.add_parser("backends", help="list installed backends: capabilities, package, load errors")

    imp = commands.add_parser(
        "import", help="import an ONNX (.onnx) or torch.export (.pt2) model: Relay text plus its weights as .npz"
    )
    imp.add_argument("file", help="the model file (.onnx, .pt2)")
    imp.add_argument("-o", "--output", required=True, help="the Relay text file to write (weights go beside it as .npz)")
    imp.add_argument("--params-output", metavar="FILE", help="where to write the weights (default: OUTPUT with .npz)")
    _add_shape_option(imp)
    imp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show Python tracebacks on errors")
    _add_progress_options(imp)

    emit = commands.add_parser("emit", help="print the code a backend generates for FILE")
    _add_source_options(emit)
    _add_backend_options(emit, default=None)
    emit.add_argument("-o", "--output", help="write to this file instead of standard output")
    _add_progress_options(emit)

    build = commands.add_parser("build", help="build FILE with a backend and export the artifact")
    _add_source_options(build)
    _add_backend_options(build, default=None)
    build.add_argument("-o", "--output", required=True, help="directory to export the artifact to")
    build.add_argument(
        "--standalone",
        action="store_true",
        help="cpp only: write a source bundle (C++, C kernels, Makefile) that builds with only g++, no TVM",
    )
    _add_tuning_options(build)
    _add_progress_options(build)

    run = commands.add_parser("run", help="run a function of FILE (default backend: the reference interpreter)")
    _add_source_options(run)
    _add_backend_options(run, default="interpreter")
    run.add_argument("-o", "--output", help="save a tensor result as .npy")
    run.add_argument(
        "args",
        nargs="*",
        metavar="ARG",
        help="arguments: .npy files or Python literals (3, 2.5, True, [[1, 2], [3, 4]])",
    )
    _add_tuning_options(run)
    _add_progress_options(run)

    profile = commands.add_parser(
        "profile", help="run FILE's program built for profiling (cpp, tir); per kernel: calls, time, share, GFLOP/s"
    )
    _add_source_options(profile)
    _add_backend_options(profile, default="cpp")
    profile.add_argument("--runs", type=int, default=10, help="timed runs (default: 10, after one warm-up run)")
    profile.add_argument("--top", type=int, default=None, help="show only the N kernels taking the most time")
    profile.add_argument("--json", metavar="FILE", help="also write the profile as JSON")
    profile.add_argument(
        "args", nargs="*", metavar="ARG", help="arguments as for `run`; random ones of the right shapes if none are given"
    )
    _add_progress_options(profile)

    cache = commands.add_parser("cache", help="the native build cache: `cache info`, `cache clear [--backend NAME]`")
    cache_commands = cache.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    cache_commands.add_parser("info", help="where the cache is, entries and size per backend, the size limit")
    clear = cache_commands.add_parser("clear", help="remove cached libraries (all, or one backend's)")
    clear.add_argument("--backend", help="only this backend's entries (cpp, tir, pch)")
    return parser


def _add_progress_options(sub: argparse.ArgumentParser) -> None:
    shown = sub.add_mutually_exclusive_group()
    shown.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    shown.add_argument(
        "-v", "--verbose", action="store_true", help="print each build stage as it ends and a table of stage times"
    )


def _progress_display(opts):
    """Live progress on a terminal (stderr) unless --quiet; --verbose prints stage times."""
    import contextlib

    from . import progress

    if getattr(opts, "quiet", False) or not hasattr(opts, "quiet"):
        return contextlib.nullcontext()
    return progress.terminal(sys.stderr, verbose=opts.verbose)


def _add_shape_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--shape",
        action="append",
        metavar="NAME=DIMS",
        help="models: fix an input's shape, e.g. --shape data=1,3,224,224 (? for an unknown dimension; repeatable)",
    )


def _add_source_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("file", help="Relay text file (format 0.0.5), or a model: .onnx (ONNX), .pt2 (torch.export)")
    sub.add_argument("--prelude", action="store_true", help="make the Relay Prelude (List, Option, map, ...) available")
    sub.add_argument(
        "--params",
        metavar="FILE",
        help="weights for the entry function's parameters, by name: an .npz or TVM parameter file "
        "(save_param_dict); entries named meta[relay.Constant][i] supply a text's meta constants",
    )
    _add_shape_option(sub)
    sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show Python tracebacks on errors")


def _add_backend_options(sub: argparse.ArgumentParser, default) -> None:
    sub.add_argument(
        "-b",
        "--backend",
        default=default,
        required=default is None,
        help="backend name (see `transpile backends`; `lir` prints the little IR)" if default is None else
        f"backend name (default: {default})",
    )
    sub.add_argument("--entry", default="main", help="global function to compile (default: main)")


def _add_tuning_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--tune",
        action="store_true",
        help="cpp, tir: tune the matmul / conv kernels with meta_schedule (results cached and reused; "
        "a kernel keeps its hand schedule where that is as fast)",
    )
    sub.add_argument("--trials", type=int, metavar="N", help="tuning trials per kernel (implies --tune; default: 32)")


def _tuning(opts) -> dict:
    """The backend option for --tune / --trials N: {"tune": True or N}, or nothing."""
    if opts.trials is not None:
        if opts.trials <= 0:
            raise CliError("--trials needs a positive number")
        return {"tune": opts.trials}
    return {"tune": True} if opts.tune else {}


_META_REMEDY = (
    "pass them with --params FILE, an .npz or TVM parameter file whose entries are named "
    "meta[relay.Constant][0], meta[relay.Constant][1], ..., or re-export the module from TVM with "
    "mod.astext(show_meta_data=True)"
)


def _load_module(path: str, with_prelude: bool, params_file: str | None = None, entry: str = "main", shape=None):
    from . import progress
    from .relay.frontend.files import is_model_file

    if is_model_file(path):
        if with_prelude or params_file is not None:
            option = "--prelude" if with_prelude else "--params"
            raise CliError(f"{option} applies to Relay text files; {path} is a model that carries its own weights")
        with progress.stage("import"):
            return _import_model(path, shape, freeze_params=True)[0], None
    if shape:
        raise CliError(f"--shape applies to model files (.onnx, .pt2); {path} is Relay text, whose types fix its shapes")
    with progress.stage("load"):
        return _read_module(path, with_prelude, params_file, entry)


def _import_model(path: str, shape_options, freeze_params: bool):
    from .relay.frontend.files import import_model_file, parse_shape_options

    return import_model_file(path, shape=parse_shape_options(shape_options), freeze_params=freeze_params)


def _read_module(path: str, with_prelude: bool, params_file: str | None, entry: str):
    """The typed module of the Relay file `path` (with the Prelude and --params weights if asked)."""
    from . import relay
    from .relay.parser.meta import MissingMetadataError

    source_path = Path(path)
    try:
        text = source_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    meta_table, params = None, {}
    if params_file is not None:
        from .relay.params import load_params, split_meta_entries

        meta_table, params = split_meta_entries(load_params(params_file))
    init = None
    if with_prelude:
        init = relay.IRModule()
        relay.Prelude(init)
    try:
        mod = relay.parse(text, source_name=str(source_path), init_module=init, init_meta_table=meta_table or None)
    except MissingMetadataError as exc:
        raise MissingMetadataError(exc.kind, exc.count, exc.span, remedy=_META_REMEDY) from None
    if params:
        mod = _bind_params(mod, params, entry, path)
    return relay.transform.InferType()(mod), init


def _bind_params(mod, params: dict, entry: str, path: str):
    """`mod` with `entry`'s parameters named in the --params file bound; unmatched names are warned about."""
    import warnings

    from .relay.bind import bind_params_in_module

    if entry not in mod:
        raise CliError(f"{path} has no function @{entry}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bound = bind_params_in_module(mod, params, entry=entry)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    return bound


def _user_part(mod, init):
    """The definitions that came from the user's file, not from the Prelude."""
    if init is None:
        return mod
    from .relay import IRModule

    own = IRModule()
    for gtv, data in mod.type_definitions.items():
        if gtv not in init.type_definitions:
            own.add_type_data(gtv, data)
    for gv, func in mod.functions.items():
        if gv not in init.functions or init.functions[gv] is not func:
            own.functions[gv] = func
    return own


def _cmd_check(opts) -> int:
    from .relay.printer import astext

    mod, init = _load_module(opts.file, opts.prelude, opts.params, getattr(opts, "entry", "main"), opts.shape)
    print(astext(_user_part(mod, init), show_types=not opts.no_types), end="")
    return 0


def _parse_arg(text: str, index: int):
    if text.endswith(".npy"):
        try:
            return np.load(text, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise CliError(f"argument {index}: cannot load {text}: {exc}") from None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise CliError(f"argument {index}: {text!r} is neither a .npy file nor a Python literal") from None
    return value


def _coerce_to_param(value, param_type, index: int):
    """Give literal arguments the parameter's dtype when that loses nothing (`3` for an int64 param)."""
    from .relay.ty import TensorType

    if not isinstance(param_type, TensorType) or isinstance(value, np.ndarray):
        return value
    if isinstance(value, (int, float, bool, list, tuple)):
        array = np.asarray(value)
        converted = array.astype(param_type.dtype)
        if converted.shape == array.shape and np.array_equal(converted.astype(array.dtype), array):
            return converted
        raise CliError(f"argument {index}: {value!r} is not representable as {param_type.dtype}")
    return value


def _format_value(value) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, separator=", ") if value.ndim else repr(value.item())
    if isinstance(value, tuple):
        return "(" + ", ".join(_format_value(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _cmd_cache(opts) -> int:
    from . import cache

    if opts.cache_command == "info":
        print(cache.info().format(), end="")
        return 0
    removed = cache.clear(backend=opts.backend)
    where = f"{cache.root()}/{opts.backend}" if opts.backend else str(cache.root())
    print(f"removed {removed} {'entry' if removed == 1 else 'entries'} from {where}")
    return 0


def _cmd_backends(opts) -> int:
    from .backends import format_backend_table

    print(format_backend_table(), end="")
    return 0


def _write_or_print(text: str, output: str | None) -> None:
    if output is None:
        print(text, end="" if text.endswith("\n") else "\n")
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from None


def _cmd_import(opts) -> int:
    from . import progress
    from .relay.frontend.files import with_printable_param_names
    from .relay.params import save_params
    from .relay.printer import astext

    with progress.stage("import"):
        mod, params = _import_model(opts.file, opts.shape, freeze_params=False)
        mod, params = with_printable_param_names(mod, params)
    text_path = Path(opts.output)
    params_path = Path(opts.params_output) if opts.params_output else text_path.with_suffix(".npz")
    if params_path.resolve() == text_path.resolve():
        raise CliError(f"the Relay text and the weights would both be written to {text_path}")
    _write_or_print(astext(mod, show_types=False), str(text_path))  # lean: types are re-inferred on load
    try:
        save_params(params, params_path)
    except OSError as exc:
        raise CliError(f"cannot write {params_path}: {exc.strerror or exc}") from None
    main_fn = mod["main"]
    inputs = [p for p in main_fn.params if p.name_hint not in params]
    size = sum(v.nbytes for v in params.values())
    signature = ", ".join(f"%{p.name_hint}: {p.checked_type}" for p in inputs)
    print(f"imported {opts.file}: inputs ({signature}) -> {main_fn.checked_type.ret_type}")
    print(f"wrote {text_path} and {params_path} ({len(params)} weight{'' if len(params) == 1 else 's'}, {size / 1e6:.1f} MB); "
          f"run it with: transpile run {text_path} --params {params_path} ARGS...")
    return 0


def _cmd_emit(opts) -> int:
    mod, _ = _load_module(opts.file, opts.prelude, opts.params, getattr(opts, "entry", "main"), opts.shape)
    if opts.backend == "lir":
        from .lir import print_program
        from .pipeline import lower_to_lir

        if opts.entry not in mod:
            raise CliError(f"{opts.file} has no function @{opts.entry}")
        text = print_program(lower_to_lir(mod, entry=opts.entry))
    else:
        from .backends import emit

        text = emit(mod, backend=opts.backend, entry=opts.entry)
    _write_or_print(text, opts.output)
    return 0


def _cmd_build(opts) -> int:
    from .backends import build

    if opts.standalone:
        if _tuning(opts):
            raise CliError("--tune applies to cpp and tir libraries, not to the standalone bundle (portable C kernels)")
        return _build_standalone(opts)
    mod, _ = _load_module(opts.file, opts.prelude, opts.params, getattr(opts, "entry", "main"), opts.shape)
    artifact = build(mod, backend=opts.backend, entry=opts.entry, **_tuning(opts))
    directory = artifact.export(opts.output)
    print(f"built {opts.file} with backend '{opts.backend}' into {directory}")
    return 0


def _build_standalone(opts) -> int:
    if opts.backend != "cpp":
        raise CliError(f"--standalone needs the cpp backend (-b cpp), not '{opts.backend}'")
    from .backends.cpp.standalone import build_bundle

    mod, _ = _load_module(opts.file, opts.prelude, opts.params, getattr(opts, "entry", "main"), opts.shape)
    if opts.entry not in mod:
        raise CliError(f"{opts.file} has no function @{opts.entry}")
    bundle = build_bundle(mod, opts.output, entry=opts.entry)
    print(f"wrote the standalone bundle of {opts.file} to {bundle.directory}: run `make` there (see README.txt)")
    return 0


def _cmd_run(opts) -> int:
    mod, _ = _load_module(opts.file, opts.prelude, opts.params, getattr(opts, "entry", "main"), opts.shape)
    if opts.entry not in mod:
        raise CliError(f"{opts.file} has no function @{opts.entry}")
    params = mod[opts.entry].params
    raw = [_parse_arg(a, i + 1) for i, a in enumerate(opts.args)]
    args = [
        _coerce_to_param(v, p.checked_type, i + 1) if i < len(params) else v
        for i, (v, p) in enumerate(zip(raw, list(params) + [None] * len(raw)))
    ]
    from .backends import compile as compile_program

    result = compile_program(mod, backend=opts.backend, entry=opts.entry, **_tuning(opts))(*args)
    if opts.output:  # saved before printing: a reader closing the pipe early must not lose the file
        if not isinstance(result, np.ndarray):
            raise CliError("--output needs a tensor result")
        np.save(opts.output, result)
    print(_format_value(result))
    return 0


def _cmd_profile(opts) -> int:
    import json

    from .backends import build
    from .profiling import random_arguments

    if opts.backend not in ("cpp", "tir"):
        raise CliError(f"profiling needs a native backend (-b cpp or -b tir), not '{opts.backend}'")
    mod, _ = _load_module(opts.file, opts.prelude, opts.params, opts.entry, opts.shape)
    if opts.entry not in mod:
        raise CliError(f"{opts.file} has no function @{opts.entry}")
    params = list(mod[opts.entry].params)
    raw = [_parse_arg(a, i + 1) for i, a in enumerate(opts.args)]
    args = [_coerce_to_param(v, p.checked_type, i + 1) for i, (v, p) in enumerate(zip(raw, params))] + raw[len(params) :]
    if not args:
        args = random_arguments(mod[opts.entry])
    artifact = build(mod, backend=opts.backend, entry=opts.entry, profile=True)
    report = artifact.profile(*args, runs=opts.runs)
    print(report.format(top=opts.top))
    if opts.json:
        _write_or_print(json.dumps(report.to_json(), indent=1), opts.json)
    return 0


_COMMANDS = {
    "check": _cmd_check,
    "import": _cmd_import,
    "profile": _cmd_profile,
    "backends": _cmd_backends,
    "emit": _cmd_emit,
    "build": _cmd_build,
    "run": _cmd_run,
    "cache": _cmd_cache,
}


def main(argv=None) -> int:
    parser = build_parser()
    # Run arguments may follow options (`run FILE --entry f 3 4`): collect leftovers as arguments.
    opts, leftovers = parser.parse_known_args(argv)
    if leftovers:
        if opts.command not in ("run", "profile") or any(t.startswith("--") for t in leftovers):
            parser.error(f"unrecognized arguments: {' '.join(leftovers)}")
        opts.args = list(opts.args) + leftovers
    debug = getattr(opts, "debug", False)
    try:
        with _progress_display(opts):
            return _COMMANDS[opts.command](opts)
    except TranspileError as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {exc}" if exc.span is None else str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`transpile run ... | head`): nothing left to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except Exception as exc:  # a bug in transpile itself: say so, keep the trace behind --debug
        if debug:
            traceback.print_exc()
        print(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
