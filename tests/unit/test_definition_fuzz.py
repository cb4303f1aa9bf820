"""Fuzz: no document makes validation or parsing raise anything but ValidationError,
and whatever validates also builds (no crash after a clean validation)."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from orbit.core.definition import Definition, parse_definition, parse_text, validate_definition
from orbit.core.definition.model import STEP_KINDS
from orbit.core.definition.steps_check import COMMON_KEYS, HTTP_KEYS, RETRY_KEYS
from orbit.core.definition.validate import TOP_KEYS
from orbit.errors import Problem, ValidationError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["1s", "5m", "P7D", "0s", "soon", "{% input.x %}", "{% steps.a.output %}",
                     "{% steps.b.output %}", "{% $keys(steps) %}", "{% ( %}", "{% %}", "a {% x %}",
                     "GET", "POST", "https://example.com", "a", "b", "c", "none", "full", "continue",
                     "{% steps.zz.output %}", "{% [1,2] %}", "{% item %}"]),
    st.just(datetime.date(2024, 1, 1)),
)
json_like = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers(0, 3)), inner, max_size=3),
), max_leaves=12)


def body_of(keys: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), json_like, max_size=5)


step_keys = STEP_KINDS + COMMON_KEYS
step = st.one_of(
    body_of(step_keys),
    st.fixed_dictionaries({"task": st.sampled_from(["t", "u"])}, optional={
        "after": st.lists(st.sampled_from(["a", "b", "c", "zz"]), max_size=3),
        "input": json_like, "when": json_like, "for": json_like, "concurrency": json_like,
        "retry": st.one_of(body_of(RETRY_KEYS), json_like), "timeout": json_like,
        "compensate": st.one_of(body_of(step_keys), json_like), "on_failure": json_like,
    }),
    st.fixed_dictionaries({"http": st.one_of(body_of(HTTP_KEYS), json_like)}),
    st.fixed_dictionaries({"sleep": st.one_of(json_like, st.fixed_dictionaries({"until": json_like}))}),
    json_like,
)
# Mostly valid definitions, so the "validates, then builds" path is exercised too.
expressions = st.sampled_from(["{% input.x %}", "{% steps.a.output %}", "{% steps.b.status %}",
                               "{% $now() %}", "{% [1, 2, 3] %}", "{% item %}"])
good_step = st.one_of(
    st.fixed_dictionaries({"task": st.just("t")}, optional={
        "input": st.dictionaries(st.sampled_from(["x", "y"]), expressions, max_size=2),
        "retry": st.fixed_dictionaries({}, optional={
            "max_attempts": st.integers(1, 5), "backoff": st.sampled_from(["1s", "PT2S"]),
            "multiplier": st.floats(1, 3), "jitter": st.sampled_from(["none", "full"]),
            "non_retryable": st.lists(st.sampled_from(["A", "B"]), max_size=2)}),
        "timeout": st.sampled_from(["1s", "5m"]), "queue": st.just("q1"), "queue_timeout": st.just("1m"),
        "on_failure": st.sampled_from(["fail", "continue"]),
        "compensate": st.fixed_dictionaries({"task": st.just("undo")}, optional={"input": expressions}),
    }),
    st.fixed_dictionaries({"compute": st.one_of(expressions, json_like)}),
    st.fixed_dictionaries({"sleep": st.one_of(st.sampled_from(["1s", "P1D"]),
                                              st.fixed_dictionaries({"until": expressions}))}),
    st.fixed_dictionaries({"wait_for": st.just("go")}, optional={"timeout": st.just("7d")}),
    st.fixed_dictionaries({"http": st.fixed_dictionaries(
        {"method": st.sampled_from(["GET", "post"]),
         "url": st.sampled_from(["https://x.org", "{% input.u %}"])},
        optional={"body": expressions, "timeout": st.just("3s")})}),
).flatmap(lambda body: st.fixed_dictionaries({**{k: st.just(v) for k, v in body.items()}}, optional={
    "after": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
    "when": expressions, "for": expressions, "concurrency": st.integers(1, 3)}))


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    document = {"orbit": 1, "name": "w", "steps": draw(st.dictionaries(
        st.sampled_from(["a", "b", "c"]), good_step, min_size=1, max_size=3))}
    if draw(st.booleans()):
        # Replace one value somewhere in the document with anything at all.
        target: Any = document
        while True:
            keys = list(target) if isinstance(target, dict) else []
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            if not isinstance(target[key], dict) or draw(st.booleans()):
                target[key] = draw(json_like)
                break
            target = target[key]
    return document


definition = st.one_of(
    mutated(),
    json_like,
    st.fixed_dictionaries(
        {"orbit": st.one_of(st.just(1), json_like), "name": st.one_of(st.just("w"), json_like),
         "steps": st.one_of(st.dictionaries(st.sampled_from(["a", "b", "c", "d[0]"]), step, max_size=4),
                            json_like)},
        optional={key: json_like for key in TOP_KEYS if key not in ("orbit", "name", "steps")},
    ),
)


@SETTINGS
@given(definition)
def test_validation_reports_and_never_crashes(document: Any) -> None:
    problems = validate_definition(document)
    assert all(isinstance(p, Problem) and isinstance(p.path, str) and p.message for p in problems)
    try:
        parsed = parse_definition(document)
    except ValidationError as exc:
        assert exc.problems == problems
    else:
        assert problems == []
        assert isinstance(parsed, Definition) and parsed.hash.startswith("sha256:")


@SETTINGS
@given(st.text(max_size=60))
def test_any_text_loads_or_raises_validation_error(text: str) -> None:
    try:
        parse_text(text)
    except ValidationError:
        pass
