"""Secrets out of text before it is stored or sent to a model (architecture §7, invariant 7).

``redact(text)`` replaces each secret's value with ``[REDACTED:kind]`` and counts them by
kind. Only the value goes: what names it stays (``DATABASE_PASSWORD=[REDACTED:password]``,
``postgres://app:[REDACTED:url_password]@db/prod``), so the memory still says that a
password was set, and where.

Three families of rules, tried in this order:

- **Shapes**: tokens whose form says what they are (``sk-proj-…``, ``ghp_…``, ``AKIA…``,
  JWTs, private key blocks...), after gitleaks' published rules (config/gitleaks.toml).
  A shape must stand alone: ``sk-…`` inside a URL slug, a path or an identifier is no key.
- **Places**: where credentials sit whatever their form: a URL's password or token
  (``scheme://user:pass@host``), ``Authorization:`` and ``Bearer``, ``curl -u user:pass``,
  ``--password=…``, ``.netrc``, and a password or API key said in a sentence (``the
  password is …``) when the value looks made up.
- **Names**: ``KEY=value`` / ``key: value`` / ``"key": "value"`` where the key's name ends
  in a secret's word (PASSWORD, PASS, PWD, SECRET, TOKEN, API_KEY, ACCESS_KEY,
  PRIVATE_KEY...), with any prefix. A token's value, and the value after a key that is
  only a word of prose (``The secret: patience.``, ``Boarding pass: printed``), counts when
  it looks generated.

What is code or a placeholder is no secret and survives: a call (``os.getenv("X")``), an
index or attribute (``os.environ["X"]``, ``process.env.X``), a variable passed on
(``api_key=api_key,``), a reference (``${X}``, ``$X``, ``{x}``, ``%s``), a placeholder
(``<your-key-here>``, ``xxx``, ``changeme``, ``...``), a type (``password: str``), a state
(``Password: Expired``), a path, a description (``the password is AES-256 encrypted``), and
what was redacted already, so that redacting twice changes nothing.

Each rule names substrings of which one must occur in the text before its pattern runs:
most text holds none, and then redaction costs a few substring scans.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memctl.model import Assertion, Episode

REDACTED = "[REDACTED:{}]"

# A token stands alone: no word, path or slug goes on before it (a URL's userinfo, after
# "://", is the one place a "/" may precede it), and none after it.
_GOES_ON = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+")
_END = r"(?![\w\-])"


def _alone(text: str, start: int) -> bool:
    # Tested here, not by a lookbehind in the pattern: a pattern that starts with its
    # token's literal prefix is found by the regex engine's fast literal search.
    return start == 0 or text[start - 1] not in _GOES_ON or text.startswith("://", start - 3)


# --- what is no secret ----------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"""(?ix)^(?:
      [x*•.#_\-]+                                  # xxx, ****, ..., ---
    | .*(?:\.\.\.|…).*                             # elided: sk-...abc
    | <[^>]*> | \[[^\]]*\] | \{[^}]*\}.* | .*\{\{.*  # <your-key>, [REDACTED:x], {password}, {{ secrets.X }}
    | \$.* | %[\w.()]*%?s? | @\w+@                 # $X, ${X}, $(cmd), %s, %(pw)s, %X%, @X@
    | (?:your|my|insert|enter|replace|put)[_\- ][a-z_ .\-]*     # your_key_here, YOUR-TOKEN, my_password (not My_7zfS3W)
    | [\w.\-]*[_\-]here                             # your_key_here
    | \S*(?:placeholder|example|sample|dummy|fake|changeme|change_me|changeit)\S*  # docs' own: wJalr…/…EXAMPLEKEY
    | (?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+(?:[_\-][a-z]+)+)  # a name (OPENAI_API_KEY, user_password), not a value
    | password|passwd|pass|pwd|secret|token|key|apikey|api_key|test|testing|none|null|nil|undefined
    | true|false|str|string|bytes|int|number|bool|boolean|any|object|required|optional|hidden|masked
    | todo|tbd|n/a|value|foo|bar|baz|qux|foobar|abc|abc123
    | empty|blank|unset|disabled|enabled|default|random|generated|auto|bearer|basic  # what it is, not the value
    | demo|1password|anything|whatever             # a service's public demo key (apiKey: "demo"); the password manager
    # a state, as an account page or a strength meter says it ("Password: Expired", "Token: Revoked")
    | (?:expired|expiring|changed|reset|updated|saved|stored|set|unchanged|rotated|revoked|valid|invalid|verified
       |unverified|incorrect|correct|wrong|missing|locked|unlocked|weak|medium|strong|fair|good|excellent|encrypted
       |hashed|protected|compromised|leaked|forgotten|accepted|rejected|pending|granted|denied|printed|provided
       |active|inactive|ok|okay|yes|no|on|off|unknown|mandatory|recommended|secure|insecure)
    | (?:~|\.\.?)/\S* | /(?:home|etc|usr|var|tmp|opt|run|Users|mnt|srv|root|private|proc|dev)/\S*  # a file's path
    | -?\d{1,7}(?:\.\d+)?                         # a short number: a length, a count, not a secret
    | \#[0-9a-f]{3,8}                              # a colour
    | \^.*(?:\(\?[=!:]|\[[^\]]+\][*+{]|\\[dws]|\.[*+{]).*\$   # a validation pattern: ^(?=.*[A-Z]).{8,}$
    | .*\*\*\*.*                                    # masked: hf_***, :****
)$""")
# A value that names a secret instead of being one: "X-Access-Token", "challengePassword", "mypassword"
_SECRET_WORD = re.compile(r"(?i)password|passwd|secret|token|api[_\-]?key")


def _placeholder(value: str) -> bool:
    # "Password: Required." as a sentence ends it: the word without the sentence's full stop
    return not value or bool(_PLACEHOLDER.match(value) or _PLACEHOLDER.match(value.rstrip(".,;:!?")))


# A token of a known shape is a placeholder only when filled in (sk-proj-xxxxxxxx, ghp_000000...:
# one character repeated over a third of it at least) or documentation's own
# (AKIAIOSFODNN7EXAMPLE): a generated token may spell any word, or hold "111111" by chance.
_REPEATED = re.compile(r"(?i)(.)\1{5,}")


def _filled_in(value: str) -> bool:
    return value.lower().endswith("example") or any(3 * len(run.group(0)) >= len(value)
                                                    for run in _REPEATED.finditer(value))


def _not_a_value(value: str) -> bool:
    """A placeholder, or a name or description of the secret (it says "password", "token"...)."""
    return _placeholder(value) or bool(_SECRET_WORD.search(value))


_SLUG = re.compile(r"[a-z]{3,}-[a-z]{3,}-[a-z]{3,}")


def _random(value: str) -> bool:
    """Looks generated, not written: letters and digits, or both cases in a long run, and
    no run of hyphenated words (``sk-learn-is-great``)."""
    has_digit = any(c.isdigit() for c in value)
    has_lower = any(c.islower() for c in value)
    has_upper = any(c.isupper() for c in value)
    if _SLUG.search(value):
        return False
    return (has_digit and (has_lower or has_upper)) or (has_lower and has_upper and len(value) >= 16)


_SYMBOLS = frozenset("!@#$%^&*+=?~|<>/\\")


# What a sentence says of a password or key rather than the password itself: "the password is
# AES-256 encrypted", "is SHA256-hashed", "base64 encoded", "WPA2-PSK protected", "2FA-protected",
# "PBKDF2-derived", "is 12-characters minimum", "256-bit". An algorithm's or standard's name with
# its number (a known name, and a short one with its own numbers only: "Summer2024", "hunter2" and
# "rs2020" are passwords), among numbers, lowercase words and acronyms; or a number and its unit.
_ALGORITHM = (r"(?:(?i:aes|sha|rsa|dsa|ecdsa|ecdh|ecc|hmac|pbkdf|argon|ntlm|wpa|wep|tls|ssl|utf|crc|blake|chacha|poly"
              r"|base|ipv|http|fido|bip|eip|erc|fips|rfc|iso|curve)-?\d{1,5}[a-z]{0,4}"
              r"|(?i:md[245]|ed(?:25519|448)|x509|[hrep]s(?:256|384|512)|p-?(?:256|384|521)|rot13|sp-?800)[a-z]{0,4}"
              r"|\d(?i:fa|des))")
_PART = rf"(?:{_ALGORITHM}|[A-Z]{{2,6}}|[a-z]{{2,}}|\d+\+?)"
_UNIT = r"\d+\+?(?:-[a-z]{2,}(?:-[a-z]{2,})*|(?:chars?|characters?|bits?|bytes?|digits?|words?))"  # 12-character, 256bit
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")  # "send the password to it@acme.io"
_CALL = re.compile(r"[A-Za-z_]\w*\([\w,]*\)?")  # bcrypt(12), f(x: code, as "is bcrypt(12) hashed" says it
_DESCRIPTION = re.compile(rf"(?:{_PART}-)*{_ALGORITHM}(?:-{_PART})*|{_UNIT}")


def _made_up(value: str) -> bool:
    """A password a person chose rather than a word of the sentence: letters with digits,
    or letters with a symbol (``P@ssw0rd``, ``Tr0ub4dor&3``; not ``e-mailed``, nor a word in
    markdown's emphasis, ``**Password Protection**``, ``stored?**``, nor a description,
    ``AES-256``, nor code, a link or an address, ``process.env.DB_PASS``, ``https://…``,
    ``it@example.org``)."""
    core = value.strip("*_").rstrip(".,;:!?)").rstrip("*_")  # the sentence's punctuation and emphasis
    if (core.isalpha() or _DESCRIPTION.fullmatch(core) or "://" in core
            or _ATTRIBUTE.fullmatch(core) or _CALL.fullmatch(core) or _EMAIL.fullmatch(core)):
        return False
    return _random(core) or (any(c.isalpha() for c in core) and any(c in _SYMBOLS for c in core)
                             and len(core) >= 8)


# --- rules ----------------------------------------------------------------------------------

# (a match, the text it is in) -> the span of the secret in the text and its kind, or None: not a secret
Judge = Callable[[re.Match[str], str], "tuple[int, int, str] | None"]


@dataclass(frozen=True)
class _Rule:
    triggers: tuple[str, ...]  # lowercase; the pattern runs only when one occurs in the text
    pattern: re.Pattern[str]
    judge: Judge
    # A case-blind rule matches the lowercased text, which the regex engine scans many times
    # faster than it does a case-insensitive pattern; ``pattern`` ignores case, for the rare
    # text whose lowercase is longer (a dotted İ), ``folded`` is for the rest. A judge reads
    # the text as written, by the match's offsets.
    folded: re.Pattern[str] | None = None
    # A shape's trigger lies inside the token itself, so it is looked for in the text's long
    # words only: a tenth of a session's text, and 70-odd substring scans are most of the cost.
    in_token: bool = False

    def matches(self, text: str, folded: str) -> Iterator[re.Match[str]]:
        if self.folded is not None and len(folded) == len(text):
            return self.folded.finditer(folded)
        return self.pattern.finditer(text)


# Every pattern starts with a literal where it can (a boundary is tested after it, or by the
# judge): the regex engine then finds candidates by a fast literal search instead of trying
# the pattern at every position, 25 times slower on a session's text.


def _shape(kind: str, triggers: tuple[str, ...], body: str, *, check: Callable[[str], bool] | None = None,
           alone: bool = True) -> _Rule:
    """A token known by its form; the whole match is the secret. ``alone``: it must not
    go on a word, path or slug (a private key block's armour needs no such test)."""
    pattern = re.compile("(?:" + body + ")" + (_END if alone else ""))

    def judge(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        value = m.group(0)
        if alone and (not _alone(text, m.start()) or _filled_in(value)):
            return None
        if check is not None and not check(value):
            return None
        return m.start(), m.end(), kind

    return _Rule(triggers, pattern, judge, in_token=alone)


def _place(kind: str, triggers: tuple[str, ...], regex: str, *, check: Callable[[str], bool] | None = None,
           case_blind: bool = False, in_token: bool = False, quoted_counts: bool = False,
           spelled_counts: bool = False, retry: str | None = None) -> _Rule:
    """A credential known by where it sits; only the group ``secret`` is the secret.
    ``quoted_counts``: a value in quotes is one whatever ``check`` says of it.
    ``spelled_counts``: a value that spells a secret's word is one when it looks generated
    (``the password is hunter2Secret99``), not only when it names none.
    ``retry``: a pattern tried at the same place (case-blind) when what ``regex`` found there
    is no secret: the regex engine gives one match per place, and another reading may hold it."""
    again = re.compile(retry, re.I) if retry is not None else None

    def judge(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        found = judge_once(m, text)
        if found is None and again is not None:
            other = again.match(text, m.start())
            if other is not None and other.span("secret") != m.span("secret"):
                return judge_once(other, text)
        return found

    def judge_once(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
        start, end = m.span("secret")
        value = text[start:end]
        bare = value.strip("\"'")
        if text.startswith(("...", "…"), end) or "[REDACTED:" in value:
            return None  # cut short where it is shown (`password = pypi-AgEIcHlwaS5vcmc...`), or gone already
        # A placeholder, filled in as the docs do (hooks.slack.com/services/T00000000/B00000000/XXXXXXXX…),
        # or a name of the secret ("X-Access-Token"), but "hunter2Secret99" may be one where spelled_counts
        if _placeholder(bare) or _filled_in(bare) or (
                _SECRET_WORD.search(bare) and not (spelled_counts and _random(bare)
                                                   and any(c.isdigit() for c in bare))):
            return None
        quoted = quoted_counts and 0 < start and end < len(text) and text[start - 1] in "\"'`" \
            and text[end] == text[start - 1]
        if check is not None and not quoted and not check(value):
            return None
        return start, end, kind

    if case_blind:
        return _Rule(triggers, re.compile(regex, re.I), judge, folded=re.compile(regex), in_token=in_token)
    return _Rule(triggers, re.compile(regex), judge, in_token=in_token)


# "the password was changed to X", "password reset to X" ("set the password to X": "to" alone)
_SET_TO = r"(?:changed|set|reset|updated|rotated)\s+to"


def _said(kind: str, triggers: tuple[str, ...], words: str, shortest: int) -> _Rule:
    """A credential said in a sentence (``the password for X is VALUE``, ``with password
    VALUE``). Only a value that looks made up counts, or one in quotes (``the password is
    "sunshine"``): a sentence goes on in words (``the password is stored in Vault``), and
    the first words after the name are what is tried (on its line, when no verb or colon
    comes between: ``PermitRootLogin prohibit-password`` ends a line of sshd_config).

    Those words may be a phrase before the verb (``the password for the admin account was
    X``), tried first, or the value itself: in ``set the password to X and logged out``, then
    a paragraph on ``To answer your question``, the phrase ``to X and logged out`` before
    ``To`` hides X, so what follows the name at once is tried again (``retry``). All but the
    name is looked at ahead, so that when it is no secret the search goes on after the name
    (``= pw Password is: X``: ``pw Password`` is none, ``Password is: X`` is one)."""
    pattern = (rf"\b(?<!/)(?:{words})(?=(?:{{phrase}}"
               rf"(?:\s+(?:(?:is|was|will\s+be|would\s+be|has\s+been|had\s+been)(?:\s+{_SET_TO})?|{_SET_TO}|to|=)"
               r"|'s):?\s+(?:now\s+|still\s+)?|\s*:\s+|[ \t]+)[\"'`]?"
               rf"(?P<secret>[^\s\"'`]{{{shortest},}}?)[\"'`]?(?=[.,;:!?)]*(?:\s|\Z)))")
    phrase = r"(?:\s+(?:for|of|to|on)\s+[^\n.,;:!?\"'`]{1,40}?)?"
    return _place(kind, triggers, pattern.replace("{phrase}", phrase), check=_made_up, case_blind=True,
                  quoted_counts=True, spelled_counts=True, retry=pattern.replace("{phrase}", ""))


_SHAPES = [
    # The block to its END line, whatever its armour headers hold; cut short (a truncated
    # paste, a model's reply cut at its token limit), its armour headers ("Comment: …", any
    # characters to the line's end) and then its base64 to the end. A BEGIN line alone (a
    # constant in a parser) has no body and is no key.
    # Either way its body starts with base64 (a line of it, 40 long at least), after its armour
    # headers and what a paste puts before a line (`\n`, `"` + `"`, `> `, `# `): a sentence that
    # names the armour ("starts with -----BEGIN PRIVATE KEY----- on its own line, and ends with
    # -----END PRIVATE KEY-----") is words, which the pattern would take in, and all that follows.
    _shape("private_key", ("private key",),
           r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
           r"(?=(?:\s|\\[nr])*(?:[A-Za-z][\w-]*: [^\n\\]*(?:\n|\\n))*(?:[^A-Za-z0-9/=]|\\[nr]){0,12}"
           r"[A-Za-z0-9+/=]{40})"
           r"(?:[\s\S]{40,12000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
           r"|(?:\s|\\[nr])*(?:[A-Za-z][\w-]*: [^\n\\]*(?:\n|\\n))*(?:[\w+/=\s:,.\-]|\\[nr]){40,})",
           alone=False),
    _shape("anthropic_key", ("sk-ant-",), r"sk-ant-[a-z]{2,6}\d{2}-[\w\-]{20,}"),
    _shape("openai_key", ("sk-",), r"sk-(?:proj-|svcacct-|admin-)?[\w\-]{20,}", check=_random),
    _shape("aws_access_key_id", ("akia", "asia", "abia", "acca", "a3t"),
           r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
    _shape("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
           r"gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_\w{22,251}"),
    _shape("gitlab_token", ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glsoat-", "glagent-", "gloas-",
                            "glffct-", "glcbt-", "gr1348941"),
           r"gl(?:pat|dt|rt|ptt|ft|imt|soat|agent|oas|ffct|cbt)-[\w\-]{20,}|GR1348941[\w\-]{20,}", check=_random),
    _shape("slack_token", ("xox", "xapp-"), r"xox[abposre]-(?:\d-)?[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,}",
           check=_random),
    _shape("stripe_key", ("_live_", "_test_", "_prod_", "whsec_"),
           r"(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,255}|whsec_[A-Za-z0-9]{20,}", check=_random),
    _shape("google_api_key", ("aiza",), r"AIza[\w\-]{35}"),
    _shape("google_oauth_secret", ("gocspx-",), r"GOCSPX-[\w\-]{20,}"),
    _shape("google_oauth_token", ("ya29.",), r"ya29\.[\w\-]{20,}"),
    _shape("azure_client_secret", ("q~",), r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    _shape("huggingface_token", ("hf_", "api_org_"), r"(?:hf|api_org)_[A-Za-z0-9]{30,40}", check=_random),
    _shape("npm_token", ("npm_",), r"npm_[A-Za-z0-9]{36}", check=_random),
    _shape("sendgrid_key", ("sg.",), r"SG\.[\w\-]{16,32}\.[\w\-]{30,50}"),
    _shape("twilio_key", ("sk",), r"SK[0-9a-fA-F]{32}", check=_random),
    _shape("mailgun_key", ("key-",), r"key-[0-9a-f]{32}", check=_random),
    _shape("mailchimp_key", ("-us",), r"[0-9a-f]{32}-us\d{1,2}"),
    _shape("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    _shape("digitalocean_token", ("_v1_",), r"do[opr]_v1_[a-f0-9]{64}"),
    _shape("pypi_token", ("pypi-",), r"pypi-AgEIcHlwaS5vcmc[\w\-]{50,}"),
    _shape("databricks_token", ("dapi",), r"dapi[a-f0-9]{32}(?:-\d)?", check=_random),
    _shape("vault_token", ("hvs.", "hvb."), r"hv[sb]\.[\w\-]{90,}"),
    _shape("doppler_token", ("dp.",), r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}"),
    _shape("linear_key", ("lin_",), r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    _shape("postman_key", ("pmak-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _shape("pulumi_token", ("pul-",), r"pul-[a-f0-9]{40}"),
    _shape("grafana_token", ("glsa_", "glc_"), r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2}"),
    _shape("newrelic_key", ("nrak-", "nrii-", "nrjs-"), r"NRAK-[A-Z0-9]{27}|NRII-[\w\-]{32}|NRJS-[a-f0-9]{19}"),
    _shape("sentry_token", ("sntry",), r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    _shape("telegram_bot_token", (":aa",), r"\d{8,10}:AA[\w\-]{33}"),
    _shape("age_secret_key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _shape("perplexity_key", ("pplx-",), r"pplx-[A-Za-z0-9]{48}"),
    _shape("groq_key", ("gsk_",), r"gsk_[A-Za-z0-9]{52}"),
    _shape("xai_key", ("xai-",), r"xai-[A-Za-z0-9]{70,90}"),
    _shape("replicate_token", ("r8_",), r"r8_[A-Za-z0-9]{37}", check=_random),
    _shape("heroku_key", ("hrku-",), r"HRKU-AA[\w\-]{58}"),
    _shape("notion_token", ("ntn_",), r"ntn_\d{11}[A-Za-z0-9]{35}"),
    _shape("square_token", ("sq0",), r"sq0(?:atp|csp)-[\w\-]{22,}"),
    _shape("atlassian_token", ("atatt3",), r"ATATT3[\w=\-]{150,}"),
    _shape("jwt", ("eyj",), r"eyJ[\w\-]{10,}\.eyJ[\w\-]{10,}\.[\w\-]*"),
]

_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]{0,20}\Z")


def _judge_userinfo(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    """scheme://user:password@host, the password whatever the scheme (postgres, mongodb+srv,
    redis, amqp, https...); scheme://token@host, a token as the whole userinfo (a git remote,
    a Sentry DSN)."""
    if not _SCHEME.search(text, max(0, m.start() - 21), m.start()):
        return None
    if m["password"] is not None:
        if _not_a_value(m["password"]):
            return None
        return m.start("password"), m.end("password"), "url_password"
    if _not_a_value(m["token"]) or not _random(m["token"]):
        return None
    return m.start("token"), m.end("token"), "url_token"


# A command's argument: not a quote, not the next flag, not the backtick that ends the command
# in markdown (`mysql -u root -p` prompts for it)
_VALUE = r"(?P<secret>[^\s\"'`\-][^\s\"'`]*)"

_PLACES = [
    _Rule(("://",), re.compile(r"://(?:[^\s:/@'\"<>`\[\]]*:(?P<password>[^\s/'\"<>`]+)|(?P<token>[^\s:/@'\"<>`]{16,}))"
                               r"@(?=[\w.\[\-])"), _judge_userinfo),
    _place("url_token", ("hooks.slack.com",),
           r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_\-]{20,})", in_token=True),
    _place("url_token", ("/api/webhooks/",), r"discord(?:app)?\.com/api/webhooks/\d+/(?P<secret>[\w\-]{20,})",
           in_token=True),
    _place("url_token", ("sig=",), r"sig=(?<=[?&]sig=)(?P<secret>[A-Za-z0-9%+/]{20,}={0,2})", in_token=True),
    _place("bearer_token", ("bearer",), r"bearer(?<![\w\-]bearer)\s+(?P<secret>[\w\-.~+/]{8,}=*)(?![\w$\-{<])",
           check=_random, case_blind=True),
    _place("basic_auth", ("basic",),
           r"authorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<secret>[a-z0-9+/]{8,}={0,2})", case_blind=True),
    _place("auth_token", ("authorization",),
           r"authorization[\"']?\s*[:=]\s*[\"']?(?:(?:token|bot|apikey|api-key|key|sso-key)\s+)?"
           r"(?!(?:bearer|basic)\b)(?P<secret>[\w\-.~+/:]{8,}=*)", check=_random, case_blind=True),
    _place("password", ("curl",),
           r"curl\b(?:[^\n]|\\\n){0,2000}?\s(?:-u|--user)(?:\s+|=)([\"']?)[^\s:\"']*:(?P<secret>[^\s\"']+)\1"),
    _place("password", ("mysql", "mariadb"), r"(?:mysql(?:dump|admin)?|mariadb)\b[^\n]*?\s-p" + _VALUE),
    _place("password", ("login",), r"(?:docker|podman|helm|oras)\s+(?:registry\s+)?login\b[^\n]*?\s(?:-p|--password)[\s=]+"
                                   + _VALUE),
    _place("password", ("redis-cli", "sshpass"), r"(?:redis-cli\b[^\n]*?\s-a|sshpass\s+-p)\s*" + _VALUE),
    _place("password", ("machine",), r"machine\s+\S+\s+login\s+\S+\s+password\s+(?P<secret>\S+)"),
    # A Google service account's key id, beside its private key in the same JSON
    _place("private_key_id", ("private_key_id",), r"private_key_id[\"']?\s*[:=]\s*[\"']?(?P<secret>[a-f0-9]{40})\b",
           case_blind=True),
    # Said in a sentence: "the staging password is Tr0ub4dor&3.", "the password for the admin
    # account was hunter22", "log in with password hunter22", "the API key is 3f9a…". Not
    # "token": logs say "token usage", "token colours", "Token <code>" (19 in the real logs).
    _said("password", ("password", "passphrase", "passcode", "passwd", "pw"), r"password|passphrase|passcode|passwd|pw",
          6),
    _said("api_key", ("api key", "api-key", "apikey"), r"api[ \-]?key", 12),
]

# A secret's word at the end of a key's name. The longer names come first, so that a key
# is read by its most telling word (SECRET_KEY is a secret, not a key).
# A value is quoted, quoted with escaped quotes (JSON inside a string: {\"password\": \"x\"}),
# or runs to a space, a quote or punctuation that ends it. It is looked at ahead, not taken: when
# it is no secret, the search goes on after the key's name and not after the value, which may
# hold another key (in "pass `api_key=` to the client. client_secret=…" a quoted value runs from
# one code span to the next).
_KEY_WORD = (r"(?P<word>password|passwd|passphrase|pass|pwd|secret_key_base|secret|token|key)"
             r"(?P<quote>\\?[\"'`]?)(?P<sep>[ \t]*(?:=(?!=)>?|:=)[ \t]*|[ \t]?:(?![:/])[ \t]*)"
             r"(?=(?P<value>\\\"(?:[^\"\\\n]|\\(?!\"))*\\\"|\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`"
             r"|(?:[^\s\"'`,;&|<>(){}\[\]\\]|\\(?![nrt\"]))+))")
_KEY_BEFORE = re.compile(r"[\w.$\-]{0,60}\Z")
# Key names that end in KEY and name a secret; other keys (sort_key, monkey) are not.
_SECRET_KEYS = re.compile(r"(?i)(?P<name>api[_\-]?key|access[_\-]?key|secret[_\-]?key|"
                          r"private[_\-]?key|auth[_\-]?key|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|"
                          r"account[_\-]?key|shared[_\-]?access[_\-]?key|app[_\-]?key|client[_\-]?key|"
                          r"license[_\-]?key|session[_\-]?key)\Z")
_KEY_KINDS = {"password": "password", "passwd": "password", "passphrase": "password", "pass": "password",
              "pwd": "password", "secret_key_base": "secret", "secret": "secret", "token": "token"}
_PUBLIC = re.compile(r"(?i)public|csrf|xsrf")
_ATTRIBUTE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What may follow `key: value` in a config line or a header: the line's end, or the quote closing a header
# (not an apostrophe: "Secret: Mark's friends")
_LINE_END = re.compile(r"[ \t]*(?:#.*)?(?:\r?\n|\Z)|[\"'`](?!\w)")
# Words that are a key's whole name in prose far more often than in a config: "The secret: patience.",
# "Top secret: gifts.", "Boarding pass: printed", "pwd: /home/ana". Such a key's value counts
# when it looks generated; "password" is left out: "password: sunshine" is how a chat gives one.
_PROSE_WORDS = frozenset(("secret", "pass", "pwd", "token"))
# A path in lowercase words ("tests/test_auth.py::test_login", "PWD=/workspaces/app"): not a credential
_WORDS_PATH = re.compile(r"(?:/[a-z0-9_.\-]+(?:/[a-z0-9_.\-]+)*|[a-z0-9_.\-]+(?:/[a-z0-9_.\-]+)+)(?:::\w+)?")


def _key_kind(key: str, word: str) -> str | None:
    """What a key of this name holds, or None when the name only happens to end in the
    word (bypass, monkey) or names no credential (publicKeyToken)."""
    stem = key[: len(key) - len(word)]
    if _PUBLIC.search(stem):
        return None  # publicKeyToken, NEXT_PUBLIC_API_KEY, csrf_token: not a credential
    if word.lower() == "key":
        named = _SECRET_KEYS.search(key)
        if named is None:
            return None
        name = re.sub(r"[_\-]", "", named["name"].lower())
        return {"apikey": "api_key", "secretkey": "secret", "accesskey": "access_key",
                "privatekey": "private_key"}.get(name, "key")
    # Short words must start a part of the name: DB_PASS, dbPass, accessToken, but not bypass.
    if word.lower() in ("pass", "pwd", "token") and stem and not (
            stem[-1] in "_.-$" or (stem[-1].islower() and word[0].isupper())):
        return None
    return _KEY_KINDS[word.lower()]


def _generated(value: str) -> bool:
    """Looks made by a machine or chosen as a password, not words or a path of a sentence."""
    return _made_up(value) and not _WORDS_PATH.fullmatch(value) and not any(c.isspace() for c in value)


def _judge_key(m: re.Match[str], text: str) -> tuple[int, int, str] | None:
    before = _KEY_BEFORE.search(text, max(0, m.start() - 60), m.start())
    word = text[m.start("word"):m.end("word")]  # as written: the match may be in the lowercased text
    key = (before.group(0) if before else "") + word
    kind = _key_kind(key.lstrip("-$"), word)
    if kind is None:
        return None
    key_start = m.start("word") - len(key) + len(word)
    if m["quote"] and text[key_start - 1:key_start] != m["quote"][-1]:
        # A quote closes the key with none opening it: the last word of a quoted phrase,
        # `the "Messianic secret": Mark's Jesus`, not a JSON key (`"api_key": …`).
        return None
    # A token is always generated (a "token" is also a tokenizer's word, {"token": "Hello"}, or
    # a game's piece); so is what follows a key that is only a word of prose ("The secret: patience.")
    must_look_generated = kind == "token" or (key.lower() in _PROSE_WORDS and not m["quote"])
    start, end = m.start("value"), m.end("value")
    value, sep = text[start:end], m["sep"]
    if value[0] in "\"'`\\":
        quote = 2 if value[0] == "\\" else 1
        inner = value[quote:-quote]
        if inner[:1].isspace() or inner[-1:].isspace():
            return None  # the words between two quotes or code spans: `x == confirm_password:` should use `y`
        if len(inner) < 4 or _not_a_value(inner) or "{" in inner and "}" in inner:  # a template: f"{token}"
            return None
        if must_look_generated and not _generated(inner):
            return None  # `told me a secret: "Partner with the agency"`
        return start + quote, end - quote, kind
    if must_look_generated and not _generated(value):
        return None
    after = text[end:end + 1]
    if (len(value) < 4 or _not_a_value(value) or after in ("(", "[") or value.endswith(":")
            or _ATTRIBUTE.fullmatch(value)):
        return None  # a call, an index, an attribute: code
    if after in (",", ")") and _VARIABLE.fullmatch(value) and not _random(value) and not key.isupper():
        # `connect(password=pw)`, `api_key=api_key,`: a variable passed on, named in words
        # (a generated value has digits or both cases; an .env's names are upper case)
        return None
    colon = sep.lstrip(" \t").startswith(":")  # "password: x", and "Password : x" as forms are typed
    if colon and (sep == ":" or not _LINE_END.match(text, end)):
        # `password: str = ...`, `{ token: tokens[i] }`, `passwd:dir`: code; a config line
        # (`password: x`, a header `X-Api-Key: x`) has a space after the colon and ends with its value
        return None
    if " " in sep and not colon and _IDENTIFIER.fullmatch(value):
        return None  # `password = pw`: a variable (a config's values have digits or symbols)
    # `password: sunshine` ends its line (above): a YAML config's or a chat's value, however plain.
    return start, end, kind


_NAMED = _Rule(("pass", "pwd", "secret", "token", "key"), re.compile(_KEY_WORD, re.I), _judge_key,
               folded=re.compile(_KEY_WORD))

# --password=x, --api-key x: a flag's value (-p and -u are read in their commands' rules above)
_FLAG = _place("password", ("pass", "token", "secret", "key"),
               r"--(?<![\w\-]--)(?:[a-z0-9]+-)*(?:password|passwd|pass|token|secret|api-key|apikey|access-key|"
               r"secret-key|client-secret|auth-token)(?:=|\s+)(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'\-][^\s\"']*)",
               check=lambda value: value[0] in "\"'" or _random(value), case_blind=True)

RULES: tuple[_Rule, ...] = (*_SHAPES, *_PLACES, _FLAG, _NAMED)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """The text with each secret's value replaced by ``[REDACTED:kind]``, and how many of
    each kind there were."""
    found: dict[str, int] = {}
    return redact_into(text, found), found


# Each trigger once, however many rules share it. A shape's trigger is looked for in the
# long words only: no shape is shorter than a Slack token (15 characters) or holds a space.
_IN_TEXT = tuple(sorted({trigger for rule in RULES if not rule.in_token for trigger in rule.triggers}))
_IN_TOKENS = tuple(sorted({trigger for rule in RULES if rule.in_token for trigger in rule.triggers}))
_SHORTEST_TOKEN = 15


def _triggers_in(folded: str) -> set[str]:
    words = " ".join([word for word in folded.split() if len(word) >= _SHORTEST_TOKEN])
    return {t for t in _IN_TEXT if t in folded} | {t for t in _IN_TOKENS if t in words}


def could_hold_secret(text: str) -> bool:
    """Whether a rule could find a secret in ``text``. When not, no rule could in any part
    of it either: a trigger is looked for as a substring, and a token's in a word at least
    as long (``_triggers_in``)."""
    return bool(_triggers_in(text.lower()))


def redact_into(text: str, found: dict[str, int]) -> str:
    """``text`` redacted, the kinds it held added to ``found``."""
    folded = text.lower()
    # Found once: a redaction only takes text out (its "[REDACTED:...]" holds no secret a
    # later rule could find), so a rule whose triggers were absent stays without a match.
    present = _triggers_in(folded)
    if not present:  # most text: no rule can match
        return text
    for rule in RULES:
        if present.isdisjoint(rule.triggers):
            continue
        parts, last = [], 0
        for m in rule.matches(text, folded):
            span = rule.judge(m, text)
            if span is None or span[0] < last:
                continue
            start, end, kind = span
            parts += [text[last:start], REDACTED.format(kind)]
            last = end
            found[kind] = found.get(kind, 0) + 1
        if parts:
            text = "".join(parts) + text[last:]
            folded = text.lower()
    return text


def _redact_assertion(assertion: Assertion, found: dict[str, int]) -> Assertion:
    """The assertion with its subject, object and sentence redacted, kinds added to ``found``."""
    return assertion._replace(subject=redact_into(assertion.subject, found),
                              object=redact_into(assertion.object, found), fact=redact_into(assertion.fact, found))


def redact_episode(episode: Episode) -> Episode:
    """An episode made by a caller (``Memory.ingest_episodes``) redacted as a source's are:
    its content and its assertions. Its id and hash stay those the caller made."""
    found = dict(episode.redacted)
    content = redact_into(episode.content, found)
    assertions = [_redact_assertion(assertion, found) for assertion in episode.assertions]
    return replace(episode, content=content, assertions=assertions, redacted=found)
