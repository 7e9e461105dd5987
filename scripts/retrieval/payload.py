"""How much an agent reads per recall: the size of the MCP ``recall`` reply on a store of
real logs, with the default snippets and with ``full`` (issue 28: 55-76 KB of JSON for 10
results, when each episode came whole).

The questions are the labelled real-log questions (``realdata_questions.jsonl``): asked
as people ask them. Each goes to a real ``memctl mcp`` server over stdio, through the
SDK's client, as Claude Code would send it; the size is the reply's text content (the
JSON the model reads, as the SDK indents it) in bytes.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from memctl.memory import Memory

REPO = Path(__file__).resolve().parents[2]
LIMIT = 10


def mcp_payload(realdata: Path, questions: list[str]) -> dict:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from retrieval import evaluate

    sizes: dict[str, list[int]] = {"snippets": [], "full": []}
    with tempfile.TemporaryDirectory(prefix="memctl-payload-") as tmp:
        path = Path(tmp) / "payload.db"
        memory = Memory.open(path)
        evaluate.ingest(memory, sorted(p for p in realdata.iterdir() if p.is_dir()))
        episodes = memory.stats().episodes
        memory.close()

        async def session() -> None:
            server = StdioServerParameters(command=sys.executable, cwd=str(REPO),
                                           args=["-m", "memctl", "--db", str(path), "mcp", "--extractor", "rules"])
            async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                for question in questions:
                    for mode, full in (("snippets", False), ("full", True)):
                        result = await client.call_tool("recall", {"query": question, "limit": LIMIT, "full": full})
                        if result.is_error:
                            raise RuntimeError(f"recall {question!r}: {result.content}")
                        sizes[mode].append(len(result.content[0].text.encode()))

        anyio.run(session)
    return {"payload_questions": len(questions), "payload_episodes": episodes,
            **{f"payload_{mode}_median_kb": round(statistics.median(found) / 1024, 2) for mode, found in sizes.items()},
            **{f"payload_{mode}_max_kb": round(max(found) / 1024, 2) for mode, found in sizes.items()},
            "payload_target": {"median_kb_max": 4}}
