"""The README's commands do what it says (issue 14, item 20): its "Try it" block runs line
by line against a fresh database, and every ``# → word`` is found in that line's output."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def block_after(heading: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(heading):]
    return section[section.index("```\n") + 4:section.index("\n```", section.index("```\n") + 4)].splitlines()


def test_the_try_it_block_runs_and_answers_as_written(raw_cli, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    lines = block_after("## Try it on the shipped example")
    assert len(lines) >= 8
    for line in lines:
        command, _, expected = line.partition("# →")
        args = shlex.split(command)
        assert args[:3] == ["memctl", "--db", "demo.db"], line
        done = raw_cli("--db", tmp_path / "demo.db", *args[3:])
        assert done.code == 0, (line, done.err)
        assert expected.strip() in done.out + done.err, (line, done.out)


def test_the_first_readme_command_answers_mysql(raw_cli, monkeypatch, tmp_path):
    """The install-and-run command of "Two commands", past its pip install."""
    monkeypatch.chdir(ROOT)
    first = block_after("## Two commands")[0]
    steps = [shlex.split(step) for step in first.split(" && ") if step.startswith("memctl")]
    assert len(steps) == 2
    outputs = []
    for step in steps:
        done = raw_cli(*[re.sub(r"^demo\.db$", str(tmp_path / "demo.db"), a) for a in step[1:]])
        assert done.code == 0, done.err
        outputs.append(done.out)
    assert "MySQL" in outputs[-1]


def test_the_library_example_in_the_docs_runs(monkeypatch, tmp_path, capsys):
    """docs/library.md's Python example, as written, on a database of its own."""
    text = (ROOT / "docs" / "library.md").read_text()
    code = text[text.index("```python\n") + 10:text.index("\n```", text.index("```python\n"))]
    monkeypatch.chdir(ROOT)
    exec(compile(code.replace('"demo.db"', repr(str(tmp_path / "demo.db"))), "docs/library.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("[('MySQL', '2023-02-14T09:12:00.000000Z', 'current')") and "no entity named 'nobody'" in printed


def test_every_install_line_installs_this_project_with_extras_it_has():
    """Issue 30, item 1: "memctl" on the package index is another project, so no line may
    install it; each extra a line names is one pyproject.toml defines."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    assert project["name"] == "memctl-memory" and project["scripts"] == {"memctl": "memctl.entry:main"}
    lines = [line for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for line in page.read_text().splitlines() if "pip install" in line]
    assert lines
    for line in lines:
        assert not re.search(r"pip install\s+(-e\s+)?'?memctl(\[|'|\s|$)", line), line
        for named in re.findall(r"\[([\w,-]+)\]'", line):
            assert set(named.split(",")) <= extras, line


def test_a_store_copied_to_postgresql_answers_every_example_as_the_file_does(raw_cli, monkeypatch, tmp_path,
                                                                            postgres_url):
    """Issue 33's test of done: the "Try it" block's store, copied from SQLite into
    PostgreSQL, answers each of its lines alike, as JSON: the same results in the same
    order (the lines that change the store change both). Left out: what only the clock or
    a new operation id tells apart, and the scores, which are each engine's own (BM25 in
    SQLite, ts_rank in PostgreSQL)."""
    from datetime import UTC, datetime

    monkeypatch.chdir(ROOT)
    lines = block_after("## Try it on the shipped example")
    file = tmp_path / "demo.db"
    assert raw_cli("--db", file, *shlex.split(lines[0])[3:]).code == 0  # the ingest
    assert raw_cli("copy", file, postgres_url).code == 0
    today = datetime.now(UTC).strftime("%Y-%m-%d")

    def answer(where, args) -> str:
        done = raw_cli("--db", where, *args, "--json")
        assert done.code == 0, (args, done.err)
        return re.sub(rf'op_[0-9a-f]{{12}}|"{today}T[0-9:.]+Z"|"score": [0-9.e-]+', "…", done.out)

    for line in lines[1:]:
        args = shlex.split(line.partition("# →")[0])[3:]
        assert answer(postgres_url, args) == answer(file, args), line
