"""How a name as written resolves: its group (docs/entities.md).

A name resolves to an entity by its key (``memctl.names.entity_key``) first; a name whose
key no entity has resolves by its *group*: the key without a leading article, a
possessive or a trailing generic noun, with a known alias replaced by its canonical name
("the Billing service's" and "billing" are both "billing"; "Postgres" is "postgresql").
Which entity a group finds, and when, is ``memctl.store.entities``'s to decide: only one
the store already knows, and never across names that differ ("billing-v2" is not
"billing"). The aliases are memctl's list (``aliases.txt`` beside this module) and the
user's file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memctl.errors import BadInput
from memctl.names import entity_key

# Nouns that say what kind of thing a name is, not which: "the billing service" is billing.
# Only kinds that are the thing itself: "the billing database" or "the billing API" is a
# part of billing, and "the billing team" the people who run it: each stays its own entity.
GENERIC_NOUNS = frozenset({
    "service", "services", "svc", "microservice", "app", "application", "project", "repo", "repository", "codebase",
    "system",
})
# Nouns that name a part of a thing or the people who run it, never the thing: another
# entity "billing database" or "billing team" does not make "the billing service" mean
# anything but billing, where "billing-v2" or "billing gateway" might be what it means.
PART_NOUNS = frozenset({
    "database", "databases", "db", "dbs", "team", "teams", "api", "apis", "queue", "queues", "cache", "table",
    "tables", "schema", "bucket", "ui", "dashboard", "docs", "documentation", "test", "tests", "config", "logs",
    "owners", "oncall", "channel",
})
_ARTICLE = re.compile(r"(?i)(?:the|a|an)\s+(?=\S)")
_POSSESSIVE = re.compile(r"['’]s$|(?<=s)['’]$")


@dataclass(frozen=True)
class Reading:
    """How a name as written resolves: its key, its group key, and what made them differ."""

    key: str
    group: str
    plain: str  # the key without an article or possessive ("billing service" of "the billing service's")
    rules: tuple[str, ...] = ()  # of "article", "possessive", "generic_noun", "alias", in that order
    stem: str | None = None  # with a generic noun taken off: the rest ("billing" of "billing service")


@lru_cache(maxsize=1 << 16)
def _reading(name: str, aliases: Aliases) -> Reading:
    key = entity_key(name)
    rules: list[str] = []
    rest = name.strip()
    if (article := _ARTICLE.match(rest)) is not None:
        rest = rest[article.end():]
        rules.append("article")
    if (possessive := _POSSESSIVE.search(rest)) is not None and possessive.start() > 0:
        rest = rest[:possessive.start()]
        rules.append("possessive")
    group = plain = entity_key(rest) or key
    stem = None
    words = group.split(" ")
    # A listed name is whole as listed: "Amazon Web Services" is not "amazon web" + a noun.
    if group not in aliases.canonical and len(words) > 1 and words[-1] in GENERIC_NOUNS:
        group = stem = " ".join(words[:-1])
        rules.append("generic_noun")
    canonical = aliases.canonical.get(group)
    if canonical is not None and canonical != group:
        group = canonical
        rules.append("alias")
    return Reading(key, group, plain, tuple(rules), stem)


def reading(name: str, aliases: Aliases | None = None) -> Reading:
    return _reading(name, aliases if aliases is not None else known_aliases())


@dataclass(frozen=True)
class Aliases:
    """Alias key -> canonical key, from alias files (``memctl/aliases.txt``'s form)."""

    canonical: Mapping[str, str]
    files: tuple[str, ...] = ()

    def __hash__(self) -> int:  # one per set of files: a cache key
        return hash(self.files)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Aliases) and self.files == other.files and self.canonical == other.canonical


class BadAliases(BadInput):
    """An alias file line memctl cannot read; the message names the file and line."""


def parse_aliases(text: str, where: str) -> dict[str, str]:
    """``Canonical: alias, alias`` lines (``#`` comments) as alias key -> canonical key.

    A name listed under two canonical names is refused: which one it means is the user's
    to say, not the order of the lines."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):  # a comment is a line of its own: "C#" is a name
            continue
        head, colon, tail = line.partition(":")
        canonical = entity_key(head)
        names = [entity_key(name) for name in tail.split(",") if name.strip()]
        if not colon or not canonical or not names or not all(names):
            raise BadAliases(f"{where}:{number}: expected 'Name: other name, other name', got {line!r}")
        for name in [canonical, *names]:
            if found.get(name, canonical) != canonical:
                raise BadAliases(f"{where}:{number}: {name!r} is already a name of {found[name]!r}")
            found[name] = canonical
    return found


def user_aliases_file() -> Path | None:
    """The user's alias file: ``MEMCTL_ALIASES``, else ``aliases.txt`` in memctl's config
    folder if there is one."""
    if os.environ.get("MEMCTL_ALIASES"):
        return Path(os.environ["MEMCTL_ALIASES"]).expanduser()
    from platformdirs import user_config_dir

    path = Path(user_config_dir("memctl")) / "aliases.txt"
    return path if path.exists() else None


def known_aliases() -> Aliases:
    """memctl's list (``memctl/aliases.txt``) and the user's file, whose lines win where
    they name a name otherwise. BadAliases for a file that cannot be read as one."""
    user = user_aliases_file()
    try:
        stamp = f"{user}@{user.stat().st_mtime_ns}" if user is not None else ""
    except OSError as error:
        raise BadAliases(f"{user}: cannot read the alias file: {error.strerror}") from None
    return _aliases(stamp, user)


@lru_cache(maxsize=4)
def _aliases(stamp: str, user: Path | None) -> Aliases:
    shipped = Path(__file__).with_name("aliases.txt")
    canonical = parse_aliases(shipped.read_text(encoding="utf-8"), str(shipped))
    if user is not None:
        try:
            text = user.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise BadAliases(f"{user}: cannot read the alias file: {error}") from None
        mine = parse_aliases(text, str(user))
        # A name the user gives another meaning leaves memctl's group it was in.
        canonical = {name: key for name, key in canonical.items() if name not in mine and key not in mine}
        canonical.update(mine)
    return Aliases(canonical, ("shipped", stamp))
