"""Definitions: the DSL interpreter behind the command contract (`interpreter.DslRuntime`) and its
parts (`plan`, `attributes`, `handlers`)."""
