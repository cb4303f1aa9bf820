"""AWS wiring: settings from the environment, clients and adapters (`wiring`), EMF metrics, the HTTP task.

The only layer that reads the environment; may import every layer below it (never the CLI)."""
