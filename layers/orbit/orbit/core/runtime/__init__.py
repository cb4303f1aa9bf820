"""The runtimes behind the decider's command contract: the DSL interpreter and the code replayer.

Pure (the replayer runs user code on a thread but reads no clock); imports the core and `orbit.errors`."""
