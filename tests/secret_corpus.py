"""Fake secrets as people paste them, made from a seed, and the files of every format memctl
reads with them inside (issue 13).

No value here is a real credential: each is drawn from a seeded ``random.Random``. Their
prefixes are written in pieces ("gh" + "p_") so that no line of this file has a token's
shape, which secret scanners (GitHub's push protection) would flag.

A ``Plant`` is one kind of secret in the line it comes in: ``secret`` must never be stored
or sent to a model; ``kept`` (the key's name, the URL around the password) must survive,
so the memory still says a password was set; ``kind`` is the ``[REDACTED:kind]`` it becomes.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import write_jsonl

LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = DIGITS + "abcdef"
# Words that make a value read as a placeholder or a name ("your_token_here", "example"):
# a real credential that spells one is left alone by design (README, Secrets), so the
# generator draws again rather than plant one.
_READS_AS_NO_SECRET = re.compile(r"(?i)here|example|sample|dummy|fake|placeholder|change_?me|changeit|password|"
                                 r"passwd|secret|token|api[_-]?key|^(?:your|my|insert|enter|replace|put)|(.)\1{5}|\*{3}")


@dataclass(frozen=True)
class Plant:
    name: str  # what the case is (the corpus's own name; several may share a kind)
    kind: str  # the [REDACTED:kind] it becomes
    text: str  # the line(s) as pasted
    secret: str  # must appear nowhere: not stored, not sent
    kept: str  # must survive beside the marker ("" for a private key block, which goes whole)


class _Draw:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def token(self, n: int, alphabet: str = ALNUM) -> str:
        """``n`` characters of ``alphabet`` with, where it has them, a digit and both cases,
        as a generated credential has."""
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(n))
            wanted = [chars for chars in (LOWER, UPPER, DIGITS) if set(chars) & set(alphabet)]
            if all(set(value) & set(chars) for chars in wanted) and not _READS_AS_NO_SECRET.search(value):
                return value

    def password(self) -> str:
        """A password someone chose: letters, digits and a few symbols, never a quote, a
        space or a character that ends a URL's userinfo; it starts with a letter."""
        return self.rng.choice(LOWER + UPPER) + self.token(self.rng.randint(11, 17), ALNUM + "!^_+") + self.digits(2)

    def digits(self, n: int) -> str:
        return "".join(self.rng.choice(DIGITS) for _ in range(n))

    def b64(self, raw_bytes: int) -> str:
        while True:
            value = base64.b64encode(self.rng.randbytes(raw_bytes)).decode()
            if not _READS_AS_NO_SECRET.search(value):
                return value


