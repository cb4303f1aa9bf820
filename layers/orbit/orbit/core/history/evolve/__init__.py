"""The transitions of the state, one per event type (`workflow.HANDLERS` assembles them): workflow
level in `workflow`, steps in `steps`, recovery, updates and `on_signal` handlers in theirs; `base`
holds what they share."""
