"""The event history and its fold: events, state, evolve/apply, effects, inbound messages, the JSON form.

Pure; imports only `orbit.core.history.*` and `orbit.errors`."""
