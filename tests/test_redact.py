"""Redaction: every common secret kind, the values a trusted .contextrc sets, and how often the
rules fire on real transcripts (false positives).

The samples are built at run time from pieces, so no secret-looking literal sits in the repository
(secret scanners, push protection). Each is shaped like the real thing (lengths, alphabets).
"""

import json
import os
import random
import re
import shutil
import sqlite3
import string
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxd.memory.text.redact import Redactor, from_config, looks_secret
from ctxdtest import ctxd

REAL = Path(__file__).parent / "contracts" / "real"
_rng = random.Random(12)


def rand(n, alphabet=string.ascii_letters + string.digits):
    return "".join(_rng.choice(alphabet) for _ in range(n))


B64 = string.ascii_letters + string.digits + "+/"
STRIPE_LIVE = "sk_" + "live_" + rand(24)
STRIPE_TEST = "sk_" + "test_" + rand(24)
STRIPE_RESTRICTED = "rk_" + "live_" + rand(24)
AWS_ID = "AK" + "IA" + rand(16, string.ascii_uppercase + string.digits)
AWS_STS_ID = "AS" + "IA" + rand(16, string.ascii_uppercase + string.digits)
AWS_SECRET = rand(40, B64)
HF = "hf" + "_" + rand(34)
GITLAB = "gl" + "pat-" + rand(20, string.ascii_letters + string.digits + "_-")
NPM = "np" + "m_" + rand(36)
SLACK_BOT = "xo" + "xb-" + rand(12, string.digits) + "-" + rand(13, string.digits) + "-" + rand(24)
SLACK_USER = "xo" + "xp-" + rand(12, string.digits) + "-" + rand(24)
SLACK_HOOK = ("https://hooks." + "slack.com/services/T" + rand(8, string.ascii_uppercase + string.digits) + "/B"
              + rand(10, string.ascii_uppercase + string.digits) + "/" + rand(24))


def _b64url(obj):
    import base64

    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


JWT = (_b64url({"alg": "HS256", "typ": "JWT"}) + "." + _b64url({"sub": "1234567890", "name": "Ada", "iat": 1516239022})
       + "." + rand(43, string.ascii_letters + string.digits + "-_"))
PEM_BODY = "\n".join(rand(64, B64) for _ in range(6))
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END " + "RSA PRIVATE KEY-----"
KEY_ID = rand(40, "0123456789abcdef")
SERVICE_ACCOUNT = json.dumps({
    "type": "service_account", "project_id": "demo-project", "private_key_id": KEY_ID,
    "private_key": "-----BEGIN " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END " + "PRIVATE KEY-----\n",
    "client_email": "ci@demo-project.iam.gserviceaccount.com", "client_id": "1234567890"}, indent=2)
PASSWORD = "Tr0ub4dor&3x"


