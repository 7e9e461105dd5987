"""Ingest: files in, episodes and their assertions stored, and the report of what was
read, skipped, refused and stored.

Episodes are stored in batches, one write transaction each: a crash keeps every
episode fully in or fully out, and running the same command again finishes the job.
The whole ingest is one operation in the journal, running until its last batch.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from memctl.errors import BadInput, FileRefused
from memctl.extract import Extractor
from memctl.long_operation import LongOperation
from memctl.model import Episode
from memctl.reports import IngestReport
from memctl.sources import (
    FORMATS,
    NO_TIME,
    IngestOptions,
    Notice,
    Skipped,
    binary_content,
    cannot_read,
    files_under,
    format_of,
    parse,
)
from memctl.store import BATCH_EPISODES, BATCH_MOST_EPISODES, BATCH_WRITE_SECONDS, batches, next_batch_size
from memctl.store import operations as journal
from memctl.store.connection import Clock
from memctl.store.episodes import Added, rename, sort_new, store_episodes
from memctl.store.facts import SlotChanges

if TYPE_CHECKING:
    from memctl.store import Database

# A facts file's checked episodes are set aside in memory up to this size, then in a
# temporary file (a million facts make about 400 MB of them).
SPOOL_IN_MEMORY_BYTES = 32 << 20
# What an ingest's journal row counts, kept up to date batch by batch.
COUNTED = ("added", "reactivated", "revised", "assertions", "facts_created", "facts_expired")


def ingest(db: Database, clock: Clock, paths: list[Path], options: IngestOptions, *,
           extractor: Extractor | None = None, batch_size: int | None = None,
           on_file: Callable[[Path, int], None] | None = None, sources: set[str] | None = None) -> IngestReport:
    """Ingest files and directories; see ``read_sources`` for what is skipped or refused.

    Episodes that come without assertions (session logs, notes) go through
    ``extractor`` and the date guard; without one they are stored as they are, pending.
    """
    from memctl.extract.stage import extracted

    report = IngestReport(extractor=extractor.name if extractor else None)
    # The journal takes the extractor's name from the report when the first batch is
    # stored: by then an LLM's model, if none was named, has been looked up.
    command = {"paths": [str(p) for p in paths], **asdict(options)}
    episodes = read_sources(paths, options, report, on_file)
    if sources is not None:  # the caller is told every source read (a batch is sent of their pending episodes)
        episodes = _noted(episodes, sources)
    if extractor is not None:
        episodes = extracted(db, episodes, extractor, report)
    return store_in_batches(db, clock, episodes, command=command, batch_size=batch_size, report=report)


def _noted(episodes: Iterable[Episode], sources: set[str]) -> Iterator[Episode]:
    for episode in episodes:
        sources.add(episode.source)
        yield episode


def store_in_batches(db: Database, clock: Clock, episodes: Iterable[Episode], *, command: dict | None = None,
                     batch_size: int | None = None, report: IngestReport | None = None) -> IngestReport:
    """Store episodes (their assertions already made) as one ingest operation.

    Each batch's episodes and assertions commit together; the facts they make are owed
    (``store.underived.Owed``) and derived for many batches at once, every so often and
    at the end, in transactions of their own. Batches hold ``batch_size`` episodes; by
    default BATCH_EPISODES at first, then as many as take about BATCH_WRITE_SECONDS to
    store (fewer commits rewrite fewer index pages), up to BATCH_MOST_EPISODES.
    """
    report = report or IngestReport()

    def derived(changes: SlotChanges) -> None:
        assert operation.entry is not None
        count_facts(report, changes)
        save_counts(db, operation.entry, report)

    operation = LongOperation(db, clock, derived)
    size = batch_size or BATCH_EPISODES
    with operation.running():
        # Asked anew for each batch: the size the last one's time gave (late binding is the point).
        for batch in batches(episodes, lambda: size):  # noqa: B023
            for episode in batch:
                report.count(episode)
            began = time.monotonic()
            with operation.batch() as at:
                added = sort_new(db, batch)
                report.already_present += len(added.already_present)
                report.kept_readings += len(added.kept)
                report.still_failed += added.still_failed
                report.extracted_pending += len(added.extracted)
                if not added.to_store:
                    continue
                entry = operation.entry or operation.start(
                    "ingest", at, {"extractor": report.extractor, **(command or {})})
                assert entry is not None and operation.owed is not None
                store_episodes(db, added, at, entry.id)
                tally(report, added)
                rename(db, added.touched)
                operation.owed.add(db, added.touched, at)
                save_counts(db, entry, report)
            if batch_size is None:
                size = next_batch_size(size, time.monotonic() - began, BATCH_WRITE_SECONDS, least=BATCH_EPISODES,
                                       most=BATCH_MOST_EPISODES)
            operation.derive_if_due()
    if operation.entry is not None:
        report.operation_id = operation.entry.id
        journal.finish_apart(db, clock, operation.entry.id, "done")
    return report


def tally(report: IngestReport, added: Added) -> None:
    """Count what one transaction stored into ``report``."""
    report.added += len(added.added)
    report.reactivated += len(added.reactivated)
    report.revised += len(added.revised)
    report.assertions += added.assertions


def count_facts(report: IngestReport, changes: SlotChanges) -> None:
    report.facts_created += len(changes.inserted)
    report.facts_expired += len(changes.expired)


def save_counts(db: Database, entry: journal.Entry, report: IngestReport) -> None:
    """The journal's counts (``COUNTED``) brought up to date, in the caller's transaction."""
    entry.counts = {name: getattr(report, name) for name in COUNTED}
    journal.save_counts(db, entry)


def read_sources(
    paths: list[Path], options: IngestOptions, report: IngestReport,
    on_file: Callable[[Path, int], None] | None = None,
) -> Iterator[Episode]:
    """Every episode of every file, streaming; what was skipped or refused goes in ``report``.

    Structured ``facts`` files are checked whole before anything is read for storing: a
    bad one is refused whole (``refused``) while the others go on, and one named alone
    refuses the command (BadInput). Session logs are
    forgiving: a bad line is skipped and reported, an unreadable file refused, and
    the other files go on.
    """
    files = []
    for path in files_under(paths, report.refused):
        if path.stat().st_size == 0:
            report.empty.append(str(path))
        elif (refused := cannot_read(path)) is not None:
            report.refused.append(refused)
        elif (fmt := format_of(path, options)) is not None and (refused := binary_content(path)) is not None:
            report.refused.append(refused)
        else:
            files.append((path, fmt))
    report.files = len(files) + len(report.empty)
    if files and all(fmt is None for _, fmt in files) and not report.refused:
        raise BadInput(
            f"nothing here is a log memctl reads ({len(files)} file(s)); formats: {', '.join(FORMATS)} "
            "(auto-detected, or forced with --format)"
        )
    # A facts file's checked episodes wait here to be stored (``facts.check``); in memory
    # while they are few.
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY_BYTES) as spool:
        checked: dict[Path, int] = {}
        bad: set[Path] = set()
        for path, fmt in files:
            if fmt is None:
                report.unrecognised.append(str(path))
            elif fmt == "facts":
                from memctl.sources import facts

                before = spool.tell()
                try:
                    checked[path] = facts.check(path, options, spool)
                except BadInput as error:
                    if len(files) == 1:
                        raise  # the one file named is bad input: nothing is stored, exit 2
                    # One bad facts file among others is refused whole; the others go on.
                    spool.seek(before)
                    spool.truncate()
                    bad.add(path)
                    report.refused.append(f"{path}: not stored: {error}")
        spool.seek(0)
        episodes_read = 0
        for path, fmt in files:
            if on_file is not None:
                on_file(path, episodes_read)
            if fmt is None or path in bad:
                continue
            report.formats[fmt] = report.formats.get(fmt, 0) + 1
            if fmt == "aider":
                report.aider_zone = options.tz or f"this machine's zone ({time.strftime('%Z')})"
            dated = undated = 0
            if fmt == "facts":
                from memctl.sources import facts

                items: Iterable[Episode | Skipped | Notice] = facts.checked(spool, checked[path])
            else:
                items = parse(path, options, fmt)
            try:
                for item in items:
                    if isinstance(item, Skipped):
                        report.skip(path, item)
                        undated += item.reason == NO_TIME
                        continue
                    if isinstance(item, Notice):
                        report.notices.append(f"{path}: {item.text}")
                        continue
                    dated += 1
                    episodes_read += 1
                    yield item
            except FileRefused as error:
                report.refused.append(str(error))
                continue
            if undated:
                report.refused.append(f"{path}: {undated} turn(s) with {NO_TIME}" + ("" if dated else " (the whole file)"))


def preview(paths: list[Path], options: IngestOptions,
            more: Callable[[Episode], dict] | None = None) -> Iterator[dict]:
    """What ingest would store, one row per episode or skipped record, writing nothing.

    A skipped row says why (``skipped_reason``) and whether the real run would count it
    as bad input (``bad_input``: a malformed line or a refused file, exit 1). ``more``
    gives an episode's row more fields (what extracting it would cost).
    """
    not_files: list[str] = []
    files = files_under(paths, not_files)
    for path in files:
        fmt = None if (refused := cannot_read(path)) else format_of(path, options)
        if refused or (fmt is not None and (refused := binary_content(path))):
            yield _skipped_row(path, fmt, refused, bad_input=True)
            continue
        if fmt is None:
            yield _skipped_row(path, None, "not a format memctl reads", bad_input=False)
            continue
        try:
            for item in parse(path, options, fmt):
                if isinstance(item, Notice):  # said by the real run; the rows are its episodes
                    continue
                if isinstance(item, Skipped):  # an undated turn is refused by the real run: exit 1 as it does
                    yield _skipped_row(path, fmt, item.reason, bad_input=item.malformed or item.reason == NO_TIME,
                                       position=item.position)
                else:
                    yield {"id": item.id, "source": item.source, "position": item.position, "format": fmt,
                           "reference_time": item.reference_time,
                           "reference_time_source": item.reference_time_source, "chars": len(item.content),
                           "assertions": len(item.assertions), "redactions": item.redactions,
                           "redacted": item.redacted,
                           "skipped_reason": None, "bad_input": False, **(more(item) if more else {})}
        except FileRefused as error:
            yield _skipped_row(path, fmt, str(error), bad_input=True)
        except BadInput as error:  # a bad facts file: refused whole among others, as the real run does
            if len(files) == 1:
                raise
            yield _skipped_row(path, fmt, f"not stored: {error}", bad_input=True)
    for line in not_files:
        yield _skipped_row(Path(line.split(": ")[0]), None, line, bad_input=True)


def _skipped_row(path: Path, fmt: str | None, reason: str, *, bad_input: bool, position: int | None = None) -> dict:
    return {"source": str(path), "position": position, "format": fmt, "reference_time": None,
            "reference_time_source": None, "chars": 0, "skipped_reason": reason, "bad_input": bad_input}


