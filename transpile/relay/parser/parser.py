"""The Relay parser: module structure (defs, ADTs, extern types) on top of the expression grammar."""

from __future__ import annotations

from ...errors import ParseError
from ..expr import Constructor, GlobalVar, TypeData
from ..module import IRModule
from ..ty import GlobalTypeVar, TypeKind
from .exprs import ExprParser
from .meta import MetaTable, decode_metadata, merge_meta_tables
from .patterns import PatternParser
from .stream import TokenStream
from .tokens import EOF, GLOBAL, IDENT, META, METADATA, VERSION, Token, describe
from .types import TypeParser

__all__ = ["Parser"]

SUPPORTED_VERSION = "0.0.5"
_TOP_LEVEL = ("def", "type", "extern")
_OPENERS = frozenset("([{")
_CLOSERS = frozenset(")]}")


class Parser(TokenStream, TypeParser, ExprParser, PatternParser):
    """One parse of one source text, optionally extending an initial module."""

    def __init__(
        self,
        tokens: list[Token],
        source_name: str,
        init_module: IRModule | None,
        init_meta_table,
        source_text: str | None = None,
    ):
        super().__init__(tokens, source_name, source_text)
        self.init_module = init_module
        self.in_module = False
        self.constructors: dict[str, Constructor] = {}
        self.type_globals: dict[str, GlobalTypeVar] = {}
        self.extern_names: dict[str, GlobalTypeVar] = {}
        self.global_refs: dict[str, Token] = {}
        self.free_vars: dict = {}
        self.all_graph_bindings: dict = {}
        self._op_defs: dict = {}
        self.default_attrs: dict = {}
        self._registry_available = True
        if init_module is not None:
            for gtv, data in init_module.type_definitions.items():
                self.type_globals[gtv.name_hint] = gtv
                for ctor in data.constructors:
                    self.constructors[ctor.name_hint] = ctor
            for name, gtv in init_module.extern_types.items():
                self.type_globals[name] = gtv
        table = merge_meta_tables(self.read_metadata_section(), init_meta_table)
        self.meta = MetaTable(table, self.meta_references())

    # ----- helpers used by the mixins -----------------------------------------------------------
    def op_def(self, name: str):
        """The registry entry of an operator, or None (also while the registry cannot load)."""
        try:
            return self._op_defs[name]
        except KeyError:
            pass
        opdef = None
        if self._registry_available:
            try:
                from ..op import registry

                opdef = registry.lookup(name)
            except ImportError:
                self._registry_available = False
        self._op_defs[name] = opdef
        return opdef

    def meta_references(self) -> dict[str, int]:
        """kind -> 1 + the highest `meta[kind][i]` index in the text (to say how much a missing table holds)."""
        counts: dict[str, int] = {}
        for tok in self.tokens:
            if tok.kind == META:
                kind, index = tok.value
                counts[kind] = max(counts.get(kind, 0), index + 1)
        return counts

    def read_metadata_section(self):
        for tok in reversed(self.tokens[-2:]):
            if tok.kind == METADATA:
                return decode_metadata(tok.value, self.span_of(tok))
        return None

    def skip_header(self) -> None:
        tok = self.tok
        if tok.kind == VERSION:
            if tok.value != SUPPORTED_VERSION:
                self.fail(f'unsupported text format version "{tok.value}" (expected "{SUPPORTED_VERSION}")')
            self.advance()

    def expect_end(self) -> None:
        self.accept(METADATA)
        if self.tok.kind != EOF:
            if self.tok.kind == VERSION:
                self.fail("the version header must come first")
            what = "a top-level definition (`def`, `type` or `extern type`)" if self.in_module else "end of input"
            self.fail(f"expected {what} but found {describe(self.tok)}")

    # ----- expressions ------------------------------------------------------------------------------
    def parse_expression_text(self):
        self.skip_header()
        tok = self.tok
        if tok.kind == IDENT and self.peek().kind == EOF and _names_an_operator(self, tok):
            # The text is one operator's name: `parse_expr("add")` is Op add, as in TVM. Inside
            # a larger expression a bare operator name is an error (it is not a value).
            return self.parse_name()
        expr = self.parse_sequence()
        self.expect_end()
        return expr

    # ----- modules --------------------------------------------------------------------------------
    def parse_module_text(self) -> IRModule:
        self.in_module = True
        self.skip_header()
        body_start = self.pos
        self.declare_type_names()
        # Pass 1: type definitions, so constructors and types may be used before their definition.
        type_defs, skipped = self.parse_type_definitions()
        # Pass 2: function definitions.
        self.seek(body_start)
        functions: dict[str, tuple[GlobalVar, object]] = {}
        while self.tok.kind in _TOP_LEVEL:
            if self.pos in skipped:
                self.seek(skipped[self.pos])
                continue
            self.parse_def(functions)
        self.expect_end()
        self.check_global_references(functions)
        return self.build_module(type_defs, functions)

    def declare_type_names(self) -> None:
        """Create the GlobalTypeVar of every `type`/`extern type` in the text (duplicates are errors)."""
        tokens = self.tokens
        declared: set[str] = set()
        for index, tok in enumerate(tokens):
            if tok.kind != "type" or tokens[index + 1].kind != IDENT:
                continue
            name_tok = tokens[index + 1]
            name = name_tok.value
            is_extern = index > 0 and tokens[index - 1].kind == "extern"
            if is_extern:
                existing = self.type_globals.get(name)
                if name in declared and name not in self.extern_names:
                    self.fail(f"duplicate definition of type {name}", name_tok)
                self.extern_names[name] = existing if existing is not None else GlobalTypeVar(name)
                self.type_globals[name] = self.extern_names[name]
                declared.add(name)
                continue
            if name in declared:
                self.fail(f"duplicate definition of type {name}", name_tok)
            if name in self.type_globals:
                self.fail(f"duplicate definition of type {name}: the initial module already defines it", name_tok)
            declared.add(name)
            self.type_globals[name] = GlobalTypeVar(name, TypeKind.AdtHandle)

    def parse_type_definitions(self):
        type_defs: list[TypeData] = []
        skipped: dict[int, int] = {}
        while True:
            kind = self.tok.kind
            start = self.pos
            if kind == "type":
                type_defs.append(self.parse_type_def())
            elif kind == "extern":
                type_defs.append(self.parse_extern_type())
            elif kind == "def":
                self.skip_def()
                continue
            else:
                return type_defs, skipped
            skipped[start] = self.pos

    def skip_def(self) -> None:
        """Move past `def @f ... { body }` by bracket matching (bodies are parsed in pass 2)."""
        self.advance()
        depth = 0
        while True:
            kind = self.tok.kind
            if kind == EOF:
                return  # pass 2 reports the unterminated definition precisely
            self.advance()
            if kind in _OPENERS:
                depth += 1
            elif kind in _CLOSERS:
                depth -= 1
                if depth <= 0 and kind == "}":
                    return

    def parse_type_def(self) -> TypeData:
        start = self.advance()  # `type`
        name_tok = self.expect(IDENT, "the name of the type")
        gtv = self.type_globals[name_tok.value]
        self.type_scopes.append({})
        try:
            type_vars = self.parse_type_params() if self.tok.kind == "[" else []
            ctors: list[Constructor] = []
            if self.accept("{") and not self.accept("}"):
                while True:
                    ctors.append(self.parse_constructor(gtv, len(ctors)))
                    if self.list_separator("}"):
                        break
        finally:
            self.type_scopes.pop()
        return TypeData(gtv, type_vars, ctors, span=self.span_from(start))

    def parse_constructor(self, gtv: GlobalTypeVar, tag: int) -> Constructor:
        tok = self.expect(IDENT, "a constructor name")
        inputs = []
        if self.accept("("):
            inputs = self.parse_type_list(")")
        other = self.constructors.get(tok.value)
        if other is not None:
            self.fail(f"duplicate constructor {tok.text}: already defined by type {other.belong_to.name_hint}", tok)
        ctor = Constructor(tok.value, inputs, gtv, tag, span=self.span_from(tok))
        self.constructors[tok.value] = ctor
        return ctor

    def parse_extern_type(self) -> TypeData:
        """`extern type T[A]`: as in TVM, a type definition without constructors (and an extern name)."""
        self.advance()  # `extern`
        self.expect("type", "`type` after `extern`")
        name_tok = self.expect(IDENT, "the name of the extern type")
        self.type_scopes.append({})
        try:
            params = self.parse_type_params() if self.tok.kind == "[" else []
        finally:
            self.type_scopes.pop()
        if self.tok.kind == "{":
            self.fail("an extern type may not have constructors")
        return TypeData(self.type_globals[name_tok.text], params, [])

    def parse_def(self, functions: dict) -> None:
        start = self.tok
        if start.kind != "def":
            self.fail(f"expected a function definition but found {describe(start)}")
        self.advance()
        name_tok = self.tok
        if name_tok.kind != GLOBAL:
            self.fail(f"expected a global function name (@name) after `def` but found {describe(name_tok)}")
        self.advance()
        if name_tok.value in functions:
            self.fail(f"duplicate global function {name_tok.text}", name_tok)
        self.scopes = [{}]
        self.type_scopes = [{}]
        self.all_graph_bindings = {}
        func = self.parse_function(start)
        functions[name_tok.value] = (GlobalVar(name_tok.value, span=self.span_of(name_tok)), func)

    def check_global_references(self, functions: dict) -> None:
        known = set(functions)
        if self.init_module is not None:
            known.update(gv.name_hint for gv in self.init_module.functions)
        for name, tok in self.global_refs.items():
            if name not in known:
                self.fail(f"undefined global function @{name}", tok)

    def build_module(self, type_defs: list[TypeData], functions: dict) -> IRModule:
        mod = self.init_module.copy() if self.init_module is not None else IRModule()
        for name, gtv in self.extern_names.items():
            mod.extern_types[name] = gtv
        for data in type_defs:
            try:
                mod.add_type_data(data.header, data)
            except ParseError:
                raise
            except Exception as exc:  # the module's own consistency checks
                raise ParseError(str(exc), data.span) from None
        for gv, func in functions.values():
            # Like TVM, a definition replaces a function of the same name in the initial module.
            mod.add(gv, func, update=True)
        return mod


def _names_an_operator(parser: Parser, tok: Token) -> bool:
    """A registered operator, or a namespaced one the registry lacks (`qnn.quantize`); a plain
    unknown word (`inf`, `letFalse`) is a mistake, not an operator."""
    name = tok.value
    if tok.text != name or name in parser.constructors or name in parser.type_globals:
        return False
    return parser.op_def(name) is not None or "." in name
