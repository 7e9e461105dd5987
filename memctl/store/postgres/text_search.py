"""The text indexes on PostgreSQL (``memctl.store.text_search`` says what each method
gives): ``episodes.content_tsv`` and ``fact_texts.document``, ``tsvector`` columns with
GIN indexes, searched with ``to_tsquery`` in memctl's configuration (schema migration
0002: Snowball's English stemming, as FTS5's porter tokenizer stems, and no stop words
dropped, as FTS5 drops none) and ranked by ``ts_rank`` over the text's length
(normalization 1), since PostgreSQL has no BM25.
"""

from __future__ import annotations

import re

# SQLite's index names, and where PostgreSQL keeps each: (table, row id, tsvector).
_INDEXES = {"facts_fts": ("fact_texts", "fact_id", "document"),
            "episodes_fts": ("episodes", "text_id", "content_tsv")}
_TOKEN = re.compile(r'"([^"]*)"|\b(OR|AND)\b|([()])|\S')


def tsquery(match: str) -> str:
    """The FTS5 expression ``match`` (quoted terms and phrases, OR, AND, parentheses) in
    ``to_tsquery``'s syntax: a phrase's words follow each other (``<->``), each word
    quoted, so that nothing in it is read as an operator."""
    out = []
    for found in _TOKEN.finditer(match):
        quoted, operator, paren = found.groups()
        if quoted is not None:
            words = ["'" + word.replace("\\", "\\\\").replace("'", "''") + "'" for word in quoted.split()]
            out.append("(" + " <-> ".join(words) + ")" if len(words) > 1 else words[0] if words else "''")
        elif operator is not None:
            out.append("|" if operator == "OR" else "&")
        elif paren is not None:
            out.append(paren)
    return " ".join(out)


class TsVector:
    def query(self, match: str) -> str:
        return tsquery(match)

    def ranked(self, index: str) -> str:
        table, rowid, vector = _INDEXES[index]
        return (f"SELECT {rowid} AS rowid, -ts_rank({vector}, q, 1) AS rank FROM {table}, "
                f"to_tsquery('memctl', ?) AS q WHERE {vector} @@ q ORDER BY rank, rowid LIMIT ?")

    def matching(self, index: str) -> str:
        table, rowid, vector = _INDEXES[index]
        return f"SELECT {rowid} AS rowid FROM {table} WHERE {vector} @@ to_tsquery('memctl', ?)"

    def count(self, index: str) -> str:
        table, _, vector = _INDEXES[index]
        return f"SELECT count(*) FROM {table} WHERE {vector} @@ to_tsquery('memctl', ?)"

    def highlighted(self, start: str, end: str, match: str, episode_ids: list[str]) -> tuple[str, list]:
        return (f"""SELECT e.id, ts_headline('memctl', e.content, q,
                           'StartSel="' || ? || '", StopSel="' || ? || '", HighlightAll=true')
                    FROM episodes e, to_tsquery('memctl', ?) AS q
                    WHERE e.content_tsv @@ q AND e.id IN ({", ".join("?" * len(episode_ids))})""",
                [start, end, tsquery(match), *episode_ids])


TSVECTOR = TsVector()
