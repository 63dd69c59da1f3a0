from __future__ import annotations

import base64
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wrighty.domain.redact import REDACTED, redact, redact_bytes_tail, redact_known

ALPHANUMERIC = string.ascii_letters + string.digits


def fake(length: int, alphabet: str = ALPHANUMERIC) -> str:
    """Deterministic key-like filler, so no key-shaped literal appears in this file."""
    return "".join(alphabet[(index * 7 + 3) % len(alphabet)] for index in range(length))


ANTHROPIC_KEY = "sk-" + "ant-" + "api03-" + fake(93, ALPHANUMERIC + "_-")
AWS_KEY_ID = "AKIA" + fake(16, string.ascii_uppercase + string.digits)
BASIC_CREDENTIAL = base64.b64encode(b"deploy:" + fake(12).encode()).decode()

# (text, the secret in it): the expected result is the text with exactly that part replaced
SECRETS = [
    pytest.param(f"using key {ANTHROPIC_KEY} for the run", ANTHROPIC_KEY, id="anthropic"),
    pytest.param(f"key={'sk-' + fake(48)};", "sk-" + fake(48), id="openai-legacy"),
    pytest.param(
        f"OPENAI {'sk-' + 'proj-' + fake(120, ALPHANUMERIC + '_-')} ok",
        "sk-" + "proj-" + fake(120, ALPHANUMERIC + "_-"),
        id="openai-project",
    ),
    pytest.param(f"maps {'AIza' + fake(35)}.", "AIza" + fake(35), id="google"),
    *[
        pytest.param(f"remote {prefix + fake(36)} set", prefix + fake(36), id=f"github-{prefix}")
        for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
    ],
    pytest.param(
        f"pat {'github_' + 'pat_' + fake(82, ALPHANUMERIC + '_')}",
        "github_" + "pat_" + fake(82, ALPHANUMERIC + "_"),
        id="github-fine-grained",
    ),
    *[
        pytest.param(
            f"slack {'xox' + kind + '-1234567890-' + fake(24)} posted",
            "xox" + kind + "-1234567890-" + fake(24),
            id=f"slack-xox{kind}",
        )
        for kind in "abposr"
    ],
    pytest.param(f"aws {AWS_KEY_ID} in us-east-1", AWS_KEY_ID, id="aws-akia"),
    pytest.param(f"aws {'ASIA' + AWS_KEY_ID[4:]}", "ASIA" + AWS_KEY_ID[4:], id="aws-asia"),
    pytest.param(
        f"curl -H 'Authorization: Bearer {fake(40)}' https://api.example.com",
        fake(40),
        id="authorization-bearer",
    ),
    pytest.param(
        f'{{"authorization": "Bearer {fake(20)}.{fake(30)}"}}',
        f"{fake(20)}.{fake(30)}",
        id="authorization-json",
    ),
    pytest.param(f"sent Bearer {fake(32)} upstream", fake(32), id="bare-bearer"),
    pytest.param(f"Authorization: Basic {BASIC_CREDENTIAL}", BASIC_CREDENTIAL, id="basic-header"),
    pytest.param(f"header Basic {BASIC_CREDENTIAL} sent", BASIC_CREDENTIAL, id="bare-basic"),
    pytest.param(f"Bearer Bearer {fake(32)}", fake(32), id="bearer-twice"),
    pytest.param(
        '{"private_key": "-----BEGIN ' + "PRIVATE KEY-----\\nMIIE" + fake(64) + "\\n-----END "
        'PRIVATE KEY-----\\n"}',
        "\\nMIIE" + fake(64) + "\\n",
        id="pem-in-json",
    ),
    pytest.param("postgres://app:hunter2x@db:5432/app", "hunter2x", id="url-credentials"),
    pytest.param("redis://:pa:ss@localhost", "pa:ss", id="url-password-only"),
    pytest.param("api_key=abc123 rest", "abc123", id="api_key"),
    pytest.param("API_KEY: abc123", "abc123", id="API_KEY"),
    pytest.param('{"apiKey": "abc 123"}', "abc 123", id="apiKey-json"),
    pytest.param('{"token": "t0ken-value"}', "t0ken-value", id="token-json"),
    pytest.param("export GITHUB_TOKEN='value with spaces'", "value with spaces", id="env-token"),
    pytest.param("password=hunter2 next", "hunter2", id="password"),
    pytest.param("DB_PASSWD = swordfish", "swordfish", id="passwd"),
    pytest.param("secret: shh", "shh", id="secret"),
    pytest.param("client_secret=abc&grant=x", "abc", id="client_secret-query"),
    pytest.param("GET /cb?access_token=xyz789&state=1", "xyz789", id="access_token"),
    pytest.param(r"{\"api_key\": \"abc123\"}", "abc123", id="escaped-json"),
    pytest.param(f"stripe {'sk_' + 'live_' + fake(24)}", "sk_" + "live_" + fake(24), id="stripe"),
    pytest.param(f"gitlab {'glpat-' + fake(20)}", "glpat-" + fake(20), id="gitlab"),
    pytest.param(f"hf {'hf_' + fake(34)}", "hf_" + fake(34), id="hugging-face"),
    pytest.param(f"npm {'npm_' + fake(36)}", "npm_" + fake(36), id="npm"),
    pytest.param(
        "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIE" + fake(64) + "\n-----END RSA PRIVATE KEY-----",
        "\nMIIE" + fake(64) + "\n",
        id="pem-private-key",
    ),
    pytest.param("mysql --password hunter3 shop", "hunter3", id="option-password"),
    pytest.param("mysql --password=hunter3 shop", "hunter3", id="option-password-equals"),
    pytest.param("tool --token X --verbose", "X", id="option-token"),
    pytest.param("tool --api-key k3y", "k3y", id="option-api-key"),
    pytest.param("tool --secret 's h'", "s h", id="option-secret-quoted"),
    pytest.param('tool --auth-token "abc def"', "abc def", id="option-auth-token"),
    pytest.param("login --db-passphrase\tpp1", "pp1", id="option-tab"),
]

