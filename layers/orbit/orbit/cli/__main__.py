"""`python -m orbit.cli` runs the `orbit` command."""

from orbit.cli.main import main

raise SystemExit(main())
