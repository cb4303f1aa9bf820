"""The preset zlib dictionary for item bodies (attribute `zd`, codec.py).

A commit body is about 1 KB of JSON whose keys repeat across every commit but
rarely within one, so plain zlib saves little on it (1070 -> ~480 bytes). A
preset dictionary of the keys and fixed strings the bodies use lets zlib refer
back to them from the first byte. zlib weighs the end of the dictionary most,
so the commonest text is last.

NEVER EDIT THIS CONSTANT: stored items must stay readable. To change it, add
`DICT_V2` under a new attribute name and keep decoding `zd` with this one.
"""

from __future__ import annotations

_PARTS = [
    # snapshots (ExecutionState.to_dict / UnitState.to_dict)
    '"definition_hash":"sha256:","build":"","parent":null,"created":true,"started":true,',
    '"created_at_ms":,"updated_at_ms":,"finished_at_ms":null,"units":{},"active":[],"wakeups":{},',
    '"fanouts":{},"signals":{},"waiters":{},"hooks":{},"children":{},"abort":null,"compensable":[],',
    '"compensation_order":[],"compensation_done":[],"compensation_failed":[],"compensation":null,',
    '"progress":null,"progress_count":0,"parked":null,"continued_as":null,"last_seq":,"inbound_log":[[',
    '"last_error":null,"scheduled_at_ms":,"dispatched_at_ms":,"wake_at_ms":null,"tokens":{},',
    '"succeeded_seq":,"dispatch_count":1,"signal":null,"child_id":null,"heartbeat":null,',
    '{"status":"SUCCEEDED","status":"RUNNING","status":"COMPLETED",',
    # rarer events
    '"type":"WorkflowFailed","error":{"code":"","message":"","retryable":false,"details":null},',
    '"type":"StepAttemptFailed","type":"RetryScheduled","next_attempt":2,"delay_ms":,"fire_at_ms":,',
    '"type":"StepFailed","fatal":true,"type":"StepCancelled","reason":"","type":"TimerStarted",',
    '"type":"TimerFired","type":"StaleResultIgnored","outcome":"","type":"CancelRequested","force":false,',
    '"type":"SignalReceived","name":"","payload":null,"signal_id":"","type":"SignalConsumed",',
    '"type":"HookCreated","type":"HookResumed","type":"WaitStarted","type":"StepHeartbeat","details":',
    '"type":"StepFanOut","items":[],"type":"StepSkipped","type":"CompensationStarted","steps":[],',
    '"kind":"cancel_task","kind":"arm_timer","kind":"start_child","kind":"notify_parent",',
    '"kind":"register_hook","child_id":"","parent_id":"","status":"SUCCEEDED",',
    '"type":"WorkflowCreated","workflow":"","version":"1","definition_hash":"sha256:","input":{},',
    '"parent":null,"build":"","execution_id":"","type":"WorkflowStarted","deadline_ms":null},',
    '"type":"WorkflowCompleted","output":{}}],"effects":[],"inbound_ids":[]}',
    # the commonest commit: a result in, the next dispatch out
    '{"events":[{"seq":,"timestamp_ms":,"type":"StepDispatched","step":"","attempt":1,"token":"",',
    '"worker_id":"","worker_session":"","deadline_ms":null},{"seq":,"timestamp_ms":,',
    '"type":"StepSucceeded","step":"","attempt":1,"output":{}},{"seq":,"timestamp_ms":,',
    '"type":"StepScheduled","step":"","attempt":1,"input":{},"idempotency_key":"","redelivery":false,',
    '"token":"","kind":"task","task":"","queue":"","retry":{"max_attempts":1,"backoff_ms":1000,',
    '"multiplier":2.0,"max_backoff_ms":null,"jitter":"none","non_retryable":[]},"timeout_ms":null,',
    '"queue_timeout_ms":null,"deadline_ms":null,"on_exhausted":"fail_run","compensable":false}],',
    '"effects":[{"kind":"dispatch_task","execution_id":"","unit":"","task":"","queue":"","input":{},',
    '"attempt":1,"token":"","idempotency_key":"","deadline_ms":null,"redelivery":false}],',
    '"inbound_ids":["result:","started:"]}',
]
DICT_V1: bytes = "".join(_PARTS).encode()
