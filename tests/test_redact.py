"""The redactor (issue 13): every kind of secret goes and its name stays; code and
placeholders survive; the real logs lose nothing (architecture §7, invariant 7).

The secrets are the generated corpus of ``tests/secret_corpus.py``; where they go once
redacted (the database file, a model's request) is ``tests/test_secrets.py``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.model import Assertion, Episode, content_hash
from memctl.redact import REDACTED, redact, redact_episode
from memctl.sources import IngestOptions, Skipped, files_under, format_of, parse
from tests.conftest import REALDATA, needs_realdata
from tests.secret_corpus import plants

PLANTS = plants()


def test_the_corpus_has_forty_kinds_and_more():
    assert len({plant.kind for plant in PLANTS}) >= 40 and len(PLANTS) >= 80


@pytest.mark.parametrize("plant", PLANTS, ids=lambda plant: plant.name)
def test_each_secret_goes_and_its_name_stays(plant):
    cleaned, found = redact(plant.text)
    assert plant.secret not in cleaned
    assert found == {plant.kind: 1} and REDACTED.format(plant.kind) in cleaned
    assert plant.kept in cleaned


@pytest.mark.parametrize(("text", "expected"), [
    ("DATABASE_PASSWORD=Xq7pLm2vRt9w", "DATABASE_PASSWORD=[REDACTED:password]"),
    ("export DB_PASS='Xq7pLm2vRt9w' && ./run", "export DB_PASS='[REDACTED:password]' && ./run"),
    ("postgres://app:Xq7pLm2vRt9w@db:5432/prod", "postgres://app:[REDACTED:url_password]@db:5432/prod"),
    ("psql 'host=db password=Xq7pLm2vRt9w user=app'", "psql 'host=db password=[REDACTED:password] user=app'"),
    ("the wifi password: Xq7pLm2vRt9w", "the wifi password: [REDACTED:password]"),
    ("dbPassword = \"Xq7pLm2vRt9w\";", "dbPassword = \"[REDACTED:password]\";"),
    # JSON inside a string, as a log line pastes it
    ('{\\"api_key\\": \\"Zk29fjs8Qw0pLm\\"}', '{\\"api_key\\": \\"[REDACTED:api_key]\\"}'),
    ("docker run -e POSTGRES_PASSWORD=Xq7pLm2vRt9w postgres", "docker run -e POSTGRES_PASSWORD=[REDACTED:password] postgres"),
    ('$env:DB_PASSWORD = "Xq7pLm2vRt9w"', '$env:DB_PASSWORD = "[REDACTED:password]"'),
    # said in a sentence, as a chat log holds it
    ("The staging DB password is Tr0ub4dor&3.", "The staging DB password is [REDACTED:password]."),
    ("the password for the admin account was hunter22, use it", "the password for the admin account was "
                                                                 "[REDACTED:password], use it"),
    ("log in with password hunter22 and change it", "log in with password [REDACTED:password] and change it"),
    ("the wifi passphrase is now 'Gr33n-Tea!'", "the wifi passphrase is now '[REDACTED:password]'"),
    ("our API key for staging is zq81LmP0xx9w2k.", "our API key for staging is [REDACTED:api_key]."),
    ("The root password was changed to 'Zx9!mQ2#'", "The root password was changed to '[REDACTED:password]'"),
    ("the password has been reset to Abc12345.", "the password has been reset to [REDACTED:password]."),
    ("I set the root password to Zx9!mQ2# yesterday", "I set the root password to [REDACTED:password] yesterday"),
    ("Password is: hunter22", "Password is: [REDACTED:password]"),
    ("my password's hunter22", "my password's [REDACTED:password]"),
    ("passwd Hunter22 on the old box", "passwd [REDACTED:password] on the old box"),
    # a plain word is a password where nothing else could stand: a config line's value, or quoted
    ("password: sunshine", "password: [REDACTED:password]"),
    ("login: admin / Password: sunshine", "login: admin / Password: [REDACTED:password]"),
    # a space before the colon, as forms and some keyboards type it
    ("Password : Xq7pLm2vRt9w", "Password : [REDACTED:password]"),
    ("Password : sunshine", "Password : [REDACTED:password]"),
    ("db:\n  password: sunshine\n  host: db1", "db:\n  password: [REDACTED:password]\n  host: db1"),
    ('the password is "sunshine".', 'the password is "[REDACTED:password]".'),
    ("the wifi password is now 'correcthorse'", "the wifi password is now '[REDACTED:password]'"),
    # a generated value that begins as a placeholder does ("my_password") is not one
    ('connect(user="app", password="My_7zfS3WL9d44")', 'connect(user="app", password="[REDACTED:password]")'),
])
def test_only_the_value_is_replaced(text, expected):
    assert redact(text)[0] == expected


@pytest.mark.parametrize("text", [
    # code: a call, an index, an attribute, a variable passed on, a type
    'api_key=os.getenv("OPENAI_API_KEY")  # Explicitly pass API key',
    'password=os.environ["DB_PASSWORD"]',
    "const token = process.env.GITHUB_TOKEN;",
    "client = Client(api_key=api_key, timeout=30)",
    "self.token = token",
    "password = pw",
    "f(password=get_password())",
    "token: Optional[str] = None",
    "password: str",
    "api_key: string",
    "password: pw,",
    'the password is "required"',
    "password: empty",  # what a config line says of it, not the value
    "password : str",
    "{ password : pw }",
    "Token: Bearer",
    "{ token: tokens[index] }",
    "Pass :meth:`peek` a default value",
    "total_input_tokens=150, total_output_tokens=75,",
    "token_limit=4000",
    "bypass=true",
    "publicKeyToken=\"1fc8b3b9a1e18e3b\"",
    # references and placeholders
    "DB_PASSWORD=${DB_PASSWORD}",
    "API_KEY=$API_KEY",
    "OPENAI_API_KEY=<your-key-here>",
    'ANTHROPIC_API_KEY="your_anthropic_api_key_here"',
    'SECRET="xxx"',
    "PASSWORD=changeme",
    "api_key=...",
    "password = None",
    'password: "${DB_PASS}"',
    "postgres://user:password@localhost/db",
    "postgresql://{user}:{password}@{host}/db",
    "Authorization: Bearer ${TOKEN}",
    "Authorization: Bearer <token>",
    "AKIAIOSFODNN7EXAMPLE is the key AWS's documentation uses",
    'HF_TOKEN="hf_***"',
    "sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    # sk-... in a slug, a path or an identifier
    "https://blog.example.com/posts/why-sk-learn-is-great-for-beginners-2024",
    "see /tmp/task-sk-1234567890abcdefghijklmnop/out.log",
    "my_sk-abcdefghijklmnopqrstuvwxyz123",
    # words about secrets
    "the password field must be at least 12 characters",
    "the password is stored in Vault and rotated every 90 days",
    "the password for user42 is e-mailed to them",
    "password reset links expire after 24 hours",
    "the password was changed to something longer",
    "change the password to a passphrase",
    "the password is: required",
    "grep deploy /etc/passwd file1234",
    "the api key is stored in 1Password",
    "the token is expired, so the token usage shows 12345abcdefgh",  # "token": too common a word in logs
    "we use bearer tokens for auth",
    "AKIA is the prefix AWS uses for access keys",
    "ghp_ tokens are GitHub's personal tokens",
    "-----BEGIN OPENSSH PRIVATE KEY----- is how the file starts",
])
def test_code_placeholders_and_words_about_secrets_survive(text):
    assert redact(text) == (text, {})


def test_a_generated_token_may_hold_a_run_of_one_character():
    """Six 1s in a row in a random token (hypothesis found one, seed 5750535) do not make
    it a filled-in placeholder: that takes one character over a third of it."""
    token = "xo" + "xp-853273434569-111539427827-371111117494-3f8dc581fa53d1489a25e7a59e6b0024"
    assert redact(f"token: {token}") == ("token: [REDACTED:slack_token]", {"slack_token": 1})
    assert redact("gh" + "p_" + "0" * 36)[1] == {}


def test_the_kinds_are_counted():
    text = "\n".join(plant.text for plant in PLANTS)
    cleaned, found = redact(text)
    expected: dict[str, int] = {}
    for plant in PLANTS:
        expected[plant.kind] = expected.get(plant.kind, 0) + 1
    assert found == expected and not any(plant.secret in cleaned for plant in PLANTS)


# Where a pasted line may sit: on its own, quoted, in a code fence, in a list, after a prompt.
CONTEXTS = [("", ""), ("\n", "\n"), ('"', '"'), ("'", "'"), ("```\n", "\n```"), ("- ", "\n"), ("$ ", "\n"),
            ("see: ", " (rotated since)"), ("(", ")"), ("<code>", "</code>"), ("\t", "\r\n")]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), context=st.sampled_from(CONTEXTS))
def test_no_generated_secret_survives_in_any_context(seed, context):
    before, after = context
    for plant in plants(seed):
        cleaned, found = redact(before + plant.text + after)
        assert plant.secret not in cleaned, plant.name
        assert found.get(plant.kind) == 1, (plant.name, found)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([plant.text for plant in PLANTS] + [
    'api_key=os.getenv("X")', "token: str", "the password is set", "DB_PASS=${DB_PASS}", "x = 1", "\n", " ",
    "[REDACTED:password]", "password=", "https://", "@", ":", "sk-", "Bearer", "-----BEGIN"]), max_size=8))
def test_redacting_twice_changes_nothing(parts):
    once, _ = redact("".join(parts))
    assert redact(once) == (once, {})


def test_an_episode_a_caller_built_is_redacted_with_its_assertions():
    plant = next(plant for plant in PLANTS if plant.name == "env_database_password")
    assertion = Assertion(subject="billing", predicate="configured_with", object=plant.text, fact=plant.text,
                          valid_at="2024-05-01T10:00:00.000000Z", extractor="script")
    episode = Episode(source="s", position=1, format="script", content=plant.text, content_hash=content_hash(plant.text),
                      reference_time="2024-05-01T10:00:00.000000Z", reference_time_source="record",
                      assertions=[assertion])
    cleaned = redact_episode(episode)
    assert cleaned.id == episode.id and cleaned.redacted == {"password": 3}
    texts = [cleaned.content, cleaned.assertions[0].object, cleaned.assertions[0].fact]
    assert texts == ["DATABASE_PASSWORD=[REDACTED:password]"] * 3


def _real_texts():
    """What memctl would store from every real log (its episodes), and every string in
    those files (tool output, file contents, metadata), which holds far more code."""
    options = IngestOptions(from_mtime=True)
    for path in files_under([REALDATA]):
        fmt = format_of(path, options)
        if fmt is not None:
            for item in parse(path, options, fmt):
                if not isinstance(item, Skipped):
                    yield "episode", f"{path}:{item.position}", item.content, item.redacted
        if path.suffix in (".json", ".jsonl"):
            lines = path.read_text(errors="replace").splitlines() if path.suffix == ".jsonl" else [path.read_text()]
            for number, line in enumerate(lines, 1):
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                for text in _strings(value):
                    yield "string", f"{path}:{number}", text, redact(text)[1]
        else:
            text = path.read_text(errors="replace")
            yield "string", str(path), text, redact(text)[1]


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@needs_realdata
def test_the_real_logs_give_at_most_one_false_positive():
    """The real logs hold no secret (their README), only code and text that looks like one:
    every redaction in them is a false positive. The issue allows one; the README lists them."""
    found = [(what, where, kinds) for what, where, _, kinds in _real_texts() if kinds]
    assert len(found) <= 1, found


@pytest.mark.parametrize(("text", "expected"), [
    # issue 31, item 6: markdown's emphasis around words is no password
    ("**Password Protection**: use a manager", "**Password Protection**: use a manager"),
    ("**Use a password manager**: it fills them in", "**Use a password manager**: it fills them in"),
    # item 5: "pw:", and a colon before a value the sentence goes on after
    ("login is admin, pw: wCgjR512&IccU", "login is admin, pw: [REDACTED:password]"),
    ("The admin password: Xq9-vBn27-LmQz3 is in the vault.", "The admin password: [REDACTED:password] is in the vault."),
    ("the upward trend, pwned", "the upward trend, pwned"),
    # a private key cut short after its armour headers (a model's reply cut at its limit)
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\nComment: \"ci (2024)!\"\n\nQkS5rHvgeThmf25qT+Okau3l"
     "+nnQkS5rHvgeThmf25qT+Okau3l+nn", "[REDACTED:private_key]"),
    ("the file starts with -----BEGIN PRIVATE KEY----- and then its body", None),
])
def test_the_harder_kinds_and_the_prose_that_only_talks_of_them(text, expected):
    assert redact(text)[0] == (text if expected is None else expected)
