"""The engine: the pieces of the pure decision (`orbit.decider.decide`)."""
