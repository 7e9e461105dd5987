"""memctl: old agent and chat session logs in, a local bi-temporal memory out.

The library API is ``Memory``; every command of the CLI is one of its methods::

    from memctl import IngestOptions, Memory

    memory = Memory.open("memory.db")
    memory.ingest([Path("~/.claude/projects").expanduser()], IngestOptions(from_mtime=True))
    for fact in memory.recall("which database does billing use", as_of="2025-03-01T00:00:00.000000Z").results:
        print(fact.fact, fact.valid_at, fact.status)

Names are imported lazily, so ``import memctl`` (and ``memctl --help``) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The distribution's name on the package index ("memctl" there is an unrelated project);
# the command and the import name are memctl.
DISTRIBUTION = "memctl-memory"

if TYPE_CHECKING:  # for type checkers and editors; at run time __getattr__ imports on first use
    # ruff: noqa: F401
    from memctl.errors import (
        Ambiguous,
        BadInput,
        FileRefused,
        LLMUnavailable,
        MemctlError,
        NotFound,
        NothingToExtract,
        NotUndoable,
    )
    from memctl.extract import Extractor, Request, Result, build_extractor
    from memctl.memory import Memory
    from memctl.reports import (
        DateFix,
        Effects,
        FactChange,
        IngestReport,
        MemoryAdded,
        RebuildResult,
        RepairResult,
        RetryResult,
        Settlement,
        SummaryCounts,
        UndoPlan,
    )
    from memctl.results import (
        Conflict,
        EntitySummary,
        EpisodeDetail,
        EpisodeHit,
        EpisodeSummary,
        Fact,
        History,
        Operation,
        RecallResult,
        SessionHit,
        SessionListing,
        Slot,
        Stats,
        StoredAssertion,
    )
    from memctl.sources import IngestOptions

_HOMES = {
    "memctl.memory": ["Memory"],
    "memctl.sources": ["IngestOptions"],
    "memctl.extract": ["Extractor", "Request", "Result", "build_extractor"],
    "memctl.errors": ["MemctlError", "BadInput", "NotFound", "Ambiguous", "NotUndoable", "NothingToExtract",
                      "FileRefused", "LLMUnavailable"],
    "memctl.results": ["RecallResult", "Fact", "EpisodeHit", "SessionHit", "EntitySummary", "SessionListing",
                       "Conflict", "History", "Slot", "EpisodeSummary", "EpisodeDetail", "StoredAssertion", "Stats",
                       "Operation"],
    "memctl.reports": ["IngestReport", "UndoPlan", "Effects", "FactChange", "RetryResult", "RepairResult", "DateFix",
                       "RebuildResult", "MemoryAdded", "Settlement", "SummaryCounts"],
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_HOME_OF)


def __getattr__(name: str) -> Any:
    if name not in _HOME_OF:
        raise AttributeError(f"module 'memctl' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME_OF[name]), name)