PROSE = [
    "the tokenizer works",
    "the secret of success is patience",
    "Bearer authentication is described in RFC 6750; the bearer of bad news",
    "use basic authentication for the admin page",
    "max_tokens=4096 input_tokens: 12 output_tokens: 7",
    "scikit wrappers: sk-learn-compatible-estimators-and-transformers",
    "Enter password:\nPassword accepted",
    "if token == expected: return",
    "def login(token: str, password: None) -> bool:",
    "open http://localhost:8080/health and clone git@github.com:org/repo.git",
    "AKIA is the prefix of an access key id; PASSWORD_HASHING is on",
    "12:00:01 ran 14 tests in 0.3s: OK (exit 0)",
    "curl --token-file ~/.token --password-stdin --secret-name db --api-key-env KEY",
    "tool --token --verbose; tool --max-tokens 100; mysql -p hunter3",
    "git commit --author Ann; run --model opus --password null",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_each_kind_of_secret_is_replaced_and_the_rest_kept(text: str, secret: str) -> None:
    assert redact(text) == text.replace(secret, REDACTED)


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_text_comes_back_unchanged(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_redacting_twice_changes_nothing_more(text: str, secret: str) -> None:
    once = redact(text)
    assert redact(once) == once


FRAGMENTS = st.sampled_from(
    [ANTHROPIC_KEY, AWS_KEY_ID, BASIC_CREDENTIAL, "sk-", "token", "api_key", "password", "=", ":",
     '"', "'", "\\", " ", "\n", "@", "://", "Bearer ", "Basic ", "Authorization: ", REDACTED,
     "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", fake(20), "é", "\ufffd"]
)  # fmt: skip


@given(st.lists(FRAGMENTS | st.text(max_size=4), max_size=12).map("".join))
def test_redaction_is_idempotent_on_mixed_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@pytest.mark.parametrize(
    "unit", ["a", " ", "sk-", "token", "://a:", "Bearer ", '\\"', "-----BEGIN PRIVATE KEY-----"]
)
def test_a_megabyte_of_repetition_is_scanned_not_backtracked(unit: str) -> None:
    text = unit * (1_000_000 // len(unit))
    assert redact(text) == text


def test_a_megabyte_of_options_is_scanned_not_backtracked() -> None:
    text = "--token " * 125_000
    assert redact(text) == text  # each value is the next option
    text = "--password x " * 80_000
    assert redact(text) == f"--password {REDACTED} " * 80_000


def test_a_megabyte_of_open_assignments_is_redacted_pairwise() -> None:
    text = 'token: "token: "' * 60_000
    assert redact(text) == 'token: "[REDACTED]"' * 60_000


def test_a_short_tail_is_whole_and_redacted() -> None:
    data = f"step 1\nkey {ANTHROPIC_KEY}\ndone\n".encode()
    assert redact_bytes_tail(data, 10_000) == f"step 1\nkey {REDACTED}\ndone\n"


def test_a_cut_tail_says_how_many_bytes_were_dropped() -> None:
    assert redact_bytes_tail(b"x" * 1000, 100) == "…[truncated 900 bytes]\n" + "x" * 100


def test_the_limit_counts_characters_not_bytes() -> None:
    data = ("é" * 100).encode()
    assert redact_bytes_tail(data, 10) == "…[truncated 180 bytes]\n" + "é" * 10


def test_invalid_utf8_shows_as_replacement_characters() -> None:
    assert redact_bytes_tail(b"ok \xff\xfe\x00 done", 100) == "ok \ufffd\ufffd\x00 done"
    assert redact_bytes_tail(b"\xff" * 100, 10) == "…[truncated 90 bytes]\n" + "\ufffd" * 10


def test_a_secret_across_the_cut_leaves_no_tail_behind() -> None:
    ending = " end\n"
    data = ("log line\n" * 2000 + f"key {ANTHROPIC_KEY}{ending}").encode()
    limit = len(ending) + 30
    tail = redact_bytes_tail(data, limit)
    body = tail.split("\n", 1)[1]
    assert body == REDACTED + ending
    assert tail.startswith(f"…[truncated {len(data) - limit} bytes]\n")


def test_a_secret_inside_the_tail_is_redacted() -> None:
    data = ("log line\n" * 2000 + f"Authorization: Bearer {fake(40)}\n").encode()
    assert redact_bytes_tail(data, 100).endswith(f"log line\nAuthorization: Bearer {REDACTED}\n")


def test_a_zero_limit_keeps_only_the_marker() -> None:
    assert redact_bytes_tail(b"abc", 0) == "…[truncated 3 bytes]\n"
    assert redact_bytes_tail(b"", 0) == ""


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        redact_bytes_tail(b"abc", -1)


def test_known_values_are_replaced_the_longest_first_and_an_empty_one_is_no_secret() -> None:
    text = "user hunter3 and hunter3-admin; token=plain"
    assert redact_known(text, ["hunter3", "hunter3-admin", ""]) == (
        f"user {REDACTED} and {REDACTED}; token={REDACTED}"
    )
