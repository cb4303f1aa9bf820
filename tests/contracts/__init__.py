"""Port contract suites: one class per port, subclassed once per backend."""
