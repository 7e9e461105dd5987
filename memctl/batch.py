"""Extraction through the OpenAI Batch API (docs/batches.md): submit, follow, collect.

``submit`` writes the extraction requests of episodes that wait for a model as JSONL
files, split at the API's limits, uploads each and creates a batch of it. ``collect``
polls the open batches. It takes the replies of finished ones into the extraction cache,
each judged by the date guard as of its own response time (a batch can span two days),
and sends the replies that are wrong back once for their correction: in a second batch,
or live. Then it extracts the answered episodes from the cache through ``memctl.retry``,
as if the calls had been live, with no call made.

Nothing is lost in between. A batch and its requests are recorded before anything is
uploaded, and every step after is written as it happens (``memctl.store.api_batches``).
A process killed between upload and creation is resumed by the next collect. That
collect finds a batch already created by its metadata, so nothing is submitted twice.
An episode whose request was not answered (an expired, failed or cancelled batch, a
partial output file) stays pending, and ``retry --failed --batch`` sends it again.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from memctl import times
from memctl.errors import LLMUnavailable
from memctl.extract import Request
from memctl.extract.cost import Estimate, cost, prices_of
from memctl.extract.llm import (
    CallFailed,
    LLMExtractor,
    cache_key,
    call_with_retries,
    correction_conversation,
    endpoint_of,
    envelope,
    judge,
    reply_text,
)
from memctl.extract.prompt import RESPONSE_FORMAT, build_messages
from memctl.extract.stage import RequestBuilder
from memctl.reports import Collected, Submitted
from memctl.store import api_batches
from memctl.store import episodes as store
from memctl.store.cache import ResponseCache
from memctl.store.connection import Clock, write_transaction

if TYPE_CHECKING:
    from memctl.store import Database

# The Batch API's limits: requests a batch, bytes an input file (200 MB; some room kept).
MAX_REQUESTS = 50_000
MAX_FILE_BYTES = 190_000_000
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
METADATA_KEY = "memctl_batch"  # memctl's id of a batch, by which one created before a crash is found
FINISHED = ("completed", "expired", "cancelled", "failed")  # the API's statuses after which nothing changes


@dataclass(frozen=True)
class Limits:
    requests: int = MAX_REQUESTS
    file_bytes: int = MAX_FILE_BYTES


class BatchAPI:
    """The files and batches endpoints through an ``openai`` client, each call retried as a
    chat call is (``call_with_retries``): a 429 or 5xx waits and tries again, a rejected
    key raises ``LLMUnavailable``, and an endpoint without a Batch API says so."""

    def __init__(self, client: Any, extractor: LLMExtractor):
        self.client = client
        self.retries = extractor.retries

    def _call(self, send: Any, what: str) -> Any:
        import openai

        def attempt() -> Any:
            try:
                return send()
            except openai.NotFoundError as error:
                return error

        answer = call_with_retries(attempt, self.retries, client=self.client, service="Batch API",
                                   model="(a batch)", model_option="--model/MEMCTL_MODEL")
        if isinstance(answer, openai.NotFoundError):
            return _NotFound(f"{what}: HTTP 404 from {endpoint_of(self.client)}")
        return answer

    def _needed(self, answer: Any) -> Any:
        if isinstance(answer, _NotFound):
            raise NoBatchAPI(f"{answer.message}; the endpoint has no Batch API (OpenAI's has): run without --batch")
        return answer

    def upload(self, name: str, content: IO[bytes]) -> str:
        def send() -> Any:
            content.seek(0)
            return self.client.files.create(file=(name, content, "application/jsonl"), purpose="batch")

        return self._needed(self._call(send, "uploading the requests")).id

    def find_file(self, name: str) -> str | None:
        """The id of an uploaded file of this name (one whose upload was not recorded)."""
        listed = self._call(lambda: list(self.client.files.list(purpose="batch")), "listing files")
        if isinstance(listed, _NotFound):
            return None
        return next((item.id for item in listed if item.filename == name and item.status != "error"), None)

    def create(self, file_id: str, batch_id: str) -> Any:
        return self._needed(self._call(lambda: self.client.batches.create(
            input_file_id=file_id, endpoint=ENDPOINT, completion_window=COMPLETION_WINDOW,
            metadata={METADATA_KEY: batch_id}), "creating the batch"))

    def find(self, batch_id: str) -> Any | None:
        """The batch created with memctl's ``batch_id`` (one whose creation was not recorded)."""
        def send() -> Any:
            for remote in self.client.batches.list(limit=100):
                if (remote.metadata or {}).get(METADATA_KEY) == batch_id:
                    return remote
            return None

        found = self._call(send, "listing batches")
        return None if isinstance(found, _NotFound) else found

    def retrieve(self, remote_id: str) -> Any | None:
        found = self._call(lambda: self.client.batches.retrieve(remote_id), "the batch")
        return None if isinstance(found, _NotFound) else found

    def content(self, file_id: str) -> bytes | None:
        found = self._call(lambda: self.client.files.content(file_id).read(), "the results")
        return None if isinstance(found, _NotFound) else found

    def cancel(self, remote_id: str) -> Any | None:
        found = self._call(lambda: self.client.batches.cancel(remote_id), "cancelling the batch")
        return None if isinstance(found, _NotFound) else found


