"""`memctl mcp` end to end: a real server process over stdio, driven by the MCP SDK's own
client, as Claude Code or Codex would drive it. One server serves the whole module; each
test writes under its own names, so the tests do not depend on one another's order."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memctl.times import to_storage
from tests.conftest import BACKENDS, made_nothing, stored_text

from .conftest import utc
from .fake_llm import API_KEY, FakeOpenAIServer

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "team.facts.jsonl"

TOOLS = {
    "add_memory": ["content", "reference_time", "source", "facts"],
    "recall": ["query", "as_of", "known_at", "since", "until", "kind", "limit", "history", "full"],
    "get_episode": ["episode_id"],
    "delete_episode": ["episode_id", "purge"],
    "list_episodes": ["source", "since", "until", "limit"],
    "list_sessions": ["since", "until", "limit"],
    "entity_history": ["entity"],
    "entity_summary": ["entity", "as_of", "known_at"],
    "list_conflicts": ["as_of", "known_at"],
    "list_entities": ["name", "similar", "limit"],
    "merge_entities": ["into", "other", "apply"],
    "facts": ["subject", "predicate", "as_of", "known_at", "history", "limit"],
    "stats": [],
    "list_operations": ["limit"],
    "undo_operation": ["operation_id"],
}
READ_ONLY = {"recall", "get_episode", "list_episodes", "list_sessions", "entity_history", "entity_summary",
             "list_conflicts", "list_operations", "facts", "stats", "list_entities"}
DESTRUCTIVE = {"delete_episode", "undo_operation", "merge_entities"}


class Client:
    """The SDK's client session, called from the (synchronous) tests through a portal."""

    def __init__(self, portal: BlockingPortal, session: ClientSession, db: Path):
        self.portal, self.session, self.db = portal, session, db

    def call(self, tool: str, **arguments):
        return self.portal.call(self.session.call_tool, tool, arguments)

    def ok(self, tool: str, **arguments) -> dict:
        result = self.call(tool, **arguments)
        assert not result.is_error, result.content
        assert json.loads(result.content[0].text) == result.structured_content  # the text says the same
        return result.structured_content

    def error(self, tool: str, **arguments) -> str:
        result = self.call(tool, **arguments)
        assert result.is_error and result.structured_content is None
        return result.content[0].text

    def tools(self):
        return self.portal.call(self.session.list_tools).tools


