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
                      "orbit.adapters.memory_limits",  # flow control on the virtual clock
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
# docs/decisions/width2-pure-core.md. No allowlist: process state (caches, tables, the key, budgets)
# lives in the service that hosts replay (orbit/service/replay_host.py) and reaches core as arguments.
# Calls that create mutable containers or per-process/per-thread state (referencing.Registry is
# immutable, so it is not one), and calls that start threads or processes.
_STATEFUL = {"dict", "list", "set", "bytearray", "OrderedDict", "defaultdict", "deque", "Counter", "local",
             "Lock", "RLock", "ContextVar", "Event", "Condition", "Semaphore", "SimpleQueue", "Queue",
             "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "CodeRuntime", "CodeRegistry", "Closures"}
_THREADS = {"Thread", "Timer", "start_new_thread", "ThreadPoolExecutor", "ProcessPoolExecutor", "Process",
            "fork"}
# Modules that run code concurrently, keep per-thread or per-context state, or reach the process:
# core imports none of them, at module level or in a function.
_CONCURRENCY = {"threading", "_thread", "multiprocessing", "concurrent", "asyncio", "contextvars", "signal",
                "queue", "sched", "subprocess"}
# The replay's switch: a greenlet is a stack switch on the calling thread (no thread, no I/O), used only
# where a paused workflow or branch is started and switched to, and where a call reads which runs.
GREENLET_MODULES = {"core/runtime/code/instance.py", "core/runtime/code/branches.py",
                    "core/runtime/code/replay.py"}


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _stateful(value: ast.AST | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and _callee(value) in _STATEFUL


def _module_bindings(body: list[ast.stmt], bound: dict[str, bool]) -> None:
    """name -> whether its last module-level binding is mutable (`del` unbinds; `if`/`try` bodies count)."""
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is None:
                continue
            for t in targets:
                if isinstance(t, ast.Name):
                    bound[t.id] = _stateful(node.value)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bound.pop(t.id, None)
        elif isinstance(node, ast.If):
            _module_bindings(node.body + node.orelse, bound)
        elif isinstance(node, ast.Try):
            _module_bindings(node.body + node.orelse + node.finalbody +
                             [s for h in node.handlers for s in h.body], bound)


def core_state(root: Path) -> tuple[set[str], list[str]]:
    """Module-level mutable bindings ("path:name"), and ("path:line: what") thread starts, `global`s,
    imports of a concurrency module, and greenlet imports outside GREENLET_MODULES, of every module
    under `root`/core."""
    state: set[str] = set()
    bad: list[str] = []
    for path in sorted((root / "core").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), filename=str(path))
        bound: dict[str, bool] = {}
        _module_bindings(tree.body, bound)
        state.update(f"{rel}:{name}" for name, mutable in bound.items() if mutable)
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and _callee(n) in _THREADS:
                bad.append(f"{rel}:{n.lineno}: starts a thread or process ({_callee(n)})")
            elif isinstance(n, ast.Global):
                bad.append(f"{rel}:{n.lineno}: rebinds module state (global {', '.join(n.names)})")
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
                for name in names:
                    top = name.split(".")[0]
                    if top in _CONCURRENCY:
                        bad.append(f"{rel}:{n.lineno}: imports {name}")
                    elif top == "greenlet" and rel not in GREENLET_MODULES:
                        bad.append(f"{rel}:{n.lineno}: imports greenlet outside the replay's switch")
    return state, bad


def test_the_core_starts_no_thread_and_keeps_no_module_state() -> None:
    state, bad = core_state(PKG)
    assert bad == [], "\n".join(bad)
    assert sorted(state) == [], \
        "module-level mutable state in core/ (move it to the service that hosts replay and pass it in, " \
        "or make it immutable: a tuple, a frozenset, a MappingProxyType):\n" + "\n".join(sorted(state))


def test_the_core_state_check_sees_threads_and_state(tmp_path: Path) -> None:
    core = tmp_path / "core"
    (core / "runtime" / "code").mkdir(parents=True)
    (core / "m.py").write_text("import threading\nTHREAD = threading.local()\nCACHE: dict = {}\n"
                               "N = (1, 2)\nT = {}\nT = MappingProxyType(T)\nB = []\ndel B\n"
                               "if True:\n    from contextvars import ContextVar\n    K = ContextVar('k')\n"
                               "\ndef f():\n    global N\n"
                               "    threading.Thread(target=f).start()\n    import greenlet\n")
    (core / "runtime" / "code/instance.py").write_text("from greenlet import greenlet\n")
    state, bad = core_state(tmp_path)
    assert state == {"core/m.py:THREAD", "core/m.py:CACHE", "core/m.py:K"}
    assert sorted(bad) == ["core/m.py:10: imports contextvars",
                           "core/m.py:14: rebinds module state (global N)",
                           "core/m.py:15: starts a thread or process (Thread)",
                           "core/m.py:16: imports greenlet outside the replay's switch",
                           "core/m.py:1: imports threading"]