@dataclass(frozen=True)
class _NotFound:
    message: str


class NoBatchAPI(LLMUnavailable):
    """The endpoint answers, but has no files or batches endpoints (a local server)."""


# --- submitting ----------------------------------------------------------------------------


def submit(db: Database, clock: Clock, extractor: LLMExtractor, episode_ids: list[str], *,
           api: BatchAPI | None = None, limits: Limits = Limits(), price_in: float | None = None,
           price_out: float | None = None) -> Submitted:
    """Send the extraction requests of these episodes (the pending or failed among them, and
    not already waiting on a batch) as one batch, or several at the API's limits."""
    result = Submitted()
    stored = [e for e in store.stored_texts(db, episode_ids) if e.extraction in ("pending", "failed")]
    waiting = api_batches.awaiting(db, [e.id for e in stored])
    result.awaiting = len(waiting)
    if len(waiting) == len(stored):  # nothing to send: no endpoint asked, no model looked up
        return result
    client, model = extractor.endpoint()
    api = api or BatchAPI(client, extractor)
    cache = _cache(db, clock)
    by_key: dict[str, list] = defaultdict(list)  # the episodes of one text and time share a request
    cached: list[str] = []
    for episode in stored:
        if episode.id in waiting:
            continue
        key = cache_key(model, Request(episode.id, episode.content, episode.reference_time))
        if cache.get(key) is not None:
            cached.append(episode.id)
        else:
            by_key[key].append(episode)
    if cached:  # a reply this store already has: extracted now from the cache, as a live run would, no call
        from memctl.retry import retry

        result.cached = len(cached)
        result.extracted = retry(db, clock, cached, extractor.of_model(model, cache=cache, cached_only=True))
    builder = RequestBuilder(db, in_order=False)
    result.estimate = Estimate.start(model, db=db, price_in=price_in, price_out=price_out, batch=True)

    def lines() -> Iterator[tuple[list[api_batches.Row], bytes]]:
        for key, episodes in by_key.items():
            first = episodes[0]
            body = _body(model, build_messages(builder.request(first.id, first.content, first.reference_time,
                                                               first.source, first.position)))
            result.estimate.add(body)
            for _ in episodes[1:]:
                result.estimate.add(None)
            yield [api_batches.Row(e.id, key, "sent") for e in episodes], _line(key, body)

    for rows, part in _parts(lines(), limits):
        try:
            batch_id = api_batches.new_batch_id()
            with write_transaction(db):
                # Checked again where it is written: another process may have sent some of
                # these episodes since they were read, and a request is never sent twice.
                taken = api_batches.awaiting(db, [row.episode_id for row in rows])
                if taken:
                    result.awaiting += len(taken)
                    rows = [row for row in rows if row.episode_id not in taken]
                    part = _only(part, {row.cache_key for row in rows})
                if rows:
                    api_batches.record(db, batch_id, "extraction", model, times.to_storage(clock()), rows)
            if not rows:
                continue
            result.batches.append(batch_id)
            result.requests += len({row.cache_key for row in rows})
            result.episodes += len(rows)
            try:
                _send(db, clock, api, batch_id, part)
            except NoBatchAPI as error:  # no later collect can send it: its episodes stay pending
                with write_transaction(db):
                    api_batches.give_up(db, batch_id, str(error))
                    api_batches.update(db, batch_id, times.to_storage(clock()), state="failed", error=str(error))
                raise
            except (LLMUnavailable, CallFailed) as error:  # recorded: the next collect sends it
                result.unsent = f"{batch_id}: {error}"
                break
        finally:
            part.close()
    result.estimate.finish()
    return result


