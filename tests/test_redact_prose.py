"""Prose about secrets keeps its words (issue 31, item 6).

The corpus is ``tests/prose_corpus.py``: generated messages that talk about passwords,
secrets, tokens, keys, passphrases and PINs without holding one. Each is redacted through
``redact_into``, as ingest redacts a turn; every redaction in them is a false one. The
planted secrets that must still go are ``tests/secret_corpus.py`` (``test_redact.py``,
``test_secrets.py``). ``python -m tests.prose_corpus`` prints the count and the false ones.
"""

from __future__ import annotations

import random

import pytest

from memctl.redact import redact
from tests.prose_corpus import NAMED_CASES, count_redactions, false_redactions, messages
from tests.secret_corpus import plants

MESSAGES = messages()


def test_the_corpus_has_five_thousand_distinct_messages_and_is_the_same_each_time():
    assert len(set(MESSAGES)) == len(MESSAGES) >= 5000
    assert messages() == MESSAGES


def test_at_most_one_false_redaction_in_the_whole_corpus():
    changed = false_redactions(MESSAGES)
    shown = "\n\n".join(f"{found}\n{text!r}\n=> {cleaned!r}" for text, cleaned, found in changed[:20])
    assert count_redactions(changed) <= 1, f"{count_redactions(changed)} false redactions, first ones:\n{shown}"


@pytest.mark.parametrize(("case", "fragment"), list(zip(NAMED_CASES, [
    "**Password Protection**: Use a long",
    "**Use a password manager**: it generates",
    '"Messianic secret": Mark\'s Jesus',
    'a secret: "Partner with the agency, don\'t compete with it."',
], strict=True)))
def test_the_four_mangled_cases_survive_whole(case, fragment):
    """What real conversations lost: the word after a bold label, the name after a quoted
    phrase that ends in "secret", the quoted advice after "a secret:"."""
    assert fragment in case
    assert redact(case) == (case, {})


@pytest.mark.parametrize(("text", "expected"), [
    ("the password is hunter2Secret99", "the password is [REDACTED:password]"),  # it spells "Secret", and is made up
    ("my password was Tr0ub4dor&3", "my password was [REDACTED:password]"),
    ("pw is S3cure!Pass", "pw is [REDACTED:password]"),
    ("The password is hunter2Secret99, don't share it.", "The password is [REDACTED:password], don't share it."),
    ("the wifi password is Summer2024 since May", "the wifi password is [REDACTED:password] since May"),
    # what prose keys still give when the value looks generated
    ("secret: Xq7pLm2vRt9w", "secret: [REDACTED:secret]"),
    ('{"token": "Xq7pLm2vRt9wZk3s"}', '{"token": "[REDACTED:token]"}'),
    ("Top secret: Xq7p!Lm2v", "Top secret: [REDACTED:secret]"),
    ("password: Summer2024", "password: [REDACTED:password]"),
    # the words after the value hold a "to" that a phrase before a verb could end at
    ("I set the root password to Zx9!mQ2#abc and went to dinner",
     "I set the root password to [REDACTED:password] and went to dinner"),
    ("set the admin password to q3dWzBIxFWpbrGBys30 and logged out\n\nTo answer your question",
     "set the admin password to [REDACTED:password] and logged out\n\nTo answer your question"),
    ("the password to access is hunter22", "the password to access is [REDACTED:password]"),
])
def test_a_password_said_in_prose_goes(text, expected):
    assert redact(text)[0] == expected


@pytest.mark.parametrize("text", [
    "the password is strong",
    "the password is required",
    "the password is in the vault",
    "the password is the same as before",
    "the password is 1Password's job now",
    # a description, not the value: an algorithm or standard with its number, a size
    "the password is AES-256 encrypted",
    "the password is SHA256-hashed with a salt",
    "the password is base64 encoded",
    "the Wi-Fi password is WPA2-PSK protected",
    "your password is 2FA-protected",
    "the API key is base64-encoded in the header",
    "the password is 12-characters minimum",
    "the password is bcrypt(12) hashed",
    # code, a link, an address, text between two code spans, an elided value
    "const apiKey = process.env.DB_PASS;",
    "`curl -u username:password https://api.example.com/me`",
    "Send the password to it@acme.io, not to the team.",
    "`if password == confirm_password:` should use `hmac.compare_digest` instead.",
    "password = pypi-AgEIcHlwaS5vcmc...",
    "`mysql -u root -p` will prompt for the password.",
    # a word of prose as the key: its value must look generated
    "The secret: patience.",
    "Top secret: gifts.",
    "Secret: Mark's friends never found out.",
    "Boarding pass: printed",
    "pwd: /home/ana/projects/app",
    "PWD=/workspaces/app",
    "PASS: tests/test_auth.py::test_login",
    'app.use(session({ secret: \'keyboard cat\' }))',
    # a token is generated: a tokenizer's word is not one
    '[{"token": "Hello", "id": 9906}, {"token": " world", "id": 1917}]',
    "Token: Hello\nToken: world",
    "Token: Revoked.",
    # a state, not a value
    "Password: Expired",
    "Password: Required.",
    "api_key: Required.",
    # a quote that closes a phrase, not a key
    'the "Messianic secret": Mark\'s gospel',
    # documentation's own example, a path, a demo key, a validation pattern
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "private_key: ~/.ssh/id_ed25519",
    'apiKey: "demo"',
    "password: ^(?=.*[A-Z]).{8,}$",
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    # a private key's armour named in a sentence, with no base64 body
    "A PEM private key starts with -----BEGIN PRIVATE KEY----- on its own line, followed by base64-encoded lines, "
    "and ends with -----END PRIVATE KEY-----.",
    "-----BEGIN ENCRYPTED PRIVATE KEY----- means the key is protected with a passphrase, and you will be asked "
    "for it when the server starts.",
])
def test_prose_that_only_talks_of_a_secret_survives(text):
    assert redact(text) == (text, {})


def test_a_planted_secret_inside_prose_still_goes():
    """Each planted secret before or after a message of the corpus: the prose around it
    changes nothing of what is found (it once did: "…password to X and logged out" then
    "To answer your question" read X as a phrase before "To")."""
    rng = random.Random(31)
    for seed in range(25):
        for plant in plants(seed):
            prose = rng.choice(MESSAGES)
            for text in (f"{prose}\n\n{plant.text}\n", f"{plant.text}\n\n{prose}"):
                cleaned, found = redact(text)
                assert plant.secret not in cleaned, (plant.name, text)
                assert found == {plant.kind: 1}, (plant.name, found, text)
                assert redact(cleaned) == (cleaned, {})
