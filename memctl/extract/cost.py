"""What an extraction will cost, known before it runs: its calls, tokens and price.

Tokens are estimated from characters: ``CHARS_PER_TOKEN`` was measured on the real
session logs' requests (the prompt, context and episode of each) with OpenAI's
o200k_base tokenizer, 4.00 characters a token over 167 requests (docs/batches.md). A
tokenizer of its own would need its vocabulary downloaded on first use, which a dry run
must not depend on. A reply's length is taken from the replies this store has cached,
when it has enough of them, else ``DEFAULT_OUTPUT_TOKENS``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, cast

from memctl.errors import BadInput
from memctl.reports import Record, record

if TYPE_CHECKING:
    from memctl.model import Episode
    from memctl.store import Database, Queryable

CHARS_PER_TOKEN = 4.0
TOKENS_PER_MESSAGE = 4  # the chat format's framing of each message, as OpenAI counts it
REPLY_PRIMING_TOKENS = 3
DEFAULT_OUTPUT_TOKENS = 250  # a reply of two or three assertions with their dates
CACHED_REPLIES_NEEDED = 20  # fewer than this say too little of a model's replies
BATCH_DISCOUNT = 0.5  # the Batch API's price is half the live one

# US dollars per million tokens (input, output), OpenAI's list prices for live calls.
# Prices change: --price-in and --price-out override them, and set a model's not listed.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
}
_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")  # "gpt-4o-mini-2024-07-18" is priced as gpt-4o-mini


def text_tokens(text: str) -> int:
    return round(len(text) / CHARS_PER_TOKEN)


def request_tokens(body: dict[str, Any]) -> int:
    """The input tokens of one chat request: its messages, framed, and its response schema
    (which OpenAI puts before the model as it does a message)."""
    tokens = REPLY_PRIMING_TOKENS + sum(TOKENS_PER_MESSAGE + text_tokens(m["content"]) for m in body["messages"])
    if body.get("response_format") is not None:
        tokens += text_tokens(json.dumps(body["response_format"]))
    return tokens


def check_price(value: float | None, parameter: str) -> None:
    if value is not None and not 0 <= value < float("inf"):
        raise BadInput(f"must be a price in US dollars per million tokens, 0 or more, got {value}", parameter=parameter)


def prices_of(model: str | None, price_in: float | None = None,
              price_out: float | None = None) -> tuple[float | None, float | None]:
    """(input, output) US dollars per million tokens: as given, else the table's for the model."""
    listed = PRICES.get(_DATED.sub("", model or ""), (None, None))
    return (listed[0] if price_in is None else price_in, listed[1] if price_out is None else price_out)


def cost(input_tokens: int, output_tokens: int, price_in: float | None, price_out: float | None, *,
         batch: bool) -> float | None:
    """US dollars, at the Batch API's discount with ``batch``; None when a price is unknown."""
    if price_in is None or price_out is None:
        return None
    return (input_tokens * price_in + output_tokens * price_out) / 1e6 * (BATCH_DISCOUNT if batch else 1.0)


def spent(extractor: str | None, input_tokens: int, output_tokens: int, price_in: float | None = None,
          price_out: float | None = None) -> float | None:
    """What a live run's tokens cost (``extractor``: "llm:<model>"); None when it used none
    or the price is unknown."""
    if not (input_tokens or output_tokens) or not (extractor or "").startswith("llm:"):
        return None
    model = (extractor or "").removeprefix("llm:")
    return cost(input_tokens, output_tokens, *prices_of(model, price_in, price_out), batch=False)


def output_tokens_per_call(db: Queryable | None) -> tuple[int, str]:
    """(tokens a reply is expected to have, whence): the mean of this store's cached
    replies when it has enough of them, else the default."""
    if db is None:
        return DEFAULT_OUTPUT_TOKENS, "default"
    lengths = []
    for (envelope,) in db.execute("SELECT response FROM llm_cache ORDER BY created_at DESC LIMIT 500"):
        try:
            lengths.append(len(json.loads(envelope)["reply"]))
        except (ValueError, KeyError, TypeError):
            continue
    if len(lengths) < CACHED_REPLIES_NEEDED:
        return DEFAULT_OUTPUT_TOKENS, "default"
    return max(1, round(sum(lengths) / len(lengths) / CHARS_PER_TOKEN)), f"mean of {len(lengths)} cached replies"


