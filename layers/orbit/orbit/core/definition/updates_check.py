"""`updates:` in a definition (docs/updates.md).

```yaml
updates:
  add_item:
    signal: item            # delivered as this signal: a `wait_for: item` step consumes it
    validator: "{% update.qty > 0 ? true : 'qty must be positive' %}"   # optional
    result: "{% $count(steps.collect.output) %}"                         # optional
```
The validator returns `true` to accept, or a string (the refusal, word for word), evaluated
at the API before anything is recorded. `result` is evaluated when the step consumes the update
(default: that step's output). Both read the step-input root plus `update` (the input).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.core.definition.checks import Problems, check_expression_string, check_keys, join, type_name
from orbit.core.definition.steps_check import STEP_NAME

UPDATE_KEYS = ("signal", "validator", "result", "description")


def check_updates(document: dict[str, Any], out: Problems, reads: Callable[[Any, str], None]) -> None:
    updates = document.get("updates")
    if not isinstance(updates, dict):
        out.add("updates", f"must be a mapping of update names to {{signal, validator?, result?}}, "
                           f"not {type_name(updates)}")
        return
    steps = document.get("steps")
    steps = steps if isinstance(steps, dict) else {}
    waited = {b["wait_for"] for b in steps.values()
              if isinstance(b, dict) and isinstance(b.get("wait_for"), str)}
    for name, body in updates.items():
        path = join("updates", str(name))
        if not isinstance(name, str) or not STEP_NAME.fullmatch(name):
            out.add(path, "an update name is letters, digits, _ and - (starting with a letter or _)")
            continue
        if not isinstance(body, dict):
            out.add(path, f"must be a mapping {{signal, validator?, result?}}, not {type_name(body)}")
            continue
        check_keys(body, UPDATE_KEYS, path, out, "an update")
        signal = body.get("signal")
        if not isinstance(signal, str) or not signal:
            out.add(join(path, "signal"), "required: the signal a `wait_for` step consumes the update as")
        elif signal not in waited:
            out.add(join(path, "signal"), f"no `wait_for: {signal}` step consumes it: the update would "
                                          "never run")
        for key, what in (("validator", "true or a refusal message"), ("result", "the update's result")):
            if key in body and check_expression_string(body[key], join(path, key), out, what):
                reads(body[key], join(path, key))
        if "description" in body and not isinstance(body["description"], str):
            out.add(join(path, "description"), "must be a string")
