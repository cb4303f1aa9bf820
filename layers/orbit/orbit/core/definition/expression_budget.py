"""The budget every JSONata expression runs on.

A definition and its inputs come from callers, so an expression may try to run forever
(``$eval`` of a recursive function taken from the input, a tail-recursive lambda), to
recurse until the stack breaks, to build a string or an array as large as memory, or to
make a regular expression backtrack for hours. Each of those would hold a decider until
its Lambda timeout on every redelivery. One evaluation therefore gets a budget:

- **steps**: evaluation steps (each node the evaluator enters, inside ``$eval`` too);
- **depth**: nested evaluations (recursion);
- **string** and **array** sizes: every intermediate result is checked as it is produced,
  and the built-ins that can make a large value from small arguments (``$pad``,
  ``$replace``, ``$join``, ranges ``[a..b]``, ``$eval``'s text) are checked before they run;
- **regular expressions**: each runs on RE2 (linear time: no backtracking, so no
  catastrophic pattern) when the ``google-re2`` package is installed, and on at most
  ``MAX_REGEX_INPUT`` characters either way.

Counting steps rather than seconds keeps the core deterministic: the same expression on
the same root runs out at the same place on every replay. Running out raises
:class:`BudgetExceeded`, which names the budget; the evaluator turns it into an
``EXPRESSION_ERROR``. The limits are documented in docs/limits.md.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import jsonata
from jsonata.parser import Parser
from jsonata.utils import Utils

from orbit.errors import ExpressionError

MAX_STEPS = 50_000  # about 1 s of evaluation on a busy 2-core machine, 0.2-0.5 s on an idle one
MAX_DEPTH = 150
MAX_STRING = 1_000_000  # characters
MAX_ARRAY = 1_000_000  # elements; also the range operator's limit, as JSONata's D2014 message says
# What all intermediate results of one evaluation add up to: a bound on the memory and time
# spent building values, where the per-value limits alone would allow a million 1 MB strings.
MAX_TOTAL_CHARS = 20_000_000
MAX_TOTAL_ELEMENTS = 2_000_000
MAX_DISTINCT = 10_000  # $distinct compares every pair (it must: values may be objects)
MAX_REGEX_INPUT = 100_000  # characters a regular expression may be applied to
MAX_REGEX_PATTERN = 1_000  # characters in one regular expression
MAX_EXPRESSION_LENGTH = 10_000  # characters in one expression (a definition's, or $eval's text)


class BudgetExceeded(ExpressionError):
    def __init__(self, budget: str, detail: str) -> None:
        self.budget = budget
        super().__init__(f"expression budget exceeded: {budget} ({detail})")


class Budget:
    """One evaluation's counters; `entry`/`exit` are the evaluator's callbacks."""

    def __init__(self) -> None:
        self.steps = 0
        self.depth = 0
        self.chars = 0
        self.elements = 0
        self._counted: set[int] = set()  # a value passed up through several nodes counts once
        self.exceeded: BudgetExceeded | None = None

    def fail(self, budget: str, detail: str) -> BudgetExceeded:
        # Sticky: jsonata wraps errors inside $eval (D3121); the first one found is what we report.
        if self.exceeded is None:
            self.exceeded = BudgetExceeded(budget, detail)
        return self.exceeded

    def entry(self, expr: Any, input: Any, env: Any) -> None:
        if self.exceeded is not None:
            raise self.exceeded
        self.steps += 1
        self.depth += 1
        if self.steps > MAX_STEPS:
            raise self.fail("steps", f"more than {MAX_STEPS} evaluation steps")
        if self.depth > MAX_DEPTH:
            raise self.fail("depth", f"nested more than {MAX_DEPTH} evaluations deep (runaway recursion?)")

    def exit(self, expr: Any, input: Any, env: Any, result: Any) -> None:
        self.depth -= 1
        self.check_size(result)

    def check_size(self, value: Any) -> None:
        if isinstance(value, str):
            if len(value) > MAX_STRING:
                raise self.fail("string size", f"a string of {len(value)} characters, more than {MAX_STRING}")
            if len(value) < 64 or id(value) in self._counted:
                return
            self._counted.add(id(value))
            self.chars += len(value)
            if self.chars > MAX_TOTAL_CHARS:
                raise self.fail("total string size", f"results adding up to over {MAX_TOTAL_CHARS} chars")
        elif isinstance(value, list):
            # jsonata's lazy range list reports one element more than it yields
            n = value.b - value.a if isinstance(value, Utils.RangeList) else len(value)
            if n > MAX_ARRAY:
                raise self.fail("array size", f"an array of {n} elements, more than {MAX_ARRAY}")
            if n < 64 or id(value) in self._counted:
                return
            self._counted.add(id(value))
            self.elements += n
            if self.elements > MAX_TOTAL_ELEMENTS:
                raise self.fail("total array size", f"results adding up to over {MAX_TOTAL_ELEMENTS} items")

    def check_range(self, size: int) -> None:
        if size > MAX_ARRAY:
            raise self.fail("array size", f"a range of {size} elements, more than {MAX_ARRAY}")

    def check_text(self, what: str, length: int, limit: int) -> None:
        if length > limit:
            raise self.fail(f"{what} size", f"{length} characters, more than {limit}")


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list)) else 0


def _check_pad(budget: Budget, args: list[Any]) -> None:
    width = args[1] if len(args) > 1 else None
    if isinstance(width, (int, float)) and not isinstance(width, bool) and abs(width) > MAX_STRING:
        raise budget.fail("string size", f"$pad to {int(abs(width))} characters, more than {MAX_STRING}")


def _check_replace(budget: Budget, args: list[Any]) -> None:
    string, pattern, replacement = (list(args) + [None, None, None])[:3]
    if not (isinstance(string, str) and isinstance(replacement, str) and replacement):
        return
    if len(string) + (len(string) + 1) * len(replacement) <= MAX_STRING:
        return  # even a match at every position stays within the budget
    if isinstance(pattern, str):
        matches = string.count(pattern) if pattern else 0
    elif isinstance(pattern, GuardedPattern):
        matches = sum(1 for _ in pattern.finditer(string))
    else:
        return
    made = len(string) + matches * len(replacement)
    if made > MAX_STRING:
        raise budget.fail("string size", f"$replace would make {made} characters, more than {MAX_STRING}")


def _check_join(budget: Budget, args: list[Any]) -> None:
    strs = args[0] if args else None
    separator = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
    if isinstance(strs, list):
        made = sum(_size(s) for s in strs) + len(separator) * max(len(strs) - 1, 0)
        if made > MAX_STRING:
            raise budget.fail("string size", f"$join would make {made} characters, more than {MAX_STRING}")


def _check_eval(budget: Budget, args: list[Any]) -> None:
    text = args[0] if args else None
    if isinstance(text, str):
        budget.check_text("$eval expression", len(text), MAX_EXPRESSION_LENGTH)


def _check_distinct(budget: Budget, args: list[Any]) -> None:
    arr = args[0] if args else None
    if isinstance(arr, list) and len(arr) > MAX_DISTINCT:
        raise budget.fail("array size", f"$distinct of {len(arr)} elements, more than {MAX_DISTINCT}")


_CHECKS = MappingProxyType({
    "distinct": _check_distinct, "pad": _check_pad, "replace": _check_replace, "join": _check_join,
    "eval": _check_eval,
})


class _Guarded(jsonata.Jsonata.JNativeFunction):  # type: ignore[misc]  # jsonata is untyped
    """A built-in that checks the size it is about to make before the real one runs (after the
    signature has validated and coerced its arguments, as for the built-in itself)."""

    def __init__(self, original: Any, check: Any, runner: BudgetedJsonata) -> None:  # copies the built-in
        self.__dict__.update(original.__dict__)
        self._check = check
        self._runner = runner

    def call(self, input: Any, args: Any) -> Any:
        self._check(self._runner.budget, list(args) if isinstance(args, (list, tuple)) else [])
        return super().call(input, args)


class BudgetedJsonata(jsonata.Jsonata):  # type: ignore[misc]  # jsonata is untyped
    """A compiled expression whose ranges ``[a..b]`` respect the array budget and whose
    function applications have their results checked (a call in a lambda's tail position is
    run by jsonata's trampoline, outside the evaluator's exit callback). `budget`: the running
    evaluation's, set by the evaluator before it runs (one evaluation at a time per runner)."""

    budget: Budget

    def evaluate_range_expression(self, lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, int) and isinstance(rhs, int) and not isinstance(lhs, bool) \
                and not isinstance(rhs, bool) and rhs >= lhs:
            self.budget.check_range(rhs - lhs + 1)
        return super().evaluate_range_expression(lhs, rhs)

    def apply_inner(self, proc: Any, args: Any, input: Any, environment: Any) -> Any:
        result = super().apply_inner(proc, args, input, environment)
        self.budget.check_size(result)
        return result