@record
class Estimate(Record):
    """What extracting some episodes would take: calls, tokens, and their price."""

    model: str | None
    episodes: int = 0  # episodes a model would extract
    calls: int = 0  # requests: one per distinct text and time whose reply is not cached
    without_call: int = 0  # episodes whose reply is cached, or shared with another's: no call
    input_tokens: int = 0
    output_tokens: int = 0
    output_tokens_per_call: int = DEFAULT_OUTPUT_TOKENS
    output_tokens_from: str = "default"
    price_in: float | None = None  # US dollars per million tokens
    price_out: float | None = None
    batch: bool = False
    cost_usd: float | None = None
    method: str = f"{CHARS_PER_TOKEN:g} characters a token, the prompt and response schema included"

    @classmethod
    def start(cls, model: str | None, *, db: Queryable | None = None, price_in: float | None = None,
              price_out: float | None = None, batch: bool = False) -> Estimate:
        """An estimate to ``add`` requests to; ``db``'s cached replies give a reply's length."""
        found = cls(model, batch=batch)
        found.price_in, found.price_out = prices_of(model, price_in, price_out)
        found.output_tokens_per_call, found.output_tokens_from = output_tokens_per_call(db)
        return found

    def add(self, body: dict[str, Any] | None) -> None:
        """One episode: the body of its request, or None when it needs no call."""
        self.episodes += 1
        if body is None:
            self.without_call += 1
        else:
            self.calls += 1
            self.input_tokens += request_tokens(body)

    def finish(self) -> Estimate:
        self.output_tokens = self.calls * self.output_tokens_per_call
        self.cost_usd = cost(self.input_tokens, self.output_tokens, self.price_in, self.price_out, batch=self.batch)
        return self


class Estimator:
    """An ingest's estimate, episode by episode as a dry run reads them, in the order the
    real run would extract them (each episode's context is the ones read before it)."""

    def __init__(self, db: Queryable | None, model: str | None, *, price_in: float | None = None,
                 price_out: float | None = None, batch: bool = False):
        from memctl.extract.stage import RequestBuilder
        from memctl.store.cache import ResponseCache

        self.db = cast("Database | None", db)  # only read from: a dry run writes nothing
        self.model = model
        self.builder = RequestBuilder(self.db, in_order=True)
        self.cache = ResponseCache(self.db, lambda: "") if self.db is not None and model else None
        self.estimate = Estimate.start(model, db=db, price_in=price_in, price_out=price_out, batch=batch)
        self.keys: set[str] = set()

    def add(self, episode: Episode) -> int | None:
        """The input tokens of the episode's request; None when the real run makes none
        for it (structured, stored and extracted, awaiting a batch, cached, or the same
        text and time as one before)."""
        from memctl.extract import Request
        from memctl.extract.llm import cache_key
        from memctl.extract.prompt import RESPONSE_FORMAT, build_messages
        from memctl.store import api_batches
        from memctl.store import episodes as store

        if episode.format == "facts":
            return None
        if self.db is not None and (store.active_ids(self.db, [episode.id], extracted=True)
                                    or api_batches.awaiting(self.db, [episode.id])):
            self.builder.read(episode.source, episode.content)
            return None
        key = cache_key(self.model or "", Request(episode.id, episode.content, episode.reference_time))
        if key in self.keys or (self.cache is not None and self.cache.get(key) is not None):
            self.builder.read(episode.source, episode.content)
            self.estimate.add(None)
            return None
        self.keys.add(key)
        request = self.builder.request(episode.id, episode.content, episode.reference_time, episode.source,
                                       episode.position)
        body = {"messages": build_messages(request), "response_format": RESPONSE_FORMAT}
        self.estimate.add(body)
        return request_tokens(body)