@asynccontextmanager
async def session(db: Path | str, extractor: str = "rules", env: dict[str, str] | None = None,
                  errors: Path | None = None) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "memctl", "--db", str(db), "mcp",
                                                                 "--extractor", extractor], cwd=str(REPO), env=env)
    with open(errors or Path(db).with_suffix(".stderr"), "w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


@pytest.fixture(scope="module", params=BACKENDS)
def mcp(request, tmp_path_factory) -> Client:
    """One server for the module's tests, on a file and on a PostgreSQL database."""
    folder = tmp_path_factory.mktemp("mcp")
    with ExitStack() as stack:
        db: Path | str = folder / "memory.db"
        if request.param == "postgresql":
            server = request.getfixturevalue("postgres_server")
            name, db = server.new_database(template=request.getfixturevalue("postgres_template"))
            stack.callback(server.drop_database, name)
        with start_blocking_portal() as portal, portal.wrap_async_context_manager(
                session(db, errors=folder / "server.stderr")) as client:
            yield Client(portal, client, db)


def memctl(db: Path, *args: str) -> dict | list:
    """A second process on the same file, as a user's terminal would be."""
    done = subprocess.run([sys.executable, "-m", "memctl", "--db", str(db), *args, "--json"], cwd=REPO,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_tools_have_the_issues_names_parameters_and_annotations(mcp):
    tools = {tool.name: tool for tool in mcp.tools()}
    assert {name: list(tool.input_schema["properties"]) for name, tool in tools.items()} == TOOLS
    assert {name for name, tool in tools.items() if tool.annotations.read_only_hint} == READ_ONLY
    assert {name for name, tool in tools.items() if tool.annotations.destructive_hint} == DESTRUCTIVE
    assert tools["add_memory"].input_schema["required"] == ["content"]


def test_a_reference_time_with_an_offset_is_stored_as_its_instant(mcp):
    added = mcp.ok("add_memory", content="Quarterly planning moved to Lisbon.", source="test://offset",
                   reference_time="2025-01-01T00:30:00+02:00")
    assert (added["reference_time"], added["reference_time_source"]) == (utc("2024-12-31T22:30:00Z"), "record")
    [listed] = mcp.ok("list_episodes", source="test://offset")["episodes"]
    assert (listed["id"], listed["reference_time"], listed["reference_time_source"]) == (
        added["episode_id"], utc("2024-12-31T22:30:00Z"), "record")


def test_a_memory_without_a_time_is_stamped_within_the_call_and_says_so(mcp):
    before = to_storage(datetime.now(UTC))
    added = mcp.ok("add_memory", content="The deploy freeze starts today.", source="test://live")
    after = to_storage(datetime.now(UTC))
    assert before <= added["reference_time"] <= after and added["reference_time_source"] == "call"
    assert memctl(mcp.db, "show", added["episode_id"])["reference_time_source"] == "call"


def test_facts_and_stats_are_the_clis(mcp):
    mcp.ok("add_memory", content="Rostering uses Kafka.", reference_time="2024-02-01",
           facts=[{"subject": "rostering", "predicate": "queue", "object": "Kafka"}])
    assert mcp.ok("facts", subject="rostering", predicate="queue") == {
        "facts": memctl(mcp.db, "facts", "--subject", "rostering", "--predicate", "queue")}
    assert mcp.ok("stats") == memctl(mcp.db, "stats")
    schemas = {tool.name: tool.input_schema for tool in mcp.tools()}
    assert all(schema.get("additionalProperties") is False for schema in schemas.values())


def test_contradicting_memories_are_listed_and_flagged_in_recall(mcp):
    for said_at, value, since in (("2024-05-01", "MySQL", "2023-01-01"), ("2024-06-01", "Postgres", "2022-01-01")):
        mcp.ok("add_memory", content=f"Invoicing has used {value} since {since[:4]}.", reference_time=said_at,
               facts=[{"subject": "invoicing", "predicate": "database", "object": value, "valid_at": since}])
    [conflict] = mcp.ok("list_conflicts")["conflicts"]
    assert (conflict["subject"], conflict["holds"]) == ("invoicing", "MySQL")
    assert conflict == memctl(mcp.db, "conflicts")[0]
    [found] = [r for r in mcp.ok("recall", query="invoicing database", kind="fact")["results"] if r["object"] == "MySQL"]
    assert [(c["conflict_id"], c["value"]) for c in found["conflicts"]] == [(conflict["conflict_id"], "Postgres")]
    assert mcp.ok("list_conflicts", as_of="2024-05-15") == {"conflicts": []}


def test_entities_are_listed_and_merged_as_the_cli_does(mcp):
    for said_at, name, value in (("2024-01-01", "dispatch", "Postgres"), ("2024-06-01", "dispatch-core", "MySQL")):
        mcp.ok("add_memory", content=f"{name} runs on {value}.", reference_time=said_at,
               facts=[{"subject": name, "predicate": "database", "object": value}])
    assert mcp.ok("list_entities") == {"entities": memctl(mcp.db, "entities")}
    assert mcp.ok("list_entities", similar=True) == {"pairs": memctl(mcp.db, "entities", "--similar")}
    plan = mcp.ok("merge_entities", into="dispatch", other="dispatch-core")
    assert not plan["applied"] and memctl(mcp.db, "facts", "--subject", "dispatch-core")
    done = mcp.ok("merge_entities", into="dispatch", other="dispatch-core", apply=True)
    assert done["applied"] and [f["object"] for f in memctl(mcp.db, "facts", "--subject", "dispatch")] == ["MySQL"]
    mcp.ok("undo_operation", operation_id=done["operation_id"])
    assert [f["object"] for f in memctl(mcp.db, "facts", "--subject", "dispatch")] == ["Postgres"]


def test_delete_episode_reopens_the_fact_it_had_superseded(mcp):
    """The Graphiti bug: deleting the episode that replaced a value left the old value ended."""
    mysql = {"subject": "ledger", "predicate": "primary database", "object": "MySQL", "valid_at": "2021-03-03"}
    postgres = {"subject": "ledger", "predicate": "primary database", "object": "Postgres", "valid_at": "2024-06-01"}
    mcp.ok("add_memory", content="Ledger runs on MySQL.", facts=[mysql], reference_time="2023-01-10")
    moved = mcp.ok("add_memory", content="Ledger moved to Postgres.", facts=[postgres], reference_time="2024-06-02")
    assert [(f["object"], f["invalid_at"]) for f in moved["changed"]] == [("MySQL", utc("2024-06-01"))]
    assert [(a["object"], a["valid_at"], a["valid_at_evidence"]) for a in moved["assertions"]] == [
        ("Postgres", utc("2024-06-01"), "explicit")]

    plan = mcp.ok("delete_episode", episode_id=moved["episode_id"])
    assert plan["applied"] and plan["episodes"] == [moved["episode_id"]]
    assert [(f["object"], f["invalid_at"]) for f in plan["reopened"]] == [("MySQL", None)]
    [slot] = mcp.ok("entity_history", entity="Ledger")["slots"]
    assert [(f["object"], f["invalid_at"]) for f in slot["facts"]] == [("MySQL", None)]
    assert "primary database MySQL (since 2021-03-03)" in mcp.ok("entity_summary", entity="ledger")["summary"]

    undone = mcp.ok("undo_operation", operation_id=plan["operation_id"])
    assert undone["applied"] and undone["undo"] == plan["operation_id"]
    [slot] = mcp.ok("entity_history", entity="ledger")["slots"]
    assert [(f["object"], f["invalid_at"]) for f in slot["facts"]] == [("MySQL", utc("2024-06-01")), ("Postgres", None)]


@pytest.mark.parametrize("arguments, problem", [
    ({"content": "Payroll moved to Oslo.", "reference_time": "2025-02-31"}, "reference_time '2025-02-31'"),
    ({"content": "Payroll moved to Oslo.", "facts": [{"subject": "payroll", "object": "Oslo"}]},
     "facts[0].predicate: Field required"),
    ({"content": "Payroll moved to Oslo.", "facts": [{"subject": "payroll", "predicate": "in", "object": "Oslo",
                                                      "valid_from": "2024-01-01"}]}, "facts[0].valid_from"),
    ({"content": ""}, "content is empty"),
    # a misspelt argument is an error, not a memory stored at the time of the call
    ({"content": "Payroll moved to Oslo.", "referenceTime": "2023-01-05"}, "add_memory takes no argument 'referenceTime'"),
])
def test_bad_input_is_a_tool_error_that_stores_nothing_and_the_server_serves_on(mcp, arguments, problem):
    episodes, operations = (len(mcp.ok(tool, limit=1000)[key]) for tool, key in
                            (("list_episodes", "episodes"), ("list_operations", "operations")))
    assert problem in mcp.error("add_memory", **arguments)
    assert len(mcp.ok("list_episodes", limit=1000)["episodes"]) == episodes
    assert len(mcp.ok("list_operations", limit=1000)["operations"]) == operations
    assert mcp.ok("recall", query="payroll Oslo")["results"] == []


def test_unknown_ids_empty_queries_and_mixed_up_ids_are_tool_errors(mcp):
    assert "no episode or operation matches 'ep_0000nothing'" in mcp.error("delete_episode", episode_id="ep_0000nothing")
    assert "is not an episode id" in mcp.error("delete_episode", episode_id="op_123")
    assert "is not an operation id" in mcp.error("undo_operation", operation_id="ep_123")
    assert "no words" in mcp.error("recall", query="   ")
    assert "no entity named 'nobody at all'" in mcp.error("entity_history", entity="nobody at all")
    assert "limit must be between 1 and 1,000,000, got 0" in mcp.error("list_operations", limit=0)
    assert "limit must be between 1 and 1,000,000" in mcp.error("recall", query="ledger", limit=2**70)
    assert "recall takes no argument 'sinse'" in mcp.error("recall", query="ledger", sinse="2024-01-01")
    assert "as_of 'soon'" in mcp.error("recall", query="ledger", as_of="soon")
    mcp.ok("add_memory", content="Ambiguity check one.", source="test://ambiguous")
    mcp.ok("add_memory", content="Ambiguity check two.", source="test://ambiguous")
    assert "is ambiguous" in mcp.error("delete_episode", episode_id="ep_")
    assert mcp.ok("list_operations", limit=1)["operations"]  # still serving


def test_a_plain_text_memory_is_found_by_recall(mcp):
    added = mcp.ok("add_memory", content="We chose Tailscale for the office VPN after the WireGuard trial.",
                   reference_time="2025-04-02")
    assert added["extraction"] == "done" and added["extractor"] == "rules"
    hits = mcp.ok("recall", query="which VPN does the office use")["results"]
    assert added["episode_id"] in [hit.get("episode_id") for hit in hits if hit["kind"] == "episode"]
    assert mcp.ok("recall", query="office VPN", as_of="2025-04-01")["results"] == []  # not said yet then


def test_recall_gives_the_lines_that_matched_and_get_episode_the_whole(mcp):
    filler = "\n".join(f"Step {n}: rebuilt the image and ran the smoke tests again." for n in range(60))
    content = f"User: the release pipeline is flaky\n\nAssistant: {filler}\nThe flake was the Zookeeper timeout."
    added = mcp.ok("add_memory", content=content, source="test://long", reference_time="2025-05-01")
    [hit] = [hit for hit in mcp.ok("recall", query="zookeeper flake")["results"]
             if hit.get("episode_id") == added["episode_id"]]
    assert "text" not in hit and hit["chars"] == len(content) and len(hit["snippet"]) <= 400
    assert hit["snippet"] == "Assistant: The **flake** was the **Zookeeper** timeout."  # the line, under its role
    [whole] = [hit for hit in mcp.ok("recall", query="zookeeper flake", full=True)["results"]
               if hit.get("episode_id") == added["episode_id"]]
    assert whole["text"] == content
    assert mcp.ok("recall", query="zookeeper flake", kind="fact")["results"] == []  # the text is no fact
    later = mcp.ok("recall", query="zookeeper flake", since="2025-06-01")
    assert added["episode_id"] not in [hit.get("episode_id") for hit in later["results"]]
    assert "kind must be all, fact or episode" in mcp.error("recall", query="zookeeper", kind="facts")
    [session] = [s for s in mcp.ok("list_sessions", since="2025-05-01", until="2025-05-02")["sessions"]
                 if s["source"] == "test://long"]
    assert (session["title"], session["episodes"]) == ("the release pipeline is flaky", 1)
    shown = mcp.ok("get_episode", episode_id=added["episode_id"][:12])
    assert (shown["id"], shown["content"]) == (added["episode_id"], content)


def test_get_episode_of_an_unknown_or_purged_id_is_a_tool_error(mcp):
    assert "no episode matches 'ep_0000nothing'" in mcp.error("get_episode", episode_id="ep_0000nothing")
    added = mcp.ok("add_memory", content="The staging password rotates monthly.", source="test://purged")
    mcp.ok("delete_episode", episode_id=added["episode_id"], purge=True)
    assert f"no episode matches {added['episode_id']!r}" in mcp.error("get_episode", episode_id=added["episode_id"])


def test_a_memory_over_mcp_keeps_no_secret_and_its_purge_erases_it(mcp):
    from .secret_corpus import plants

    by_name = {plant.name: plant for plant in plants(seed=7)}
    pasted = [by_name[name] for name in ("env_database_password", "openai_project_key", "postgres_url", "private_key_rsa")]
    added = mcp.ok("add_memory", content="\n".join(plant.text for plant in pasted), reference_time="2025-05-05",
                   facts=[{"subject": "deploy bot", "predicate": "configured_with", "object": pasted[0].text}])
    assert added["redacted"] == {"password": 2, "openai_key": 1, "url_password": 1, "private_key": 1}
    stored = stored_text(mcp.db).encode()
    assert not [plant.name for plant in pasted if plant.secret.encode() in stored]
    assert "DATABASE_PASSWORD=[REDACTED:password]" in memctl(mcp.db, "show", added["episode_id"])["content"]
    purged = mcp.ok("delete_episode", episode_id=added["episode_id"], purge=True)
    assert purged["applied"] and "unerased" not in purged


def test_recall_is_the_clis_recall_json_and_a_second_process_can_write_meanwhile(mcp):
    report = memctl(mcp.db, "ingest", str(FIXTURE))  # another process writes the file the server has open
    assert report["added"] > 0
    question, as_of = "which database does billing use", "2024-03-01T00:00:00Z"
    served = mcp.ok("recall", query=question, as_of=as_of, limit=5)
    assert served == memctl(mcp.db, "recall", question, "--as-of", as_of, "--limit", "5")
    databases = [r["object"] for r in served["results"] if r["kind"] == "fact"]
    assert "MySQL" in databases and "Postgres" not in databases  # billing moved on 2 April 2024
    # asked with no time, an agent gets what holds and, under it, what it replaced, with their status
    now = mcp.ok("recall", query=question, limit=2)["results"]
    assert now[0]["kind"] == "summary" and now[0]["entity"] == "billing"  # the entity asked about, first
    assert [(r["object"], r["status"]) for r in now[1:]] == [("Postgres", "current"), ("MySQL", "superseded")]
    changes = mcp.ok("recall", query="what changed in 2024?")
    listed = memctl(mcp.db, "recall", "what changed in 2024?")
    assert changes["what_happened"] and changes["results"] == listed["results"]  # "as_of" is each one's now
    assert mcp.ok("list_operations", limit=1)["operations"] == memctl(mcp.db, "operations", "--limit", "1")


def test_add_memory_is_the_clis_add_json(mcp):
    arguments = {"content": "Search runs on OpenSearch.", "source": "test://add", "reference_time": "2023-03-03",
                 "facts": [{"subject": "search", "predicate": "runs on", "object": "OpenSearch"}]}
    served = mcp.ok("add_memory", **arguments)
    typed = memctl(mcp.db, "add", "Search runs on OpenSearch, said again.", "--source", "test://add", "--reference-time",
                   "2023-03-04", "--facts", json.dumps(arguments["facts"]))
    assert list(typed) == list(served) and (typed["position"], served["position"]) == (2, 1)
    # The same value said again later is more evidence for the fact it supports, which stays as it was.
    assert len(typed["assertions"]) == 1 and typed["added"] == typed["changed"] == typed["removed"] == []


def test_history_and_episode_lists_are_the_clis_json(mcp):
    mcp.ok("add_memory", content="Warehouse runs on ClickHouse.", source="test://lists", reference_time="2022-02-02",
           facts=[{"subject": "warehouse", "predicate": "runs on", "object": "ClickHouse"}])
    assert mcp.ok("entity_history", entity="warehouse") == memctl(mcp.db, "history", "warehouse")
    listed = mcp.ok("list_episodes", since="2022-01-01", until="2022-12-31")["episodes"]
    assert listed == memctl(mcp.db, "episodes", "--since", "2022-01-01", "--until", "2022-12-31")
    assert [e["source"] for e in listed] == ["test://lists"]
    assert memctl(mcp.db, "episodes", "--source", "test://lists") == mcp.ok("list_episodes", source="test://lists")[
        "episodes"] == listed


def test_without_the_extra_the_command_says_how_to_install_it(cli, monkeypatch):
    for name in [name for name in sys.modules if name.partition(".")[0] in ("mcp", "mcp_types")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the package were not installed
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "memctl.mcp_server", raising=False)
    run = cli("mcp")
    assert run.code == 2 and run.out == ""
    # installed from this checkout (editable), the way to add the extra is from it, as written
    assert run.err.strip().splitlines() == ["memctl: error: memctl mcp needs memctl's mcp extra: "
                                            f"pip install -e '{REPO}[mcp]'"]


def test_the_install_hint_names_the_distribution_when_not_installed_from_a_checkout(monkeypatch):
    import importlib.metadata

    from memctl import DISTRIBUTION
    from memctl.errors import install_command

    assert install_command("mcp") == f"pip install -e '{REPO}[mcp]'"
    monkeypatch.setattr(importlib.metadata, "distributions", lambda name: [])  # as from the package index
    assert install_command("mcp") == "pip install 'memctl-memory[mcp]'" and DISTRIBUTION == "memctl-memory"


@pytest.mark.parametrize("given, address", [("8765", ("127.0.0.1", 8765)), (":8765", ("127.0.0.1", 8765)),
                                            ("0.0.0.0:80", ("0.0.0.0", 80)), ("[::1]:9000", ("::1", 9000))])
def test_http_binds_to_this_machine_unless_told(given, address):
    from memctl.cli import _host_and_port

    assert _host_and_port(given) == address


@pytest.fixture
def never_served(monkeypatch):
    """A refusal test whose command served instead would wait for a client for ever: it
    fails at once instead."""

    def served(*_, **__):
        raise AssertionError("memctl mcp served instead of refusing")

    monkeypatch.setattr("memctl.mcp_server.serve", served)


def test_a_bad_http_address_is_bad_usage(cli, never_served):
    run = cli("mcp", "--http", "localhost")
    assert run.code == 2 and "--http takes [HOST:]PORT" in run.err


def test_http_on_an_address_others_reach_needs_a_token(cli, monkeypatch, db_path, never_served):
    monkeypatch.delenv("MEMCTL_MCP_TOKEN", raising=False)
    for host in ("0.0.0.0", "192.168.1.20", "[::]", "memory.example.com"):
        run = cli("mcp", "--http", f"{host}:8765")
        assert run.code == 2 and "set MEMCTL_MCP_TOKEN" in run.err, host
    monkeypatch.setenv("MEMCTL_MCP_TOKEN", "  ")  # blank: no token at all
    run = cli("mcp", "--http", "0.0.0.0:8765")
    assert run.code == 2 and "set MEMCTL_MCP_TOKEN" in run.err
    assert made_nothing(db_path)  # refused before anything was opened


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def post(url: str, token: str | None) -> int:
    """The HTTP status of an MCP initialize request, with ``token`` as a bearer token if given."""
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, json.dumps(INITIALIZE).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_http_with_a_token_answers_only_requests_that_carry_it(tmp_path):
    import os
    import socket
    import time

    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MEMCTL_MCP_TOKEN": "s3cret-token-for-the-test"}
    server = subprocess.Popen([sys.executable, "-m", "memctl", "--db", str(tmp_path / "m.db"), "mcp", "--http",
                               f"127.0.0.1:{port}", "--extractor", "rules"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert "a bearer token required" in (server.stderr.readline() if server.stderr else "")
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(100):  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        assert post(url, None) == 401
        assert post(url, "s3cret-token-for-the-tesT") == 401
        assert post(url, "s3cret-token-for-the-test") == 200
    finally:
        server.terminate()
        server.wait(timeout=10)


class HeldModel(FakeOpenAIServer):
    """The fake model, answering only once the test lets it: a long extraction on demand."""

    def __init__(self) -> None:
        super().__init__(datetime.now(UTC))
        self.asked, self.may_answer = threading.Event(), threading.Event()

    def model_reply(self, model: str, user: str, **how) -> str:
        self.asked.set()
        self.may_answer.wait(60)
        return super().model_reply(model, user, **how)


def test_a_recall_is_served_while_an_add_memory_waits_for_the_model(tmp_path):
    db = tmp_path / "llm.db"
    with HeldModel() as model, start_blocking_portal() as portal:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": API_KEY, "MEMCTL_MODEL": "fake-normal"}
        try:
            with portal.wrap_async_context_manager(session(db, "llm", env)) as client:
                served = Client(portal, client, db)
                served.ok("add_memory", content="Billing uses MySQL.", reference_time="2023-01-01",
                          facts=[{"subject": "Billing", "predicate": "uses", "object": "MySQL", "cardinality": "many"}])
                waiting = portal.start_task_soon(client.call_tool, "add_memory",
                                                 {"content": "Billing uses Postgres since 2 April 2024."})
                assert model.asked.wait(30)  # the extraction is under way, held at the model
                found = served.ok("recall", query="billing MySQL")["results"]  # answered meanwhile
                assert not waiting.done() and [r["object"] for r in found if r["kind"] == "fact"] == ["MySQL"]
                model.may_answer.set()
                added = waiting.result(30).structured_content
        finally:
            model.may_answer.set()
    assert (added["extraction"], added["extractor"]) == ("done", "llm:fake-normal")
    assert [(a["object"], a["valid_at"]) for a in added["assertions"]] == [("Postgres", utc("2024-04-02"))]


def test_stdout_carries_only_protocol_messages(tmp_path):
    """Read raw, not through the SDK's client (which may pass over a stray line): every line
    the server writes to stdout is a JSON-RPC message, notices included go to stderr."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "add_memory", "arguments": {"content": "Billing uses MySQL.", "reference_time": "2025-02-31"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "add_memory", "arguments": {"content": "Billing uses MySQL."}}},
    ]
    server = subprocess.Popen([sys.executable, "-m", "memctl", "--db", str(tmp_path / "raw.db"), "mcp"], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    server.stdin.flush()
    by_id: dict = {}
    while set(by_id) != {1, 2, 3}:  # the calls run concurrently; the input stays open until both answered
        line = server.stdout.readline()
        assert line, "the server closed stdout"
        reply = json.loads(line)  # anything but a protocol message fails here
        assert reply["jsonrpc"] == "2.0"
        if "id" in reply:
            by_id[reply["id"]] = reply["result"]
    rest, stderr = server.communicate(timeout=30)  # closing the input ends the server
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines())
    assert by_id[2]["isError"] and not by_id[3].get("isError")
    assert "memctl: serving" in stderr and "offline rules extractor" in stderr


@pytest.mark.parametrize("command", [["--help"], ["recall", "billing"], ["add", "Billing uses MySQL."]])
def test_only_the_mcp_command_imports_the_sdk(mcp, command):
    probe = ("import sys\nfrom memctl.entry import main\nsys.argv = ['memctl', '--db', sys.argv[1], *sys.argv[2:]]\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('mcp', 'mcp_types')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, str(mcp.db), *command], cwd=REPO, capture_output=True,
                          text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"
