"""Execution state: the left fold of `apply` over an execution's events.

Besides the per-unit records, the state keeps small aggregates so a decision
touches only what changed, never all units or all history:
`active` (non-terminal units), `wakeups` (unit -> next wake ms),
`fanouts` (per `for` step counters and the next-index cursor), buffered
`signals`, `waiters`, `hooks`, `children`, and `inbound` (message id ->
first seq of the commit that handled it; filled by `remember_inbound`).

`inbound` is bounded, so a snapshot (and a cold load) stays the same size however
many messages an execution has handled: `inbound_log` keeps the ids handled by the
last `RECENT_COMMITS` commits (it answers the common redelivery, seconds or minutes
later, without a read), and `signal_log` keeps signal ids, which are idempotency keys
of the caller, for `INBOUND_WINDOW_MS` of commit time. An older redelivery is found
in the commit log itself (`service.Engine` scans back to the message's send time).
The snapshot stores the logs; `inbound` is their index.
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import asdict, dataclass, field, fields

from orbit.core.history.events import JSON, TaskError
from orbit.core.history.nesting import parent_of

# Workflow statuses (DESIGN describe shape).
RUNNING = "RUNNING"
COMPENSATING = "COMPENSATING"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
TIMED_OUT = "TIMED_OUT"
TERMINAL_WORKFLOW = frozenset({COMPLETED, FAILED, CANCELLED, TIMED_OUT})
WORKFLOW_STATUSES = (RUNNING, COMPENSATING, COMPLETED, FAILED, CANCELLED, TIMED_OUT)

# Unit statuses.
PENDING = "PENDING"
SCHEDULED = "SCHEDULED"  # queued for a worker
DISPATCHED = "DISPATCHED"  # a worker took it
ATTEMPT_FAILED = "ATTEMPT_FAILED"  # transient inside one decision
UNCERTAIN = "UNCERTAIN"  # transient inside one decision
RETRY_WAIT = "RETRY_WAIT"
WAITING = "WAITING"  # durable timer or signal wait
SUCCEEDED = "SUCCEEDED"
SKIPPED = "SKIPPED"
TERMINAL_UNIT = frozenset({SUCCEEDED, SKIPPED, FAILED, CANCELLED})
COMPENSATE_PREFIX = "compensate:"
WORKFLOW_WAKE = "$workflow"  # wakeups key of the whole-execution deadline
UNPARK_WAKE = "$unpark"  # wakeups key of a parked execution's next try

_DAY_MS = 86_400_000
# How many commits' handled message ids the state keeps (signal ids aside). Enough for the usual
# redelivery (a batch retried, a crash redelivered after the visibility timeout) to be recognised
# from the state alone; anything older is looked up in the commit log by the service (bounded by
# the message's send time), so this figure trades snapshot bytes against rare reads, not safety.
RECENT_COMMITS = 16
# How long a handled *signal* id is remembered, measured from its commit to the newest commit
# (commit timestamps, never a clock: the fold stays deterministic). A signal id is the caller's
# idempotency key, and a signal is the one kind of message that is not idempotent on the state
# itself (it would be buffered twice), so its id must outlive every way the queue can deliver
# that message again. SQS deletes a standard-queue message once it is older than the queue's
# retention, counted from its *original* enqueue time even after it moved to the dead-letter
# queue. So automatic redelivery ends 4 days after sending (the decision queue keeps the SQS
# default, 345,600 s) and a dead-lettered message is gone after the DLQ's 14 days (1,209,600 s);
# a redrive out of the DLQ is a new message that the decision queue keeps 4 more days. 14 + 4
# days covers a redrive at the last moment; one more day absorbs clock skew between deciders.
# tests/unit/test_inbound_window.py checks the template against this figure.
# Every other kind is idempotent on the state: `start` (already created), `started`/`result`
# (token no longer live: ignored or StaleResultIgnored, never applied twice), `child_done` (unit
# finished), `hook` (resumed at most once), `cancel` (abort already set), `wake` (acts only on
# what is due); a `heartbeat` for a still-running attempt would at worst show older details
# until the next one. Past the window a signal id seen again is decided afresh.
INBOUND_WINDOW_MS = (14 + 4 + 1) * _DAY_MS


def element_key(step: str, index: int) -> str:
    return f"{step}[{index}]"


def compensation_key(step: str) -> str:
    return COMPENSATE_PREFIX + step


def parse_key(key: str) -> tuple[bool, str, int | None]:
    """`[compensate:]step[[i]]` -> (is_compensation, step, index or None)."""
    comp = key.startswith(COMPENSATE_PREFIX)
    rest = key[len(COMPENSATE_PREFIX) :] if comp else key
    if rest.endswith("]") and "[" in rest:
        base, _, num = rest[:-1].rpartition("[")
        if num.isdigit():
            return comp, base, int(num)
    return comp, rest, None


@dataclass
class UnitState:
    """One schedulable unit: a step, a `for` element, or a step's compensation."""

    status: str = PENDING
    attempt: int = 0
    kind: str = ""
    task: str = ""
    queue: str = ""
    input: JSON = None
    idempotency_key: str = ""
    output: JSON = None
    error: TaskError | None = None
    last_error: TaskError | None = None
    redelivery: bool = False
    retry: dict[str, JSON] | None = None
    timeout_ms: int | None = None
    queue_timeout_ms: int | None = None
    heartbeat_timeout_ms: int | None = None  # started attempts: wake-up at the last heartbeat + this
    on_exhausted: str = "fail_run"
    compensable: bool = False
    scheduled_at_ms: int | None = None
    dispatched_at_ms: int | None = None
    deadline_ms: int | None = None
    wake_at_ms: int | None = None
    finished_at_ms: int | None = None
    worker_id: str | None = None
    worker_session: str | None = None
    token: str | None = None  # token of the newest dispatch
    tokens: dict[str, int] = field(default_factory=dict)  # every token issued -> its attempt
    succeeded_seq: int | None = None
    dispatch_count: int = 0
    signal: str | None = None  # wait_for: the signal name
    child_id: str | None = None
    heartbeat: JSON = None
    # Attempts before the last redrive: the retry budget counts from here (attempt numbers go on,
    # so a worker's record of an old failed attempt never answers a new one).
    attempt_base: int = 0
    fire_at_ms: int | None = None  # a durable timer's wake time, kept after it fired (replay compares it)
    inline: str | None = None  # an inline step: its semantics (at_least_once | at_most_once)
    on_missing_worker: str | None = None  # "fail": no worker for the task fails the attempt at once
    flow_key: str | None = None  # flow control: the call's key on its task's limits (None: declared)
    priority: int | None = None  # flow control: the call's priority 1..5 (None: declared)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_UNIT

    def to_dict(self) -> dict[str, JSON]:
        d = asdict(self)
        for k in ("error", "last_error"):
            v = getattr(self, k)
            d[k] = v.to_dict() if v is not None else None
        for late in ("heartbeat_timeout_ms", "fire_at_ms", "inline", "on_missing_worker", "flow_key",
                     "priority"):
            if d[late] is None:
                del d[late]  # added later: snapshots without one stay as they were
        if not d["attempt_base"]:
            del d["attempt_base"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, JSON]) -> UnitState:
        names = {f.name for f in fields(cls)}
        u = cls(**{k: v for k, v in d.items() if k in names})
        u.error = TaskError.from_dict(d["error"]) if d.get("error") else None
        u.last_error = TaskError.from_dict(d["last_error"]) if d.get("last_error") else None
        u.tokens = dict(u.tokens or {})
        return u


