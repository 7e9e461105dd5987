"""Whether a second process is worth forking for CPU-bound work (checking a facts file,
reading a log with the rules): on Linux with two cores or more, and with no other thread,
which a fork would copy mid-step (a lock it holds would stay held in the child)."""

from __future__ import annotations

import os
import sys
import threading


def forking_helps() -> bool:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores >= 2 and threading.active_count() == 1 and sys.platform == "linux"
