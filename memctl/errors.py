"""The one error type users see: a message fit for one line on stderr, and an exit code."""

from __future__ import annotations


class MemctlError(Exception):
    """Bad usage or bad input (exit 2 by default); the message is the whole explanation."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


class FileRefused(MemctlError):
    """One input file cannot be read as it claims to be; the others go on (exit 1)."""

    def __init__(self, message: str):
        super().__init__(message, exit_code=1)
