"""The one error type users see: a message fit for one line on stderr, and an exit code."""

from __future__ import annotations


class MemctlError(Exception):
    """Bad usage or bad input (exit 2 by default); the message is the whole explanation."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
