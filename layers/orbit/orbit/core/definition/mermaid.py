"""A definition's step graph as a Mermaid flowchart (`orbit graph FILE`).

Nodes are steps, labelled with their kind; an edge runs from each step to the
steps that wait for it (`after` and `steps.NAME` reads alike). A `when` shows on
the step as a condition, a `for` as a fan-out (`name[*]`), and a `compensate`
as a dotted edge to its undo step. Each `on_signal` handler is a subgraph of its own
steps, titled with the signal and how many instances run at once. Pure: a Definition in,
text out.
"""

from __future__ import annotations

from types import MappingProxyType

from orbit.core.definition.expressions import expression_text, is_expression
from orbit.core.definition.model import Definition, Step

# Mermaid node shapes by kind: waits are rounded, pure steps hexagons, children subroutines
_SHAPES = MappingProxyType({
    "task": ('["', '"]'),
    "http": ('["', '"]'),
    "workflow": ('[["', '"]]'),
    "sleep": ('(["', '"])'),
    "wait_for": ('(["', '"])'),
    "compute": ('{{"', '"}}'),
})
MAX_TEXT = 60


def to_mermaid(definition: Definition) -> str:
    lines = ["flowchart TD", f'  %% {_escape(definition.name)} v{_escape(definition.version)}']
    undos = _steps(definition.steps, "s", lines)
    for i, (signal, handler) in enumerate(definition.handlers.items()):
        at_once = "one at a time" if handler.concurrency == 1 else f"{handler.concurrency} at a time"
        lines.append(f'  subgraph h{i}["on signal {_escape(signal)} ({at_once})"]')
        undos += _steps(handler.steps, f"h{i}s", lines)
        lines.append("  end")
    lines.append("  classDef undo stroke-dasharray: 4 3")
    if undos:
        lines.append(f"  class {','.join(undos)} undo")
    return "\n".join(lines)


def _steps(steps: dict[str, Step], prefix: str, lines: list[str]) -> list[str]:
    """One step graph's nodes, edges and undo nodes (ids `<prefix><n>`); returns the undo ids."""
    ids = {name: f"{prefix}{i}" for i, name in enumerate(steps)}
    for name, step in steps.items():
        open_, close = _SHAPES.get(step.kind, ('["', '"]'))
        lines.append(f"  {ids[name]}{open_}{_label(step)}{close}")
    for name, step in steps.items():
        for dep in sorted(step.depends_on, key=list(steps).index):
            if dep in ids:
                lines.append(f"  {ids[dep]} --> {ids[name]}")
    for name, step in steps.items():
        if step.compensate is not None:
            undo = f"{ids[name]}_undo"
            lines.append(f'  {undo}>"undo {_escape(name)}<br/>{_what(step.compensate)}"]')
            lines.append(f"  {ids[name]} -. compensate .-> {undo}")
    return [f"{ids[n]}_undo" for n, s in steps.items() if s.compensate is not None]


def _label(step: Step) -> str:
    title = f"{step.name}[*]" if step.for_each is not None else step.name
    parts = [f"<b>{_escape(title)}</b>", _what(step)]
    if step.for_each is not None:
        limit = f", {step.concurrency} at a time" if step.concurrency else ""
        parts.append(f"for each of {_short(step.for_each)}{limit}")
    if step.when is not None:
        parts.append(f"when {_short(step.when)}")
    if step.on_failure == "continue":
        parts.append("on failure: continue")
    return "<br/>".join(parts)


def _what(step: Step) -> str:
    if step.kind == "task":
        return f"task {_escape(step.task or '')}"
    if step.kind == "workflow":
        return f"child {_escape(step.workflow or '')}"
    if step.kind == "wait_for":
        return f"wait for {_escape(step.wait_for or '')}"
    if step.kind == "sleep":
        if step.sleep_until is not None:
            return f"sleep until {_short(step.sleep_until)}"
        return f"sleep {_ms(step.sleep_ms or 0)}"
    if step.kind == "http":
        http = step.http or {}
        return f"http {_escape(str(http.get('method', '')))} {_short(http.get('url'))}"
    return "compute"


def _short(value: object) -> str:
    text = expression_text(value) if isinstance(value, str) and is_expression(value) else str(value)
    text = " ".join(text.split())
    return _escape(text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…")


def _ms(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _escape(text: str) -> str:
    """Mermaid label text: quotes and angle brackets as entities, so no input can break the chart."""
    return (text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
            .replace("`", "#96;"))
