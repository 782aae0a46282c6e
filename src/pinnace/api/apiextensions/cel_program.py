"""CEL expressions of `x-kubernetes-validations`, compiled and evaluated with celpy as
apiextensions-apiserver v1.32 compiles and runs them with cel-go (apiserver/schema/cel/
compilation.go; the cost limits of k8s.io/apiserver/pkg/apis/cel/config.go).

celpy parses and interprets CEL but does not type-check it; compiling here refuses what cel-go
refuses for the common cases, in its words: syntax errors, references to undeclared variables
and functions, and expressions that are plainly not of the wanted type. Evaluation is metered:
each expression node evaluated costs one unit, as cel-go's runtime cost roughly counts them,
within cel-go's limits and a CPU-time limit, so a rule that runs away is stopped.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy import celparser, celtypes
from celpy.evaluation import Activation, CELEvalError, Evaluator, base_functions

from pinnace.api.apiextensions import cel_library

Tree = lark.Tree[Any]

PER_CALL_LIMIT = 1_000_000
"""celconfig.PerCallLimit: the cost one evaluation may spend."""
RUNTIME_COST_BUDGET = 10_000_000
"""celconfig.RuntimeCELCostBudget: the cost the rules of one custom resource may spend."""
PER_CALL_SECONDS = 1.0
RUNTIME_SECONDS = 5.0
"""The CPU time one evaluation, and the rules of one custom resource, may take. cel-go's
limits are meant to stop it after about 0.1 s and 1 s; celpy is some hundred times slower,
so its units alone would let a runaway rule hold the server for minutes."""
_CLOCK_EVERY = 64
"""Units spent between two looks at the CPU clock."""

_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter", "has", "dyn", "min"})
"""CEL's macros, and the list library's min(), which celpy evaluates as one of its own."""
_TYPE_NAMES = frozenset(
    {"bool", "bytes", "double", "int", "list", "map", "null_type", "string", "type", "uint"}
)
_FUNCTIONS = {**base_functions, **cel_library.functions()}
_NOT_BOOL = frozenset({"addition", "multiplication", "list_lit", "map_lit", "literal"})


class CompileError(Exception):
    """What cel-go's env.Compile reports, in its words (`ERROR: <input>:1:5: …`)."""


class CostExceeded(Exception):
    """An evaluation spent more than its limit."""


@dataclass(frozen=True)
class Program:
    text: str
    ast: Tree
    uses_old_self: bool
    runner: celpy.InterpretedRunner

    def evaluate(self, variables: dict[str, Any], meter: Meter) -> Any:
        """The expression's value, or a CELEvalError; CostExceeded past the meter's limit."""
        evaluator = _MeteredEvaluator(self.ast, self.runner.new_activation(), meter)
        try:
            return evaluator.evaluate(variables)
        except CELEvalError as e:
            return e


class Meter:
    """The cost spent by one evaluation, and its limits: units and a CPU time deadline
    (`time.thread_time`, which other threads' and processes' load does not move)."""

    __slots__ = ("deadline", "limit", "spent")

    def __init__(self, limit: int, seconds: float) -> None:
        self.limit = limit
        self.spent = 0
        self.deadline = time.thread_time() + seconds

    def charge(self) -> None:
        self.spent += 1
        if self.spent > self.limit:
            raise CostExceeded
        if self.spent % _CLOCK_EVERY == 0 and time.thread_time() > self.deadline:
            raise CostExceeded


class _MeteredEvaluator(Evaluator):
    """celpy's interpreter, charging the meter for each node that is not a mere wrapper of
    the next (the grammar nests one node per precedence level)."""

    def __init__(self, ast: Tree, activation: Activation, meter: Meter) -> None:
        super().__init__(ast, activation)
        self.meter = meter

    def _visit_tree(self, tree: Tree) -> Any:
        children = tree.children
        if len(children) != 1 or not isinstance(children[0], lark.Tree):
            self.meter.charge()
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: Tree) -> Evaluator:
        return _MeteredEvaluator(ast, self.activation, self.meter)


@functools.cache
def _environment() -> celpy.Environment:
    """celpy's environment, made on first use: it builds the CEL grammar's parser, which
    takes a noticeable part of a second."""
    return celpy.Environment()


@functools.lru_cache(maxsize=4096)
def compile_expression(text: str, variables: frozenset[str], result: str) -> Program:
    """`text` compiled against `variables` (self, oldSelf), to give a `result` ("bool" or
    "string"); a CompileError as cel-go words it."""
    try:
        ast = _environment().compile(text)
    except celparser.CELParseError as e:
        raise CompileError(_syntax_error(text, e)) from None
    problems = list(_undeclared(ast, text, variables, frozenset()))
    if problems:
        raise CompileError("\n".join(_issue(text, at, message) for at, message in problems))
    if result == "bool" and _root_kind(ast) in _NOT_BOOL:
        raise CompileError("cel expression must evaluate to a bool")
    runner = celpy.InterpretedRunner(_environment(), ast, _FUNCTIONS)
    return Program(text, ast, "oldSelf" in _free_names(ast), runner)


