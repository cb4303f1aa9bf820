"""Read operations the console needs beyond describe/history/list: counts by status, the
workflows registered (definitions and code builds) and the source an execution is pinned to."""

from __future__ import annotations

import inspect
from typing import Any

from orbit.core.history.events import WorkflowCreated
from orbit.errors import BuildMismatch, NotFound, UnknownWorkflow
from orbit.service.ports import COUNT_CAP


class CatalogApi:
    store: Any
    registry: Any

    def counts(self, workflow: str | None = None) -> dict[str, Any]:
        """`{"counts": {status: n}, "cap": N}`: a count at the cap means "N or more"."""
        return {"counts": self.store.count_executions(workflow, COUNT_CAP), "cap": COUNT_CAP}

    def workflows(self) -> list[dict[str, Any]]:
        """Every registered workflow: `{name, kind, versions: [{version, builds: [build...], retired}]}`
        (`retired`: new starts of that definition version are refused, `orbit retire`)."""
        found: dict[tuple[str, str], dict[str, list[str]]] = {}
        lister = getattr(self.registry, "builds", None)
        for name, version, build in lister() if lister else []:
            kind = _kind(self._held(name, version, build))
            found.setdefault((name, kind), {}).setdefault(version, []).append(build)
        code = getattr(self.registry, "code", None)
        for wf in code.all() if code is not None else []:
            found.setdefault((wf.name, "code"), {}).setdefault(wf.version, []).append(wf.build)
        retired = getattr(self.registry, "retired", None)
        return [
            {"name": name, "kind": kind,
             "versions": [{"version": v, "builds": builds,
                           "retired": bool(kind == "definition" and retired and retired(name, v))}
                          for v, builds in versions.items()]}
            for (name, kind), versions in sorted(found.items())
        ]

    def workflow_source(self, name: str, version: str, build: str) -> dict[str, Any]:
        """One build: a definition's document, or a code workflow's source where this process holds it."""
        wf = self._held(name, version, build)
        if wf is None:
            raise NotFound(f"workflow {name!r} version {version!r} build {build!r} is not registered here")
        out: dict[str, Any] = {"name": name, "version": version, "build": build, "kind": _kind(wf)}
        if out["kind"] == "definition":
            out["definition"] = wf.raw
        else:
            try:
                out["source"] = inspect.getsource(wf.fn)
            except (OSError, TypeError):
                out["source"] = None
        signals = {k: signal_schema(v) for k, v in (getattr(wf, "signals", None) or {}).items()}
        for extra in wf.signal_names() if out["kind"] == "definition" else ():
            signals.setdefault(extra, None)  # waited for or handled without a declared schema
        out["signals"] = signals  # name -> JSON schema (None: any payload)
        return out

    def execution_workflow(self, execution_id: str) -> dict[str, Any]:
        """The build an execution is pinned to (`workflow_source`), with its `build` id."""
        # its first event names the pinned build: one short read instead of loading the state
        first = self.store.history(execution_id, 0, 1).records
        created = first[0].event if first else None
        if not isinstance(created, WorkflowCreated):  # a tombstone: NotFound, as describe says
            self.load_state(execution_id)  # type: ignore[attr-defined]  # EngineApi's
            raise NotFound(f"execution {execution_id!r} has no WorkflowCreated event")
        build = created.build or created.definition_hash  # as the state pins it (evolve)
        return self.workflow_source(created.workflow, created.version, build)

    def _held(self, name: str, version: str, build: str) -> Any:
        try:
            return self.registry.get_build(name, version, build)
        except (UnknownWorkflow, BuildMismatch):
            return None


def signal_schema(spec: Any) -> Any:
    """The JSON schema of a signal as a definition or a code workflow declares it (None: any)."""
    return spec["schema"] if isinstance(spec, dict) and "schema" in spec else getattr(spec, "schema", spec)


def _kind(wf: Any) -> str:
    return "definition" if hasattr(wf, "raw") and hasattr(wf, "steps") else "code"
