"""The chaos harness imports the integration suite's moto helpers (tests/integration) itself."""
