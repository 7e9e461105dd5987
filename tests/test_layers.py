"""The layers of docs/architecture.md §6 hold: no two parts of memctl import each other
(a package counts as one part), and ``store/`` builds only on pure modules, so that
another backend can take its place (issue 33). Read from the source, imports inside
functions included: a lazy import is a dependency all the same."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "memctl"
PACKAGES = ("store", "extract", "sources", "recall")
# What store/ may import besides itself: modules that do no I/O and call no use case.
UNDER_THE_STORE = {"memctl.errors", "memctl.names", "memctl.times", "memctl.model", "memctl.results",
                   "memctl.resolve", "memctl.aliases", "memctl.summary", "memctl.snippets"}


def part(module: str) -> str:
    """The part a module belongs to: its package under memctl, or itself."""
    pieces = module.split(".")
    return ".".join(pieces[:2])


def imports() -> dict[str, set[str]]:
    """Part -> the other parts its modules import."""
    found: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("memctl"):
                named = [f"{node.module}.{a.name}" for a in node.names] if node.module == "memctl" else [node.module]
            elif isinstance(node, ast.Import):
                named = [a.name for a in node.names if a.name.startswith("memctl")]
            for target in named:
                if part(target) != part(module) and _exists(part(target)):
                    found.setdefault(part(module), set()).add(part(target))
    return found


def _exists(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (ROOT / relative).with_suffix(".py").exists() or (ROOT / relative).is_dir()


def test_no_two_parts_import_each_other():
    graph = imports()

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = sorted({tuple(sorted((a, b))) for a, targets in graph.items() for b in targets if a in reaches(b)})
    assert cycles == []


def test_the_store_builds_only_on_pure_modules():
    assert imports()["memctl.store"] <= UNDER_THE_STORE, imports()["memctl.store"] - UNDER_THE_STORE


def test_the_scan_sees_lazy_imports():
    """The checks above would pass on nothing: the scan must find a known lazy import."""
    assert "memctl.cli" in imports()["memctl.entry"]  # memctl.entry imports cli inside main()