@dataclass
class FanOut:
    """Counters of one `for` step so scheduling never scans its elements."""

    total: int = 0
    next_index: int = 0  # the next element to schedule
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    redo: list[int] = field(default_factory=list)  # elements a redrive reset, run before next_index

    @property
    def ended(self) -> int:
        return self.succeeded + self.failed + self.cancelled

    def to_schedule(self, slots: int) -> list[int]:
        """The next `slots` element indexes to start: redriven ones first, then the cursor."""
        slots = max(slots, 0)
        picked = self.redo[:slots]
        return picked + list(range(self.next_index, min(self.total, self.next_index + slots - len(picked))))

    def to_dict(self) -> dict[str, JSON]:
        d: dict[str, JSON] = asdict(self)
        if not self.redo:
            del d["redo"]  # added later: snapshots without a redrive stay as they were
        return d


@dataclass
class ExecutionState:
    id: str
    workflow: str = ""
    version: str = ""
    definition_hash: str = ""
    build: str = ""
    parent: dict[str, str] | None = None
    input: JSON = None
    status: str = RUNNING
    created: bool = False
    started: bool = False
    created_at_ms: int = 0
    updated_at_ms: int = 0
    finished_at_ms: int | None = None
    deadline_ms: int | None = None
    units: dict[str, UnitState] = field(default_factory=dict)
    active: dict[str, None] = field(default_factory=dict)  # ordered set of unfinished units
    # the units that left `active`, in the order they left, since this object was made (not
    # serialised: a loaded state starts it empty); what a code group reads to find, at the cost of
    # what changed, the branches whose units ended (core/runtime/code/wakeups.py)
    left: list[str] = field(default_factory=list, compare=False, repr=False)
    wakeups: dict[str, int] = field(default_factory=dict)
    fanouts: dict[str, FanOut] = field(default_factory=dict)
    signals: dict[str, list[dict[str, JSON]]] = field(default_factory=dict)  # buffered, FIFO
    waiters: dict[str, str] = field(default_factory=dict)  # signal name -> waiting unit
    hooks: dict[str, dict[str, JSON]] = field(default_factory=dict)  # name -> {token, resumed}
    children: dict[str, str] = field(default_factory=dict)  # child id -> unit
    abort: dict[str, JSON] | None = None  # {kind: failed|cancelled|timed_out, reason, error}
    compensable: list[str] = field(default_factory=list)  # steps with compensation, in success order
    compensation_order: list[str] = field(default_factory=list)
    compensation_done: int = 0
    compensation_failed: bool = False
    compensation: str | None = None  # none | completed | failed
    output: JSON = None
    error: TaskError | None = None
    progress: JSON = None
    progress_count: int = 0  # ProgressRecorded events so far (code replay counts its progress calls)
    parked: TaskError | None = None
    continued_as: str | None = None
    # Recovery (orbit redrive / orbit fork); left out of snapshots while at their defaults.
    redrive_count: int = 0
    ran_compensation: bool = False  # a unit was created while COMPENSATING (compensation or cleanup)
    forked_from: dict[str, JSON] | None = None  # {"execution_id", "step"}
    forked_to: list[str] = field(default_factory=list)  # ids of executions forked from this one
    # Added with safe deploys and the continue-as-new hand-over; left out of snapshots while empty.
    parked_at_ms: int | None = None  # the last ExecutionParked
    parked_since_ms: int | None = None  # the first one since the execution last ran
    # `orbit pause` (docs/operations.md): when it was paused and why; None while it is not.
    paused_at_ms: int | None = None
    paused_reason: str = ""
    continued_from: str | None = None
    idle_hops: int = 0  # runs before this one, in a row, that continued as new without a durable call
    patches: dict[str, int] = field(default_factory=dict)  # ctx.patched markers: change id -> position
    attributes: dict[str, JSON] = field(default_factory=dict)  # search attributes (history/attributes.py)
    # Updates (docs/updates.md): update id -> {name, input, status ACCEPTED|COMPLETED, position,
    # result, error, step}, in the order they were accepted; left out of snapshots while empty.
    updates: dict[str, dict[str, JSON]] = field(default_factory=dict)
    # Facts for the end of the execution (service/retention.py), left out of snapshots while unset:
    # the expiry every item was written with while young, when the start recorded it in the
    # execution's first commit (WorkflowCreated.provisional_expiry_s at seq 1) ...
    provisional_expiry_s: int | None = None
    # ... and True while no state after any event had a wake-up (`wakeups`), for a start that
    # recorded it: every durable timer (ArmTimer) is armed for `next_wake_ms()` of a state the
    # history holds, so such an execution never armed one. False: unknown, or armed.
    timer_free: bool = False
    last_seq: int = 0
    inbound: dict[str, int] = field(default_factory=dict)  # index of both logs; not serialised
    # (first_seq, commit timestamp_ms, handled message ids), one per commit, in commit order:
    # the last RECENT_COMMITS commits that handled messages (signal ids aside) ...
    inbound_log: deque[tuple[int, int, tuple[str, ...]]] = field(default_factory=deque)
    # ... and the signal ids of the last INBOUND_WINDOW_MS of commits
    signal_log: deque[tuple[int, int, tuple[str, ...]]] = field(default_factory=deque)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_WORKFLOW

    @property
    def paused(self) -> bool:
        return self.paused_at_ms is not None

    def unit(self, key: str) -> UnitState | None:
        return self.units.get(key)

    def status_of(self, key: str) -> str:
        u = self.units.get(key)
        return u.status if u is not None else PENDING

    def waits_for(self, unit: str, attempt: int, token: str | None = None) -> bool:
        """Does the execution still wait for this attempt of `unit` (scheduled or dispatched, not
        ended, the execution not ended) and, given `token`, for that dispatch of it? A worker's
        possible duplicate (worker/dedupe.py) and a re-sent dispatch's slot (service/flow_steps.py)
        ask it of the stored state."""
        if not self.created or self.terminal:
            return False
        u = self.units.get(unit)
        return (u is not None and not u.terminal and u.status in (SCHEDULED, DISPATCHED)
                and u.attempt == attempt and (token is None or u.tokens.get(token) == attempt))

    def next_wake_ms(self) -> int | None:
        return min(self.wakeups.values()) if self.wakeups else None

    def next_compensation(self) -> str | None:
        """The step whose compensation runs now (compensations run one at a time)."""
        if self.status != COMPENSATING or self.compensation_done >= len(self.compensation_order):
            return None
        return self.compensation_order[self.compensation_done]

    def copy(self) -> ExecutionState:
        return copy.deepcopy(self)

    def to_dict(self) -> dict[str, JSON]:
        d: dict[str, JSON] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "units":
                v = {k: u.to_dict() for k, u in v.items()}
            elif f.name == "fanouts":
                v = {k: c.to_dict() for k, c in v.items()}
            elif f.name == "active":
                v = list(v)
            elif f.name in ("inbound", "left"):
                continue  # rebuilt from the logs / not kept
            elif f.name in (_OPTIONAL_FIELDS | _RECOVERY_FIELDS) and not v:
                continue  # added later / a default: snapshots without them stay as they were
            elif f.name in ("inbound_log", "signal_log"):
                v = [[seq, ts, list(ids)] for seq, ts, ids in v]
            elif isinstance(v, TaskError):
                v = v.to_dict()
            else:
                v = copy.deepcopy(v)
            d[f.name] = v
        return d

    @classmethod
    def from_dict(cls, d: dict[str, JSON]) -> ExecutionState:
        names = {f.name for f in fields(cls)}
        s = cls(**{k: copy.deepcopy(v) for k, v in d.items() if k in names})
        s.units = {k: UnitState.from_dict(u) for k, u in (d.get("units") or {}).items()}
        s.fanouts = {k: FanOut(**{**c, "redo": list(c.get("redo") or [])})
                     for k, c in (d.get("fanouts") or {}).items()}
        s.active = dict.fromkeys(d.get("active") or [])
        s.left = []
        s.inbound, s.inbound_log, s.signal_log = {}, deque(), deque()
        for seq, ts, ids in d.get("signal_log") or []:
            _remember(s, s.signal_log, int(seq), int(ts), tuple(ids))
        if d.get("inbound_log") is not None:
            for seq, ts, ids in d["inbound_log"]:
                _remember(s, s.inbound_log, int(seq), int(ts), tuple(ids))
        else:  # a snapshot from before the log: its commit times are unknown, count them as newest
            by_seq: dict[int, list[str]] = {}
            for mid, seq in (d.get("inbound") or {}).items():
                by_seq.setdefault(int(seq), []).append(mid)
            for seq in sorted(by_seq):
                _remember(s, s.inbound_log, seq, s.updated_at_ms, tuple(by_seq[seq]))
        _prune(s, None)  # a snapshot written when the log was bounded by time is cut down on load
        for k in ("error", "parked"):
            s.__dict__[k] = TaskError.from_dict(d[k]) if d.get(k) else None
        return s

    def describe(self, units: list[str] | None = None) -> dict[str, JSON]:
        """DESIGN's describe shape; `steps` holds only `units` when given (one page of them).
        `attributes` (search attributes) is there only when the execution set some."""
        d: dict[str, JSON] = {
            "id": self.id,
            "workflow": self.workflow,
            "version": self.version,
            "status": self.status,
            "input": self.input,
            "output": self.output,
            "error": self.error.to_dict() if self.error else None,
            "steps": {
                k: {
                    "status": u.status,
                    "attempt": u.attempt,
                    "output": u.output,
                    "error": u.error.to_dict() if u.error else None,
                    **({"parent": parent_of(k)} if isinstance(k, str) and "/" in k and parent_of(k) else {}),
                    **({"waiting": f"waiting for a worker for task {u.task} on queue {u.queue}"}
                       if u.status == SCHEDULED and u.task and u.inline is None else {}),
                }
                for k, u in (self.units.items() if units is None else ((k, self.units[k]) for k in units))
            },
            **({"hooks": {n: {k: v for k, v in h.items() if k != "token"} for n, h in self.hooks.items()}}
               if self.hooks else {}),
            "progress": self.progress,
            "parent": self.parent,
            "compensation": self.compensation,
            "created_at_ms": self.created_at_ms,
            "finished_at_ms": self.finished_at_ms,
            "deadline_ms": self.deadline_ms,  # the whole-execution deadline, or the one a timeout recorded
            "parked": self.parked.to_dict() if self.parked else None,
            "paused": ({"since_ms": self.paused_at_ms, "reason": self.paused_reason}
                       if self.paused_at_ms is not None else None),
            "continued_as": self.continued_as,
            "redrive_count": self.redrive_count,
            "forked_from": copy.deepcopy(self.forked_from),
            "forked_to": list(self.forked_to),
            "continued_from": self.continued_from,
            "continued_to": self.continued_as,
            "build": self.build,
        }
        if self.attributes:
            d["attributes"] = dict(self.attributes)
        return d