def _cache(db: Database, clock: Clock) -> ResponseCache:
    """The store's extraction cache, on the connection the batch's rows are written with."""
    return ResponseCache(db, lambda: times.to_storage(clock()))


def _body(model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {"model": model, "messages": messages, "response_format": RESPONSE_FORMAT}


def _line(key: str, body: dict[str, Any]) -> bytes:
    return (json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}, ensure_ascii=False)
            + "\n").encode("utf-8")


def _parts(lines: Iterator[tuple[list[api_batches.Row], bytes]],
           limits: Limits) -> Iterator[tuple[list[api_batches.Row], IO[bytes]]]:
    """The lines in files of at most ``limits`` requests and bytes, with their episodes' rows."""
    rows: list[api_batches.Row] = []
    part: IO[bytes] = tempfile.TemporaryFile()
    requests = 0
    for line_rows, line in lines:
        if requests and (requests >= limits.requests or part.tell() + len(line) > limits.file_bytes):
            yield rows, part
            rows, part, requests = [], tempfile.TemporaryFile(), 0
        part.write(line)
        rows += line_rows
        requests += 1
    if requests:
        yield rows, part
    else:
        part.close()


def _only(part: IO[bytes], keys: set[str]) -> IO[bytes]:
    """A part's file with the lines of these keys alone."""
    kept: IO[bytes] = tempfile.TemporaryFile()
    part.seek(0)
    for line in part:
        if json.loads(line)["custom_id"] in keys:
            kept.write(line)
    part.close()
    return kept


def _send(db: Database, clock: Clock, api: BatchAPI, batch_id: str, part: IO[bytes]) -> None:
    """Upload a recorded batch's file and create the batch, writing down each step."""
    batch = api_batches.get(db, batch_id)
    assert batch is not None
    file_id = batch.file_id
    if file_id is None:
        file_id = api.upload(_file_name(batch_id), part)
        with write_transaction(db):
            api_batches.update(db, batch_id, times.to_storage(clock()), file_id=file_id)
    remote = api.create(file_id, batch_id)
    with write_transaction(db):
        api_batches.update(db, batch_id, times.to_storage(clock()), state="submitted", remote_id=remote.id,
                           remote_status=remote.status)


def _file_name(batch_id: str) -> str:
    return f"memctl-{batch_id}.jsonl"


def _resume(db: Database, clock: Clock, api: BatchAPI, batch: api_batches.Batch) -> None:
    """A batch recorded but not (known to be) created: find it if it was, else send it."""
    if (remote := api.find(batch.id)) is not None:
        with write_transaction(db):
            api_batches.update(db, batch.id, times.to_storage(clock()), state="submitted", remote_id=remote.id,
                               remote_status=remote.status, file_id=remote.input_file_id)
        return
    if batch.file_id is None and (file_id := api.find_file(_file_name(batch.id))) is not None:
        with write_transaction(db):
            api_batches.update(db, batch.id, times.to_storage(clock()), file_id=file_id)
    with tempfile.TemporaryFile() as part:
        for _, line in _lines_of(db, batch):
            part.write(line)
        if not part.tell():  # every episode of it was undone meanwhile: nothing to send
            with write_transaction(db):
                api_batches.give_up(db, batch.id, "its episodes were undone before it was sent")
                api_batches.update(db, batch.id, times.to_storage(clock()), state="cancelled")
            return
        _send(db, clock, api, batch.id, part)


