"""The `orbit` command line (`main`) and its argument helpers (`args`).

Imports anything; nothing imports it."""
