"""JSONata templates with a deterministic clock.

A template is any JSON value. Objects and lists are evaluated leaf by leaf
(keys are literal); a string that is *entirely* ``{% expr %}`` is a JSONata
expression; every other value is a literal. A missing path reads as ``None``.

``$now()`` and ``$millis()`` are bound per call to the decision time passed in
(``now_ms``), never the wall clock, so a replay sees the same values; ``$random()``
and ``$shuffle()`` are drawn from that time and the execution, never a random source.

Step references (:func:`references`) are found on the parsed expression, not
with a regex: any path that starts at ``steps`` (optionally after ``$`` or
``$$``) and continues with a name (``steps.charge``, ``steps.`my-step```,
``steps.'charge'``) reads that step. A path like ``steps.*``,
``$lookup(steps, x)`` or ``$keys(steps)`` reads steps without naming one; that
is reported by :func:`reads_steps_dynamically` so validation can refuse it
where it would make an ordering invisible.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import jsonata
from jsonata.functions import Functions
from jsonata.jexception import JException
from jsonata.parser import Parser

from orbit.core.definition.expression_budget import (
    MAX_EXPRESSION_LENGTH,
    Budget,
    BudgetedJsonata,
    BudgetExceeded,
    ast_symbols,
    budgeted,
    check_literal_ranges,
    regex_engine,
)
from orbit.core.definition.expression_errors import habit_hint, named_values, plain_message
from orbit.errors import ExpressionError

__all__ = (
    "ExpressionError", "evaluate", "expression_references", "expression_text", "expressions_in",
    "is_expression",
    "parse_expression", "reads_steps_dynamically", "references", "root_names",
)

_OPEN, _CLOSE = "{%", "%}"


def is_expression(value: Any) -> bool:
    return (isinstance(value, str) and len(value) >= 4
            and value.startswith(_OPEN) and value.endswith(_CLOSE))


def expression_text(value: str) -> str:
    """The JSONata source inside ``{% ... %}``."""
    return value[2:-2].strip()


def expressions_in(template: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Yield ``(path, expression text)`` for every expression leaf, paths like ``a.b[0]``."""
    if is_expression(template):
        yield path, expression_text(template)
    elif isinstance(template, dict):
        for key, item in template.items():
            yield from expressions_in(item, f"{path}.{key}" if path else str(key))
    elif isinstance(template, list):
        for index, item in enumerate(template):
            yield from expressions_in(item, f"{path}[{index}]")


@lru_cache(maxsize=4096)
def _compile(text: str) -> jsonata.Jsonata:
    if not text:
        raise ExpressionError("empty expression")
    if len(text) > MAX_EXPRESSION_LENGTH:  # parsing cost grows faster than the text
        raise ExpressionError(f"expression of {len(text)} characters, more than {MAX_EXPRESSION_LENGTH}")
    try:
        compiled = jsonata.Jsonata(text, regex_engine)
    except JException as exc:
        raise ExpressionError(f"{_jmessage(exc)} in {text!r}{habit_hint(text)}") from None
    except ExpressionError as exc:  # the regex engine refused a pattern
        raise ExpressionError(f"{exc} in {text!r}") from None
    except RecursionError:
        raise ExpressionError(f"expression nested too deeply: {text[:80]!r}") from None
    except Exception as exc:  # noqa: BLE001 - the parser has rough edges (e.g. IndexError on some inputs)
        raise ExpressionError(f"cannot parse {text!r}: {type(exc).__name__}: {exc}") from None
    if compiled.errors:
        raise ExpressionError(f"{_jmessage(compiled.errors[0])} in {text!r}{habit_hint(text)}")
    try:
        check_literal_ranges(compiled.ast)
    except ExpressionError as exc:
        raise ExpressionError(f"{exc} in {text!r}") from None
    # Input validation walks the whole root on every call (O(size of history));
    # our roots are built from JSON values, so the walk buys nothing.
    compiled.set_validate_input(False)
    return compiled


MAX_RUNNERS = 4096  # compiled runners one meter keeps


class Meter:
    """What a series of evaluations shares (one decision's, say): the evaluation steps they spent
    (the decider bounds a decision by them) and the runners they used, one per expression text
    (evaluation mutates a runner, so a meter serves one evaluation at a time, on one thread)."""

    def __init__(self) -> None:
        self.spent = 0
        self.runners: dict[str, BudgetedJsonata] = {}

    def runner(self, text: str) -> BudgetedJsonata:
        runner = self.runners.get(text)
        if runner is None:
            if len(self.runners) >= MAX_RUNNERS:
                self.runners.clear()
            runner = self.runners[text] = budgeted(_compile(text))
        return runner


def parse_expression(text: str) -> jsonata.Jsonata:
    """Compile ``text`` (the inside of ``{% %}``, or a whole ``{% %}`` string); raise
    :class:`ExpressionError` with JSONata's message and position on a syntax error."""
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be a string, not {type(text).__name__}")
    return _compile(expression_text(text) if is_expression(text) else text.strip())