def _lines_of(db: Database, batch: api_batches.Batch) -> Iterator[tuple[str, bytes]]:
    """A recorded batch's request lines, made again from the store (one per key)."""
    rows = api_batches.rows_of(db, batch.id, states=("sent",))
    texts = {e.id: e for e in store.stored_texts(db, [row.episode_id for row in rows])}
    builder = RequestBuilder(db, in_order=False)
    made: set[str] = set()
    for row in rows:  # one line a key, from an episode of it still active
        if (episode := texts.get(row.episode_id)) is None or row.cache_key in made:
            continue
        made.add(key := row.cache_key)
        request = builder.request(episode.id, episode.content, episode.reference_time, episode.source,
                                  episode.position)
        if batch.kind == "correction":
            text, replied_at = _opened(row.reply)
            _, problem = judge(text, request, extractor=f"llm:{batch.model}", extracted_at=replied_at)
            messages = correction_conversation(request, text, problem)
        else:
            messages = build_messages(request)
        yield key, _line(key, _body(batch.model, messages))


def _opened(kept: str | None) -> tuple[str, str]:
    """(reply, when it was given) of a cache envelope kept with a request."""
    data = json.loads(kept or "{}")
    return data.get("reply", ""), data.get("extracted_at", "")


# --- collecting ----------------------------------------------------------------------------


def collect(db: Database, clock: Clock, extractor: LLMExtractor, *, live_corrections: bool = False,
            api: BatchAPI | None = None, prices: tuple[float | None, float | None] = (None, None)) -> Collected:
    """Poll the open batches and take what finished; see the module's docstring. ``prices``
    (input, output; US dollars per million tokens) price what they used, else the table's."""
    from memctl.retry import retry

    result = Collected()
    if not api_batches.anything_to_collect(db):
        return result
    batches = api_batches.open_batches(db)
    if batches:
        api = api or BatchAPI(extractor.client(), extractor)
    for batch in batches:
        assert api is not None
        try:
            _follow(db, clock, api, batch, result, prices)
        except CallFailed as error:  # this batch's turn is over; the others go on, and the next collect tries again
            result.errors.append(f"{batch.id}: {error}")
    try:
        _corrections(db, clock, extractor, api, result, live=live_corrections)
    except (LLMUnavailable, CallFailed) as error:  # recorded; what was answered is extracted all the same
        result.errors.append(f"the corrections could not be sent: {error}; the next collect sends them")
    by_model: dict[str, list[str]] = defaultdict(list)
    for model, episode_id in api_batches.answered_pending(db):
        by_model[model].append(episode_id)
    for model, episode_ids in by_model.items():
        cached = extractor.of_model(model, cache=_cache(db, clock), cached_only=True)
        result.extracted.append(retry(db, clock, episode_ids, cached))
    return result


def _follow(db: Database, clock: Clock, api: BatchAPI, batch: api_batches.Batch, result: Collected,
            prices: tuple[float | None, float | None]) -> None:
    """One open batch: cancelled when no episode needs it, sent when it was not, else
    polled, and taken when it has finished."""
    if not api_batches.still_needed(db, batch.id) and batch.state != "cancelling":
        with write_transaction(db):
            api_batches.give_up(db, batch.id, "cancelled: no episode needed it any more")
            api_batches.update(db, batch.id, times.to_storage(clock()), state="cancelling")
        batch.state = "cancelling"
    if batch.state == "cancelling":
        _cancel(db, clock, api, batch)
        result.cancelled.append(batch.id)
        return
    if batch.state == "preparing":
        _resume(db, clock, api, batch)
        result.submitted.append(batch.id)
        return
    assert batch.remote_id is not None
    result.polled += 1
    remote = api.retrieve(batch.remote_id)
    if remote is None:
        _finish(db, clock, batch, "failed", {}, result, prices, error=f"the API no longer knows batch {batch.remote_id}")
        return
    if remote.status not in FINISHED:
        with write_transaction(db):
            api_batches.update(db, batch.id, times.to_storage(clock()), remote_status=remote.status)
        result.open.append(batch.id)
        return
    lines: dict[str, dict] = {}
    for file_id in (remote.output_file_id, remote.error_file_id):
        if file_id and (content := api.content(file_id)) is not None:
            lines.update(_read_lines(content))
    _finish(db, clock, batch, remote.status, lines, result, prices, error=_errors_of(remote))