def _issue(text: str, at: int, message: str) -> str:
    """One of cel-go's issues: the location, the message and the line under a caret."""
    line_no = text.count("\n", 0, at) + 1
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start : end if end >= 0 else len(text)]
    column = at - start
    return f"ERROR: <input>:{line_no}:{column + 1}: {message}\n | {line}\n | {'.' * column}^"


def _syntax_error(text: str, error: celparser.CELParseError) -> str:
    """ANTLR's words as cel-go reports them, without the list of tokens it expected."""
    cause = error.__context__
    if isinstance(cause, lark.exceptions.UnexpectedCharacters):
        at = cause.pos_in_stream or 0
        return _issue(text, at, f"Syntax error: token recognition error at: '{text[at]}'")
    token = cause.token if isinstance(cause, lark.exceptions.UnexpectedToken) else None
    if token is None or token.type == "$END":
        return _issue(text, len(text), "Syntax error: mismatched input '<EOF>'")
    return _issue(text, token.start_pos or 0, f"Syntax error: mismatched input '{token}'")


def _undeclared(tree: Tree, text: str, variables: frozenset[str], bound: frozenset[str]) -> Any:
    """(position, message) of each reference cel-go's checker would not resolve."""
    kind = tree.data
    if kind in ("ident", "dot_ident"):
        name = _token(tree.children[0])
        if name not in variables and name not in bound and name not in _TYPE_NAMES:
            yield name.start_pos, _undeclared_message(name)
        return
    if kind in ("ident_arg", "dot_ident_arg"):
        name = _token(tree.children[0])
        if name not in _FUNCTIONS and name not in _MACROS and name not in _TYPE_NAMES:
            yield _open_paren(text, name), _undeclared_message(name)
    if kind == "member_dot_arg":
        target, name = tree.children[0], _token(tree.children[1])
        arguments = tree.children[2].children if len(tree.children) > 2 else []
        if name in _MACROS and arguments and _simple_name(arguments[0]):
            yield from _undeclared(target, text, variables, bound)
            inner = bound | {_simple_name(arguments[0]) or ""}
            for argument in arguments[1:]:
                yield from _undeclared(argument, text, variables, inner)
            return
        if name not in _FUNCTIONS and name not in _MACROS:
            yield _open_paren(text, name), _undeclared_message(name)
    for child in tree.children:
        if isinstance(child, lark.Tree):
            yield from _undeclared(child, text, variables, bound)


def _token(node: Any) -> lark.Token:
    assert isinstance(node, lark.Token)  # the grammar puts an IDENT here
    return node


def _undeclared_message(name: lark.Token) -> str:
    return f"undeclared reference to '{name}' (in container '')"


def _open_paren(text: str, name: lark.Token) -> int:
    """cel-go places a call at its opening parenthesis."""
    at = text.find("(", name.end_pos or 0)
    return at if at >= 0 else name.start_pos or 0


def _simple_name(tree: Any) -> str | None:
    """The identifier `tree` is and nothing more (a macro's variable), if it is one."""
    while isinstance(tree, lark.Tree) and len(tree.children) == 1:
        if tree.data == "ident":
            return str(tree.children[0])
        tree = tree.children[0]
    return None


def _free_names(tree: Tree) -> set[str]:
    return {str(t.children[0]) for t in tree.find_data("ident")}


def _root_kind(tree: Tree) -> str:
    """The first node below the root that does more than wrap the next one."""
    while len(tree.children) == 1 and isinstance(tree.children[0], lark.Tree):
        tree = tree.children[0]
    if tree.data == "literal" and getattr(tree.children[0], "type", "") == "BOOL_LIT":
        return "bool"
    return str(tree.data)


def is_true(value: Any) -> bool:
    return isinstance(value, celtypes.BoolType) and bool(value)


def error_message(error: CELEvalError) -> str:
    """cel-go's words for an evaluation error (`no such key: x`, `integer overflow`)."""
    message = str(error.args[0]) if error.args else ""
    cause = error.args[1] if len(error.args) > 1 else None
    details = error.args[2] if len(error.args) > 2 else ()
    if cause is cel_library.LibraryError:
        return message
    if cause is KeyError:
        if message.startswith("no such member in mapping: "):
            return "no such key: " + message.removeprefix("no such member in mapping: ").strip("'")
        if details:
            return f"no such key: {details[0]}"
        return "no such key"
    if cause is IndexError:
        return f"index out of bounds: {details[0]}" if details else "index out of bounds"
    if cause is ZeroDivisionError:
        return "division by zero"
    if cause is ValueError and "overflow" in message:
        return "integer overflow"
    if message.startswith("Attempt to reduce an empty sequence"):
        return "min(list) argument must not be empty"
    return "no such overload"