def evaluate(template: Any, root: dict[str, Any], now_ms: int, meter: Meter | None = None) -> Any:
    """Evaluate ``template`` against ``root``; raise :class:`ExpressionError` on failure. `meter`:
    where the steps spent are counted and the runners kept (a decision's); None: a fresh one."""
    bindings = {**_clock_bindings(now_ms), **_draw_bindings(now_ms, root)}
    return _evaluate(template, root, bindings, "", meter if meter is not None else Meter())


def _evaluate(template: Any, root: Any, bindings: dict[str, Any], path: str, meter: Meter) -> Any:
    if isinstance(template, str):
        if not is_expression(template):
            return template
        return _evaluate_one(template, root, bindings, path, meter)
    if isinstance(template, dict):
        return {key: _evaluate(item, root, bindings, f"{path}.{key}" if path else str(key), meter)
                for key, item in template.items()}
    if isinstance(template, list):
        return [_evaluate(item, root, bindings, f"{path}[{i}]", meter) for i, item in enumerate(template)]
    return template


def _evaluate_one(template: str, root: Any, bindings: dict[str, Any], path: str, meter: Meter) -> Any:
    where = f"{path}: " if path else ""
    try:
        compiled = meter.runner(expression_text(template))
    except ExpressionError as exc:
        raise ExpressionError(f"{where}{exc}") from None
    # jsonata evaluates on a per-thread "current" instance (and higher-order
    # functions call back into it); make that the meter's copy of this one.
    jsonata.Jsonata.CURRENT.jsonata = compiled
    budget = compiled.budget = Budget()
    try:
        try:
            result = compiled.evaluate(root, bindings)
            budget.check_size(result)
        finally:
            meter.spent += budget.steps
    except BudgetExceeded as exc:
        raise ExpressionError(f"{where}{exc} in {_short(template)}") from None
    except Exception as exc:  # noqa: BLE001 - any evaluation failure becomes an EXPRESSION_ERROR
        if budget.exceeded is not None:  # wrapped by jsonata (e.g. inside $eval): report the budget
            raise ExpressionError(f"{where}{budget.exceeded} in {_short(template)}") from None
        raise _plain_error(exc, where, template, root) from None
    try:
        return _to_json(result)
    except ValueError as exc:
        raise ExpressionError(f"{where}{exc} in {template!r}") from None


def _short(template: str) -> str:
    return repr(template) if len(template) <= 200 else repr(template[:200]) + "..."


def _plain_error(exc: Exception, where: str, template: str, root: Any = None) -> ExpressionError:
    if isinstance(exc, JException):  # naming the values it read: `(input.amount is "x", a string)`
        named = named_values(expression_text(template), root, getattr(exc, "location", None),
                             getattr(exc, "error", None))
        return ExpressionError(f"{where}{_jmessage(exc)} in {_short(template)}{named}")
    if isinstance(exc, RecursionError):
        return ExpressionError(f"{where}expression recursed too deeply: {_short(template)}")
    if isinstance(exc, ExpressionError):  # a regular expression refused at run time ($eval's text)
        return ExpressionError(f"{where}{exc}")
    # e.g. ZeroDivisionError, ValueError from $number('x')
    named = named_values(expression_text(template), root)
    return ExpressionError(f"{where}{plain_message(exc)} in {_short(template)}{named}")


def _clock_bindings(now_ms: int) -> dict[str, Any]:
    def now(picture: str | None = None, timezone: str | None = None) -> str | None:
        text: str | None = Functions.datetime_from_millis(now_ms, picture, timezone)
        return text

    def millis() -> int:
        return now_ms

    return {"now": jsonata.Jsonata.JLambda(now), "millis": jsonata.Jsonata.JLambda(millis)}


def _draw_bindings(now_ms: int, root: Any) -> dict[str, Any]:
    """``$random()`` and ``$shuffle()`` drawn from a hash of the decision time, the
    execution, the ``for`` index and a call count, instead of Python's random source:
    deciding twice on the same arguments gives the same values (the core is pure)."""
    execution = root.get("execution") if isinstance(root, dict) else None
    seed = "|".join(
        (
            str(now_ms),
            str(execution.get("id") if isinstance(execution, dict) else ""),
            str(root.get("index") if isinstance(root, dict) else ""),
        )
    )
    calls = [0]

    def random() -> float:
        calls[0] += 1
        digest = hashlib.sha256(f"{seed}|{calls[0]}".encode()).digest()
        return int.from_bytes(digest[:7], "big") / float(1 << 56)

    def shuffle(arg: Any) -> Any:
        if arg is None:
            return None
        items = list(arg) if isinstance(arg, list) else [arg]
        for i in range(len(items) - 1, 0, -1):  # Fisher-Yates on the deterministic draws
            j = int(random() * (i + 1))
            items[i], items[j] = items[j], items[i]
        return items

    return {"random": jsonata.Jsonata.JLambda(random), "shuffle": jsonata.Jsonata.JLambda(shuffle)}