def _read_lines(content: bytes) -> Iterator[tuple[str, dict]]:
    """(custom_id, line) of each whole line of an output or error file; a line cut short
    (a partial file) is skipped: its request counts as unanswered."""
    for raw in content.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
            yield line["custom_id"], line


def _errors_of(remote: Any) -> str | None:
    errors = getattr(getattr(remote, "errors", None), "data", None) or []
    return "; ".join(f"{e.code}: {e.message}" for e in errors[:3]) or None


@dataclass
class _Outcome:
    """What a batch said to one request: a reply and when it was given, or why not."""

    text: str | None = None
    replied_at: str = ""
    error: str | None = None
    refused: bool = False  # the API refused the request (4xx): sending it again won't help


def _outcome(line: dict | None, status: str) -> tuple[_Outcome, int, int]:
    """(outcome, input tokens, output tokens) of a request's line in the results."""
    from openai.types.chat import ChatCompletion

    if line is None:
        return _Outcome(error=f"the batch ended {status} without answering it"), 0, 0
    response = line.get("response") or {}
    code = response.get("status_code")
    if code == 200:
        try:
            completion = ChatCompletion.model_validate(response.get("body"))
            text = reply_text(completion)
        except CallFailed as failed:
            return _Outcome(error=str(failed), refused=True), 0, 0
        except ValueError as bad:
            return _Outcome(error=f"the batch's reply is no completion: {str(bad)[:200]}", refused=True), 0, 0
        usage = completion.usage
        replied_at = times.to_storage(datetime.fromtimestamp(completion.created, UTC))
        return (_Outcome(text=text, replied_at=replied_at),
                usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0)
    error = line.get("error") or (response.get("body") or {}).get("error") or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    refused = isinstance(code, int) and 400 <= code < 500 and code not in (408, 409, 429)
    return _Outcome(error=f"the batch answered HTTP {code}: {message}" if code else f"the batch failed it: {message}",
                    refused=refused), 0, 0


def _finish(db: Database, clock: Clock, batch: api_batches.Batch, status: str, lines: dict[str, dict],
            result: Collected, prices: tuple[float | None, float | None], *, error: str | None) -> None:
    """A finished batch's replies into the cache and its requests' states, in one
    transaction: a collect killed meanwhile leaves the batch open, to be taken again."""
    name = f"llm:{batch.model}"
    cache = _cache(db, clock)
    with write_transaction(db):
        current = api_batches.get(db, batch.id)
        if current is None or not current.open:  # another collect took it meanwhile
            return
        rows = {row.cache_key: row for row in api_batches.rows_of(db, batch.id, states=("sent",))}
        texts = api_batches.contents(db, [row.episode_id for row in rows.values()])
        input_tokens = output_tokens = 0
        changes = []
        for key, row in rows.items():
            outcome, used_in, used_out = _outcome(lines.get(key), status)
            input_tokens += used_in
            output_tokens += used_out
            content, reference_time = texts[row.episode_id]
            request = Request(row.episode_id, content, reference_time)
            state, kept, why = _judged(batch, row, request, outcome, name)
            if state == "answered":
                assert kept is not None
                cache.put(key, kept, row.episode_id)
                kept = None
            changes.append((key, state, kept, why))
        api_batches.set_rows(db, batch.id, changes)
        api_batches.add_tokens(db, batch.id, input_tokens, output_tokens)
        api_batches.update(db, batch.id, times.to_storage(clock()), state=status, remote_status=status,
                           error=error)
        episodes_by_state = api_batches.rows_of(db, batch.id)
    result.finished.append(batch.id)
    for row in episodes_by_state:
        if row.cache_key in rows:
            result.answered += row.state == "answered"
            result.failed += row.state == "failed"
            result.unanswered += row.state == "unanswered"
            if row.state == "failed" and result.first_failure is None:
                result.first_failure = f"{row.episode_id}: {row.error}"
    result.input_tokens += input_tokens
    result.output_tokens += output_tokens
    spent = cost(input_tokens, output_tokens, *prices_of(batch.model, *prices), batch=True)
    if spent is not None:
        result.cost_usd = (result.cost_usd or 0.0) + spent
    if error:
        result.errors.append(f"{batch.id}: {error}")