_RECOVERY_FIELDS = frozenset({"redrive_count", "ran_compensation", "forked_from", "forked_to"})
_OPTIONAL_FIELDS = frozenset({"parked_at_ms", "parked_since_ms", "paused_at_ms", "paused_reason",
                              "continued_from", "idle_hops", "patches",
                              "attributes", "updates", "provisional_expiry_s", "timer_free"})


def buffered_signals(state: ExecutionState) -> list[dict[str, JSON]]:
    """Signals and hook payloads received and not consumed, in arrival order."""
    entries = [(b.get("seq") or 0, n, name, b) for name, buf in state.signals.items()
               for n, b in enumerate(buf)]
    return [{"name": name, "payload": b.get("payload"), "signal_id": b.get("signal_id", "")}
            for _, _, name, b in sorted(entries, key=lambda t: (t[0], t[1]))]


def remember_inbound(
    state: ExecutionState,
    ids: list[str] | tuple[str, ...],
    first_seq: int,
    timestamp_ms: int,
    signal_ids: frozenset[str] | set[str] = frozenset(),
) -> None:
    """Record the message ids a commit handled (`signal_ids` among them go to the signal log),
    then forget what falls out of the logs' bounds.

    Amortised O(1) per commit: each commit's entry is appended once and popped once.
    """
    signals = tuple(i for i in ids if i in signal_ids)
    others = tuple(i for i in ids if i not in signal_ids)
    if signals:
        _remember(state, state.signal_log, first_seq, timestamp_ms, signals)
    if others:
        _remember(state, state.inbound_log, first_seq, timestamp_ms, others)
    _prune(state, timestamp_ms)


def _prune(state: ExecutionState, newest_ms: int | None) -> None:
    while len(state.inbound_log) > RECENT_COMMITS:
        _forget(state, state.inbound_log.popleft())
    if newest_ms is None:
        return
    horizon = newest_ms - INBOUND_WINDOW_MS
    while state.signal_log and state.signal_log[0][1] < horizon:
        _forget(state, state.signal_log.popleft())


def _forget(state: ExecutionState, entry: tuple[int, int, tuple[str, ...]]) -> None:
    seq, _, ids = entry
    for mid in ids:
        if state.inbound.get(mid) == seq:
            del state.inbound[mid]


def _remember(
    state: ExecutionState,
    log: deque[tuple[int, int, tuple[str, ...]]],
    first_seq: int,
    timestamp_ms: int,
    ids: tuple[str, ...],
) -> None:
    log.append((first_seq, timestamp_ms, ids))
    for mid in ids:
        state.inbound[mid] = first_seq
