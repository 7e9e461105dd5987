"""``memctl mcp``: the memory as an agent's, over the Model Context Protocol.

A thin layer over ``Memory``, as the command line is: each tool calls one method and
returns its ``to_json()``, the keys of the matching ``--json`` (architecture §8). A list
comes as one object with the list under its name (``{"episodes": [...]}``), since a
tool's structured result must be an object.

- **Errors.** The ``memctl.errors`` classes become tool errors (``isError``) with the
  message the library gives; nothing is stored and the next call is served. Arguments
  of the wrong type are refused by the SDK against each tool's schema, the same way.
- **Threads.** The tools are plain functions, which the SDK runs on worker threads:
  a recall is not stuck behind a long extraction on the event loop. ``Connections``
  gives each thread its own reader, so reads wait for no write; writes take turns on the
  one writer, and with another process (a ``memctl ingest``) through SQLite's lock.
- **Output.** The stdio transport carries only protocol messages on stdout; notices
  and the SDK's log go to stderr.

This module imports the ``mcp`` SDK (the ``memctl[mcp]`` extra), so only the ``mcp``
command imports it.
"""

from __future__ import annotations

import hmac
import json
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Annotated, Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import Field

from memctl import DISTRIBUTION
from memctl.errors import BadInput, MemctlError
from memctl.extract import Extractor
from memctl.memory import Memory
from memctl.results import Answer

# What each kind of tool does to the memory, for clients that ask before calling.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

INSTRUCTIONS = """\
A local bi-temporal memory of past sessions and of what you save now. recall answers
questions as of any time (as_of) and as memctl knew it then (known_at). add_memory saves
one memory: give reference_time when it happened earlier than now; give facts
(subject, predicate, object, valid_at...) to store exact facts, otherwise they are
extracted from the text. recall shows the lines of each episode that matched;
get_episode gives one whole. delete_episode takes one back and re-opens what it had ended."""

Time = Annotated[str | None, Field(description="ISO-8601 date or datetime; a bare date is 00:00 UTC, "
                                               "a datetime without offset is UTC.")]


def _reply(data: dict[str, Any]) -> CallToolResult:
    """``data`` as the tool's structured result, and as its text in compact JSON: the text
    is what most clients hand the model, and the SDK's own indents it, an eighth more to read."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _answer(call: Callable[[], Answer]) -> CallToolResult:
    """The result's JSON, or a tool error saying what is wrong."""
    try:
        return _reply(call().to_json())
    except MemctlError as error:
        raise ToolError(str(error)) from None


def _listed(key: str, call: Callable[[], Sequence[Answer]]) -> CallToolResult:
    """The results' JSON, a list under ``key``, or a tool error saying what is wrong."""
    try:
        return _reply({key: [item.to_json() for item in call()]})
    except MemctlError as error:
        raise ToolError(str(error)) from None


def _id_of(kind: str, prefix: str, value: str, other_tool: str) -> str:
    """An episode or operation id, refused when it names the other kind: undo takes both,
    and a model that mixes them up must hear so rather than undo the wrong thing."""
    if not value.startswith(prefix):
        raise BadInput(f"{value!r} is not an {kind} id ({prefix}…); {other_tool} takes the other kind",
                       parameter=f"{kind}_id")
    return value


class OneToken:
    """Lets in a request that carries ``Authorization: Bearer <token>``, the one token the
    server was started with (``MEMCTL_MCP_TOKEN``); the SDK answers any other with 401."""

    def __init__(self, token: str):
        self.token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode(), self.token.encode()):  # in constant time
            return None
        return AccessToken(token=token, client_id="memctl", scopes=[])