def _judged(batch: api_batches.Batch, row: api_batches.Row, request: Request, outcome: _Outcome,
            name: str) -> tuple[str, str | None, str | None]:
    """(request state, cache envelope or kept reply, why) of one request's outcome.

    As a live call's: a reply the guard finds wrong goes back once (``correcting``, kept);
    after its correction the last reply that can be read is taken, else the first; a
    request the API refused fails; one not answered waits to be sent again.
    """
    if batch.kind == "correction":
        first_text, first_at = _opened(row.reply)
        if outcome.text is not None:
            reply, problem = judge(outcome.text, request, extractor=name, extracted_at=outcome.replied_at)
            if reply is not None:
                return "answered", envelope(outcome.text, outcome.replied_at), None
        else:
            problem = outcome.error or ""
        first, _ = judge(first_text, request, extractor=name, extracted_at=first_at)
        if first is not None:
            return "answered", envelope(first_text, first_at), None
        if outcome.text is None and not outcome.refused:
            return "unanswered", None, outcome.error
        return "failed", None, f"invalid model reply, also after a retry: {problem[:300]}"
    if outcome.text is None:
        return ("failed" if outcome.refused else "unanswered"), None, outcome.error
    _, problem = judge(outcome.text, request, extractor=name, extracted_at=outcome.replied_at)
    if problem:
        return "correcting", envelope(outcome.text, outcome.replied_at), problem[:300]
    return "answered", envelope(outcome.text, outcome.replied_at), None


def _corrections(db: Database, clock: Clock, extractor: LLMExtractor, api: BatchAPI | None, result: Collected, *,
                 live: bool) -> None:
    """The replies found wrong, sent back once: live, or in a correction batch per model."""
    waiting = api_batches.correcting(db)
    if not waiting:
        return
    by_model: dict[str, list[api_batches.Row]] = defaultdict(list)
    for model, row in waiting:
        by_model[model].append(row)
    for model, rows in by_model.items():
        if live:
            _correct_live(db, clock, extractor.of_model(model, cache=_cache(db, clock)), rows, result)
            continue
        api = api or BatchAPI(extractor.client(), extractor)
        batch_id = api_batches.new_batch_id()
        with write_transaction(db):
            api_batches.record(db, batch_id, "correction", model, times.to_storage(clock()),
                               [api_batches.Row(row.episode_id, row.cache_key, "sent", row.reply) for row in rows])
        batch = api_batches.get(db, batch_id)
        assert batch is not None
        result.submitted.append(batch_id)
        result.corrections_sent += len(rows)
        with tempfile.TemporaryFile() as part:
            for _, line in _lines_of(db, batch):
                part.write(line)
            _send(db, clock, api, batch_id, part)


