"""Code workflows: the Python replayer behind the command contract (`replayer.CodeReplayer`) and
its parts (one module each: the replay, the instance, branches, groups, scopes, ...)."""