def _b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def plants(seed: int = 13) -> list[Plant]:
    """The corpus: every kind of secret memctl redacts, each as it is pasted."""
    d = _Draw(seed)
    out: list[Plant] = []

    def add(name: str, kind: str, before: str, secret: str, after: str = "", kept: str | None = None) -> None:
        out.append(Plant(name, kind, before + secret + after, secret, before.strip() if kept is None else kept))

    # -- provider keys, by shape (gitleaks' rules)
    add("openai_project_key", "openai_key", "export OPENAI_API_KEY=", "sk-" + "proj-" + d.token(156, ALNUM + "_-"))
    add("openai_legacy_key", "openai_key", 'client = OpenAI(api_key="',
        "sk-" + d.token(20) + "T3Blbk" + "FJ" + d.token(20), '")', kept='api_key="')
    add("anthropic_key", "anthropic_key", "ANTHROPIC_API_KEY=", "sk-" + "ant-" + "api03-" + d.token(93, ALNUM + "_-") + "AA")
    add("aws_access_key_id", "aws_access_key_id", "aws_access_key_id = ", "AK" + "IA" + d.token(16, UPPER + "234567"))
    add("aws_secret_access_key", "access_key", "aws_secret_access_key = ", d.token(40, ALNUM + "/+"))
    add("aws_secret_env", "access_key", "AWS_SECRET_ACCESS_KEY=", d.token(40, ALNUM + "/+"))
    add("github_pat_in_remote", "github_token", "git clone https://", "gh" + "p_" + d.token(36),
        "@github.com/acme/api.git", kept="@github.com/acme/api.git")
    add("github_fine_grained", "github_token", "GH_TOKEN=", "github" + "_pat_" + d.token(22) + "_" + d.token(59))
    add("github_app_in_url", "github_token", "https://x-access-token:", "gh" + "s_" + d.token(36),
        "@github.com/acme/web", kept="https://x-access-token:")
    add("github_oauth_header", "github_token", "Authorization: token ", "gh" + "o_" + d.token(36))
    add("gitlab_pat", "gitlab_token", "export GITLAB_TOKEN=", "gl" + "pat-" + d.token(20))
    add("slack_bot", "slack_token", "SLACK_BOT_TOKEN=",
        "xo" + "xb-" + d.digits(12) + "-" + d.digits(13) + "-" + d.token(24))
    add("slack_user", "slack_token", "slack:\n  token: ",
        "xo" + "xp-" + d.digits(12) + "-" + d.digits(12) + "-" + d.digits(12) + "-" + d.token(32, HEX), kept="token: ")
    add("slack_webhook", "url_token", "curl -X POST https://hooks.slack.com/services/",
        "T" + d.token(10, UPPER + DIGITS) + "/B" + d.token(10, UPPER + DIGITS) + "/" + d.token(24),
        kept="https://hooks.slack.com/services/")
    add("stripe_live", "stripe_key", 'stripe.api_key = "', "sk" + "_live_" + d.token(99), '"', kept='stripe.api_key = "')
    add("stripe_restricted", "stripe_key", "STRIPE_RESTRICTED_KEY=", "rk" + "_live_" + d.token(99))
    add("stripe_webhook", "stripe_key", "STRIPE_WEBHOOK_SECRET=", "whsec" + "_" + d.token(32))
    add("google_api_key", "google_api_key", "https://maps.googleapis.com/maps/api/js?key=",
        "AI" + "za" + d.token(35, ALNUM + "_-"), kept="maps/api/js?key=")
    add("google_oauth_secret", "google_oauth_secret", '{"client_id": "acme.apps", "client_secret": "',
        "GOC" + "SPX-" + d.token(28, ALNUM + "_-"), '"}', kept='"client_secret": "')
    add("google_access_token", "google_oauth_token", "access_token=", "ya" + "29." + d.token(120, ALNUM + "_-"))
    add("azure_client_secret", "azure_client_secret", "AZURE_CLIENT_SECRET=",
        d.token(3) + d.digits(1) + "Q" + "~" + d.token(34, ALNUM + "_~.-"))
    add("azure_storage_key", "key", "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey=",
        d.b64(64), ";EndpointSuffix=core.windows.net", kept="AccountKey=")
    add("azure_sas", "url_token", "https://acme.blob.core.windows.net/c/f.csv?sv=2022-11-02&ss=b&srt=o&sig=",
        d.token(43) + "%3D", kept="&sig=")
    add("huggingface", "huggingface_token", "HF_TOKEN=", "hf" + "_" + d.token(34, LOWER + UPPER))
    add("npm", "npm_token", "//registry.npmjs.org/:_authToken=", "np" + "m_" + d.token(36), kept=":_authToken=")
    add("sendgrid_shape", "sendgrid_key", "SENDGRID_API_KEY=", "SG" + "." + d.token(22, ALNUM + "_-") + "." +
        d.token(43, ALNUM + "_-"))
    add("sendgrid_any_value", "api_key", "SENDGRID_API_KEY=", d.token(32))
    add("twilio_api_key", "twilio_key", "TWILIO_API_KEY=", "S" + "K" + d.token(32, HEX))
    add("twilio_auth_token", "token", "TWILIO_AUTH_TOKEN=", d.token(32, HEX))
    add("mailgun", "mailgun_key", "MAILGUN_API_KEY=", "key" + "-" + d.token(32, HEX))
    add("mailchimp", "mailchimp_key", "mailchimp list sync with ", d.token(32, HEX) + "-us" + "21")
    add("shopify", "shopify_token", "X-Shopify-Access-Token: ", "shp" + "at_" + d.token(32, HEX))
    add("digitalocean", "digitalocean_token", "DIGITALOCEAN_TOKEN=", "do" + "p_v1_" + d.token(64, HEX))
    add("pypi", "pypi_token", "[pypi]\nusername = __token__\npassword = ", "py" + "pi-" + "AgEIcHlwaS5vcmc" + d.token(70),
        kept="password = ")
    add("databricks", "databricks_token", "DATABRICKS_TOKEN=", "da" + "pi" + d.token(32, HEX))
    add("vault", "vault_token", "VAULT_TOKEN=", "hv" + "s." + d.token(95, ALNUM + "_-"))
    add("doppler", "doppler_token", "DOPPLER_TOKEN=", "dp" + ".pt." + d.token(43))
    add("linear", "linear_key", "LINEAR_API_KEY=", "lin" + "_api_" + d.token(40))
    add("postman", "postman_key", "POSTMAN_API_KEY=", "PM" + "AK-" + d.token(24, HEX) + "-" + d.token(34, HEX))
    add("pulumi", "pulumi_token", "PULUMI_ACCESS_TOKEN=", "pu" + "l-" + d.token(40, HEX))
    add("grafana", "grafana_token", "GRAFANA_SA_TOKEN=", "gl" + "sa_" + d.token(32) + "_" + d.token(8, HEX))
    add("newrelic", "newrelic_key", "NEW_RELIC_API_KEY=", "NR" + "AK-" + d.token(27, UPPER + DIGITS))
    add("sentry_user_token", "sentry_token", "SENTRY_AUTH_TOKEN=", "sntr" + "yu_" + d.token(64, HEX))
    add("sentry_dsn", "url_token", "SENTRY_DSN=https://", d.token(32, HEX), "@o4504.ingest.sentry.io/4505",
        kept="@o4504.ingest.sentry.io/4505")
    add("telegram_bot", "telegram_bot_token", 'bot = Bot("', d.digits(10) + ":" + "AA" + d.token(33, ALNUM + "_-"), '")',
        kept='bot = Bot("')
    add("age_identity", "age_secret_key", "age identity: ",
        "AGE" + "-SECRET-KEY-1" + d.token(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"))
    add("perplexity", "perplexity_key", "PPLX_API_KEY=", "pp" + "lx-" + d.token(48))
    add("groq", "groq_key", "GROQ_API_KEY=", "gs" + "k_" + d.token(52))
    add("xai", "xai_key", "XAI_API_KEY=", "xa" + "i-" + d.token(80))
    add("replicate", "replicate_token", "REPLICATE_API_TOKEN=", "r" + "8_" + d.token(37))
    add("heroku", "heroku_key", "HEROKU_API_KEY=", "HR" + "KU-AA" + d.token(58, ALNUM + "_-"))
    add("notion", "notion_token", "NOTION_TOKEN=", "nt" + "n_" + d.digits(11) + d.token(35))
    add("square", "square_token", "SQUARE_ACCESS_TOKEN=", "sq0" + "atp-" + d.token(22, ALNUM + "_-"))
    add("atlassian", "atlassian_token", "JIRA_API_TOKEN=", "ATA" + "TT3" + d.token(186, ALNUM + "_-="))
    jwt = ("ey" + "J" + _b64url({"alg": "HS256", "typ": "JWT"})[3:] + "." + "ey" + "J"
           + _b64url({"sub": d.token(12), "exp": 1_900_000_000})[3:] + "." + d.token(43, ALNUM + "_-"))
    add("jwt_cookie", "jwt", "Cookie: session=", jwt)
    # -- private key blocks, every armour
    for name, armour in (("rsa", "RSA PRIV"), ("openssh", "OPENSSH PRIV"), ("ec", "EC PRIV"), ("pkcs8", "PRIV")):
        body = "\n".join(d.b64(48) for _ in range(5))
        begin, end = f"-----BEGIN {armour}" + "ATE KEY-----", f"-----END {armour}" + "ATE KEY-----"
        add(f"private_key_{name}", "private_key", "", f"{begin}\n{body}\n{end}", kept="")
    pgp = "\n".join(d.b64(48) for _ in range(5))
    armour = 'Version: GnuPG v2\nComment: "ci deploy (2024)!"'  # a header that is no base64
    add("private_key_pgp", "private_key", "", "-----BEGIN PGP PRIV" + f"ATE KEY BLOCK-----\n{armour}\n\n{pgp}\n"
        "-----END PGP PRIV" + "ATE KEY BLOCK-----", kept="")
    # -- where credentials sit, whatever their form
    add("curl_bearer", "bearer_token", 'curl -H "Authorization: Bearer ', d.token(40), '" https://api.acme.dev/v1/me',
        kept="Authorization: Bearer ")
    basic = base64.b64encode(f"deploy:{d.password()}".encode()).decode()
    add("basic_header", "basic_auth", "Authorization: Basic ", basic)
    add("curl_user", "password", "curl -u deploy:", d.password(), " https://ci.acme.dev/api/json", kept="curl -u deploy:")
    add("postgres_url", "url_password", "DATABASE_URL=postgres://app:", d.password(), "@db.acme.internal:5432/prod",
        kept="postgres://app:")
    add("mysql_url", "url_password", "mysql://root:", d.password(), "@127.0.0.1:3306/shop", kept="mysql://root:")
    add("mongodb_srv_url", "url_password", "MONGO_URI=mongodb+srv://admin:", d.password(),
        "@cluster0.x1y2z.mongodb.net/app", kept="mongodb+srv://admin:")
    add("redis_url", "url_password", "REDIS_URL=redis://:", d.password(), "@cache.acme.internal:6379/0",
        kept="redis://:")
    add("amqp_url", "url_password", "broker_url = 'amqp://guest:", d.password(), "@rabbit.acme.internal:5672//'",
        kept="amqp://guest:")
    add("mysql_cli", "password", "mysql -h db -u root -p", d.password(), " shop < dump.sql", kept="mysql -h db -u root -p")
    add("docker_login", "password", "docker login -u acme -p ", d.password(), " registry.acme.dev")
    add("redis_cli", "password", "redis-cli -h cache -a ", d.password(), " ping")
    add("netrc", "password", "machine api.acme.dev login deploy password ", d.password())
    add("flag_password", "password", "./deploy.sh --db-password=", d.password(), " --env prod", kept="--db-password=")
    add("discord_webhook", "url_token", "https://discord.com/api/webhooks/" + d.digits(18) + "/", d.token(68, ALNUM + "_-"),
        kept="discord.com/api/webhooks/")
    # -- a secret's name and its value (.env, YAML, JSON, code, connection strings)
    add("env_database_password", "password", "DATABASE_PASSWORD=", d.password())
    add("env_django_secret_key", "secret", "DJANGO_SECRET_KEY='", d.token(50, ALNUM + "!@#%^&*(-_=+)"), "'",
        kept="DJANGO_SECRET_KEY='")
    add("env_db_pass", "password", "DB_PASS=", d.password())
    add("env_jwt_secret", "secret", "JWT_SECRET=", d.token(64))
    add("env_pgpassword", "password", "PGPASSWORD=", d.password(), " psql -h db -U app", kept="PGPASSWORD=")
    add("env_secret_key_base", "secret", "SECRET_KEY_BASE=", d.token(128, HEX))
    add("yaml_password", "password", "database:\n  user: app\n  password: ", d.password(), "\n  host: db",
        kept="password: ")
    add("json_password", "password", '{"username": "admin", "password": "', d.password(), '"}', kept='"password": "')
    add("python_kwarg", "password", 'psycopg2.connect(host="db", user="app", password="', d.password(), '")',
        kept='password="')
    add("api_key_header", "api_key", "curl -H 'x-api-key: ", d.token(40), "' https://api.acme.dev", kept="x-api-key: ")
    add("client_secret_query", "secret", "grant_type=client_credentials&client_id=acme&client_secret=", d.token(32),
        kept="client_secret=")
    add("adonet_password", "password", "Server=tcp:sql.acme.net;Database=shop;User Id=app;Password=", d.password(), ";",
        kept="Password=")
    add("ini_password", "password", "[client]\nuser = app\npassword = ", d.password(), kept="password = ")
    # said in a sentence, as people tell an assistant
    add("said_changed_to", "password", "I rotated it: the root password was changed to '", d.password(),
        "' this morning", kept="the root password was changed to '")
    add("said_set_to", "password", "then set the admin password to ", d.password(), " and logged out",
        kept="set the admin password to ")
    add("said_with_colon", "password", "Password is: ", d.password(), kept="Password is: ")
    add("said_possessive", "password", "fyi the vpn password's ", d.password(), ", don't share it",
        kept="the vpn password's ")
    add("said_passwd", "password", "try passwd ", d.password(), " for the staging box", kept="try passwd ")
    # issue 31: "pw:" in prose, a colon before a value a sentence goes on after, a Google key id
    add("said_pw", "password", "login is admin, pw: ", d.password(), kept="login is admin, pw: ")
    add("said_colon_in_prose", "password", "The admin password: ", d.token(4) + "-" + d.token(5) + "-" + d.token(5),
        " is in the vault", kept="The admin password: ")
    add("gcp_private_key_id", "private_key_id", '{"type": "service_account", "private_key_id": "', d.token(40, HEX),
        '", "client_email": "ci@acme.iam.gserviceaccount.com"}', kept='"private_key_id": "')
    return out


# --- the files of every format, each plant one user turn (or one note, one line) -------------

FORMATS = ("claude-code", "codex", "chatgpt", "claude-ai", "gemini", "aider", "jsonl", "text", "markdown", "facts")
START = 1_714_557_600  # 2024-05-01T10:00:00Z


def _at(i: int, seconds: int = 0) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(START + 3600 * i + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def write_format(fmt: str, directory: Path, texts: list[str]) -> list[Path]:
    """Files of format ``fmt`` in which each text is one user turn (with a short reply), one
    note, or one structured line whose content, subject, object and sentence hold it."""
    directory.mkdir(parents=True, exist_ok=True)
    reply = "Noted, I will keep that out of the repository."
    if fmt == "claude-code":
        lines: list[dict] = []
        for i, text in enumerate(texts):
            base = {"isSidechain": False, "userType": "external", "sessionId": "5e55-c0de", "cwd": "/w"}
            lines.append({**base, "parentUuid": f"a{i - 1}" if i else None, "type": "user", "uuid": f"u{i}",
                          "timestamp": _at(i), "message": {"role": "user", "content": text}})
            lines.append({**base, "parentUuid": f"u{i}", "type": "assistant", "uuid": f"a{i}", "timestamp": _at(i, 5),
                          "message": {"id": f"msg{i}", "role": "assistant", "model": "claude-x",
                                      "content": [{"type": "text", "text": reply}]}})
        return [write_jsonl(directory / "5e55-c0de.jsonl", lines)]
    if fmt == "codex":
        sid = "0195aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
        lines = [{"timestamp": _at(0), "type": "session_meta", "payload": {"id": sid, "timestamp": _at(0), "cwd": "/w"}}]
        for i, text in enumerate(texts):
            lines.append({"timestamp": _at(i, 1), "type": "event_msg", "payload": {"type": "user_message", "message": text}})
            lines.append({"timestamp": _at(i, 5), "type": "response_item", "payload": {
                "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]}})
        return [write_jsonl(directory / f"rollout-2024-05-01T12-00-00-{sid}.jsonl", lines)]
    if fmt == "chatgpt":
        ids = ["root"] + [f"m{i}" for i in range(2 * len(texts))]
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ids[1:2]}}
        for n, (role, text) in enumerate(((r, t) for t in texts for r, t in (("user", t), ("assistant", reply))), 1):
            mapping[ids[n]] = {"id": ids[n], "parent": ids[n - 1], "children": ids[n + 1:n + 2], "message": {
                "id": ids[n], "author": {"role": role}, "create_time": START + 60 * n, "recipient": "all",
                "metadata": {}, "content": {"content_type": "text", "parts": [text]}}}
        conversation = {"id": "c1", "conversation_id": "c1", "title": "Deploy", "create_time": START,
                        "update_time": START, "mapping": mapping, "current_node": ids[-1]}
        path = directory / "conversations.json"
        path.write_text(json.dumps([conversation]))
        return [path]
    if fmt == "claude-ai":
        messages = []
        for i, text in enumerate(texts):
            for sender, said, offset in (("human", text, 0), ("assistant", reply, 5)):
                messages.append({"uuid": f"{sender}{i}", "sender": sender, "created_at": _at(i, offset),
                                 "updated_at": _at(i, offset), "attachments": [], "files": [], "text": said,
                                 "content": [{"type": "text", "text": said}]})
        path = directory / "conversations.json"
        path.write_text(json.dumps([{"uuid": "conv-1", "name": "Deploy", "summary": "", "created_at": _at(0),
                                     "updated_at": _at(0), "chat_messages": messages}]))
        return [path]
    if fmt == "gemini":
        messages = []
        for i, text in enumerate(texts):
            messages.append({"id": f"u{i}", "timestamp": _at(i), "type": "user", "content": text})
            messages.append({"id": f"g{i}", "timestamp": _at(i, 5), "type": "gemini", "content": reply})
        path = directory / "session-2024-05-01T10-00-5b959dae.json"
        path.write_text(json.dumps({"sessionId": "5b959dae", "projectHash": "ab", "startTime": _at(0),
                                    "lastUpdated": _at(len(texts)), "messages": messages}))
        return [path]
    if fmt == "aider":
        turns = "".join("".join(f"#### {line}  \n" for line in text.splitlines()) + f"\n{reply}\n\n" for text in texts)
        path = directory / ".aider.chat.history.md"
        path.write_text(f"# aider chat started at 2024-05-01 10:00:00\n\n{turns}", encoding="utf-8")
        return [path]
    if fmt == "jsonl":
        lines = []
        for i, text in enumerate(texts):
            lines += [{"role": "user", "content": text, "timestamp": _at(i)},
                      {"role": "assistant", "content": reply, "timestamp": _at(i, 5)}]
        return [write_jsonl(directory / "chat.jsonl", lines)]
    if fmt in ("text", "markdown"):
        suffix = ".txt" if fmt == "text" else ".md"
        paths = []
        for i, text in enumerate(texts):
            path = directory / f"2024-05-{1 + i % 28:02d}-note-{i:03d}{suffix}"
            path.write_text(f"Deploy notes, part {i}.\n\n{text}\n")
            paths.append(path)
        return paths
    if fmt == "facts":
        lines = [{"reference_time": _at(i), "content": f"The deploy bot is configured with {text}", "facts": [
            {"subject": "deploy bot", "predicate": "configured_with", "object": text,
             "fact": f"The deploy bot is configured with {text}"},
            {"subject": text, "predicate": "belongs_to", "object": "ops team"}]} for i, text in enumerate(texts)]
        return [write_jsonl(directory / "facts.jsonl", lines)]
    raise ValueError(fmt)
