"""The decider: `decide.decide(workflow, state, message, now, ids)` -> events + effects, and its parts.

Pure; imports `orbit.core.*` and `orbit.errors` only."""
