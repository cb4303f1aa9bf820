"""The shop app's code: its tasks (tasks.py)."""
