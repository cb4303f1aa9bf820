"""Step dependencies: ``after`` plus every ``steps.NAME`` an ordering expression reads."""

from __future__ import annotations

from typing import Any

from orbit.core.definition import expressions

# Keys whose expressions run when the step starts; `compensate` runs later and orders nothing.
ORDERING_KEYS = ("when", "for", "input", "http", "compute")


def step_reads(body: dict[str, Any]) -> set[str]:
    """Step names read by the expressions that decide when and how the step starts."""
    names: set[str] = set()
    for key in ORDERING_KEYS:
        if key in body:
            names |= expressions.references(body[key])
    sleep = body.get("sleep")
    if isinstance(sleep, dict) and "until" in sleep:
        names |= expressions.references(sleep["until"])
    return names


def step_after(body: dict[str, Any]) -> tuple[str, ...]:
    after = body.get("after")
    if not isinstance(after, list):
        return ()
    return tuple(name for name in after if isinstance(name, str))


def find_cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """One cycle (as ``[a, b, ..., a]``) per strongly connected group; self-loops excluded."""
    cycles: list[list[str]] = []
    covered: set[str] = set()
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in graph:
        if state.get(start):
            continue
        # Iterative DFS: the path and, per node, the iterator over its remaining edges.
        path: list[str] = [start]
        iters = [iter(sorted(graph[start]))]
        state[start] = 1
        while path:
            node = next(iters[-1], None)
            if node is None:
                state[path.pop()] = 2
                iters.pop()
                continue
            if node == path[-1] or node not in graph:
                continue
            if state.get(node) == 1:
                cycle = path[path.index(node):] + [node]
                if not covered.intersection(cycle[:-1]):
                    cycles.append(cycle)
                    covered.update(cycle)
            elif not state.get(node):
                state[node] = 1
                path.append(node)
                iters.append(iter(sorted(graph[node])))
    return cycles
