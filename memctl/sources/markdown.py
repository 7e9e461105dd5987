"""``markdown``: a Markdown note is one episode, read as ``memctl.sources.notes`` reads a text note.

Aider's chat logs end in ``.md`` too; detection asks ``aider`` first, which takes them
(and passes on its other ``.aider.*`` files).
"""

from __future__ import annotations

from pathlib import Path

from memctl.sources import Head
from memctl.sources.notes import turns

__all__ = ["NAME", "sniff", "turns"]

NAME = "markdown"


def sniff(path: Path, head: Head) -> bool:
    return path.suffix.lower() in (".md", ".markdown")
