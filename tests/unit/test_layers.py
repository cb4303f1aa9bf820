"""The package's layers (docs/architecture.md): who may import whom, no import cycles, a cheap `import orbit`.

An AST scan of every module under layers/orbit/orbit, function-local imports included
(a lazy import is still a dependency) and `if TYPE_CHECKING:` blocks left out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import orbit

PKG = Path(orbit.__file__).parent

# layer -> the orbit layers it may import (besides itself). A layer is a module or a package prefix.
ALLOWED: dict[str, set[str]] = {
    "orbit.errors": set(),
    "orbit.core": {"orbit.errors"},
    "orbit.workflow": {"orbit.errors", "orbit.core"},
    # the process's registry of code builds (`orbit.workflow.REGISTRY`, filled by @orbit.workflow)
    "orbit.service": {"orbit.errors", "orbit.core", "orbit.workflow"},
    "orbit.adapters": {"orbit.errors", "orbit.core", "orbit.service.ports", "orbit.workflow"},
    "orbit.testing": {"orbit.errors", "orbit.core", "orbit.service", "orbit.adapters.memory",
                      "orbit.workflow",
                      "orbit.worker.context"},  # a scripted call(fn) gets the task's own TaskContext
    "orbit.worker": {"orbit.errors", "orbit.core", "orbit.aws.wiring", "orbit.adapters.sqs"},
    "orbit.aws": {"orbit.errors", "orbit.core", "orbit.service", "orbit.adapters", "orbit.worker.sdk",
                  "orbit.worker.inline",  # the decider runs inline steps with the worker SDK (issue 15)
                  "orbit.workflow"},
    "orbit.client": {"orbit.errors", "orbit.core"},
    "orbit.local": {"orbit.errors", "orbit.core", "orbit.service", "orbit.adapters", "orbit.aws",
                    "orbit.worker", "orbit.workflow", "orbit.client"},
    # the web console: a client of the API (it reads waiting lines the way `orbit history` does)
    # and answers only its own pages, as `orbit dev` does (orbit/local/origin.py)
    "orbit.console": {"orbit.errors", "orbit.core", "orbit.client", "orbit.local.waiting",
                      "orbit.local.origin"},
    "orbit.cli": {"orbit.errors", "orbit.core", "orbit.service", "orbit.adapters", "orbit.aws",
                  "orbit.worker", "orbit.workflow", "orbit.client", "orbit.local", "orbit.testing",
                  "orbit.console"},
}
# Third-party packages the pure core may use; anything else outside the standard library is refused.
# re2: regular expressions; cronsim: cron evaluation (no I/O)
# greenlet: code workflows pause on greenlets (a stack switch on the calling thread, no I/O, no thread)
CORE_THIRD_PARTY = {"cronsim", "greenlet", "jsonata", "jsonschema", "re2", "referencing", "yaml"}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PKG.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import; `from a import b` names a.b when that is a module."""
    out: list[tuple[str, int]] = []
    pkg = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - child.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for a in child.names:
                    full = f"{base}.{a.name}"
                    out.append((full if full in MODULES else base, child.lineno))
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return out


def layer_of(module: str) -> str:
    best = ""
    for layer in ALLOWED:
        if (module == layer or module.startswith(layer + ".")) and len(layer) > len(best):
            best = layer
    return best


def allowed(src: str, dst: str) -> bool:
    src_layer = layer_of(src)
    if dst == src_layer or dst.startswith(src_layer + ".") or dst == "orbit":
        return dst != "orbit" or src == "orbit"
    return any(dst == a or dst.startswith(a + ".") for a in ALLOWED[src_layer])


def test_every_module_belongs_to_a_layer() -> None:
    root_modules = sorted(m for m in MODULES if m.count(".") == 1 and MODULES[m].name != "__init__.py")
    assert root_modules == ["orbit.client", "orbit.errors", "orbit.workflow"], root_modules
    assert [m for m in MODULES if m != "orbit" and not layer_of(m)] == []


def test_layers_import_only_what_they_may() -> None:
    bad = []
    for mod, path in sorted(MODULES.items()):
        if mod == "orbit":
            continue
        for dst, line in imports(path):
            if dst.split(".")[0] == "orbit" and not allowed(mod, dst):
                bad.append(f"{path.relative_to(PKG)}:{line}: {mod} ({layer_of(mod)}) imports {dst}")
    assert bad == [], "\n".join(bad)


def test_the_core_uses_only_pure_third_party_packages() -> None:
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for mod, path in sorted(MODULES.items()):
        if layer_of(mod) not in {"orbit.core", "orbit.errors"}:
            continue
        for dst, line in imports(path):
            top = dst.split(".")[0]
            if top not in stdlib and top != "orbit" and top not in CORE_THIRD_PARTY:
                bad.append(f"{path.relative_to(PKG)}:{line}: imports {dst}")
    assert bad == [], "\n".join(bad)