# Parent links, which would walk back up the tree.
_PARENT_ATTRS = frozenset({"_outer_instance", "tuple", "seeking_parent"})


def ast_symbols(ast: Any) -> Iterator[Any]:
    """Every node (a jsonata Parser.Symbol) of a parsed expression, each once, a node before the
    nodes below it."""
    stack, seen = [ast], set()
    while stack:
        node = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend(node)
            continue
        if not isinstance(node, Parser.Symbol) or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        for attr, value in vars(node).items():
            if attr not in _PARENT_ATTRS and isinstance(value, (Parser.Symbol, list, tuple)):
                stack.append(value)


def check_literal_ranges(ast: Any) -> None:
    """Refuse a range whose bounds are written in the expression and span more than MAX_ARRAY, so
    `[1..10000000]` is refused by validation, not only when it runs."""
    for node in ast_symbols(ast):
        if node.type == "binary" and node.value == ".." and getattr(node.lhs, "type", None) == "number" \
                and getattr(node.rhs, "type", None) == "number":
            size = int(node.rhs.value) - int(node.lhs.value) + 1
            if size > MAX_ARRAY:
                raise ExpressionError(f"the range [{node.lhs.value}..{node.rhs.value}] has {size} elements, "
                                      f"more than {MAX_ARRAY}")


