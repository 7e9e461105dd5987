"""Prose that talks about secrets without holding one (issue 31, item 6).

Everyday assistant conversations say "password", "secret", "token", "API key", "private
key", "passphrase" and "PIN" all the time: security advice, markdown headings and bold
labels, bullet lists, tables, Q&A, config explanations whose values are placeholders
(``<your-api-key>``, ``YOUR_TOKEN_HERE``, ``${API_KEY}``, ``os.environ["SECRET_KEY"]``,
``password: ********``), fiction, scripture and history ("the Messianic secret"), song
lyrics, recipes' secret ingredients, the token economy, ``key: value`` prose. None of it
is a secret, and redaction must leave all of it as it was.

``messages()`` makes them from a seed (a ``random.Random``, templates × fillers; nothing
is downloaded). Many are near misses of memctl/redact.py's rules: a secret's word before a
colon or "is", a value with digits (``AES-256``, ``2FA``, ``base64``), a PEM armour line
described in a sentence, a tokenizer's JSON. No message holds a credential: every value
in a key's place is a placeholder, a reference, a description or a word of the sentence.

``python -m tests.prose_corpus`` prints how many messages there are and which ones the
redactor changed.
"""

from __future__ import annotations

import random
import re
import sys

# The four that real conversations had mangled (issue 31, item 6), each inside a message.
NAMED_CASES = (
    "Here are the basics:\n\n1. **Password Protection**: Use a long, unique password for every account and turn on "
    "two-factor authentication wherever it is offered.\n2. **Software Updates**: Install updates promptly.",
    "A few habits that help:\n\n- **Use a password manager**: it generates strong passwords and fills them in for "
    "you, so you only have to remember one.\n- **Turn on 2FA**: an authenticator app is better than SMS.",
    'Scholars since William Wrede (1901) have called this motif the "Messianic secret": Mark\'s Jesus repeatedly '
    "commands the people he heals, and even the demons, to tell no one who he is.",
    'When I started freelancing, an older designer told me a secret: "Partner with the agency, don\'t compete with '
    'it." It took me two years to understand what she meant.',
)

# -- fillers ---------------------------------------------------------------------------------