def test_no_import_cycles() -> None:
    graph = {m: sorted({d for d, _ in imports(p) if d in MODULES and d != m}) for m, p in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for m in sorted(graph):
        if m not in index:
            strong(m)
    assert cycles == [], cycles


def test_import_orbit_loads_no_aws_sdk() -> None:
    code = ("import sys, orbit, orbit.workflow; from orbit.worker import task; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'boto3', 'botocore', 'moto'}); "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_violation_is_reported() -> None:
    """The checker itself: a core module importing the service, and a cycle, are both caught."""
    assert not allowed("orbit.core.decider.decide", "orbit.service.engine")
    assert not allowed("orbit.adapters.memory", "orbit.service.engine")
    assert allowed("orbit.adapters.memory", "orbit.service.ports")
    assert not allowed("orbit.core.history.events", "orbit")


# -- a pure core: no thread, no module-level mutable state (issue 27, section 5) ----------------------
# Calls that create mutable containers or per-process/per-thread state, and calls that start threads.
_STATEFUL = {"dict", "list", "set", "bytearray", "OrderedDict", "defaultdict", "deque", "Counter", "local",
             "Lock", "RLock", "ContextVar", "Event", "Condition", "Semaphore", "SimpleQueue", "Queue",
             "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "CodeRuntime", "CodeRegistry", "Registry"}
_THREADS = {"Thread", "Timer", "start_new_thread", "ThreadPoolExecutor", "ProcessPoolExecutor", "Process",
            "fork"}
# Module-level tables filled once at import and only read after (keep them few; prefer tuples,
# frozensets or MappingProxyType for new ones).
CORE_CONSTANT_TABLES = {
    "core/decider/decide.py:__all__", "core/decider/execute.py:__all__",
    "core/definition/__init__.py:__all__",
    "core/definition/expressions.py:__all__", "core/history/hook_tokens.py:__all__",
    "core/history/model.py:__all__", "core/runtime/code_keys.py:__all__",
    "core/definition/contracts.py:_ROOT_LABEL", "core/definition/contracts.py:_NOTHING_TO_RETRIEVE",
    "core/definition/durations.py:_UNIT_MS", "core/definition/durations.py:_ISO_UNITS",
    "core/definition/expression_budget.py:_CHECKS", "core/definition/mermaid.py:_SHAPES",
    "core/definition/schema_budget.py:_left", "core/definition/schema_unique.py:_enum_keys",
    "core/definition/steps_check.py:KEY_KINDS", "core/definition/task_contracts.py:_CODES",
    "core/history/events.py:EVENT_TYPES", "core/history/evolve.py:HANDLERS",
    "core/history/evolve_handlers.py:HANDLER_HANDLERS", "core/history/evolve_recovery.py:RECOVERY_HANDLERS",
    "core/history/evolve_steps.py:STEP_HANDLERS", "core/history/evolve_updates.py:UPDATE_HANDLERS",
    "core/history/lifecycle.py:_STEP_METRICS", "core/runtime/replay_check.py:ENDINGS",
}
# Process state still under core/, to move into the service that hosts replay (issue 27, section 5).
# Nothing may join this list; remove an entry when its state moves out.
CORE_PROCESS_STATE: set[str] = set()


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _stateful(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and _callee(value) in _STATEFUL


def core_state(root: Path) -> tuple[set[str], list[str]]:
    """Module-level mutable bindings ("path:name") and thread starts / `global`s ("path:line: what")
    of every module under `root`/core."""
    state: set[str] = set()
    bad: list[str] = []
    for path in sorted((root / "core").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            if targets and _stateful(node.value):  # type: ignore[union-attr]
                state.update(f"{rel}:{t.id}" for t in targets if isinstance(t, ast.Name))
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and _callee(n) in _THREADS:
                bad.append(f"{rel}:{n.lineno}: starts a thread or process ({_callee(n)})")
            elif isinstance(n, ast.Global):
                bad.append(f"{rel}:{n.lineno}: rebinds module state (global {', '.join(n.names)})")
    return state, bad


def test_the_core_starts_no_thread_and_keeps_no_new_module_state() -> None:
    state, bad = core_state(PKG)
    assert bad == [], "\n".join(bad)
    new = sorted(state - CORE_CONSTANT_TABLES - CORE_PROCESS_STATE)
    assert new == [], \
        "module-level mutable state in core/ (move it to the service, or make it immutable):\n" + \
        "\n".join(new)
    gone = sorted(CORE_PROCESS_STATE - state)
    assert gone == [], f"moved out of core/ (drop from CORE_PROCESS_STATE): {gone}"


def test_the_core_state_check_sees_threads_and_state(tmp_path: Path) -> None:
    core = tmp_path / "core"
    core.mkdir()
    (core / "m.py").write_text("import threading\nTHREAD = threading.local()\nCACHE: dict = {}\n"
                               "N = (1, 2)\n\ndef f():\n    global N\n"
                               "    threading.Thread(target=f).start()\n")
    state, bad = core_state(tmp_path)
    assert state == {"core/m.py:THREAD", "core/m.py:CACHE"}
    assert bad == ["core/m.py:7: rebinds module state (global N)",
                   "core/m.py:8: starts a thread or process (Thread)"]
