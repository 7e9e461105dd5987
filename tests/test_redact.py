"""Secrets never reach storage or an extractor (architecture §7, invariant 7)."""

from __future__ import annotations

import pytest

from memctl.redact import redact
from tests.conftest import REALDATA, needs_realdata

SECRETS = [
    ("use sk-proj-Abc123def456ghi789jkl012mno345 for it", "api_key", "sk-proj-Abc123"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-AAAABBBBCCCCDDDDEEEEFFFF", "api_key", "sk-ant-api03"),
    ("key AKIAIOSFODNN7EXAMPLE in the env", "aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    ("token ghp_" + "a1B2" * 9 + " pushed", "github_token", "ghp_a1B2"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "github_token", "github_pat_11"),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc'", "bearer_token", "eyJhbGci"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----", "private_key",
     "b3BlbnNzaC1rZXk"),
    ('db: password: "correct horse battery"', "password", "correct horse"),
    ("postgres password=hunter22 host=db", "password", "hunter22"),
    ("xoxb-1234567890-abcdefghij", "slack_token", "xoxb-1234567890"),
]


@pytest.mark.parametrize(("text", "kind", "secret"), SECRETS)
def test_secrets_are_replaced_and_counted(text, kind, secret):
    cleaned, count = redact(text)
    assert secret not in cleaned
    assert f"[REDACTED:{kind}]" in cleaned and count >= 1


@pytest.mark.parametrize("text", [
    "https://blog.example.com/posts/why-sk-learn-is-great-for-beginners-2024",  # a slug, not a key
    "see /tmp/task-sk-1234567890abcdefghijklmnop/out.log",
    "the password field must be at least 12 characters",
    "AKIA is the prefix AWS uses for access keys",
    "we use bearer tokens for auth",
    "ghp_ tokens are GitHub's personal tokens",
])
def test_ordinary_text_survives(text):
    assert redact(text) == (text, 0)


def test_keys_in_context_keep_their_surroundings():
    cleaned, count = redact("export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx1234 && run")
    assert cleaned == "export OPENAI_API_KEY=[REDACTED:api_key] && run" and count == 1


@needs_realdata
def test_real_logs_are_not_mangled():
    """The real samples hold strings that look like keys but are not (README of realdata)."""
    for path in REALDATA.rglob("*"):
        if path.is_file() and path.stat().st_size < 2_000_000:
            text = path.read_text(errors="replace")
            cleaned, count = redact(text)
            assert "sk-" not in text or count == 0 or "-sk-" not in cleaned, path
            for kind in ("api_key", "aws_access_key", "github_token", "private_key", "slack_token"):
                assert f"[REDACTED:{kind}]" not in cleaned, (path, kind)
