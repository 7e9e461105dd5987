"""Reading the sources of an ingest: files in, episodes out, and the report of what
was read, skipped and refused. ``Memory.ingest`` stores what this yields.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memctl.errors import BadInput, FileRefused
from memctl.model import Episode
from memctl.sources import FORMATS, NO_TIME, IngestOptions, Skipped, files_under, format_of, parse

# A batch of whole episodes is one transaction. Each batch re-resolves every slot it
# touches from all of that slot's assertions, so bigger batches are much cheaper for a
# fast source (100k assertions: 3.7k/s at 500 episodes, 6.2k/s at 5,000); the age bound
# keeps a slow source (an LLM) committing every few seconds, so a crash loses little.
BATCH_EPISODES = 5000
BATCH_SECONDS = 2.0
@dataclass
class IngestReport:
    files: int = 0
    formats: dict[str, int] = field(default_factory=dict)  # files read, by format
    unrecognised: list[str] = field(default_factory=list)  # files that are no log memctl reads
    empty: list[str] = field(default_factory=list)  # files with nothing in them (a session that never started)
    episodes: int = 0
    added: int = 0
    reactivated: int = 0
    revised: int = 0  # stored before, read again with more content (a session still being written)
    already_present: int = 0
    assertions: int = 0
    facts_created: int = 0
    facts_expired: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # records that gave no episode, by reason
    malformed: list[str] = field(default_factory=list)  # "file:line: reason", bad input skipped
    refused: list[str] = field(default_factory=list)  # files (or their turns) left out whole, and why
    redactions: int = 0
    left_out: dict[str, int] = field(default_factory=dict)  # tool calls, thinking, images... counted
    aider_zone: str | None = None  # the zone Aider's naive local times were read in
    extractor: str | None = None  # what extracted assertions from episode text
    extraction_calls: int = 0  # model calls, retries included
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    extraction_failures: int = 0
    guard_changes: int = 0  # invented dates the date guard replaced or dropped
    extracted_pending: int = 0  # episodes stored earlier as pending, extracted by this run
    llm_unavailable: str | None = None  # why the LLM could not be used; the rest wait as pending
    operation_id: str | None = None
    time_range: list[str | None] = field(default_factory=lambda: [None, None])

    @property
    def partial(self) -> bool:
        """Something was refused or unreadable, and the rest was kept: exit code 1."""
        return bool(self.refused or self.malformed or self.llm_unavailable)

    def count(self, episode: Episode) -> None:
        self.episodes += 1
        self.redactions += episode.redactions
        for kind, number in episode.left_out.items():
            self.left_out[kind] = self.left_out.get(kind, 0) + number
        low, high = self.time_range
        self.time_range = [min(low or episode.reference_time, episode.reference_time),
                           max(high or episode.reference_time, episode.reference_time)]

    def skip(self, path: Path, item: Skipped) -> None:
        self.skipped[item.reason] = self.skipped.get(item.reason, 0) + 1
        if item.malformed:
            self.malformed.append(f"{path}:{item.position}: {item.reason}")


def read_sources(
    paths: list[Path], options: IngestOptions, report: IngestReport,
    on_file: Callable[[Path, int], None] | None = None,
) -> Iterator[Episode]:
    """Every episode of every file, streaming; what was skipped or refused goes in ``report``.

    Structured ``facts`` files are checked whole before anything is read for storing:
    their bad input refuses the command (BadInput). Session logs are
    forgiving: a bad line is skipped and reported, an unreadable file refused, and
    the other files go on.
    """
    files = []
    for path in files_under(paths):
        if path.stat().st_size == 0:
            report.empty.append(str(path))
        else:
            files.append((path, format_of(path, options)))
    report.files = len(files) + len(report.empty)
    if files and all(fmt is None for _, fmt in files):
        raise BadInput(
            f"nothing here is a log memctl reads ({len(files)} file(s)); formats: {', '.join(FORMATS)} "
            "(auto-detected, or forced with --format)"
        )
    for path, fmt in files:
        if fmt is None:
            report.unrecognised.append(str(path))
        elif fmt == "facts":
            for _ in parse(path, options, fmt):
                pass
    episodes_read = 0
    for path, fmt in files:
        if on_file is not None:
            on_file(path, episodes_read)
        if fmt is None:
            continue
        report.formats[fmt] = report.formats.get(fmt, 0) + 1
        if fmt == "aider":
            report.aider_zone = options.tz or f"this machine's zone ({time.strftime('%Z')})"
        dated = undated = 0
        try:
            for item in parse(path, options, fmt):
                if isinstance(item, Skipped):
                    report.skip(path, item)
                    undated += item.reason == NO_TIME
                    continue
                dated += 1
                episodes_read += 1
                yield item
        except FileRefused as error:
            report.refused.append(str(error))
            continue
        if undated:
            report.refused.append(f"{path}: {undated} turn(s) with {NO_TIME}" + ("" if dated else " (the whole file)"))


def preview(paths: list[Path], options: IngestOptions) -> Iterator[dict]:
    """What ingest would store, one row per episode or skipped record, writing nothing."""
    for path in files_under(paths):
        fmt = format_of(path, options)
        if fmt is None:
            yield {"source": str(path), "position": None, "format": None, "reference_time": None,
                   "reference_time_source": None, "chars": 0, "skipped_reason": "not a format memctl reads"}
            continue
        try:
            for item in parse(path, options, fmt):
                if isinstance(item, Skipped):
                    yield {"source": str(path), "position": item.position, "format": fmt, "reference_time": None,
                           "reference_time_source": None, "chars": 0, "skipped_reason": item.reason}
                else:
                    yield {"id": item.id, "source": item.source, "position": item.position, "format": fmt,
                           "reference_time": item.reference_time,
                           "reference_time_source": item.reference_time_source, "chars": len(item.content),
                           "assertions": len(item.assertions), "redactions": item.redactions,
                           "skipped_reason": None}
        except FileRefused as error:
            yield {"source": str(path), "position": None, "format": fmt, "reference_time": None,
                   "reference_time_source": None, "chars": 0, "skipped_reason": str(error)}


def batches(items: Iterable[Episode], size: int, seconds: float = BATCH_SECONDS) -> Iterator[list[Episode]]:
    batch: list[Episode] = []
    started = time.monotonic()
    for item in items:
        if not batch:
            started = time.monotonic()
        batch.append(item)
        if len(batch) >= size or time.monotonic() - started >= seconds:
            yield batch
            batch = []
    if batch:
        yield batch