# (text, {kind: count}, secrets that must be gone, text that must stay)
CASES = [
    ("charge with " + STRIPE_LIVE + " now", {"stripe-key": 1}, [STRIPE_LIVE], ["charge with ", " now"]),
    ("STRIPE_KEY is " + STRIPE_TEST, {"stripe-key": 1}, [STRIPE_TEST], []),
    ("restricted " + STRIPE_RESTRICTED, {"stripe-key": 1}, [STRIPE_RESTRICTED], []),
    ("id " + AWS_ID + " and " + AWS_STS_ID, {"aws-access-key": 2}, [AWS_ID, AWS_STS_ID], []),
    ("[default]\naws_access_key_id = " + AWS_ID + "\naws_secret_access_key = " + AWS_SECRET + "\n",
     {"aws-access-key": 1, "aws-secret-key": 1}, [AWS_ID, AWS_SECRET], ["aws_secret_access_key = "]),
    ("export AWS_SECRET_ACCESS_KEY=" + AWS_SECRET, {"aws-secret-key": 1}, [AWS_SECRET], ["AWS_SECRET_ACCESS_KEY="]),
    ('{"SecretAccessKey": "' + AWS_SECRET + '"}', {"aws-secret-key": 1}, [AWS_SECRET], ['"SecretAccessKey": "']),
    ("HF_TOKEN=" + HF, {"huggingface-token": 1}, [HF], ["HF_TOKEN="]),
    ("git clone https://oauth2:" + GITLAB + "@gitlab.com/g/p.git", {"gitlab-token": 1}, [GITLAB], []),
    ("Authorization: " + JWT, {"jwt": 1}, [JWT, JWT.split(".")[2]], ["Authorization: "]),
    ("curl -X POST -d @msg.json " + SLACK_HOOK, {"slack-webhook": 1}, [SLACK_HOOK.rsplit("/", 1)[1]],
     ["curl -X POST -d @msg.json "]),
    ("bot " + SLACK_BOT + " user " + SLACK_USER, {"slack-token": 2}, [SLACK_BOT, SLACK_USER], []),
    ("//registry.npmjs.org/:_authToken=" + NPM, {"npm-token": 1}, [NPM], []),
    (SERVICE_ACCOUNT, {"private-key": 1, "private-key-id": 1}, [KEY_ID, PEM_BODY.split("\n")[0]],
     ['"client_email": "ci@demo-project.iam.gserviceaccount.com"']),
    ("key:\n" + PEM + "\nend", {"private-key": 1}, [PEM_BODY.split("\n")[3]], ["key:\n", "\nend"]),
    ("a truncated paste: -----BEGIN " + "PRIVATE KEY-----\n" + PEM_BODY[:200], {"private-key": 1},
     [PEM_BODY[:60]], ["a truncated paste: "]),
    ("password=" + PASSWORD + " ok", {"password": 1}, [PASSWORD], ["password=", " ok"]),
    ("DB_PASSWORD: " + PASSWORD, {"password": 1}, [PASSWORD], ["DB_PASSWORD: "]),
    ('{"password": "' + PASSWORD + '", "user": "ada"}', {"password": 1}, [PASSWORD], ['"user": "ada"']),
    ("PASSWORD: x", {"password": 1}, [": x"], []),
    ('client_secret = "' + rand(32) + '"', {"secret": 1}, [], ['client_secret = "[REDACTED:secret]"']),
    ("SECRET=" + rand(20), {"secret": 1}, [], ["SECRET=[REDACTED:secret]"]),
    ("token=" + rand(30) + "&user=ada", {"token": 1}, [], ["token=[REDACTED:token]&user=ada"]),
    ('api_key="' + rand(32) + '"', {"api-key": 1}, [], ['api_key="[REDACTED:api-key]"']),
    ("openai.api_key = '" + rand(20) + "'", {"api-key": 1}, [], ["openai.api_key = '[REDACTED:api-key]'"]),
    ("postgres://app:" + PASSWORD.replace("&", "x") + "@db.internal:5432/prod", {"password": 1},
     [PASSWORD.replace("&", "x")], ["postgres://app:[REDACTED:password]@db.internal:5432/prod"]),
]


@pytest.mark.parametrize("text,counts,gone,kept", CASES, ids=[f"{i}-{next(iter(c[1]))}" for i, c in enumerate(CASES)])
def test_each_kind_is_redacted(text, counts, gone, kept):
    out, got = Redactor()(text)
    assert got == counts, out
    for secret in gone:
        assert secret not in out
    for part in kept:
        assert part in out
    for kind in counts:
        assert f"[REDACTED:{kind}]" in out
    assert Redactor()(out) == (out, {})  # redacting twice is redacting once


