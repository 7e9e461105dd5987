"""Secrets out of text before it is stored or sent anywhere (architecture §7, invariant 7).

Each pattern is anchored so that ordinary text survives: an API key must stand on its
own (``sk-...`` preceded by a letter, digit, ``-`` or ``/`` is part of a slug or path,
not a key), and ``password=`` keeps its name while losing its value.
"""

from __future__ import annotations

import re

_NOT_AFTER = r"(?<![\w/\-.])"

# (kind, substrings of which one must occur for the pattern to be tried, pattern, kept group)
# The substring test is what makes redaction cheap: most text holds no trigger at all.
_PATTERNS: list[tuple[str, tuple[str, ...], re.Pattern[str], str]] = [
    ("private_key", ("PRIVATE KEY",), re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)", re.S), ""),
    ("api_key", ("sk-",), re.compile(
        _NOT_AFTER + r"sk-(?:proj-|ant-(?:api\d\d-)?|live-|test-|svcacct-)?[A-Za-z0-9_\-]{20,}"), ""),
    ("aws_access_key", ("AKIA", "ASIA"), re.compile(_NOT_AFTER + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"), ""),
    ("github_token", ("gh", "github_pat_"), re.compile(
        _NOT_AFTER + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"), ""),
    ("slack_token", ("xox",), re.compile(_NOT_AFTER + r"xox[abposr]-[A-Za-z0-9\-]{10,}"), ""),
    ("google_api_key", ("AIza",), re.compile(_NOT_AFTER + r"AIza[0-9A-Za-z_\-]{35}"), ""),
    ("bearer_token", ("bearer",), re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{16,}=*"), r"\1"),
    ("password", ("pass", "pwd", "secret", "key", "token"), re.compile(
        r"(?i)(\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\b[\"']?\s*[:=]\s*)"
        r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s,;\"'&]+)"), r"\1"),
]


def redact(text: str) -> tuple[str, int]:
    """The text with every secret replaced by ``[REDACTED:kind]``, and how many there were."""
    total = 0
    folded = text.lower()
    for kind, triggers, pattern, keep in _PATTERNS:
        if not any(trigger.lower() in folded for trigger in triggers):
            continue
        text, count = pattern.subn(keep + f"[REDACTED:{kind}]", text)
        if count:
            total += count
            folded = text.lower()
    return text, total