def _correct_live(db: Database, clock: Clock, extractor: LLMExtractor, rows: list[api_batches.Row],
                  result: Collected) -> None:
    texts = api_batches.contents(db, [row.episode_id for row in rows])
    for row in rows:
        content, reference_time = texts[row.episode_id]
        text, replied_at = _opened(row.reply)
        outcome, kept = extractor.correct(Request(row.episode_id, content, reference_time), text, replied_at)
        with write_transaction(db):
            if kept is not None:
                _cache(db, clock).put(row.cache_key, kept, row.episode_id)
                api_batches.settle_correction(db, row.episode_id, "answered", None)
                result.corrected_live += 1
            else:
                api_batches.settle_correction(db, row.episode_id, "failed", outcome.error)
                result.failed += 1
                result.first_failure = result.first_failure or f"{row.episode_id}: {outcome.error}"
        result.input_tokens += outcome.input_tokens
        result.output_tokens += outcome.output_tokens


# --- cancelling ----------------------------------------------------------------------------


def _cancel(db: Database, clock: Clock, api: BatchAPI, batch: api_batches.Batch) -> None:
    """Cancel a batch marked ``cancelling`` at the API (one made before a kill is found
    first), and mark it cancelled."""
    remote_id = batch.remote_id
    if remote_id is None and (remote := api.find(batch.id)) is not None:
        remote_id = remote.id
    if remote_id is not None:
        try:
            api.cancel(remote_id)
        except CallFailed as error:
            if not error.refused:  # the API is in trouble: the next collect tries again
                raise
            # Refused: it finished meanwhile, so there is nothing more to spend on it.
    with write_transaction(db):
        api_batches.update(db, batch.id, times.to_storage(clock()), state="cancelled", remote_id=remote_id)


def _cancel_all(db: Database, clock: Clock, extractor: LLMExtractor, batches: list[api_batches.Batch],
                why: str) -> tuple[list[str], str | None]:
    """(batches cancelled, why the others could not be yet). Their requests still out are
    given up at once, so their episodes are free for a live run or another batch; the
    API is told when it can be (a batch it cannot be told of now stays ``cancelling``,
    and the next collect tells it, taking none of its replies)."""
    with write_transaction(db):
        for batch in batches:
            api_batches.give_up(db, batch.id, why)
            api_batches.update(db, batch.id, times.to_storage(clock()), state="cancelling")
    cancelled: list[str] = []
    try:
        api = BatchAPI(extractor.client(), extractor)
        for batch in batches:
            _cancel(db, clock, api, batch)
            cancelled.append(batch.id)
    except (LLMUnavailable, CallFailed) as error:
        return cancelled, f"{error}; 'memctl batches collect' cancels them when it can"
    return cancelled, None


def cancel_unneeded(db: Database, clock: Clock, extractor: LLMExtractor) -> tuple[list[str], str | None]:
    """After an undo: an open batch none of whose episodes waits for it any more is
    cancelled, so that it costs nothing more (``_cancel_all``)."""
    unneeded = [b for b in api_batches.open_batches(db) if not api_batches.still_needed(db, b.id)]
    if not unneeded:
        return [], None
    return _cancel_all(db, clock, extractor, unneeded, "cancelled: no episode needed it any more")


def cancel(db: Database, clock: Clock, extractor: LLMExtractor, batch_ids: list[str]) -> tuple[list[str], str | None]:
    """``batches cancel``: these open batches (memctl's ids or unique prefixes, or every
    open one with none named) cancelled; their episodes stay pending (``_cancel_all``)."""
    from memctl.errors import Ambiguous, NotFound

    open_ones = api_batches.open_batches(db)
    chosen = open_ones if not batch_ids else []
    for wanted in batch_ids:
        matches = [b for b in api_batches.listing(db) if b.id.startswith(wanted)]
        if not matches:
            raise NotFound(f"no batch {wanted!r}; 'memctl batches' lists them")
        if len(matches) > 1:
            raise Ambiguous(f"{wanted!r} names {len(matches)} batches: {', '.join(b.id for b in matches[:5])}")
        if matches[0].open:
            chosen.append(matches[0])
    return _cancel_all(db, clock, extractor, chosen, "cancelled by 'memctl batches cancel'")