F: dict[str, list[str]] = {
    "svc": ["GitHub", "AWS", "Stripe", "OpenAI", "Slack", "Gmail", "your bank", "Netflix", "Azure", "Google Cloud",
            "Heroku", "Jira", "Notion", "Discord", "Twilio", "SendGrid", "the VPN", "Docker Hub", "npm", "PyPI",
            "WordPress", "Shopify", "GitLab", "Vercel", "Cloudflare", "Dropbox", "your email provider", "PayPal",
            "Steam", "Instagram", "LinkedIn", "the school portal", "your ISP", "Okta", "Salesforce"],
    "n": ["8", "10", "12", "14", "16", "20", "24", "32", "64"],
    "days": ["30", "60", "90", "180", "365"],
    "name": ["Ana", "Ben", "Chloe", "Dmitri", "Esi", "Farah", "Gustavo", "Hana", "Ivan", "Jonas", "Keiko", "Liam",
             "Maya", "Noor", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq", "Uma", "Victor", "Wen", "Yusuf"],
    "mgr": ["1Password", "Bitwarden", "KeePassXC", "LastPass", "Dashlane", "Proton Pass", "Apple Passwords",
            "NordPass", "Keeper", "Enpass"],
    "vault": ["HashiCorp Vault", "AWS Secrets Manager", "Azure Key Vault", "GCP Secret Manager", "Doppler",
              "1Password Secrets Automation", "Infisical", "sops", "Kubernetes Secrets", "Bitwarden Secrets Manager"],
    "env": ["OPENAI_API_KEY", "STRIPE_SECRET_KEY", "GITHUB_TOKEN", "DATABASE_PASSWORD", "JWT_SECRET",
            "AWS_SECRET_ACCESS_KEY", "SLACK_BOT_TOKEN", "HF_TOKEN", "ANTHROPIC_API_KEY", "DB_PASS", "REDIS_PASSWORD",
            "SECRET_KEY", "NPM_TOKEN", "SENDGRID_API_KEY", "POSTGRES_PASSWORD", "CLIENT_SECRET", "API_TOKEN",
            "MAILGUN_API_KEY", "DJANGO_SECRET_KEY", "WEBHOOK_SECRET", "PRIVATE_KEY", "ENCRYPTION_KEY"],
    "ph": ["<your-api-key>", "YOUR_TOKEN_HERE", "${API_KEY}", "your-secret-here", "<token>", "xxxxxxxx", "********",
           "changeme", "<REDACTED>", "...", "$TOKEN", "<paste-key-here>", "REPLACE_ME", "TODO", "sk-...",
           "ghp_...", "your_password", "<password>", "%API_KEY%", "<secret>", "YOUR_API_KEY", "your-api-key-here",
           "${SECRET}", "<insert token>", "****", "xxx", "$DB_PASSWORD", "${{ secrets.API_KEY }}", "<redacted>",
           "your_secret_key", "sk_test_...", "<YOUR_KEY>", "{{ token }}", "...redacted...", "********************"],
    "cred": ["password", "one-time code", "API key", "recovery code", "PIN", "verification code", "login details",
             "security answers", "passphrase", "credentials", "2FA codes", "seed phrase"],
    "device": ["the router", "the modem", "the printer", "the access point", "the NAS", "the camera",
               "the smart plug", "the set-top box"],
    "ingredient": ["cinnamon", "smoked paprika", "fish sauce", "brown butter", "espresso powder", "anchovy paste",
                   "miso", "a splash of vinegar", "nutmeg", "orange zest", "MSG", "mayonnaise", "cardamom",
                   "a bay leaf", "white pepper", "a spoonful of honey"],
    "dish": ["chili", "banana bread", "pancakes", "tomato sauce", "chocolate chip cookies", "guacamole", "ramen",
             "potato salad", "pie crust", "meatballs", "brownies", "fried rice", "lasagna", "risotto"],
    "algo": ["bcrypt", "Argon2id", "scrypt", "PBKDF2", "SHA-256", "SHA256", "AES-256", "AES-256-GCM", "HMAC-SHA256",
             "RSA-2048", "Ed25519", "SHA-512", "PBKDF2-SHA256", "ChaCha20-Poly1305", "MD5", "SHA-1"],
    "model": ["GPT-4", "GPT-4o", "Claude", "Llama 3", "Mistral", "Gemini", "BERT", "T5"],
    "word": ["Hello", "world", "the", "ing", "unbelievable", "token", "cat", "New", "York", "running", "ization",
             "Paris", "apple", "tokenizer", "chat", "model"],
    "tokid": ["9906", "1917", "279", "287", "15339", "1296", "8415", "2028", "3363", "4999", "40", "13"],
    "status": ["Expired", "Changed", "Reset", "Strong", "Weak", "Incorrect", "Valid", "Invalid", "Saved", "Updated",
               "Missing", "Locked", "Verified", "Hidden", "Not set", "Required", "Optional", "Encrypted", "OK",
               "Compromised", "Medium", "Good", "Excellent", "Forgotten", "Accepted", "Rejected", "Unchanged"],
    "secret_ans": ["patience", "practice", "consistency", "sleep", "cold butter", "timing", "salt", "listening",
                   "kindness", "compound interest", "showing up", "rest", "curiosity", "gratitude", "butter",
                   "simplicity", "preparation", "honesty", "repetition", "humility"],
    "place": ["the vault", "1Password", "the team's Bitwarden", "the password manager", "AWS Secrets Manager",
              "the sealed envelope in the safe", "the wiki (restricted page)", "Vault under secret/prod",
              "the shared vault", "Keychain", "the GitHub repository secrets", "the CI settings"],
    "lyric": ['"I\'ll tell you a secret, but you have to promise"', '"Tell me your secrets, and ask me your '
              'questions"', '"Everybody\'s got a secret, only me and my monkey"', '"Secret, secret, I\'ve got a '
              'secret"', '"Can you keep a secret? I know you can"', '"The secret of love is in opening up your '
              'heart"', '"You\'re the password to my heart"'],
    "book": ["The Secret Garden", "The Secret History", "The Secret Life of Bees", "Harry Potter and the Chamber of "
             "Secrets", "The Secret Agent", "The Secret (Rhonda Byrne)", "Secrets of the Millionaire Mind",
             "The Da Vinci Code", "Cryptonomicon", "The Code Book"],
    "lang": ["Python", "Node", "Go", "Rust", "Ruby", "Java", "PHP", "C#"],
    "n2": ["2", "3", "4", "5", "6", "7"],
    "year": ["1901", "1914", "1944", "1979", "1991", "2006", "2012", "2019", "2023"],
    "user": ["ana", "ben", "deploy", "postgres", "app", "ubuntu", "admin", "ci", "runner", "www-data"],
    "path": ["~/.ssh/id_ed25519", "~/.ssh/id_rsa", "./certs/server.key", "/etc/ssl/private/server.key",
             "~/.aws/credentials", "~/.netrc", "~/.pgpass", "~/.docker/config.json", "./secrets/db_password.txt",
             "/run/secrets/db_password", "~/.config/gh/hosts.yml", "~/.kube/config"],
}

# -- templates: <<slot>> is filled from F -------------------------------------------------------

T: dict[str, list[str]] = {}

T["advice"] = [
    "Use a unique password for every account. If one site is breached, attackers will try the same password on "
    "<<svc>> and everywhere else.",
    "A strong password is at least <<n>> characters long and mixes upper- and lowercase letters, numbers and "
    "symbols.",
    "Never share your <<cred>> over email or chat. <<svc>> will never ask for it.",
    "If you think your password has been compromised, change it immediately and turn on two-factor "
    "authentication.",
    "The password is case-sensitive, so check that Caps Lock is off.",
    "The password is required and must be at least <<n>> characters.",
    "The password is stored as a <<algo>> hash, never in plain text.",
    "The password is hashed with <<algo>> before it is written to the database.",
    "Your password is AES-256 encrypted at rest and never leaves the device.",
    "The password is SHA256-hashed with a per-user salt, so two users with the same password get different "
    "hashes.",
    "The password is base64 encoded in the header, which is not encryption: anyone can decode it.",
    "The default password is printed on a sticker on the bottom of <<device>>.",
    "The password for the Wi-Fi is on the back of <<device>>.",
    "The Wi-Fi password is WPA2-PSK protected, but the router also supports WPA3-SAE.",
    "Password requirements: min. <<n>> chars, 1 uppercase, 1 number, 1 symbol.",
    "Password must contain at least 1 uppercase letter, 1 lowercase letter, 1 digit and 1 special character "
    "(!@#$%^&*).",
    "Passwords like 123456, qwerty and password1 top the breach lists every year.",
    "The most common password is still 123456, followed by admin and 12345678.",
    'A passphrase like "correct horse battery staple" is easier to remember and harder to crack than '
    "Tr0ub4dor&3, which is the point of the famous xkcd comic.",
    "Change the password to something longer, and don't reuse it anywhere else.",
    "Password reset links expire after <<n2>> hours.",
    "Your password was changed on <<year>>-03-14. If this wasn't you, contact support.",
    "Your temporary password is valid for 24 hours; you'll be asked to pick a new one at first login.",
    "The password expires every <<days>> days, which NIST no longer recommends.",
    "Use the password from step <<n2>>, then change it once you're logged in.",
    "Enter the password twice to confirm it.",
    "Your password is too weak: add a number or a symbol, or make it longer.",
    "Your password is 2FA-protected, so a leaked password alone isn't enough to log in.",
    "The password is 12-characters minimum on most corporate systems.",
    "The password is at least <<n>> characters, and the longer the better.",
    "the password is in the vault, ask <<name>> for access",
    "The password is the same as before; nothing changed on our side.",
    "The password is strong.",
    "The password is required.",
    "The password is SHA-256 hashed and salted before storage.",
    "The password is PBKDF2-derived, with 600,000 iterations as OWASP suggests.",
    "A password of 8 characters can be brute-forced in hours on a modern GPU; at 16 it takes centuries.",
    "NIST SP 800-63B says: no composition rules, no forced rotation, check new passwords against breach lists.",
    "Don't use your birthday, your pet's name or your street as a password.",
    "Avoid writing passwords on sticky notes, and never keep them in a file called passwords.txt on your "
    "desktop.",
    "A password manager like <<mgr>> generates random passwords and remembers them for you.",
    "Enable two-factor authentication: even if someone gets your password, they'd still need your phone.",
    "Set a PIN on your SIM card to stop SIM-swap attacks.",
    "Your PIN is 4 digits; never write it on the card or keep it in your wallet.",
    "The PIN is 4-6 digits and is never stored on the card itself.",
    "Choose a PIN that isn't 1234, 0000 or your birth year.",
    "Rotate API keys every <<days>> days and revoke the old ones once the new ones are deployed.",
    "Never commit secrets to git. If you did, rotate them first, then clean the history.",
    "Treat a leaked token as compromised even if you deleted the commit: bots scrape GitHub within minutes.",
    "Store secrets in <<vault>>, not in the repository.",
    "Use short-lived tokens where you can; a token that expires in an hour is worth less to an attacker.",
    "Give each service its own API key so you can revoke one without breaking the rest.",
    "Scope tokens to the minimum permissions they need (read-only if possible).",
    "Keep your private key on your machine; only the public key (.pub) goes to the server.",
    "Protect your private key with a passphrase, and use ssh-agent so you only type it once per session.",
    "If you lose your seed phrase, nobody can recover your wallet, not even the exchange.",
    "Your recovery codes are single use: each one works exactly once.",
    "Security questions are weak: the answers are often on social media. Treat them like passwords.",
    "Password reuse is the main reason credential stuffing works.",
    "A password hash is not the password: the server compares hashes, it never needs the original.",
    "Salting means two users with the same password end up with different hashes.",
    "Password: at least <<n>> characters, no maximum below 64.",
    "Password: min 12 chars, must include a number.",
    "Password: 12+ characters recommended.",
    "Password: same as your email password (please change that!)",
    "Password: set during installation",
    "Password: stored in <<place>>",
    "Password: see <<place>>.",
    "Password: ask <<name>>",
    "PIN: 4 digits",
    "PIN: never share it",
    "Passphrase: four or more random words",
    "Passphrase: optional, but strongly recommended",
    "The master password is the one password you must remember; <<mgr>> can't recover it if you forget.",
    "Your master password never leaves your device: <<mgr>> derives the encryption key from it locally.",
    "If your password was in a breach, haveibeenpwned.com will tell you, and you should change it right away.",
    "Passwords should be hashed with a slow algorithm (bcrypt, scrypt, Argon2id), not with MD5 or SHA-1.",
]

T["bold"] = [
    "**Password Policy**: Require at least <<n>> characters and check new passwords against known breaches.",
    "**Secret Management**: Store credentials in <<vault>> and inject them at runtime.",
    "**API Keys**: Rotate them every <<days>> days and never embed them in client-side code.",
    "**Token Expiry**: Access tokens should be short-lived (15 minutes to an hour).",
    "**Password:** Use a strong, unique one.",
    "**Secret:** Don't commit .env files.",
    "**Passwords**: never reuse them across sites.",
    "- **Private keys**: Never paste them into chat or email.",
    "**Two-Factor Authentication (2FA)**: Turn it on for <<svc>>.",
    "**Credentials**: Use IAM roles instead of long-lived access keys.",
    "**Secret ingredient**: <<ingredient>>.",
    "**Password Manager**: <<mgr>> or <<mgr>> both work well.",
    "**Token Storage**: Keep tokens in httpOnly cookies rather than localStorage.",
    "**Key Rotation**: Automate it; manual rotation gets skipped.",
    "**Password Hashing**: Use <<algo>> with a unique salt per user.",
    "**Secrets in CI**: Use the platform's secret store and mask them in logs.",
    "**Passphrase**: A sequence of random words is easier to type and harder to guess.",
    "**PIN Codes**: Don't reuse your bank PIN for your phone.",
    "**The secret**: consistency beats intensity.",
    "**Session Tokens**: Regenerate them after login to prevent session fixation.",
    "**API Key Security**: Restrict each key by IP address or HTTP referrer where the provider allows it.",
    "**Access Tokens vs. Refresh Tokens**: The first is short-lived; the second lives longer and must be stored "
    "more carefully.",
    "### Password Reset\n\nClick **Forgot password?** on the login page and follow the link in the email.",
    "## Secrets\n\nNothing secret goes in the repository. Use <<vault>>.",
    "### API Key\n\nYou'll find it under **Settings → API Keys**. Copy it once; it won't be shown again.",
    "#### Step <<n2>>: Set your password\n\nPick something long. A sentence works.",
    "__Password__: hidden",
    "*Secret tip*: <<ingredient>> makes the <<dish>>.",
    "**Note:** the token is only shown once, so copy it somewhere safe right away.",
    "**Warning:** anyone with this key can spend money on your account.",
    "**Tip**: Password managers also warn you about reused and breached passwords.",
    "> **Important**: Never share your password with anyone, including support staff.",
    "**Private Key**: stays on your machine. **Public Key**: goes on the server.",
    "**Q: Where is the password stored?** A: Only as a hash; we can't see it.",
]

T["secret_prose"] = [
    "The secret: <<secret_ans>>.",
    "Here's the secret: most of the flavor comes from browning the butter first.",
    "The secret to a flaky <<dish>> is <<secret_ans>>.",
    "My grandmother's secret ingredient was <<ingredient>>.",
    "Secret: the garden was never locked, we just never tried the gate.",
    "Secret: <<secret_ans>>.",
    "The secret: <<secret_ans>>",
    "Secret:\n<<secret_ans>>, every single day.",
    "Top secret: don't tell Mom about the party!",
    "Top secret: surprise party on Friday.",
    "Top secret: gifts.",
    "It's an open secret that the release slipped again.",
    "The Secret Service protects the president.",
    "Voting is by secret ballot, so nobody knows how you voted.",
    "Coca-Cola's formula is a trade secret, not a patent, so it never expires.",
    "We're doing Secret Santa again this year; the limit is $25.",
    "The secret of <<book>> is revealed in the last chapter.",
    "<<name>> kept the secret for <<n>> years before telling anyone.",
    "Her secret: she never read the reviews.",
    "The chef's secret: salt the pasta water until it tastes like the sea.",
    "The secret, she said, was <<secret_ans>>.",
    "What's your secret? Honestly, <<secret_ans>>.",
    "I'll let you in on a secret: nobody reads the README.",
    "The secret sauce is the data, not the model.",
    "There's no secret: just <<secret_ans>>.",
    "The real secret: <<secret_ans>>.",
    "Secret to longevity: <<secret_ans>>",
    "The secret of success? <<secret_ans>>.",
    "Secrets of the trade: <<secret_ans>> and a good knife.",
    "Keeping a secret is easier when you forget it.",
    "Secret: Mark's friends never found out.",
    "The secret: Nobody checked.",
    "My secret: Saturday mornings with no phone.",
    "Their secret: they practiced every day.",
    "His only secret was that he had none.",
    "Secret: Yes",
    "Secret: none of us knew.",
    "Secret (adj.): kept from the knowledge of others.",
    "Secret: Tomatoes.",
    "Secret:   <<secret_ans>>",
    "The secret is <<secret_ans>>.",
    "The secret is that there is no secret.",
    "The secret was out by Monday.",
    "The secret was <<ingredient>> all along!",
    'The recipe card just says "secret: <<ingredient>>" in my aunt\'s handwriting.',
    "Secret weapon: <<ingredient>>.",
    "Secret menu item: the animal-style fries.",
]

T["recipes"] = [
    "Secret ingredient: <<ingredient>> in the <<dish>>.",
    "The secret ingredient in my <<dish>> is <<ingredient>>; just a little, you shouldn't taste it.",
    "Add <<ingredient>> (the secret ingredient) right before serving.",
    "Ingredients:\n- 2 cups flour\n- 1 tsp salt\n- <<ingredient>> (secret ingredient!)\n- 1 cup water",
    "For the <<dish>>: the secret is to rest the dough for <<n>> minutes.",
    "Secret: <<ingredient>>. Don't tell anyone.",
    "Pro tip: the secret to crispy <<dish>> is a very hot pan.",
    "Grandma's secret: she used <<ingredient>> and never measured anything.",
    "Key ingredient: <<ingredient>>.",
    "Key: T = tablespoon, t = teaspoon, c = cup.",
]

T["tokens_nlp"] = [
    "In NLP, a token is a piece of a word; <<model>> splits 'unbelievable' into <<n2>> tokens.",
    "The model has a context window of 128k tokens, about 300 pages of text.",
    "token: the smallest unit of text the model reads",
    "A token is roughly 4 characters of English text, or about three quarters of a word.",
    'The tokenizer returns a list like [{"token": "<<word>>", "id": <<tokid>>}, {"token": "<<word>>", "id": '
    "<<tokid>>}].",
    '{"token": "<<word>>", "logprob": -0.12, "top_logprobs": []}',
    "Each entry has a `token` and its `logprob`, e.g. token: '<<word>>', logprob: -1.3.",
    'Output:\n```\n{"token": "<<word>>", "start": 0, "end": 5}\n{"token": "<<word>>", "start": 6, "end": 11}\n```',
    "token: <<word>>\ntoken_id: <<tokid>>",
    "The first token is <<word>> (id <<tokid>>), and the second is <<word>>.",
    "max_tokens=1024 caps the length of the answer, not the prompt.",
    "Set max_tokens: 4096 and temperature: 0.2 for this task.",
    "token_count=<<tokid>>, prompt_tokens=812, completion_tokens=93",
    "The BOS token is <s> and the EOS token is </s>.",
    "Special tokens: [CLS], [SEP], [PAD], [MASK].",
    "Token: a single unit of text such as a word or subword.",
    "Token: Hello\nToken: world",
    "Tokens: 512",
    "Each token costs about $0.00001 with this model, so 1M tokens is roughly $10.",
    "Tokenization of 'ChatGPT' gives ['Chat', 'G', 'PT'], i.e. 3 tokens.",
    "In Python, `tokenize` splits source code into tokens: NAME, OP, NUMBER, STRING.",
    "The lexer emits a token for each keyword; token: IF, token: LPAREN, token: IDENT.",
    "The parser failed with: Unexpected token '<' in JSON at position 0.",
    "SyntaxError: Unexpected token 'export'",
    "Error: unexpected token: ')'",
    "token: ';' expected",
    "The token is <<word>>, which the model scores highest.",
    "The next-token probability for '<<word>>' was 0.82.",
]

T["tokens_other"] = [
    "A token economy is a behavior-modification system: children earn tokens for good behavior and trade them "
    "for rewards.",
    "In a token economy, tokens can be exchanged for privileges like extra screen time.",
    "Token economy: a system of positive reinforcement using tokens as secondary reinforcers.",
    "Token: a sticker or a poker chip, given right after the target behavior.",
    "The subway used tokens until 2003, when MetroCard replaced them.",
    "As a token of appreciation, the team got a day off.",
    "By the same token, a slower release gives us more time to test.",
    "An ERC-20 token is a fungible token on Ethereum.",
    "Token: ETH\nNetwork: Ethereum\nAmount: 0.5",
    "Token standard: ERC-721 (non-fungible).",
    "Each player starts with <<n2>> tokens and loses one per wrong answer.",
    "Token: the knight\nMove: two squares forward, one to the side",
    "Token ring was a LAN technology that IBM pushed in the 1980s.",
    "A CSRF token is not a credential: it is public to the page and only proves the request came from your form.",
    "Token-based authentication replaced server sessions in most SPAs.",
    "The token refresh flow: when the access token expires, the client uses the refresh token to get a new one.",
    "The token is expired, so log in again.",
    "The token was revoked at <<year>>-06-01 10:00 UTC.",
    "The token has read-only scope on the repository.",
    "The token is passed in the Authorization header as `Bearer <token>`.",
    "A bearer token means whoever holds it can use it, so treat it like a password.",
    "Bearer tokens should only be sent over HTTPS.",
    "Tokens: stored in the OS keychain.",
    "Token: see <<place>>",
    "Token: not required for public repositories.",
    "token: (leave empty)",
    "Token: Optional",
    "Token: <<status>>",
    "Token: expired",
    "Token: Revoked.",
]

T["apikeys"] = [
    "You can find your API key in the dashboard under Settings → API Keys.",
    "Set the environment variable first: `export <<env>>=<<ph>>`",
    "Replace YOUR_API_KEY with the key from your account page.",
    "The API key is 32 characters long and starts with a prefix that identifies the provider.",
    "The API key is base64-encoded in the header, which isn't the same as encrypted.",
    "The API key is read from the environment, never hard-coded.",
    "The API key is stored in <<place>>.",
    "The API key has read-only scope.",
    "The API key is SHA256-hashed in our database, so we can't show it to you again.",
    "The API key is invalid or expired (HTTP 401).",
    "the api key is in the .env file, which is in .gitignore",
    "API key: stored in <<place>>",
    "API key: <<ph>>",
    "API Key: Required",
    "API key: see the dashboard",
    "x-api-key: <key>",
    "Your API key is secret: don't share it or put it in client-side code.",
    "If your API key leaks, revoke it from the dashboard and create a new one.",
    "OpenAI keys start with `sk-`, Anthropic keys with `sk-ant-`, and GitHub tokens with `ghp_`.",
    "AWS access key IDs start with AKIA; the secret access key is the 40-character part you must never share.",
    "The `AKIAIOSFODNN7EXAMPLE` key in the AWS docs is a placeholder.",
    "Free-tier keys are limited to 60 requests per minute.",
    "An API key identifies the project; an OAuth token identifies the user.",
    "Restrict the key: HTTP referrers for browser keys, IP addresses for server keys.",
    "Keys created before <<year>> don't support scopes; regenerate them.",
    "API key rotation: create the new key, deploy it, then delete the old one.",
    "The Maps JavaScript API needs a key; the Geocoding API also needs billing enabled.",
    "`openai.api_key` is deprecated; pass `api_key=` to the client or set OPENAI_API_KEY.",
    "apiKey: process.env.OPENAI_API_KEY",
    'apiKey: "demo"',
    "api_key: !ENV ${OPENAI_API_KEY}",
]

T["config"] = [
    "```bash\nexport <<env>>=<<ph>>\n```",
    "Create a `.env` file:\n\n```\n<<env>>=<<ph>>\nDEBUG=true\nPORT=3000\n```",
    "```env\nDATABASE_URL=postgres://user:password@localhost:5432/mydb\nSECRET_KEY=change-me\nDEBUG=True\n```",
    "```yaml\ndatabase:\n  host: localhost\n  user: app\n  password: ********\n```",
    "```yaml\ndb:\n  password: ${DB_PASSWORD}\n  user: ${DB_USER}\n```",
    "```yaml\n- name: Publish\n  env:\n    NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}\n```",
    "```yaml\nwith:\n  token: ${{ secrets.GITHUB_TOKEN }}\n```",
    "```python\nimport os\n\nSECRET_KEY = os.environ[\"SECRET_KEY\"]\nAPI_KEY = os.getenv(\"<<env>>\")\n```",
    "```python\nclient = OpenAI(api_key=os.environ.get(\"OPENAI_API_KEY\"))\n```",
    "```python\npassword = getpass.getpass(\"Password: \")\n```",
    "```python\npw = input(\"Enter password: \")\n```",
    "```js\nconst token = process.env.GITHUB_TOKEN;\nconst apiKey = process.env.<<env>>;\n```",
    "```js\nheaders: { Authorization: `Bearer ${token}` }\n```",
    "```python\nheaders = {\"Authorization\": f\"Bearer {api_key}\"}\n```",
    "```json\n{\n  \"apiKey\": \"<YOUR_API_KEY>\",\n  \"timeout\": 30\n}\n```",
    "```json\n{\"username\": \"admin\", \"password\": \"<password>\"}\n```",
    "```toml\n[credentials]\ntoken = \"<<ph>>\"\n```",
    "```ini\n[database]\nuser = app\npassword = <<ph>>\n```",
    "```\nSTRIPE_SECRET_KEY=sk_test_...\nSTRIPE_PUBLISHABLE_KEY=pk_test_...\n```",
    "```\nAWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n```",
    "```\nOPENAI_API_KEY=sk-...\nANTHROPIC_API_KEY=sk-ant-...\n```",
    "```\nGITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxx\n```",
    "```\nJWT_SECRET=your-secret-here\nJWT_EXPIRES_IN=1h\n```",
    "```\nSESSION_SECRET=<generate with: openssl rand -hex 32>\n```",
    "Generate a secret with `openssl rand -hex 32` and put it in `JWT_SECRET`.",
    "`python -c \"import secrets; print(secrets.token_urlsafe(32))\"` prints a good random secret.",
    "`secrets.token_hex(16)` gives you 32 hex characters.",
    "In `settings.py`, `SECRET_KEY = env(\"DJANGO_SECRET_KEY\")` keeps the key out of the code.",
    "password: ********",
    "password: \"${DB_PASSWORD}\"",
    "password: <<ph>>",
    "token: <<ph>>",
    "secret: <<ph>>",
    "api_key: <<ph>>",
    "client_secret: <<ph>>",
    "private_key: <<path>>",
    "The private key lives at <<path>> and must be chmod 600.",
    "IdentityFile <<path>>",
    "Credentials are read from <<path>> or from the environment.",
    "`password_file: /run/secrets/db_password` tells the image to read the password from a Docker secret.",
    "POSTGRES_PASSWORD_FILE=/run/secrets/postgres_password",
    "Set `password_min_length=12` and `password_history=5` in the policy.",
    "password_hash=bcrypt, password_rounds=12",
    "token_limit=4000, token_budget=8000",
    "`--password-stdin` reads the password from standard input, so it never shows up in `ps`.",
    "`echo $CR_PAT | docker login ghcr.io -u USERNAME --password-stdin`",
    "`docker login -u myuser -p $DOCKER_PASSWORD` works, but prefer --password-stdin.",
    "`mysql -u root -p` will prompt for the password.",
    "`psql -h localhost -U postgres -W` forces a password prompt.",
    "`curl -u username:password https://api.example.com/me`",
    "`curl -H \"Authorization: Bearer $TOKEN\" https://api.github.com/user`",
    "`git clone https://<token>@github.com/org/repo.git`",
    "`gh auth login --with-token < token.txt`",
    "Pass the token with `--token` or set GITHUB_TOKEN.",
    "`--api-key` overrides the <<env>> environment variable.",
    "Use `--password` only in scripts you trust; it ends up in your shell history.",
    "`ssh-keygen -t ed25519 -C \"you@example.com\"` asks for a passphrase; press Enter to leave it empty.",
    "Enter passphrase for key '/home/<<name>>/.ssh/id_ed25519':",
    "Enter PEM pass phrase:",
    "`openssl genrsa -aes256 -out server.key 4096` encrypts the private key with a passphrase.",
    "`mongodb://<user>:<password>@localhost:27017/db`",
    "postgresql://{user}:{password}@{host}/db",
    "redis://:<password>@localhost:6379/0",
    "`machine api.example.com login USERNAME password TOKEN` is one line of ~/.netrc.",
    "Authorization: Bearer <token>",
    "Authorization: Bearer ${TOKEN}",
    "Authorization: Basic base64(username:password)",
    "`Authorization: token YOUR_TOKEN` also works with the GitHub API.",
    "`kubectl create secret generic db-creds --from-literal=password=$DB_PASSWORD`",
    "`vault kv get -field=password secret/prod/db`",
    "`aws secretsmanager get-secret-value --secret-id prod/db --query SecretString`",
    "`gcloud secrets versions access latest --secret=api-key`",
    "`az keyvault secret show --vault-name my-vault --name DbPassword`",
    "`op read op://Private/GitHub/token` reads a field from 1Password.",
    "`security find-generic-password -s github -w` prints it from the macOS Keychain.",
    "The `.env.example` file lists every variable with a placeholder: `<<env>>=`.",
    "<<env>>= (leave blank to disable)",
    "<<env>>=<<ph>>  # from the dashboard",
    "Make sure `.env` is in `.gitignore` so <<env>> never gets committed.",
    "Add <<env>> under Settings → Secrets and variables → Actions → New repository secret.",
    "In GitHub Actions, reference it as `${{ secrets.<<env>> }}`.",
    "token: str",
    "password: str = Field(..., min_length=12)",
    "def login(username: str, password: str) -> Token:",
    "api_key: Optional[str] = None",
    "self.token = token",
    "client = Client(api_key=api_key, timeout=30)",
    "password = pw",
    "user.password = hash_password(password)",
    "if not check_password(password, user.password_hash): raise AuthError()",
    "<input type=\"password\" name=\"password\" autocomplete=\"current-password\">",
    "<label for=\"pw\">Password:</label>",
    "Password: <input type=\"password\">",
]

T["tables"] = [
    "| Variable | Description | Example |\n|---|---|---|\n| `<<env>>` | Your API key | `<<ph>>` |\n"
    "| `DB_PASSWORD` | Database password | `********` |\n| `JWT_SECRET` | Signing secret | `change-me` |",
    "| Field | Type | Required |\n|---|---|---|\n| username | string | yes |\n| password | string | yes |\n"
    "| token | string | no |",
    "| Setting | Value |\n|---|---|\n| Password | <<status>> |\n| 2FA | Enabled |\n| Last login | yesterday |",
    "| Algorithm | Use for passwords? |\n|---|---|\n| MD5 | No |\n| SHA-256 | No (too fast) |\n| bcrypt | Yes |\n"
    "| Argon2id | Yes (best) |",
    "| Key | Value |\n|---|---|\n| Region | eu-west-1 |\n| Bucket | my-bucket |\n| Secret | (in Vault) |",
    "| Password length | Time to crack |\n|---|---|\n| 8 | hours |\n| 12 | centuries |\n| 16 | longer than the "
    "universe |",
    "Password strength: <<status>>",
    "Account status:\nPassword: <<status>>\n2FA: on",
    "Password: <<status>>",
    "Password: <<status>>\nEmail: verified",
    "Username: <<name>>\nPassword: (the one you set at signup)",
    "Login: your email\nPassword: the one you chose",
    "Pass: 48, Fail: 2, Skipped: 3",
    "Result: Pass",
    "Pass: yes",
    "Boarding pass: printed",
    "Day pass: $25",
    "Season pass: included with membership",
    "Hall pass: granted.",
    "Passes: 3 of 5",
    "| Token | ID |\n|---|---|\n| <<word>> | <<tokid>> |\n| <<word>> | <<tokid>> |",
]

T["qa"] = [
    "Q: What should I do if I forgot my password?\nA: Click 'Forgot password' and follow the link we email you.",
    "Q: Is my password stored in plain text?\nA: No. The password is hashed with <<algo>> before it's saved.",
    "Q: Can I see my API key again?\nA: No, the key is shown once; generate a new one if you lost it.",
    "Q: How long should a password be?\nA: At least <<n>> characters; length matters more than symbols.",
    "Q: What's a good password?\nA: A long one you don't use anywhere else, ideally generated by a password "
    "manager.",
    "Q: Is SMS 2FA safe?\nA: Better than nothing, but an authenticator app or a security key is stronger.",
    "Q: What is a secret key?\nA: A key that must stay private, as opposed to a public key.",
    "Q: What's the difference between a token and an API key?\nA: A token usually expires and belongs to a user; "
    "an API key usually belongs to a project.",
    "Q: Where do I put my token?\nA: In the `Authorization` header, as `Bearer <token>`.",
    "Q: Do I need a passphrase on my SSH key?\nA: It's strongly recommended, especially on a laptop.",
    "Q: Why does it say my password is incorrect?\nA: Check Caps Lock and the keyboard layout.",
    "Q: What's the secret to good sourdough?\nA: Time. Long, cold fermentation.",
    "Q: What's the Wi-Fi password?\nA: It's on the card by the door.",
    "Q: password?\nA: in the vault",
    "Q: What does \"pwned\" mean?\nA: It's gamer slang for owned, and the name of the breach-checking site.",
    "Q: Should I change my password every <<days>> days?\nA: No. Change it when there is a reason to.",
    "Q: Is it safe to paste my API key into ChatGPT?\nA: No. Treat anything you paste as possibly logged.",
    "Q: Can you keep a secret?\nA: I can't remember anything between conversations, so in a sense, yes.",
]

T["fiction"] = [
    "\"What's the password?\" the guard growled. <<name>> only smiled; she had never needed one.",
    "The old map held a secret: the river had once run the other way.",
    "He kept his secrets the way other men kept stamps, carefully and for no one.",
    "\"Password?\" \"There is no password,\" said the wizard. \"There never was.\"",
    "She whispered the password through the door, and the bolt slid back.",
    "Nobody in the village knew the secret of the well, except old <<name>>.",
    "\"A secret,\" said <<name>>, \"is only a secret until you tell one person.\"",
    "The letter ended: \"Burn this. Tell no one the secret.\"",
    "In chapter <<n2>>, <<name>> finally learns the password to the tower, but the book never says what it is.",
    "The spy's secret: she had been a double agent since <<year>>.",
    "\"The key is under the mat,\" he said, which was the oldest secret in the world.",
    "Passwords were changed every night at the fort; the sentries learned them at dusk.",
    "The Enigma keys were changed daily; the key sheets were printed in water-soluble ink.",
    "Bletchley Park's secret: they had been reading the messages for years.",
    "The code talkers' secret: a language almost no outsider spoke.",
    "In the story, the password to the speakeasy is just \"Joe sent me\".",
    "Ali Baba's password, \"Open Sesame\", is probably the most famous password in literature.",
    "\"Speak, friend, and enter,\" the inscription read. The answer was right there in the riddle.",
    "The secret passage behind the bookcase led to the old wine cellar.",
    "She had one secret: she could not read.",
    "His password was his dog's name, which was the first thing the detective tried.",
    "Chapter <<n2>>: The Secret",
    "Secrets and Lies (<<year>>)",
    "\"Your secret is safe with me,\" said <<name>>, already planning to tell everyone.",
    "In <<book>>, the secret is hidden in plain sight.",
]

T["history"] = [
    "The Messianic secret is a motif in Mark's Gospel in which Jesus tells his followers to keep his identity "
    "quiet.",
    "Wrede published \"Das Messiasgeheimnis in den Evangelien\" (\"The Messianic Secret in the Gospels\") in 1901.",
    "The third secret of Fatima was published by the Vatican in 2000.",
    "\"The secret of the kingdom of God has been given to you\" (Mark 4:11).",
    "The Eleusinian Mysteries were a secret so well kept that we still don't know what happened in them.",
    "The Manhattan Project was an open secret among physicists by 1944.",
    "The Secret History of the Mongols is the oldest surviving Mongolian-language literary work.",
    "In Matthew 6:6, prayer is to be done \"in secret\", and \"your Father who sees in secret will reward you.\"",
    "Proverbs 11:13: \"A gossip betrays a confidence, but a trustworthy person keeps a secret.\"",
    "The secret ballot was first used in Victoria, Australia, in 1856, which is why it's called the Australian "
    "ballot.",
    "Masonic passwords and grips were secret, but exposés printed them as early as 1730.",
    "The Voynich manuscript's secret: nobody has managed to read it.",
    "Roman sentries used a watchword (tessera) written on a wooden tablet and passed down the line each night.",
    "During the war, BBC broadcasts carried coded messages: \"The carrots are cooked\" meant something only to the "
    "Resistance.",
    "The phrase \"open sesame\" entered English through the 1704 French translation of the Arabian Nights.",
    "Gnostic texts claim a secret teaching given to the apostles, which is why they were called \"secret "
    "sayings\".",
    "Messianic secret: Mark's Gospel repeatedly has Jesus silence those who recognize him.",
    "The Gospel of Thomas begins: \"These are the secret sayings which the living Jesus spoke.\"",
    "The Secret Service was created in 1865 to fight counterfeit currency.",
]

T["lyrics"] = [
    "The chorus goes <<lyric>>, and then the bridge repeats it.",
    "Lyrics: <<lyric>>",
    "I can't get <<lyric>> out of my head.",
    "That line, <<lyric>>, is the whole song really.",
    "Song: Secret (<<year>>)\nArtist: unknown\nKey: D minor\nTempo: 96 bpm",
    "Key: C major, 4/4, capo on 2.",
    "\"Secret\" by The Pierces was the theme song of Pretty Little Liars.",
    "Madonna's \"Secret\" (1994) opens with just a guitar and her voice.",
    "Verse 2: \"I've got a secret I've been hiding under my skin\"",
    "Chorus:\nI've got a secret\nI can't keep it\nSecret, secret",
    "In \"Mr. Roboto\", Styx sings \"I've got a secret I've been hiding under my skin\".",
]

T["kv_prose"] = [
    "Key: ✓ = supported, ✗ = not supported, ~ = partial",
    "Key takeaway: rotate credentials regularly.",
    "Key takeaways: <<secret_ans>> and patience.",
    "Key: red = highway, blue = water, green = park.",
    "Primary key: id\nForeign key: user_id\nSort key: created_at",
    "Private key: never leaves your machine.",
    "Public key: goes in ~/.ssh/authorized_keys on the server.",
    "Secret key: kept by the server, used to sign the session cookie.",
    "Encryption key: derived from your master password with PBKDF2.",
    "Monkey: 3\nDonkey: 2",
    "Bypass: on",
    "Compass: north-west",
    "Passport: valid until <<year>>",
    "Passphrase strength: excellent",
    "Note: the password field is masked.",
    "Status: password reset email sent.",
    "Reminder: the secret santa draw is on Friday.",
    "Hint: the password is the name of your first pet.",
    "Hint: the passphrase is four words long.",
    "Tip: the secret is in the sauce.",
    "Answer: the token is invalid because it has expired.",
    "Why: the API key is scoped to staging only.",
    "Problem: the password is being logged in plain text by the debug middleware.",
    "Fix: the token is now read from the environment instead of the config file.",
    "Root cause: the secret was rotated but the pods were not restarted.",
    "Result: the password is no longer printed in the logs.",
    "Summary: the token expired at 10:02 and the job failed at 10:03.",
]

T["incident"] = [
    "We found an API key committed in a public repo last week. We revoked it within the hour and rotated every "
    "key in that project.",
    "The secret scanner flagged a file, but it was a test fixture with a fake key (all x's).",
    "GitHub push protection blocked the push because it looked like a Stripe key; it was `sk_test_...` from the "
    "docs.",
    "Post-mortem: the token was logged by the HTTP client at DEBUG level. Action item: redact Authorization "
    "headers.",
    "The password was exposed in a screenshot in the ticket, so we reset it.",
    "The breach exposed hashed passwords (bcrypt, cost 12), not plain text.",
    "After the leak, every user's password was reset and sessions were invalidated.",
    "The secret was rotated on <<year>>-02-01; the old one stopped working at midnight.",
    "The token in the CI logs was masked as *** by the runner, so it wasn't actually leaked.",
    "We moved all secrets from `.env` files to <<vault>> last quarter.",
    "Someone pasted their password into the Slack channel by mistake; we deleted the message and they changed "
    "it.",
    "gitleaks found 3 hits: two placeholders and one real key that had already been revoked.",
    "TruffleHog reported a high-entropy string, but it was a SHA-256 hash of a file.",
    "The API key was rate-limited, not revoked: HTTP 429, not 401.",
]

T["assistant"] = [
    "I can't help you get into someone else's account, but if it's yours, use the password reset flow.",
    "I don't have access to your passwords or API keys, and you shouldn't paste them here.",
    "Please don't share your API key in this chat. If you already did, revoke it now.",
    "For security reasons, I won't be able to see your token; replace it with a placeholder when you paste the "
    "config.",
    "I've replaced your key with `<your-api-key>` in the example below.",
    "Sure! Here's how to set up the environment variable without putting the secret in your code:",
    "Good question. The token is short-lived by design; you refresh it rather than store it.",
    "It sounds like the password is being URL-encoded twice. Try passing it through a variable instead.",
    "The error means the token is missing the `repo` scope.",
    "The 401 means the API key is wrong or was revoked; the 403 means it's valid but lacks permission.",
    "The password is probably fine; the problem is that the username is case-sensitive.",
    "Your secret is not the problem; the webhook signature fails because the body was re-serialized.",
    "If the passphrase is forgotten, the key can't be recovered. You'll need to generate a new key pair.",
    "It's likely the PIN is locked after 3 wrong attempts; you'll need the PUK from your carrier.",
]

T["errors"] = [
    "FATAL:  password authentication failed for user \"<<user>>\"",
    "psql: error: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: FATAL:  password "
    "authentication failed for user \"postgres\"",
    "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
    "ERROR 1045 (28000): Access denied for user '<<user>>'@'localhost' (using password: NO)",
    "mysql: [Warning] Using a password on the command line interface can be insecure.",
    "[sudo] password for <<user>>: \nSorry, try again.",
    "sudo: a password is required",
    "<<user>>@server: Permission denied (publickey,password).",
    "remote: Support for password authentication was removed on August 13, 2021.\nremote: Please see "
    "https://docs.github.com/get-started/getting-started-with-git/about-remote-repositories#cloning-with-https-urls "
    "for information on currently recommended modes of authentication.\nfatal: Authentication failed for "
    "'https://github.com/<<user>>/app.git/'",
    "remote: Invalid username or password.\nfatal: Authentication failed",
    "An error occurred (InvalidClientTokenId) when calling the GetCallerIdentity operation: The security token "
    "included in the request is invalid.",
    "An error occurred (ExpiredToken) when calling the ListBuckets operation: The provided token has expired.",
    "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: "
    "sk-proj-********************************wXyZ. You can find your API key at "
    "https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', 'param': None, "
    "'code': 'invalid_api_key'}}",
    "anthropic.AuthenticationError: Error code: 401 - {'type': 'error', 'error': {'type': "
    "'authentication_error', 'message': 'invalid x-api-key'}}",
    "KeyError: '<<env>>'",
    "django.core.exceptions.ImproperlyConfigured: The SECRET_KEY setting must not be empty.",
    "ValueError: token must be a string, not None",
    "raise ValueError(\"API key not set: export <<env>> first\")",
    "Error from server (NotFound): secrets \"db-creds\" not found",
    "WWW-Authenticate: Bearer realm=\"api\", error=\"invalid_token\", error_description=\"The access token "
    "expired\"",
    "{\"error\": \"invalid_grant\", \"error_description\": \"Token has been expired or revoked.\"}",
    "{\"access_token\": \"<token>\", \"token_type\": \"Bearer\", \"expires_in\": 3600, \"scope\": \"read\"}",
    "{\"access_token\": \"...\", \"refresh_token\": \"...\", \"expires_in\": 3600}",
    "Load key \"/home/<<user>>/.ssh/id_rsa\": invalid format",
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n@         WARNING: UNPROTECTED PRIVATE KEY FILE!"
    "          @\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nPermissions 0644 for "
    "'/home/<<user>>/.ssh/id_ed25519' are too open.",
    "npm ERR! code E401\nnpm ERR! Unable to authenticate, need: Basic realm=\"GitHub Package Registry\"",
    "Error: Cannot perform an interactive login from a non TTY device",
    "gpg: signing failed: Inappropriate ioctl for device (the passphrase prompt can't open)",
    "HTTP 403: Resource not accessible by integration (the GITHUB_TOKEN lacks the `contents: write` permission).",
    "JsonWebTokenError: invalid signature",
    "TokenExpiredError: jwt expired",
    "PASS: tests/test_auth.py::test_login",
    "--- PASS: TestLogin (0.00s)\n--- PASS: TestLogout (0.01s)\nPASS\nok  \tgithub.com/acme/auth\t0.012s",
    "$ pwd\n/home/<<user>>/projects/app",
    "pwd: /home/<<user>>/projects/app",
    "PWD: /Users/<<user>>/code",
]

T["pem_prose"] = [
    "A PEM private key starts with -----BEGIN PRIVATE KEY----- on its own line, followed by base64-encoded lines, "
    "and ends with -----END PRIVATE KEY-----.",
    "If the file starts with -----BEGIN OPENSSH PRIVATE KEY----- instead of -----BEGIN RSA PRIVATE KEY-----, "
    "convert it with ssh-keygen -p -m PEM -f <<path>> and try again.",
    "The 'invalid format' error usually means the -----BEGIN RSA PRIVATE KEY----- line lost its newline when you "
    "pasted the key into the CI variable, so check that the variable keeps line breaks.",
    "-----BEGIN ENCRYPTED PRIVATE KEY----- means the key is protected with a passphrase, and you will be asked for "
    "it when the server starts.",
    "Look for the header: -----BEGIN PGP PRIVATE KEY BLOCK----- is a secret key export, while -----BEGIN PGP "
    "PUBLIC KEY BLOCK----- is safe to share with anyone who asks.",
    "Paste only the public key. If what you copied begins with -----BEGIN OPENSSH PRIVATE KEY----- then stop, "
    "that is the private half and it should never leave your machine.",
    "```\n-----BEGIN PRIVATE KEY-----\n<your private key here>\n-----END PRIVATE KEY-----\n```",
    "```\n-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n```",
]

T["urls"] = [
    "The webhook URL looks like https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX "
    "and you get it from the app's Incoming Webhooks page.",
    "`git remote set-url origin https://USERNAME:TOKEN@github.com/<<user>>/app.git`",
    "`https://oauth2:${GITLAB_TOKEN}@gitlab.com/group/project.git`",
    "`https://x-access-token:${{ secrets.GITHUB_TOKEN }}@github.com/org/repo`",
    "`DATABASE_URL=postgres://<user>:<password>@<host>:5432/<db>`",
    "`mongodb+srv://<username>:<password>@cluster0.example.mongodb.net/`",
    "`http://user:pass@proxy.local:8080` is how the proxy URL carries credentials.",
    "Discord webhooks have the form https://discord.com/api/webhooks/{id}/{token}.",
    "The SAS URL ends in `?sv=...&sig=...`; the `sig` part is what grants access.",
]

T["said_near"] = [
    "Please tell me the password is not stored in that spreadsheet.",
    "The password for <<user>> is e-mailed to them after signup.",
    "The password to the guest network is on the whiteboard.",
    "The password of the admin account is managed by IT.",
    "The password for v2 is the same as for v1.",
    "Your password is 8+ chars, right?",
    "The password is a 12-character string generated at install time.",
    "The password was: incorrect, according to the log.",
    "The password you entered is incorrect.",
    "The password has been reset; check your inbox.",
    "The password will be sent separately.",
    "The password would be visible in `ps` if passed as an argument.",
    "The passphrase is four random words from the EFF list.",
    "The passphrase is optional but protects your key if the file is stolen.",
    "The passcode is 6 digits.",
    "The API key is 40 hex characters.",
    "The API key for staging is in <<place>>; the production one is in <<place>>.",
    "The API key was revoked yesterday, so the 401s are expected.",
    "The API key is per-project, not per-user.",
    "API key = the string you copy from the dashboard",
    "password = the one you chose at signup",
    "PW: see <<place>>",
    "pw: ask <<name>>",
    "The pw is on the sticky note, which is exactly the problem.",
    "with password authentication disabled, only keys work",
    "Set PasswordAuthentication no in sshd_config once your key works.",
    "PermitRootLogin prohibit-password",
    "```\n# /etc/ssh/sshd_config\nPermitRootLogin prohibit-password\nX11Forwarding no\n"
    "PasswordAuthentication no\nPubkeyAuthentication yes\n```",
    "Use password123 and you'll be in the next breach list.",
    "Password1! meets every composition rule and is still one of the most common passwords.",
    "A password like Summer2024! passes the complexity check but is guessed in minutes.",
    "Passwords such as Qwerty123 are the first ones attackers try.",
    "The password policy is: 12-64 characters, no composition rules.",
    "The password hash looks like $2b$12$ followed by 53 characters.",
    "The password field is masked with •••• as you type.",
    "The password manager is <<mgr>>; the vault is called Engineering.",
    "The password reset token is single-use and expires after 1 hour.",
    "The password change takes effect at next login.",
    "Password reuse across <<svc>> and <<svc>> is how the account was taken over.",
    "The password isn't the problem: the account is locked after 5 failed attempts.",
    "the password's fine, it's the username that's wrong",
    "the password's length matters more than its symbols",
    "The wifi password is WPA2 protected.",
    "Our password is changed every quarter by the office manager.",
    "The new password is SHA-512 crypt in /etc/shadow.",
    "The password is bcrypt(12) hashed.",
    "The password is UTF-8 encoded before hashing.",
    "The PIN is 4 digits and the PUK is 8.",
    "Send the password to <<name>>@example.com, not to the whole team.",
    "Forward the password to it-support@example.org only through the vault's share link.",
    "Reset the password to the default, then change it at first login.",
    "The default password for the pi user was raspberry, which is why Raspberry Pi OS dropped it.",
    "The default password is admin, so change it before you expose the port.",
    "The initial admin password is in /var/jenkins_home/secrets/initialAdminPassword.",
    "Log in with password authentication, or better, with a key.",
    "The API key to authenticate is sent in the x-api-key header.",
    "Password: anything (dev mode accepts any password)",
    "In dev mode, username: admin, password: anything",
    "Password: whatever you like, it's a local test instance.",
    "This too shall pass: every deadline does.",
]
T["more_config"] = [
    "```yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\ndata:\n"
    "  password: <base64-encoded-password>\n```",
    "```yaml\nservices:\n  db:\n    image: postgres:16\n    environment:\n"
    "      - POSTGRES_PASSWORD=${POSTGRES_PASSWORD:-changeme}\n```",
    "```yaml\nservices:\n  db:\n    image: postgres\n    environment:\n      POSTGRES_PASSWORD: example\n```",
    "```properties\nspring.datasource.username=${DB_USER}\nspring.datasource.password=${DB_PASSWORD}\n```",
    "```hcl\nresource \"aws_db_instance\" \"main\" {\n  username = var.db_username\n  password = var.db_password\n}\n```",
    "```hcl\nvariable \"db_password\" {\n  type      = string\n  sensitive = true\n}\n```",
    "```yaml\nansible_become_password: \"{{ vault_become_pass }}\"\n```",
    "```sql\nCREATE USER app WITH PASSWORD '<password>';\n```",
    "```sql\nCREATE USER 'app'@'%' IDENTIFIED BY '<strong-password>';\n```",
    "```sql\nALTER USER postgres PASSWORD 'newpassword';\n```",
    "Each line of ~/.pgpass is hostname:port:database:username:password, and the file must be chmod 0600.",
    "`token = secrets.token_urlsafe(32)` is enough for a session token.",
    "`if password == confirm_password:` should use `hmac.compare_digest` instead.",
    "`const [password, setPassword] = useState(\"\")`",
    "<input type=\"password\" placeholder=\"Enter your password\" required>",
    "Open http://127.0.0.1:8888/lab?token=<token> in your browser; the token is printed in the terminal.",
    "`gh auth status` prints:\n```\ngithub.com\n  ✓ Logged in to github.com account <<name>> (keyring)\n"
    "  - Active account: true\n  - Git operations protocol: https\n"
    "  - Token: gho_************************************\n  - Token scopes: 'gist', 'read:org', 'repo'\n```",
    "```\n$ aws configure\nAWS Access Key ID [None]: \nAWS Secret Access Key [None]: \n"
    "Default region name [None]: eu-west-1\n```",
    "```\n$ aws configure list\n      Name                    Value             Type    Location\n"
    "      ----                    -----             ----    --------\n   profile                <not set>"
    "             None    None\naccess_key     ****************ABCD shared-credentials-file\n"
    "secret_key     ****************wxyz shared-credentials-file\n```",
    "```\n$ chage -l <<user>>\nLast password change\t\t\t\t\t: Jan 01, 2024\nPassword expires\t\t\t\t\t: never\n"
    "Password inactive\t\t\t\t\t: never\n```",
    "`passwd -S <<user>>` prints `<<user>> P 01/01/2024 0 99999 7 -1 (Password set, SHA512 crypt.)`",
    "`sudo passwd <<user>>` sets the password for that user interactively.",
    "`htpasswd -c .htpasswd <<user>>` creates the file and asks for the password twice.",
    "Token: ****************abcd",
    "API Key: sk-...abcd (created <<year>>-01-15)",
    "Your token: (hidden, click to reveal)",
    "Generated token: shown once above; copy it now.",
    "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
    "secret: !Ref DbSecret",
    "Secret\n: something kept hidden from others",
    "Passphrase: correct horse battery staple (the xkcd example, don't use it)",
    "Password: N/A\nPassword: none\nPassword: -\nPassword: (blank)",
    "- `<<env>>`: your key from the dashboard\n- `DEBUG`: set to 1 for verbose logs",
    "| Name | Purpose |\n|---|---|\n| `<<env>>` | authenticates the API calls |\n| `LOG_LEVEL` | info or debug |",
]
T["said_near"] = [t.replace("<<user>>", "<<name>>") for t in T["said_near"]]

T["dumps"] = [
    "```\n$ env | sort\nHOME=/home/<<user>>\nLANG=en_US.UTF-8\nOLDPWD=/home/<<user>>\nPWD=/workspaces/app\n"
    "SHELL=/bin/bash\nSUDO_ASKPASS=/usr/bin/ssh-askpass\nGIT_ASKPASS=/usr/lib/git-core/git-gui--askpass\n"
    "TERM=xterm-256color\n```",
    "```\nPWD=/workspace\nHOSTNAME=3f2a9c1b7d4e\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin\n```",
    "```\nGITHUB_TOKEN=***\nACTIONS_RUNTIME_TOKEN=***\nRUNNER_TEMP=/home/runner/work/_temp\n```",
    "```\n$ kubectl get secrets\nNAME                  TYPE                                  DATA   AGE\n"
    "default-token-7x2kq   kubernetes.io/service-account-token   3      10d\n"
    "db-creds              Opaque                                2      3d\n```",
    "```\n$ kubectl describe secret db-creds\nName:         db-creds\nType:  Opaque\n\nData\n====\n"
    "password:  16 bytes\nusername:  5 bytes\n```",
    "```\n$ vault kv get secret/db\n====== Data ======\nKey         Value\n---         -----\n"
    "password    <sensitive>\nusername    app\n```",
    "```\nRun echo \"${{ secrets.DEPLOY_TOKEN }}\" | wc -c\n***\n41\n```",
    "`npm config set //registry.npmjs.org/:_authToken=${NPM_TOKEN}`",
    "Your `.npmrc` should contain `//registry.npmjs.org/:_authToken=${NPM_TOKEN}` and nothing else.",
    "```ini\n[pypi]\nusername = __token__\npassword = <your PyPI token>\n```",
    "```ini\n[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc...\n```",
    "```xml\n<server>\n  <id>github</id>\n  <username>${env.MAVEN_USERNAME}</username>\n"
    "  <password>${env.MAVEN_PASSWORD}</password>\n</server>\n```",
    "API_KEY: Required.\nBASE_URL: Optional.",
    "api_key: Required.",
    "secret_key: used to sign cookies; keep it out of git",
    "SECRET_KEY: a long random string, see below",
    "client_secret: from the OAuth app page",
    "access_token: returned by the /token endpoint",
    "refresh_token: stored server-side only",
    "Token: <|endoftext|>",
    "token: '<|im_start|>'",
    "token: 50256",
    '{"token_id": 995, "token": "world", "logprob": -0.01}',
    "Token: ▁New\nToken: ▁York",
    "passkey: stored on your phone, synced through your account",
    "Passkeys: the end of passwords?",
    "Trespass: prohibited",
    "ByPass: enabled",
    "dbPass: see .env",
    "Game tip: the password for the next level is stored in a file called readme in the home directory.",
]

T["docs_and_code"] = [
    "`password` (string, required): The user's password.",
    "- `secret`: The signing secret from the dashboard.\n- `token`: Your personal access token.",
    "- `secret`: Required.\n- `timeout`: Optional, defaults to 30.",
    ":param password: the user's password\n:param api_key: API key for the service.\n:type password: str",
    ":param token: Token to use.\n:param secret: Shared secret.\n:returns: a session token",
    "Args:\n    password: The plaintext password.\n    token: Optional bearer token.\n\nReturns:\n    token: a JWT.",
    "Args:\n    secret: HMAC key.\n    api_key: OpenAI key.\n\nRaises:\n    InvalidToken: if the token is expired.",
    "password (str): Password to use",
    "password: SecretStr\ntoken: Annotated[str, Header()]\napi_key: APIKey = Depends(get_api_key)",
    "mutation { login(email: \"a@b.c\", password: \"...\") { token } }",
    "```yaml\nsecuritySchemes:\n  bearerAuth:\n    type: http\n    scheme: bearer\n    bearerFormat: JWT\n"
    "  apiKey:\n    type: apiKey\n    in: header\n    name: X-API-Key\n```",
    "Click 'Forgot password' and then 'Show password' to check what you typed.",
    "Never say \"the password is\" out loud in a coffee shop.",
    "When the prompt says \"Password:\", type it and press Enter; nothing is echoed.",
    "Password: (nothing shows as you type, that's normal)",
    "```\n$ ssh <<user>>@server\n<<user>>@server's password: \nPermission denied, please try again.\n```",
    "```\n$ ssh <<user>>@server\n<<user>>@server's password: \nWelcome to Ubuntu 22.04.3 LTS\n```",
    "```\n$ ssh-add ~/.ssh/id_ed25519\nEnter passphrase for /home/<<user>>/.ssh/id_ed25519: \n"
    "Identity added: /home/<<user>>/.ssh/id_ed25519 (<<user>>@laptop)\n```",
    "```\n$ mysql -u root -p\nEnter password: \nWelcome to the MySQL monitor.  Commands end with ; or \\g.\n```",
    "```\nEnter new UNIX password: \nRetype new UNIX password: \npasswd: password updated successfully\n```",
    "```\n$ docker login\nUsername: <<user>>\nPassword: \nLogin Succeeded\n```",
    "```\n$ git push\nUsername for 'https://github.com': <<user>>\nPassword for 'https://<<user>>@github.com': \n"
    "remote: Support for password authentication was removed on August 13, 2021.\n```",
    "```\n$ psql -h db -U app\nPassword for user app: \npsql (16.1)\nType \"help\" for help.\n```",
    "```\n$ openssl rsa -in key.pem -out key.unencrypted.pem\nEnter pass phrase for key.pem:\nwriting RSA key\n```",
    "`jwt.encode(payload, SECRET_KEY, algorithm=\"HS256\")`",
    "`jwt.encode(payload, 'secret', algorithm='HS256')` is fine for a test, never for production.",
    "`jwt.sign(payload, process.env.JWT_SECRET, { expiresIn: '1h' })`",
    "app.config['SECRET_KEY'] = 'you-will-never-guess'",
    "SECRET_KEY = os.environ.get('SECRET_KEY') or 'you-will-never-guess'",
    "app.use(session({ secret: 'keyboard cat', resave: false, saveUninitialized: true }))",
    "The express-session README uses `secret: 'keyboard cat'`; replace it with a real random value.",
    "secret_key_base: <%= ENV[\"SECRET_KEY_BASE\"] %>",
    "APP_KEY=base64:...\nAPP_DEBUG=false",
    "Run `php artisan key:generate` to fill in APP_KEY.",
    "APP_SECRET=%env(APP_SECRET)%",
    "jwt.secret=${JWT_SECRET:changeit}",
    "\"ConnectionStrings\": { \"Default\": \"Server=.;Database=App;User Id=sa;Password=<YourStrong@Passw0rd>;\" }",
    "docker run -e \"ACCEPT_EULA=Y\" -e \"MSSQL_SA_PASSWORD=<YourStrong@Passw0rd>\" -p 1433:1433 "
    "mcr.microsoft.com/mssql/server:2022-latest",
    "MSSQL_SA_PASSWORD=yourStrong(!)Password",
    "postgresql://user:secret@localhost/mydb",
    "The password is `${{ secrets.DB_PASSWORD }}` in the workflow.",
    "the password is $DB_PASSWORD in the script and %DB_PASSWORD% on Windows",
    "the password is {{password}} in the template",
    "the password is <password> in every example, so fill it in",
    "The password is 8-16 characters.",
    "The password is 6-digit numeric on the old keypad.",
    "The password is one-time: it stops working after you use it.",
    "The API key is 'sk-' followed by 48 characters.",
    "Rumpelstiltskin: the secret was his name.",
    "The Secret of NIMH (1982) was Don Bluth's first feature.",
    "Your seed phrase is 12 or 24 words; write it on paper, not in a notes app.",
    "The private key is a 256-bit number; the address is derived from the public key.",
    "Private key: 64 hex characters, never shared.",
]

T["everyday"] = [
    "Unlock the secret to glowing skin: hydration.",
    "The Secret to Success: 5 Habits of Highly Effective People",
    "Secret #3: Hydration.",
    "Subject: Password Reset Request\n\nHi <<name>>,\nYour password has been reset. Your temporary password is valid "
    "for 24 hours.",
    "Your one-time password (OTP) is valid for 10 minutes.",
    "Agent: The password is... swordfish.",
    "The password, she realized, was the date of her mother's birth: 03/14/1962.",
    "In cryptography, a secret key is shared by both parties, whereas a private key belongs to one.",
    "Kerckhoffs's principle: a system should be secure even if everything except the key is public.",
    "Let k be the secret key and m the message; then c = E(k, m).",
    "```python\nimport random\n\nsecret = random.randint(1, 100)\nguess = None\nwhile guess != secret:\n"
    "    guess = int(input(\"Guess: \"))\n```",
    "```python\nwords = ['python', 'hangman', 'secret']\nsecret_word = random.choice(words)\n```",
    "secret = 'python'  # the word the player has to guess",
    "secret = \"apple\"\nguesses = 0",
    "```python\npassword = input('Enter password: ')\nif password == 'letmein':\n    print('Access granted')\n```",
    "The secret word is CRANE.",
    "secret: CRANE",
    "Here's a simple password generator:\n```python\nimport secrets, string\n"
    "alphabet = string.ascii_letters + string.digits\n"
    "password = ''.join(secrets.choice(alphabet) for i in range(16))\nprint(f\"Your password: {password}\")\n```",
    "```python\ndef check_strength(password):\n    if len(password) < 8:\n        return 'Weak'\n```",
    "Password regex: ^(?=.*[A-Z])(?=.*\\d)(?=.*[@$!%*?&])[A-Za-z\\d@$!%*?&]{8,}$",
    "```yaml\nvalidation:\n  password: \"^(?=.*[A-Z])(?=.*\\\\d).{12,}$\"\n```",
    "password: ^(?=.*[A-Z]).{8,}$",
    "const isValid = /^(?=.*\\d)(?=.*[a-z]).{8,}$/.test(password);",
    "Token: 1 token ≈ 4 chars",
    "token = 'hello world'",
    "secret: \"The cake is a lie\"",
    "My password hint: first pet + year",
    "Password hint: the usual",
    "The secret is out: we're engaged!",
    "The secret's out: we're moving to Lisbon.",
    "our secret: we eat dessert first.",
    "Password protected: Yes",
    "`qpdf --decrypt --password=YOUR_PASSWORD in.pdf out.pdf` removes the password from a PDF you own.",
    "`zip -P <password> archive.zip file.txt` puts the password in your shell history; use `zip -e` instead.",
    "`openssl enc -aes-256-cbc -pbkdf2 -in file.txt -out file.enc -pass env:PASSWORD`",
    "`gpg --batch --passphrase-file pass.txt -c file`",
    "`wget --user=USER --password=PASS https://example.com/file`",
    "`PGPASSWORD=$PGPASS pg_dump -h db -U app app > dump.sql`",
    "`keytool -list -keystore cacerts -storepass changeit`: changeit is the default, and everyone knows it.",
    "`ansible-vault encrypt secrets.yml --vault-password-file ~/.vault_pass`",
    "Tokens per second: 42.5",
    "API key: 🔑 (in 1Password)",
    "Passcode: same as the garage door",
    "The Wi-Fi name is CoffeeShop_Guest and the password is on the receipt.",
    "Network: HomeNet-5G\nPassword: on the sticker",
    "password: printed under the router",
    "secret: printed on the card",
    "Your password was last changed 94 days ago.",
    "password_changed_at: <<year>>-01-01T10:00:00Z\ntoken_expires_at: <<year>>-01-01T11:00:00Z",
    "expires_in: 3600\ntoken_type: Bearer",
    "grant_type=password&username=<<user>>&password=<password>",
    "grant_type=client_credentials&client_id=my-app&client_secret=<client-secret>",
    "The OAuth 'password' grant is deprecated in OAuth 2.1.",
    "token_url: https://github.com/login/oauth/access_token\nauthorize_url: https://github.com/login/oauth/authorize",
    "token_endpoint: https://login.microsoftonline.com/common/oauth2/v2.0/token",
    "secret: https://vault.internal/v1/secret/data/app",
    "The secret ingredient? Love. And 2 tbsp of butter.",
    "Secret: 11 herbs & spices.",
    "Top secret: Area 51.",
    "Password manager: 1Password",
    "Token: 1 of 3",
    "token: v2",
    "Token: JWT (RS256)",
    "token: HS256",
    "Secret: base64",
    "Token: base64url-encoded",
]

OPENERS = ["", "", "", "Sure! ", "Good question. ", "Here's a quick summary.\n\n", "Short answer: ", "A few points:\n\n",
           "Great question! ", "To answer your question: ", "Okay, so ", "In short: ", "Yes. ", "No. ", "Honestly, ",
           "From the docs: ", "My notes:\n", "> ", "- ", "1. ", "TL;DR: ", "Re: your question about passwords. "]
CLOSERS = ["", "", "", "", " Let me know if you have other questions!", " Hope this helps.",
           "\n\nWant me to go into more detail?", " 🙂", " (See the docs for more.)", "\n\nAnything else?",
           " Does that make sense?", "\n\n---\n\nLet me know how it goes."]

_SLOT = re.compile(r"<<([a-z_0-9]+)>>")


def _fill(rng: random.Random, template: str) -> str:
    return _SLOT.sub(lambda m: rng.choice(F[m.group(1)]), template)


def templates() -> list[str]:
    return [template for group in T.values() for template in group]


def messages(seed: int = 31, count: int = 6000) -> list[str]:
    """``count`` distinct messages: the four named cases, every template at least once,
    then one to three filled templates under an opener and before a closer."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()

    def add(message: str) -> None:
        if message not in seen:
            seen.add(message)
            out.append(message)

    for message in NAMED_CASES:
        add(message)
    for template in templates():
        add(_fill(rng, template))
    groups = list(T.values())
    while len(out) < count:
        blocks = [_fill(rng, rng.choice(rng.choice(groups))) for _ in range(rng.choice((1, 1, 2, 2, 3)))]
        add(rng.choice(OPENERS) + rng.choice(("\n\n", "\n", " ")).join(blocks) + rng.choice(CLOSERS))
    return out


def false_redactions(texts: list[str]) -> list[tuple[str, str, dict[str, int]]]:
    """Each message the redactor changed (all of these hold no secret), as (message, what
    it became, the kinds counted). Redacted through ``redact_into``, as ingest does."""
    from memctl.redact import redact_into

    changed = []
    for text in texts:
        found: dict[str, int] = {}
        cleaned = redact_into(text, found)
        if found or cleaned != text:
            changed.append((text, cleaned, found))
    return changed


def count_redactions(changed: list[tuple[str, str, dict[str, int]]]) -> int:
    return sum(max(1, sum(found.values())) for _, _, found in changed)


def main() -> int:
    texts = messages()
    changed = false_redactions(texts)
    print(f"{len(texts)} messages, {count_redactions(changed)} false redactions")
    for text, cleaned, found in changed:
        print(f"--- {found}\n{text}\n=>\n{cleaned}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
