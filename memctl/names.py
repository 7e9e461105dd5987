"""Matching keys for entity names and predicates.

Names are matched by key but stored and shown as written. The key folds case, Unicode
compatibility forms, white space, dashes and underscores, and drops punctuation that
does not change meaning ("N.Y.C." = "NYC", "Node.js" = "nodejs"). Symbols that do
change meaning stay: "C++" and "C#" are not "C".
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_SEPARATORS = re.compile(r"[\s\-_/]+")
# Kept because they distinguish names: C++, C#, AT&T, @handle.
_MEANINGFUL = set("+#&@")


@lru_cache(maxsize=1 << 16)  # names repeat across a backfill; the key is pure
def entity_key(name: str) -> str:
    folded = unicodedata.normalize("NFKC", name).casefold()
    kept = "".join(
        ch
        for ch in folded
        if ch in _MEANINGFUL or not unicodedata.category(ch).startswith(("P", "S"))
        or ch in "-_/"
    )
    return _SEPARATORS.sub(" ", kept).strip()


@lru_cache(maxsize=1 << 12)
def predicate_key(predicate: str) -> str:
    """``lives in``, ``Lives-In`` and ``lives_in`` are one predicate: ``lives_in``."""
    return entity_key(predicate).replace(" ", "_")


def keys_in_text(text: str, longest: int = 4) -> set[str]:
    """The matching key of every run of up to ``longest`` words of ``text``: what an
    entity named in the text would be looked up by ("New York City", "Node.js,")."""
    words = [key for key in map(entity_key, text.split()) if key]
    return {" ".join(words[start:start + length]) for start in range(len(words))
            for length in range(1, longest + 1) if start + length <= len(words)}
