"""CPU time for "this is quick" assertions, instead of wall-clock time (issue 28).

A wall-clock bound counts the time the OS gave to other processes: on CI's 2 busy cores a test
that needs 0.2 s may take 2 s and fail. `cpu_timer()` measures `time.thread_time()`, the CPU
time of the calling thread only: neither other processes nor the test process's other threads
(a server left by an earlier test) count. It fits work that runs on the caller's thread, as
everything in orbit/core does (no threads there). Work in a child process is measured with
`child_cpu_seconds()` (the children's rusage, that is `time.process_time()` of the child).

CPU time does not see waiting (a sleep, a blocked read): a test about not waiting checks what
the code reports instead (a step count, a message that says it stopped before sleeping).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class CpuTime:
    seconds: float = 0.0


@contextmanager
def cpu_timer() -> Iterator[CpuTime]:
    """`with cpu_timer() as cpu: ...`; then `cpu.seconds` is the CPU time the block used."""
    took = CpuTime()
    start = time.thread_time()
    try:
        yield took
    finally:
        took.seconds = time.thread_time() - start


def child_cpu_seconds() -> float:
    """CPU time (user + system) of all ended, waited-for child processes of this process so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime
