"""Scoring the rules extractor against labelled facts: precision, correct facts, recall.

    python scripts/rules_eval/evaluate.py [--realdata DIR] [--seed 0] [--sessions 240]

Two labelled sets:

* ``realdata_facts.jsonl`` (beside this file): every episode memctl reads from the real
  logs in ``../shared/realdata``, by source (relative to that folder) and position, with
  the facts a reader would accept from it. Only the labels live here, never the logs'
  text. A name is a list of the forms a reader would accept ("submodule", "tokenizer
  submodule"); the real logs state no dates for these facts, so dates are not scored.
* a generated corpus (``corpus.py``), whose truth is known by construction, dates included.

An assertion is correct when an unused label of its episode has its subject, predicate
and object (compared as memctl compares names, ``memctl.names.entity_key``), says the same
about a start or an end (a retraction ends a fact), and, where the label gives one, the
same date. Precision is correct / produced; recall is correct / labelled.

It imports whatever ``memctl`` is first on the path, so the same labels score another
checkout: ``PYTHONPATH=/path/to/other/checkout python scripts/rules_eval/evaluate.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

LABELS = Path(__file__).resolve().parent / "realdata_facts.jsonl"
EXTRACTED_AT = "2030-01-01T00:00:00.000000Z"  # after every episode: the rules never date by it
SHOWN = 12  # wrong assertions listed in a result, to read what went wrong


@dataclass(frozen=True)
class Expected:
    """One labelled fact: the accepted names of each part, whether it ends, its date if known."""

    subjects: frozenset[str]
    predicates: frozenset[str]
    objects: frozenset[str]
    ended: bool = False
    at: str | None = None  # valid_at, or invalid_at of an ending; None: not scored

    @classmethod
    def from_row(cls, row: dict) -> Expected:
        def keys(value: str | list[str]) -> frozenset[str]:
            from memctl.names import entity_key

            return frozenset(entity_key(v) for v in ([value] if isinstance(value, str) else value))

        return cls(keys(row["subject"]), keys(row["predicate"]), keys(row["object"]), bool(row.get("ended")),
                   row.get("at"))


Labels = dict[tuple[str, int], list[Expected]]


def load_labels(rows: Iterable[dict]) -> Labels:
    return {(row["source"], row["position"]): [Expected.from_row(fact) for fact in row["facts"]] for row in rows}


def read_labels(path: Path = LABELS) -> Labels:
    with open(path, encoding="utf-8") as handle:
        return load_labels(json.loads(line) for line in handle if line.strip())


def episodes(root: Path, paths: list[Path]) -> Iterator[tuple[tuple[str, int], str, str]]:
    """((source relative to root, position), text, reference time) of every episode memctl
    reads from ``paths``, as an ingest would: format detected per file, Aider in UTC."""
    from memctl.model import Episode
    from memctl.sources import IngestOptions, detect_format, files_under, parse

    root = root.resolve()  # the files come resolved: a root reached through a link (../shared) must be too
    for path in files_under(paths):
        fmt = detect_format(path)
        if fmt is None:
            continue
        for item in parse(path, IngestOptions(tz="UTC"), fmt):
            if isinstance(item, Episode):
                yield (str(path.relative_to(root)), item.position), item.content, item.reference_time


def matches(expected: Expected, assertion) -> bool:
    from memctl.names import entity_key

    ended = assertion.valid_at is None
    when = assertion.invalid_at if ended else assertion.valid_at
    return (entity_key(assertion.subject) in expected.subjects and entity_key(assertion.predicate) in expected.predicates
            and entity_key(assertion.object) in expected.objects and ended == expected.ended
            and (expected.at is None or when == expected.at))


def score(found: Iterable[tuple[tuple[str, int], str, str]], labels: Labels,
          extract: Callable[[str, str, str], list] | None = None) -> dict:
    """Precision, correct facts and recall of ``extract`` (the rules extractor by default)
    over the episodes ``found``; each episode must be labelled."""
    if extract is None:
        from memctl.extract.rules import extract_text as extract
    produced = correct = chars = 0
    wrong: list[str] = []
    missed: list[str] = []
    unlabelled: list[str] = []
    seconds = 0.0
    for key, text, reference_time in found:
        if key not in labels:
            unlabelled.append(f"{key[0]}:{key[1]}")
            continue
        started = time.perf_counter()
        assertions = extract(text, reference_time, EXTRACTED_AT)
        seconds += time.perf_counter() - started
        chars += len(text)
        open_labels = list(labels[key])
        for assertion in assertions:
            produced += 1
            hit = next((label for label in open_labels if matches(label, assertion)), None)
            if hit is not None:
                open_labels.remove(hit)
                correct += 1
            elif len(wrong) < SHOWN:
                wrong.append(f"{key[0]}:{key[1]}: ({assertion.subject} | {assertion.predicate} | {assertion.object}"
                             f"{' | ended' if assertion.valid_at is None else ''}) from {assertion.fact!r}")
        missed += [f"{key[0]}:{key[1]}: {sorted(label.subjects)[0]} | {sorted(label.predicates)[0]} | "
                   f"{sorted(label.objects)[0]}{' | ended' if label.ended else ''}" for label in open_labels]
    if unlabelled:
        raise ValueError(f"{len(unlabelled)} episodes have no label, e.g. {unlabelled[0]}: label them first")
    labelled = sum(len(facts) for facts in labels.values())
    return {"episodes": len(labels), "labelled_facts": labelled, "produced": produced, "correct": correct,
            "precision": round(correct / produced, 3) if produced else None,
            "recall": round(correct / labelled, 3) if labelled else None,
            "extract_s": round(seconds, 3), "extract_mb_per_s": round(chars / 1e6 / seconds, 2) if seconds else None,
            "wrong": wrong, "missed": missed[:SHOWN]}


def realdata(root: Path) -> dict:
    """The rules extractor on the real logs, against the labelled set."""
    return score(episodes(root, sorted(p for p in root.iterdir() if p.is_dir())), read_labels())


def generated(seed: int, sessions: int) -> dict:
    """The rules extractor on a generated conversation corpus, against its truth."""
    from rules_eval import corpus

    with tempfile.TemporaryDirectory(prefix="memctl-rules-") as tmp:
        root = Path(tmp)
        truth = load_labels(corpus.write_corpus(root, seed, sessions))
        return {"sessions": sessions, "seed": seed, **score(episodes(root, [root]), truth)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "realdata")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sessions", type=int, default=240)
    args = parser.parse_args()
    import memctl

    print(json.dumps({"memctl": str(Path(memctl.__file__).parent), "realdata": realdata(args.realdata),
                      "generated": generated(args.seed, args.sessions)}))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/: rules_eval and retrieval
    main()