@pytest.mark.parametrize("text,kind,secret", [  # (split like the samples below: see the module doc)
    ("key sk-" + "abcdefghijklmnopqrstuvwx1234", "openai-key", "sk-" + "abcdefghijklmnopqrstuvwx1234"),
    ("key sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12", "openai-key", "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12"),
    ("anthropic sk-ant-" + "api03-abcdefghijklmnopqrstuv", "anthropic-key", "sk-ant-" + "api03-abcdefghijklmnopqrstuv"),
    ("gh ghp_" + "a" * 36, "github-token", "ghp_" + "a" * 36),
    ("pat github_pat_" + "11ABCDEFG0123456789_abcdefghij", "github-token", "github_pat_" + "11ABCDEFG0123456789_abcdefghij"),
    ("aws AK" + "IAIOSFODNN7EXAMPLE here", "aws-access-key", "AK" + "IAIOSFODNN7EXAMPLE"),
    ("slack xo" + "xb-1234567890-abcdefghij", "slack-token", "xo" + "xb-1234567890-abcdefghij"),
    ("g AI" + "zaSyA1234567890abcdefghijklmnopqrstuv", "google-api-key", "AI" + "zaSyA1234567890abcdefghijklmnopqrstuv"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc", "bearer", "eyJhbGciOiJIUzI1NiJ9.e30.abc"),
    ("-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END " + "OPENSSH PRIVATE KEY-----",
     "private-key", "b3BlbnNzaC1rZXk"),
    ("db postgres://admin:s3cr3t@db.local:5432/x", "password", "s3cr3t"),
])
def test_redaction_table(text, kind, secret):
    out, counts = Redactor()(text)
    assert secret not in out and f"[REDACTED:{kind}]" in out and counts == {kind: 1}


def test_redaction_leaves_ordinary_text_and_is_configurable():
    plain = "budget at most 25,000 USD; see https://example.com/a:b and sk-short, AKIA lower"
    assert Redactor()(plain) == (plain, {})
    r = from_config({"redact": {"disable": ["password"], "patterns": [{"name": "itk", "regex": "itk_[0-9a-f]{8}"}]}})
    out, counts = r("u https://a:b@h itk_deadbeef")
    assert out == "u https://a:b@h [REDACTED:itk]" and counts == {"itk": 1}


# -- one realistic (fake) sample of every common kind: the raw value never survives ---------------
# Each is shaped like the real thing (prefix, length, alphabet); gitleaks' rules (ctxd.memory.text.gitleaks)
# and ctxd's own (ctxd.memory.text.redact.BUILTIN) share the work.

AN = string.ascii_letters + string.digits
UP = string.ascii_uppercase + string.digits


def b64(s):
    import base64

    return base64.b64encode(s.encode()).decode()


HEX = "0123456789abcdef"


def _jwt():
    return _b64url({"alg": "HS256", "typ": "JWT"}) + "." + _b64url({"sub": "42", "iat": 1516239022}) + "." + rand(43, AN + "-_")


def _pem(label):
    body = "\n".join(rand(64, B64) for _ in range(5))
    return body, f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


PW = rand(6) + "#" + rand(6)  # a password with a symbol
PW_AT = "p@ss/" + rand(8)  # "@" and "/" inside the userinfo
GHP = "gh" + "p_" + rand(36)
_rsa_body, RSA = _pem("RSA " + "PRIVATE KEY")
_pgp_body = "\n".join(rand(64, B64) for _ in range(5))
PGP = ("-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n" + _pgp_body + "\n=" + rand(4, B64)
       + "\n-----END PGP " + "PRIVATE KEY BLOCK-----")
K_AWS_SECRET = rand(40, B64)
STS = "IQoJb3JpZ2luX2Vj" + rand(300, B64)
DJANGO = "django-insecure-" + rand(10) + "!x@" + rand(20) + "^&*" + rand(8)
SA_KEY_ID = rand(40, HEX)

# (name, text, the secret values that must be gone)
KINDS = [
    ("anthropic", "key " + "sk-" + "ant-api03-" + (a := rand(93, AN + "-_")) + "AA", [a]),
    ("openai-project", "OPENAI " + "sk-" + "proj-" + (a := rand(120, AN + "-_")), [a]),
    ("stripe-live", "sk_" + "live_" + (a := rand(24)), [a]),
    ("stripe-restricted", "rk_" + "live_" + (a := rand(24)), [a]),
    ("stripe-webhook", "whsec_" + (a := rand(32)), [a]),
    ("github-pat", "token " + GHP, [GHP[4:]]),
    ("github-fine-grained", "github_pat_" + (a := rand(22) + "_" + rand(59)), [a]),
    ("gitlab", "gl" + "pat-" + (a := rand(20, AN + "_-")), [a]),
    ("huggingface", "hf" + "_" + (a := rand(34)), [a]),
    ("npm", "//registry.npmjs.org/:_authToken=np" + "m_" + (a := rand(36)), [a]),
    ("aws-access-key-id", "AK" + "IA" + (a := rand(16, UP)), [a]),
    ("aws-secret-named", "aws_secret_access_key = " + K_AWS_SECRET, [K_AWS_SECRET]),
    ("aws-secret-bare", "the secret is " + (a := rand(40, B64)) + " (rotate it)", [a]),
    ("aws-session-token-named", "export AWS_SESSION_TOKEN=" + STS, [STS[20:]]),
    ("aws-session-token-older", "aws_session_token = AQoDYXdzE" + (a := rand(250, B64)), [a]),
    ("aws-session-token-bare", '"SessionToken": "' + (a := "FwoGZXIvYXdz" + rand(200, B64)) + '"', [a[16:]]),
    ("slack-bot", "xo" + "xb-" + rand(12, "0123456789") + "-" + rand(13, "0123456789") + "-" + (a := rand(24)), [a]),
    ("slack-webhook", "https://hooks." + "slack.com/services/T" + rand(8, UP) + "/B" + rand(10, UP) + "/" + (a := rand(24)), [a]),
    ("google-api", "AI" + "za" + (a := rand(35, AN + "_-")), [a]),
    ("jwt", "Authorization: " + (a := _jwt()), [a.split(".")[2]]),
    ("bearer", "Authorization: Bearer " + (a := rand(40, AN + "._-")), [a]),
    ("basic-auth", "Authorization: Basic " + (a := b64("admin:" + PW)), [a]),
    ("curl-u", "curl -u admin:" + (a := rand(14)) + " https://api.example.com/v1/items", [a]),
    ("curl-u-twice", "curl -u ci:" + (a := rand(14)) + " https://x.example.com; curl -u ci:" + (b := rand(14))
     + " https://y.example.com", [a, b]),
    ("pem-rsa", "key:\n" + RSA, [_rsa_body.split("\n")[2]]),
    ("pgp-private", PGP, [_pgp_body.split("\n")[2]]),
    ("service-account", json.dumps({"type": "service_account", "private_key_id": SA_KEY_ID,
                                    "private_key": "-----BEGIN " + "PRIVATE KEY-----\n" + _rsa_body + "\n-----END "
                                    + "PRIVATE KEY-----\n"}), [SA_KEY_ID, _rsa_body.split("\n")[1]]),
    ("azure-account-key", "DefaultEndpointsProtocol=https;AccountName=demo;AccountKey=" + (a := rand(86, B64) + "==")
     + ";EndpointSuffix=core.windows.net", [a[:-2]]),
    ("azure-sas", "https://demo.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-01-01T00:00:00Z"
     "&sig=" + (a := rand(43, AN + "%") + "%3D"), [a[:-3]]),
    ("postgres-url", "postgres://app:" + (a := rand(16)) + "@db.internal:5432/prod", [a]),
    ("redis-url-no-user", "REDIS_URL=redis://:" + (a := rand(16)) + "@cache.internal:6379/0", [a]),
    ("mongodb-at-in-password", "mongodb://admin:" + PW_AT + "@cluster0.example.net/app?retryWrites=true", [PW_AT, PW_AT[5:]]),
    ("pypi", "password = pypi-" + (a := "AgEIcHlwaS5vcmc" + rand(120, AN + "-_")), [a]),
    ("twilio", "TWILIO_API_KEY_SID=SK" + (a := rand(32, HEX)), [a]),
    ("twilio-auth-token", "TWILIO_AUTH_TOKEN=" + (a := rand(32, HEX)), [a]),
    ("sendgrid", "SG." + (a := rand(22, AN + "-_") + "." + rand(43, AN + "-_")), [a]),
    ("mysql-p", "mysql -h db.internal -u root -p" + (a := rand(12)) + " prod < dump.sql", [a]),
    ("password-flag", "mytool deploy --password " + (a := rand(14)) + " --yes", [a]),
    ("password-flag-eq", "pg_dump --password=" + (a := rand(14)) + " prod", [a]),
    ("sshpass", "sshpass -p '" + (a := rand(12)) + "' ssh deploy@host", [a]),
    ("sshpass-bare", "sshpass -p " + (a := rand(12)) + " ssh deploy@host", [a]),
    ("docker-login", "docker login -u ci -p " + (a := rand(20)) + " registry.example.com", [a]),
    ("netrc", "machine api.example.com\n  login ada@example.com\n  password " + (a := rand(18)) + "\n", [a]),
    ("secret-key-env", "SECRET_KEY=" + (a := rand(50)), [a]),
    ("django-secret-key", "SECRET_KEY = '" + DJANGO + "'", [DJANGO, DJANGO[16:]]),
    ("encryption-key-hex", "ENCRYPTION_KEY=" + (a := rand(64, HEX)), [a]),
    ("signing-key-yaml", "signing_key: " + (a := rand(44, B64)), [a]),
    ("master-key-json", '{"master_key": "' + (a := rand(32)) + '"}', [a]),
    ("password-assignment", "DB_PASSWORD=" + PW, [PW]),
    ("token-assignment", "token=" + (a := rand(30)) + "&user=ada", [a]),
    ("client-secret", 'client_secret = "' + (a := rand(32)) + '"', [a]),
    ("base64-of-token", "echo -n $GH | base64\n" + (a := b64(GHP)), [a, GHP]),
    ("k8s-secret", "apiVersion: v1\nkind: Secret\ndata:\n  password: " + (a := b64(PW)) + "\n", [a]),
    ("shopify", "shpat_" + (a := rand(32, HEX)), [a]),
    ("vault-new", "VAULT_TOKEN=hvs." + (a := rand(91, AN + "_-")), [a]),
    ("vault-short", "vault login hvs." + (a := rand(24)), [a]),
    ("digitalocean", "dop_v1_" + (a := rand(64, HEX)), [a]),
    ("mailgun", "api:key-" + (a := rand(32, HEX)), [a]),
    ("age", "AGE-SECRET-KEY-1" + (a := rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")), [a]),
    ("doppler", "dp.pt." + (a := rand(43)), [a]),
    ("linear", "lin_api_" + (a := rand(40)), [a]),
    ("postman", "PMAK-" + (a := rand(24, HEX) + "-" + rand(34, HEX)), [a]),
    ("databricks", "dapi" + (a := rand(32, HEX)), [a]),
    ("pulumi", "pul-" + (a := rand(40, HEX)), [a]),
    ("grafana-sa", "glsa_" + (a := rand(32) + "_" + rand(8, HEX)), [a]),
    ("newrelic", "NEW_RELIC_API_KEY=NRAK-" + (a := rand(27, UP)), [a]),
    ("telegram", "TELEGRAM_BOT_TOKEN=" + (a := rand(10, "0123456789") + ":AA" + rand(33, AN + "_-")), [a]),
]


def _variants(text):
    """The sample as said, inside JSON text (a tool call's arguments) and inside JSON in JSON."""
    return [text, json.dumps({"cmd": text}), json.dumps({"input": json.dumps({"cmd": text})})]


@pytest.mark.parametrize("name,text,gone", KINDS, ids=[k[0] for k in KINDS])
def test_every_common_kind_is_redacted(name, text, gone):
    r = Redactor()
    for variant in _variants(text):
        out, counts = r(variant)
        assert counts and "[REDACTED:" in out, out
        for secret in gone:
            assert secret not in out, (name, out)
        if variant is not text:
            json.loads(out)  # still JSON
        assert r(out) == (out, {})  # redacting twice is redacting once


@pytest.mark.parametrize("text", [
    "token = token", "password=self.password", "def login(password: str, token: Optional[str])",
    "params: { _csrf_token: csrfToken }", "ERRORTOKEN = 59", "max_tokens: 4096", "token_type: bearer",
    "input_tokens=1234", "password: \"****\"", "PASSWORD=$DB_PASSWORD", 'password="${PASSWORD}"',
    "if token == expected:", "the api key is set in the environment", "tokenizer=tokenizer",
    "sk_test_short", "export PWD=/home/ada", "-----BEGIN PRIVATE KEY-----", "budget 25,000 USD by 2026-03-01",
    "see https://example.com/a:b@c", "kwargs: password=password, secret=secret",
    "{'HAVE_STRUCT_PASSWD_PW_PASSWD': 1, 'MAX_TOKENS': 4096}", "TOKEN_LIMIT=100",
    # the keyword-assignment rule's new names (key, credentials, salt, pwd) and the command-line rules
    "token = get_token()", "password: str", "cache_key = 'user:1234:profile'", "sort_key=lambda r: r.ts",
    'primary_key = "550e8400-e29b-41d4-a716-446655440000"', '{"key": "ArrowUp", "code": "KeyA"}',
    "env=dict(os.environ, PWD=project.root)", "salt = bcrypt.gensalt()", "credentials: base64 of user:password",
    "SECRET_KEY = os.environ['SECRET_KEY']", "api_key = settings.OPENAI_API_KEY", "KEY=value",
    "install mysql then mkdir -p /data/db", "mysql -u root -p", "docker login -u ci --password-stdin",
    "open http://localhost:3000/@vite/client", "npm view https://registry.npmjs.org:443/@types/node",
    "a basic understanding of the problem", "the machine learning password reset flow",
    "git show 3f786850e387550fdab836ed7e6dc881de23001b", "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "Authorization: Basic realm=api", "--token $GITHUB_TOKEN", "--password ****", "curl -u $USER:$PASS https://x",
    "The quarterly report is due on 2026-03-01; 25,000 USD was approved.",
])
def test_code_and_prose_are_left_alone(text):
    assert Redactor()(text) == (text, {})


def test_rules_can_be_disabled_and_added():
    r = from_config({"redact": {"disable": ["assignment", "jwt"],
                                "patterns": [{"name": "itk", "regex": r"itk_(?P<s>[0-9a-f]{8})"}]}})
    text = f"password={PASSWORD} {JWT} itk_deadbeef"
    assert r(text) == (f"password={PASSWORD} {JWT} itk_[REDACTED:itk]", {"itk": 1})
    shopify = "shpat_" + rand(32, HEX)
    # gitleaks' rules by their id, or all of them
    assert Redactor()(shopify) == ("[REDACTED:shopify-access-token]", {"shopify-access-token": 1})
    assert from_config({"redact": {"disable": ["shopify-access-token"]}})(shopify) == (shopify, {})
    assert from_config({"redact": {"disable": ["gitleaks"]}})(shopify) == (shopify, {})
    # the decoding of base64 too
    encoded = b64(GHP)
    assert from_config({"redact": {"disable": ["base64"]}})(encoded) == (encoded, {})


def test_gitleaks_patterns_translate_to_python():
    from ctxd.memory.text.gitleaks import translate

    assert translate(r"SG\.(?i)[a-z0-9=_\-\.]{66}") == r"SG\.(?i:[a-z0-9=_\-\.]{66})"  # mid-pattern flags
    assert translate(r"\b(p8e-(?i)[a-z]{4})(?:x|$)") == r"\b(p8e-(?i:[a-z]{4}))(?:x|$)"  # scoped to their group
    assert translate(r"(?i)ab[(?i)]") == r"(?i)ab[(?i)]"  # leading flags and classes are kept
    assert translate(r"pat[[:alnum:]]{14}\z") == r"pat[a-zA-Z0-9]{14}\Z"
    assert translate(r"x(?:[\x60'\s;]|\\[nr]|$)") == r"x(?:[\x60'\s;]|\\|$)"  # any escape ends a secret


def test_the_vendored_gitleaks_rules_load_whole():
    """Every rule of the vendored file translates and compiles; the file names its version and license."""
    import tomllib

    from ctxd.memory.text import gitleaks

    head = Path(gitleaks.PATH).read_text().splitlines()[:6]
    assert re.match(r"# gitleaks \d+\.\d+\.\d+ default configuration", head[0]) and "# MIT License" in head
    doc = tomllib.loads(Path(gitleaks.PATH).read_text())
    rules = gitleaks.translate_config(doc)["rules"]
    assert len(rules) == len([r for r in doc["rules"] if r.get("regex")]) > 200
    for r in rules:
        re.compile(r["regex"])


SECRETS = [STRIPE_LIVE, AWS_ID, HF, GITLAB, NPM, SLACK_BOT, SLACK_HOOK, JWT, PEM]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["password", "token", "note", "api_key", "cmd"]),
                          st.lists(st.one_of(st.sampled_from(SECRETS + ["password=" + PASSWORD, '"', "\\", "\n"]),
                                             st.text(max_size=12)), max_size=5).map(" ".join)), max_size=6))
