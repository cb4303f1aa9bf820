"""Schedules, the pure part: the spec (when occurrences fall) and the policies (what a fire does)."""
