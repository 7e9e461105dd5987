"""Sources: files in, dated episodes out. One module per format.

Every parser stamps each episode with its true time, resolved per DESIGN §2: the
record's own time, then session times, then ``--reference-time``, then the file's
mtime with ``--from-mtime``; otherwise the file is refused. Never the import's clock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jsonlines

from memctl import times
from memctl.errors import MemctlError
from memctl.model import Episode

FORMATS = ("facts",)


@dataclass(frozen=True)
class IngestOptions:
    format: str = "auto"
    reference_time: str | None = None  # storage form, from --reference-time
    from_mtime: bool = False


def fallback_reference_time(path: Path, options: IngestOptions) -> tuple[str, str]:
    """(time, source) for records without a time of their own, or refuse the file."""
    if options.reference_time is not None:
        return options.reference_time, "user"
    if options.from_mtime:
        return times.epoch_to_storage(os.stat(path).st_mtime), "mtime"
    raise MemctlError(
        f"{path}: no reference time for its records; pass --reference-time ISO "
        "(e.g. --reference-time 2025-03-01) or --from-mtime to date them by the file's modification time"
    )


class _NumberedLines:
    """Lines of a text file that remember the number and text of the last one read."""

    def __init__(self, handle):
        self._handle = handle
        self.number = 0
        self.text = ""

    def __iter__(self) -> Iterator[str]:
        for self.number, self.text in enumerate(self._handle, 1):
            yield self.text


def read_jsonl(path: Path) -> Iterator[tuple[int, str, object]]:
    """(line number, raw line, value) per non-blank line; a bad line raises MemctlError."""
    with open(path, encoding="utf-8", errors="strict", newline="") as handle:
        lines = _NumberedLines(handle)
        reader = jsonlines.Reader(lines)
        while True:
            try:
                value = reader.read(skip_empty=True, allow_none=True)
            except EOFError:
                return
            except jsonlines.InvalidLineError as error:
                raise MemctlError(f"{path}:{error.lineno}: {error.args[0]}") from None
            except UnicodeDecodeError:
                raise MemctlError(f"{path}:{lines.number + 1}: not UTF-8 text") from None
            yield lines.number, lines.text, value


def files_under(paths: list[Path]) -> list[Path]:
    """The files named, and those inside directories named, each once, in path order."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
                found.setdefault(child.resolve(), None)
        elif path.is_file():
            found.setdefault(path.resolve(), None)
        else:
            raise MemctlError(f"{path}: no such file or directory")
    return list(found)


def detect_format(path: Path) -> str | None:
    """The format of a file, from its first record; None for a file with no records."""
    for _, _, value in read_jsonl(path):
        if isinstance(value, dict) and "facts" in value:
            return "facts"
        break
    else:
        return None
    raise MemctlError(
        f"{path}: cannot tell its format; this version reads --format facts "
        '(JSONL lines like {"reference_time": "2025-03-01", "facts": [...]})'
    )


def parse(path: Path, options: IngestOptions) -> Iterator[Episode]:
    """Episodes of one file, in file order; raises MemctlError on input it cannot take."""
    fmt = detect_format(path) if options.format == "auto" else options.format
    if fmt is None:
        return
    if fmt == "facts":
        from memctl.sources import facts

        yield from facts.parse(path, options)
    else:
        raise MemctlError(f"unknown format {fmt!r}; choose one of: auto, {', '.join(FORMATS)}")