def _to_json(value: Any) -> Any:
    """Plain JSON values: jsonata's list subclasses become lists, integral floats ints."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"result {value} is not a JSON number")
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if value is jsonata.Utils.NULL_VALUE:
        return None
    raise ValueError(f"result of type {type(value).__name__} is not a JSON value (a function?)")


def _jmessage(exc: BaseException) -> str:
    code = getattr(exc, "error", None)
    location = getattr(exc, "location", None)
    message = str(exc) or repr(exc)
    suffix = []
    if code:
        suffix.append(str(code))
    if isinstance(location, int) and location >= 0:
        suffix.append(f"at position {location}")
    return f"{message} ({', '.join(suffix)})" if suffix else message


# --- step references -------------------------------------------------------


def references(template: Any) -> set[str]:
    """Step names read through ``steps.NAME`` anywhere in ``template``.

    Expressions that do not parse contribute nothing (validation reports them)."""
    names: set[str] = set()
    for _, text in expressions_in(template):
        names |= _expression_refs(text, "steps")[0]
    return names


def expression_references(text: str, root: str = "steps") -> tuple[frozenset[str], bool]:
    """For one expression's text: (names read statically as ``ROOT.NAME``, whether ``ROOT``
    is read without a static name). ``root`` is ``steps`` or ``hooks``."""
    return _expression_refs(text, root)


def reads_steps_dynamically(template: Any) -> bool:
    """True when some expression reads ``steps`` without a static step name."""
    return any(_expression_refs(text, "steps")[1] for _, text in expressions_in(template))


# The analyses keep small results for every expression of a definition of up to 20,000 steps
# (docs/limits.md); a smaller cache would re-parse each expression once per validation pass.
@lru_cache(maxsize=65536)
def _expression_refs(text: str, root: str = "steps") -> tuple[frozenset[str], bool]:
    try:
        ast = _compile(text).ast
    except ExpressionError:
        return frozenset(), False
    names: set[str] = set()
    dynamic = False
    for path_steps in _paths(ast):
        head = list(path_steps)
        # "$" (context) and "$$" (root) before the name still mean the root here.
        while head and head[0].type == "variable" and head[0].value in ("", "$"):
            head.pop(0)
        if not head or head[0].type != "name" or head[0].value != root:
            continue
        if head[0].stages or head[0].predicate:  # steps[...]: a filter, not a name
            dynamic = True
            continue
        if len(head) >= 2 and head[1].type == "name" and isinstance(head[1].value, str):
            names.add(head[1].value)
        elif len(head) >= 2 and head[1].type == "string" and isinstance(head[1].value, str):
            names.add(head[1].value)
        else:
            dynamic = True
    return frozenset(names), dynamic


def _paths(node: Any) -> Iterator[list[Any]]:
    """Every path's list of steps in the AST (a lone name is a one-step path)."""
    members: set[int] = set()  # names that are steps of a path already yielded
    for current in ast_symbols(node):
        if current.type == "path" and current.steps:
            members.update(id(step) for step in current.steps)
            yield list(current.steps)
        elif current.type == "name" and id(current) not in members:
            yield [current]


# Attributes whose expressions run against a nested context (a filter, a group
# or sort term, a transform), not against the expression root.
_RELATIVE_ATTRS = frozenset({"stages", "predicate", "group", "terms", "pattern", "update", "delete"})


@lru_cache(maxsize=65536)
def root_names(text: str) -> frozenset[str]:
    """Field names read from the expression root (``input`` in ``input.x``, ``inputs``
    in a typo). Paths inside filters, group/sort terms, transforms and after the first
    step of a path read a nested context and are not counted; ``$$.name`` always is.
    Unparsable text gives an empty set."""
    try:
        ast = _compile(text).ast
    except ExpressionError:
        return frozenset()
    names: set[str] = set()
    seen: set[int] = set()
    members: set[int] = set()
    stack: list[tuple[Any, bool]] = [(ast, True)]
    while stack:
        current, at_root = stack.pop()
        if isinstance(current, (list, tuple)):
            stack.extend((item, at_root) for item in current)
            continue
        if not isinstance(current, Parser.Symbol) or id(current) in seen:
            continue
        seen.add(id(current))
        if current.type == "path" and current.steps:
            steps = list(current.steps)
            members.update(id(step) for step in steps)
            head, rooted = 0, at_root
            while head < len(steps) and steps[head].type == "variable" and steps[head].value in ("", "$"):
                rooted = rooted or steps[head].value == "$"  # `$$` is the root wherever it is
                head += 1
            first = steps[head] if head < len(steps) else None
            if rooted and first is not None and first.type == "name" and isinstance(first.value, str):
                names.add(first.value)
            stack.append((steps[0], at_root))
            stack.extend((step, False) for step in steps[1:])
        elif current.type == "name" and id(current) not in members and at_root:
            if isinstance(current.value, str):
                names.add(current.value)
        for attr, value in vars(current).items():
            if attr in ("_outer_instance", "tuple", "seeking_parent", "steps"):
                continue
            if isinstance(value, (Parser.Symbol, list, tuple)):
                stack.append((value, False if attr in _RELATIVE_ATTRS else at_root))
    return frozenset(names)