def budgeted(compiled: jsonata.Jsonata) -> BudgetedJsonata:
    """A copy of `compiled` (evaluation mutates the instance) with its own environment frame,
    in which the budget's callbacks and the guarded built-ins are bound; they read the runner's
    `budget`, which the evaluator sets before each evaluation. The frame is the one ``$eval``
    evaluates in, so the text it runs is budgeted too."""
    runner: BudgetedJsonata = copy.copy(compiled)
    runner.__class__ = BudgetedJsonata
    runner.budget = Budget()
    env = runner.create_frame(jsonata.Jsonata.static_frame)
    env.set_evaluate_entry_callback(lambda expr, input, e: runner.budget.entry(expr, input, e))
    env.set_evaluate_exit_callback(lambda expr, input, e, result: runner.budget.exit(expr, input, e, result))
    for name, check in _CHECKS.items():
        original = jsonata.Jsonata.static_frame.lookup(name)
        if original is not None:
            env.bind(name, _Guarded(original, check, runner))
    runner.environment = env
    return runner


# --- regular expressions -----------------------------------------------------

try:  # RE2 runs in time linear in the input: no pattern can backtrack catastrophically.
    import re2 as _re2  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:  # pragma: no cover - google-re2 is a pinned dependency
    _re2 = None


class GuardedPattern:
    """A compiled JSONata regex that refuses inputs over ``MAX_REGEX_INPUT`` characters."""

    def __init__(self, compiled: Any, source: str) -> None:
        self._compiled = compiled
        self.pattern = source

    def _check(self, string: Any) -> None:
        if isinstance(string, str) and len(string) > MAX_REGEX_INPUT:
            raise BudgetExceeded(
                "regular expression input size",
                f"/{self.pattern[:40]}/ applied to {len(string)} characters, more than {MAX_REGEX_INPUT}",
            )

    def search(self, string: str, *args: Any) -> Any:
        self._check(string)
        return self._compiled.search(string, *args)

    def match(self, string: str, *args: Any) -> Any:
        self._check(string)
        return self._compiled.match(string, *args)

    def finditer(self, string: str, *args: Any) -> Any:
        self._check(string)
        return self._compiled.finditer(string, *args)

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        self._check(string)
        return self._compiled.sub(repl, string, count)  # type: ignore[no-any-return]

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        self._check(string)
        return self._compiled.split(string, maxsplit)  # type: ignore[no-any-return]


def regex_engine(pattern: str, flags: Any) -> GuardedPattern:
    """jsonata's pluggable regex engine: RE2 (linear time) behind the input-size guard."""
    prefix = ("i" if flags.case_insensitive else "") + ("m" if flags.multiline else "")
    if _re2 is None:
        _check_length(pattern)
        py_flags = (re.IGNORECASE if flags.case_insensitive else 0) | (re.MULTILINE if flags.multiline else 0)
        return GuardedPattern(re.compile(pattern, py_flags), pattern)
    return GuardedPattern(linear_regex(pattern, prefix), pattern)


def linear_regex(pattern: str, prefix: str = "") -> Any:
    """`pattern` compiled on RE2, which matches in time linear in its input (no pattern can
    backtrack catastrophically), with the inline flags `prefix` ("i", "m"). Raises ExpressionError
    for a pattern over MAX_REGEX_PATTERN characters or one RE2 does not support (backreferences,
    lookaround). Used by JSONata's regexes and by task contracts' `pattern` (core/definition/contracts)."""
    _check_length(pattern)
    if _re2 is None:  # pragma: no cover - google-re2 is a pinned dependency
        return re.compile(f"(?{prefix}){pattern}" if prefix else pattern)
    options = _re2.Options()
    options.max_mem = 8 << 20  # RE2's own memory bound for the compiled automaton
    options.log_errors = False  # a refused pattern is reported to the author, not to stderr
    try:
        return _re2.compile(f"(?{prefix}){pattern}" if prefix else pattern, options)
    except _re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ExpressionError(
            f"regular expression /{pattern[:60]}/ is not supported: {reason} (Orbit runs regular "
            "expressions on RE2: no backreferences or lookaround)"
        ) from None


def _check_length(pattern: str) -> None:
    if len(pattern) > MAX_REGEX_PATTERN:
        raise ExpressionError(f"regular expression of {len(pattern)} chars, more than {MAX_REGEX_PATTERN}")