class StrictServer(MCPServer):
    """The SDK's server, with unknown tool arguments an error: a model that writes
    ``referenceTime`` for ``reference_time`` must hear so, not have its memory stored at
    the time of the call (issue 30); each tool's schema says so too
    (``additionalProperties: false``)."""

    async def list_tools(self) -> list[MCPTool]:
        return [tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
                for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = {tool.name: set(tool.input_schema.get("properties", {})) for tool in await super().list_tools()}
        if name in known and (unknown := sorted(set(arguments) - known[name])):
            raise ToolError(f"{name} takes no argument {', '.join(map(repr, unknown))}; "
                            f"its arguments are {', '.join(sorted(known[name]))}")
        return await super().call_tool(name, arguments, context)


def build_server(memory: Memory, extractor: Extractor | None, *, token: str | None = None,
                 url: str | None = None) -> MCPServer:
    """The server's tools over ``memory``; ``add_memory`` extracts text with ``extractor``.
    With ``token``, served over HTTP at ``url``, every request must carry it as a bearer token."""
    # The SDK's resource-server settings: this server is its own issuer, as no
    # authorization server hands out this token; the user does.
    auth = None if token is None else AuthSettings.model_validate(
        {"issuer_url": url, "resource_server_url": url, "validate_token_resource": False})  # one token, for this server
    server: MCPServer = StrictServer("memctl", instructions=INSTRUCTIONS, version=version(DISTRIBUTION), log_level="WARNING",
                                  token_verifier=None if token is None else OneToken(token), auth=auth)

    @server.tool(annotations=ADDS)
    def add_memory(
        content: Annotated[str, Field(description="What to remember, in words; stored as the episode's text.")],
        reference_time: Time = None,
        source: Annotated[str | None, Field(description="Where it comes from (default memctl://add_memory); "
                                                        "list_episodes filters by it.")] = None,
        facts: Annotated[list | None, Field(description=(
            "Exact facts, stored as given with nothing inferred: objects with subject, predicate, object, and "
            "optionally fact (a sentence), valid_at, invalid_at (ISO-8601), cardinality (one|many), retracted "
            "(true: it stopped holding at invalid_at)."))] = None,
    ) -> CallToolResult:
        """Save one memory as an episode. Without reference_time it is dated now (reference_time_source
        "call"); give reference_time for something said or done earlier. Returns the episode's id and
        time, the assertions stored, and the facts it added or ended (added, changed, removed, reopened).
        As `memctl add --json`."""
        return _answer(lambda: memory.add_memory(content, reference_time=reference_time, source=source, facts=facts,
                                                 extractor=extractor))

    @server.tool(annotations=READ_ONLY)
    def recall(
        query: Annotated[str, Field(description='What to look for, in words; "quoted words" match as a phrase.')],
        as_of: Time = None,
        known_at: Time = None,
        since: Time = None,
        until: Time = None,
        kind: Annotated[str, Field(description="all (facts and episodes), fact or episode.")] = "all",
        limit: Annotated[int, Field(description="At most this many results.")] = 10,
        history: Annotated[bool, Field(description="Every valid time of the matching facts, not one instant.")] = False,
        full: Annotated[bool, Field(description="Each episode's whole text, not the lines that matched (long: "
                                                "prefer get_episode for the one you need).")] = False,
    ) -> CallToolResult:
        """Find what was said (episodes) and what was extracted (facts), best first: facts true at as_of,
        episodes said by then, as memctl knew them at known_at. as_of is when the question is asked (default
        now): a time the query names ("in March 2024", "two weeks ago", "last spring") is read from it and is
        the window, as since/until would be: facts true at some time in it, episodes said in it (and, for what
        held then, before it); since, until and time_words say so. A query that only asks what happened then
        ("what changed last month") lists the window's changed facts and sessions, latest first
        (what_happened). With no time at all, facts true now, and also those that ended, each with its status
        (current, ended, superseded): one that was replaced comes right after what replaced it. "What did
        billing use before Postgres" (or "after MySQL") puts first what held next to the value named.
        Episodes come as a snippet of the lines that matched (hits **marked**), with their length (chars) and
        their session: its place in "sessions", which gives the session's source file;
        get_episode(episode_id) gives one whole. An episode whose statement a later value replaced says so
        (superseded_by: the facts that replaced it): do not take it as current. As `memctl recall --json`."""
        return _answer(lambda: memory.recall(query, as_of=as_of, known_at=known_at, since=since, until=until,
                                             kind=kind, limit=limit, history=history, full=full))

    @server.tool(annotations=READ_ONLY)
    def get_episode(
        episode_id: Annotated[str, Field(description="The episode's id (ep_…) or a unique prefix of it, as recall "
                                                     "or list_episodes gave it.")],
    ) -> CallToolResult:
        """One episode whole: its text (content), where and when it was said, its assertions and the current
        facts it supports. As `memctl show EPISODE --json`."""
        return _answer(lambda: memory.show(episode_id))

    @server.tool(annotations=DESTRUCTIVE)
    def delete_episode(
        episode_id: Annotated[str, Field(description="The episode's id (ep_…) or a unique prefix of it.")],
        purge: Annotated[bool, Field(description="Erase its content for good (a secret), not only take it out; "
                                                 "a purge cannot be undone.")] = False,
    ) -> CallToolResult:
        """Take one episode back out, as if it had never been stored: its facts go, and facts it had ended
        are re-opened. Returns the plan that was applied (removed, reopened, changed, added, operation_id);
        undo_operation(operation_id) puts it back unless purged. As `memctl undo EPISODE --apply --json`."""
        return _answer(lambda: memory.undo([_id_of("episode", "ep_", episode_id, "undo_operation")], apply=True,
                                           purge=purge))

    @server.tool(annotations=READ_ONLY)
    def list_episodes(
        source: Annotated[str | None, Field(description="Only episodes from this source, as listed.")] = None,
        since: Time = None,
        until: Time = None,
        limit: Annotated[int, Field(description="At most this many.")] = 50,
    ) -> CallToolResult:
        """Episodes in time order, said in [since, until): {"episodes": [...]}, each as `memctl episodes --json`."""
        return _listed("episodes", lambda: memory.episodes(source=source, since=since, until=until, limit=limit))

    @server.tool(annotations=READ_ONLY)
    def list_sessions(
        since: Time = None,
        until: Time = None,
        limit: Annotated[int, Field(description="At most this many.")] = 50,
    ) -> CallToolResult:
        """Sessions (a session file, or a conversation of an export) that said something in [since, until),
        the latest first: {"sessions": [...]}, each with its first request (title), first_at, last_at and
        episodes. list_episodes(source=...) lists one's episodes. As `memctl sessions --json`."""
        return _listed("sessions", lambda: memory.sessions(since=since, until=until, limit=limit))

    @server.tool(annotations=READ_ONLY)
    def facts(
        subject: Annotated[str | None, Field(description="Only facts about this entity.")] = None,
        predicate: Annotated[str | None, Field(description="Only this predicate (e.g. 'primary database').")] = None,
        as_of: Time = None,
        known_at: Time = None,
        history: Annotated[bool, Field(description="Every valid time, not only what held at as_of.")] = False,
        limit: Annotated[int, Field(description="At most this many.")] = 100,
    ) -> CallToolResult:
        """Facts without a question: true at as_of (default now), as memctl knew them at known_at, of one
        subject or predicate if named: {"facts": [...]}. As `memctl facts --json`."""
        return _listed("facts", lambda: memory.facts(subject=subject, predicate=predicate, as_of=as_of,
                                                     known_at=known_at, history=history, limit=limit))

    @server.tool(annotations=READ_ONLY)
    def stats() -> CallToolResult:
        """Counts of what the memory holds: episodes (and undone), assertions, entities, facts valid now,
        fact versions, slots whose facts are still being derived, operations, and the span of reference
        times. As `memctl stats --json`."""
        return _answer(memory.stats)

    @server.tool(annotations=READ_ONLY)
    def entity_history(
        entity: Annotated[str, Field(description="The entity's name (case and punctuation do not matter).")],
    ) -> CallToolResult:
        """Every slot (predicate) of an entity with its facts over time. As `memctl history ENTITY --json`."""
        return _answer(lambda: memory.history(entity))

    @server.tool(annotations=READ_ONLY)
    def entity_summary(
        entity: Annotated[str, Field(description="The entity's name (case and punctuation do not matter).")],
        as_of: Time = None,
        known_at: Time = None,
    ) -> CallToolResult:
        """What holds about an entity at as_of (default now), as memctl knew it at known_at: each slot's
        value(s) since when and what they replaced, and what ended, in at most 600 characters (summary),
        with the facts it was built from (fact_ids). As `memctl summary ENTITY --json`."""
        return _answer(lambda: memory.summary(entity, as_of=as_of, known_at=known_at))

    @server.tool(annotations=READ_ONLY)
    def list_conflicts(
        as_of: Time = None,
        known_at: Time = None,
    ) -> CallToolResult:
        """Statements that contradict each other (two values of a one-valued slot whose times meet),
        open at as_of (default now), the latest first: {"conflicts": [...]}, each with its values, the
        statements giving each (episode, dates, when said) and the value that holds (what recall answers).
        Ask the user which is right rather than picking one; `memctl resolve` settles one.
        As `memctl conflicts --json`."""
        return _listed("conflicts", lambda: memory.conflicts(as_of=as_of, known_at=known_at))

    @server.tool(annotations=READ_ONLY)
    def list_entities(
        name: Annotated[str | None, Field(description="Only the entity this name resolves to.")] = None,
        similar: Annotated[bool, Field(description="Instead: pairs of entities that may be one thing under two "
                                                   "names, with why (candidates for merge_entities).")] = False,
        limit: Annotated[int, Field(description="At most this many.")] = 50,
    ) -> CallToolResult:
        """Entities with the names each goes by and how each name came to it (article, generic_noun,
        alias, merge), the most mentioned first: {"entities": [...]}; with similar, {"pairs": [...]}.
        As `memctl entities [--similar] --json`."""
        if similar:
            return _listed("pairs", lambda: memory.similar_entities(limit=limit))
        return _listed("entities", lambda: memory.entities(name=name, limit=limit))

    @server.tool(annotations=DESTRUCTIVE)
    def merge_entities(
        into: Annotated[str, Field(description="A name of the entity to keep.")],
        other: Annotated[str, Field(description="A name of the entity that is the same thing.")],
        apply: Annotated[bool, Field(description="Do it; false: only return the plan.")] = False,
    ) -> CallToolResult:
        """Make two entities one: other's statements name into from now on (so a later value supersedes an
        earlier one across both), and later mentions of other's names are into. Ask the user first; a plan
        unless apply. undo_operation(operation_id) reverses it exactly. As `memctl merge INTO OTHER --json`."""
        return _answer(lambda: memory.merge(into, other, apply=apply))

    @server.tool(annotations=READ_ONLY)
    def list_operations(
        limit: Annotated[int, Field(description="Only the last this many.")] = 50,
    ) -> CallToolResult:
        """The journal of ingests, memories added, undos, retries and repairs, oldest first:
        {"operations": [...]}, each as `memctl operations --json`."""
        return _listed("operations", lambda: memory.operations(limit=limit))

    @server.tool(annotations=DESTRUCTIVE)
    def undo_operation(
        operation_id: Annotated[str, Field(description="The operation's id (op_…) or a unique prefix of it.")],
    ) -> CallToolResult:
        """Reverse one operation: an ingest or add_memory (its episodes go), or a repair, retry, undo,
        resolve, merge or split (what it changed comes back). Returns the plan that was applied.
        As `memctl undo OPERATION --apply --json`."""
        return _answer(lambda: memory.undo([_id_of("operation", "op_", operation_id, "delete_episode")], apply=True))

    return server


def serve(memory: Memory, extractor: Extractor | None, *, http: tuple[str, int] | None = None,
          token: str | None = None) -> None:
    """Serve until the client goes away: over stdio, or streamable HTTP at ``http`` (host,
    port), where ``token`` (if given) must come with every request."""
    host = None if http is None else f"[{http[0]}]" if ":" in http[0] else http[0]
    where = "stdio" if http is None else f"http://{host}:{http[1]}/mcp"
    server = build_server(memory, extractor, token=token, url=None if http is None else where)
    locked = "" if http is None else ", a bearer token required" if token else ", no token required"
    print(f"memctl: serving {memory.connections.where} over MCP ({where}{locked})", file=sys.stderr, flush=True)
    if http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=http[0], port=http[1])