def test_redacting_json_text_keeps_it_json(pairs):
    """Tool-call arguments are redacted as JSON text and parsed back: that must always parse."""
    data = {"args": [dict([p]) for p in pairs], "nested": json.dumps(dict(pairs))}
    text = json.dumps(data, ensure_ascii=False)
    out, _counts = Redactor()(text)
    json.loads(out)
    for secret in SECRETS:
        if secret in text:
            assert secret not in out


def test_env_values_are_redacted_literally():
    value = "q9-Zz." + rand(14)  # shaped like no known token
    r = Redactor(env={"API_TOKEN": value})
    out, counts = r(f"calling with {value} and again {value}!")
    assert out == "calling with [REDACTED:env:API_TOKEN] and again [REDACTED:env:API_TOKEN]!"
    assert counts == {"env:API_TOKEN": 2}
    # inside JSON text, where the value is escaped
    tricky = 'a"b\\c' + rand(8)
    out, _ = Redactor(env={"DB_PASSWORD": tricky})(json.dumps({"cmd": f"login {tricky}"}))
    assert json.loads(out) == {"cmd": "login [REDACTED:env:DB_PASSWORD]"}


def test_which_names_look_secret():
    assert all(map(looks_secret, ["API_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "FTP_PASSWD", "CLIENT_SECRET",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "stripe_key"]))
    assert not any(map(looks_secret, ["PATH", "NODE_ENV", "KEYBOARD", "TOKENIZERS_PARALLELISM", "DEBUG"]))


# -- end to end: a trusted .contextrc's secret never reaches the store or anything made from it -----

def _everything_written(project):
    """Every file under the project's context directory, as bytes, joined."""
    info = json.loads(ctxd("show", "--json", cwd=project).stdout)
    blobs = []
    for dirpath, _dirs, files in os.walk(info["context_dir"]):
        for f in files:
            blobs.append(Path(dirpath, f).read_bytes())
    return info["context_dir"], b"\n".join(blobs)


def test_trusted_contextrc_secret_is_redacted_end_to_end(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    token = "tk-" + rand(24)  # no pattern knows this shape: only the .contextrc can tell
    short = "abc1234"  # under 8 characters: too short to redact literally (it would hit ordinary words)
    (project / ".contextrc").write_text(f'[env]\nAPI_TOKEN = "{token}"\nSHORT_KEY = "{short}"\nMODE = "{token}x"\n')
    r = ctxd("allow", cwd=project)
    assert r.returncode == 0, r.stderr
    r = ctxd("chat", "add", f"deploy with API_TOKEN set to {token} please", cwd=project)
    assert r.returncode == 0, r.stderr
    r = ctxd("chat", "add", "--role", "tool", "-", cwd=project, input=f"$ env\nAPI_TOKEN={token}\n" + "x" * 60000)
    assert r.returncode == 0, r.stderr
    ctx_dir, written = _everything_written(project)
    assert token.encode() not in written
    assert b"[REDACTED:env:API_TOKEN]" in written
    assert os.path.exists(os.path.join(ctx_dir, "context.md"))
    assert token not in Path(ctx_dir, "context.md").read_text()
    exported = ctxd("chat", "export", cwd=project)
    assert exported.returncode == 0 and exported.stdout
    assert token not in exported.stdout and "[REDACTED:env:API_TOKEN]" in exported.stdout
    log = ctxd("chat", "log", "--json", cwd=project).stdout
    assert token not in log and short not in log  # short: never stored at all here


def test_a_hook_redacts_the_contextrc_values_too(tmp_path):
    """The AI CLI's hook (not only `ctxd chat add`): Claude Code's UserPromptSubmit, as it sends it."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    secret = "pw-" + rand(20)
    (project / ".contextrc").write_text(f'[env]\nDB_PASSWORD = "{secret}"\n')
    assert ctxd("allow", cwd=project).returncode == 0
    sample = json.loads((Path(__file__).parent / "contracts" / "hooks" / "claude" / "user_prompt_submit.json").read_text())
    sample.update(cwd=str(project), transcript_path="", prompt=f"why does psql reject {secret}?")
    r = ctxd("chat", "hook", "claude", input=json.dumps(sample), cwd=project)
    assert r.returncode == 0, r.stderr
    log = ctxd("chat", "log", "--json", cwd=project).stdout
    assert secret not in log and "why does psql reject [REDACTED:env:DB_PASSWORD]?" in log


def test_untrusted_contextrc_is_never_read_for_secrets(tmp_path):
    """Its values are not set by ctxd, so they are not ctxd's to know: the file is not read."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    token = "tk-" + rand(24)
    (project / ".contextrc").write_text(f'[env]\nAPI_TOKEN = "{token}"\n')  # not allowed
    assert ctxd("chat", "add", f"value {token}", cwd=project).returncode == 0
    log = ctxd("chat", "log", "--json", cwd=project).stdout
    assert token in log and "REDACTED" not in log


def test_changed_contextrc_stops_redacting_its_old_value_only_when_no_longer_trusted(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    old, new = "tk-" + rand(24), "tk-" + rand(24)
    (project / ".contextrc").write_text(f'[env]\nDEPLOY_SECRET = "{old}"\n')
    assert ctxd("allow", cwd=project).returncode == 0
    (project / ".contextrc").write_text(f'[env]\nDEPLOY_SECRET = "{new}"\n')  # edited, not re-allowed
    assert ctxd("chat", "add", f"old {old} new {new}", cwd=project).returncode == 0
    assert ctxd("allow", cwd=project).returncode == 0
    assert ctxd("chat", "add", f"again old {old} new {new}", cwd=project).returncode == 0
    lines = [json.loads(l)["content"] for l in ctxd("chat", "log", "--json", cwd=project).stdout.splitlines()]
    assert lines == [f"old {old} new {new}", f"again old {old} new [REDACTED:env:DEPLOY_SECRET]"]


# -- false positives on real transcripts --------------------------------------------------------------

def _real_texts():
    for path in sorted(REAL.rglob("*")):
        if not path.is_file() or path.name == "README.md":
            continue
        if path.suffix == ".db":
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                parts = []
                for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                    if "_fts" in table:
                        continue
                    for row in db.execute(f'SELECT * FROM "{table}"'):
                        parts.extend(v for v in row if isinstance(v, str))
            finally:
                db.close()
            yield path, "\n".join(parts)
        else:
            yield path, path.read_text(encoding="utf-8", errors="replace")


# What the rules find in tests/contracts/real/ (39 files: Claude Code, Codex, Gemini CLI, aider, OpenAI jsonl,
# hook payloads, llm databases). The llm databases were written by prompting with a fake key on purpose
# ("what is the API key sk-ant-... for?", "legacy prompt one with token ghp_..."): true positives.
# Everything else is 0: no rule fires on ordinary code, JSON, prose or hashes there.
EXPECTED_REAL = {"anthropic-key": 4, "github-token": 6}
FALSE_POSITIVE_BOUND = 0


LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="shared/data/locomo-dev is not beside the checkout")
def test_no_redaction_in_everyday_conversations():
    """LoCoMo's long chats (plans, places, dates, numbers): not one secret, so not one redaction."""
    r = Redactor()
    found = {}
    for path in sorted(LOCOMO.glob("*.json")):
        out, counts = r(path.read_text(encoding="utf-8"))
        if counts:
            found[path.name] = re.findall(r".{0,60}\[REDACTED:[^\]]+\]", out)
    assert found == {}


def test_false_positives_on_real_transcripts():
    totals, planted, hits = Counter(), Counter(), []
    r = Redactor()
    for path, text in _real_texts():
        out, counts = r(text)
        totals.update(counts)
        if path.suffix == ".db":
            planted.update(counts)
            continue
        for m in re.finditer(r"\[REDACTED:[^\]]+\]", out):
            hits.append(f"{path.relative_to(REAL)}: ...{out[max(0, m.start() - 80):m.end() + 20]!r}...")
    print("redactions per kind on the real samples:", dict(totals))
    assert len(hits) <= FALSE_POSITIVE_BOUND, "redactions outside the planted keys:\n" + "\n".join(hits)
    assert dict(planted) == EXPECTED_REAL  # the planted keys are all found


# -- end to end: one sample of every kind, through every writer, and nothing raw anywhere ------------

def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _git_objects(repo):
    """Every object of a git repository, decompressed (git inflates them; gzip'd segments too)."""
    import gzip

    out = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, capture_output=True,
                         timeout=60, check=True).stdout
    blobs, pos = [], 0
    while pos < len(out):
        nl = out.index(b"\n", pos)
        size = int(out[pos:nl].split()[2])
        body = out[nl + 1:nl + 1 + size]
        pos = nl + 2 + size
        blobs.append(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
    return blobs


def _files_under(*roots, skip=()):
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for f in files:
                p = Path(dirpath, f)
                if p not in skip:
                    yield p, p.read_bytes()


@pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")
def test_no_raw_secret_anywhere_ctxd_writes(tmp_path, isolated_paths):
    """A Claude Code transcript holding one sample of each kind (in prompts, tool arguments and a
    huge tool output) is imported, the same prompt comes through the live hook, a task note and a
    handoff are made, the memory is synced to a git remote: no raw value in any file under HOME
    (config, data, state, cache), the project, or the remote's objects."""
    project, remote, inbox = tmp_path / "proj", tmp_path / "remote.git", tmp_path / "inbox"
    project.mkdir()
    inbox.mkdir()
    env_token = "tk-" + rand(24)  # a value only the trusted .contextrc can tell
    (project / ".contextrc").write_text(f'[env]\nDEPLOY_TOKEN = "{env_token}"\n')
    _git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    _git("init", "-q", cwd=project)
    for args in (("config", "user.email", "ada@example.com"), ("config", "user.name", "ada"),
                 ("commit", "-q", "--allow-empty", "-m", "first"), ("remote", "add", "origin", str(remote)),
                 ("push", "-q", "origin", "HEAD")):
        _git(*args, cwd=project)
    assert ctxd("allow", cwd=project).returncode == 0

    samples = [text for _name, text, _gone in KINDS] + [f"deploy with {env_token}"]
    raw = [g for _name, _text, gone in KINDS for g in gone] + [env_token]
    sid, lines = "0b6f3c1e-8b7d-4e2a-9c1f-5d4b3a2e1f00", []

    def line(kind, message, n):
        return json.dumps({"type": kind, "message": message, "sessionId": sid, "uuid": f"u-{n}", "cwd": str(project),
                           "parentUuid": f"u-{n - 1}" if n else None, "timestamp": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z"})

    for i, text in enumerate(samples):
        n = 4 * i
        lines.append(line("user", {"role": "user", "content": f"sample {i}: {text}"}, n))
        lines.append(line("assistant", {"role": "assistant", "content": [
            {"type": "text", "text": f"running it: {text}"},
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": text}}]}, n + 1))
        lines.append(line("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"$ {text}\nok"}]}, n + 2))
    big = "\n".join(samples) + "\n" + "x" * 70000  # over the offload threshold: written to outputs/
    lines.append(line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": big}]},
                      4 * len(samples)))
    transcript = inbox / "session.jsonl"
    transcript.write_text("\n".join(lines) + "\n")

    r = ctxd("chat", "import", str(transcript), cwd=project)
    assert r.returncode == 0, r.stderr
    hook = json.loads((Path(__file__).parent / "contracts" / "hooks" / "claude" / "user_prompt_submit.json").read_text())
    hook.update(cwd=str(project), transcript_path="", session_id="live-1", prompt="\n".join(samples))
    r = ctxd("chat", "hook", "claude", input=json.dumps(hook), cwd=project)
    assert r.returncode == 0, r.stderr
    for args in (("task", "start", "rotate " + samples[0]), ("task", "note", samples[1]), ("handoff",),
                 ("sync", "init"), ("sync", "push"), ("context",)):
        r = ctxd(*args, cwd=project)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    log = ctxd("chat", "log", "--json", cwd=project).stdout
    assert log.count("[REDACTED:") > len(samples)  # what was stored is there, redacted
    info = json.loads(ctxd("show", "--json", cwd=project).stdout)
    assert list(Path(info["context_dir"], "outputs").iterdir())  # the offloaded output was written

    leaks = []
    # Not conversation text: the trusted .contextrc itself, and its parsed copy in the cache (the
    # values ctxd exports, kept 0600 so the cd hook need not parse TOML).
    parsed = {p for p in (isolated_paths / ".cache").rglob("contextrc*.json")}
    blobs = list(_files_under(isolated_paths, project, skip={project / ".contextrc"} | parsed))
    blobs += [(Path("remote object"), b) for b in _git_objects(remote)]
    assert len(blobs) > 20
    for path, data in blobs:
        for secret in raw:
            if secret.encode() in data:
                leaks.append(f"{path}: {next(k[0] for k in KINDS if secret in k[2]) if secret != env_token else 'env'}")
    assert leaks == [], "\n".join(leaks)
