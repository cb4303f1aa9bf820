"""Template parameters given to the local stack are checked against the template's declarations."""

from __future__ import annotations

import pytest
from orbit.local.parameters import ParameterError, check_parameters, parameter_problems

TEMPLATE = """\
Parameters:
  Mode: {Type: String, AllowedValues: [fast, safe], Default: safe}
  Shards: {Type: Number, MinValue: 1, MaxValue: 64, Default: 4}
  Prefix: {Type: String, AllowedPattern: "[a-z]+", ConstraintDescription: "letters only", Default: x}
  Note: {Type: String, MaxLength: 5, Default: ""}
Resources:
  Q: {Type: "AWS::SQS::Queue"}
"""


@pytest.fixture
def template(tmp_path):
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    return path


def test_accepted_values_pass(template):
    assert (
        parameter_problems(template, {"Mode": "fast", "Shards": "64", "Prefix": "ab", "Note": "hello"}) == []
    )


def test_each_refusal_names_the_parameter_and_what_it_takes(template):
    assert parameter_problems(template, {"Mode": "quick"}) == [
        "Mode=quick: not accepted by Mode; allowed values: fast, safe"
    ]
    assert parameter_problems(template, {"Shards": "many", "Note": "toolong"}) == [
        "Shards=many: not accepted by Shards; expected a number",
        "Note=toolong: not accepted by Note; expected 0 to 5 characters",
    ]
    assert parameter_problems(template, {"Shards": "65"}) == [
        "Shards=65: not accepted by Shards; expected a number from 1 to 64"
    ]
    assert parameter_problems(template, {"Prefix": "A1"}) == [
        "Prefix=A1: not accepted by Prefix; letters only"
    ]
    assert parameter_problems(template, {"Shard": "2"}) == [
        "Shard=2: template.yaml has no parameter 'Shard'; it has: Mode, Note, Prefix, Shards"
    ]


def test_check_raises_with_every_problem(template):
    with pytest.raises(ParameterError) as err:
        check_parameters(template, {"Mode": "quick", "Shard": "2"})
    assert str(err.value).startswith("template parameter Mode=quick: not accepted by Mode;")
    assert "; Shard=2: template.yaml has no parameter 'Shard'" in str(err.value)
