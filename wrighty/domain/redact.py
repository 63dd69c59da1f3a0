"""Replacing secrets in agent output with a marker, so logs stay readable and safe to keep.

Every pattern starts at a short, fixed anchor and ends in a possessive run, so it either matches
a whole run or gives up within a few characters: a scan is linear in the length of the text. The
finer judgement (does this look like a key, is this base64 of ``user:password``) happens in Python
on the matched text. All rules look at the original text; the spans they find are merged and
replaced in one pass, which is what lets `redact_bytes_tail` cut the text anywhere.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

REDACTED = "[REDACTED]"

# Characters before a tail's cut that are scanned too, so a secret that starts before the cut is
# still recognised; an 8192-bit PEM private key fits.
_TAIL_CONTEXT_CHARS = 8192
_MAX_UTF8_BYTES_PER_CHAR = 4

# Values after `token:` or `password=` that are types or literals in code and config, not secrets.
_PLACEHOLDER_VALUES = frozenset(
    {"none", "null", "true", "false", "undefined", "str", "string", "bytes", "int", "bool"}
)

_Span = tuple[int, int]


@dataclass(frozen=True)
class _Rule:
    """A pattern and the part of each match that is the secret (None: not a secret after all)."""

    pattern: re.Pattern[str]
    secret_span: Callable[[re.Match[str]], _Span | None]


def _whole_secret(match: re.Match[str]) -> _Span | None:
    return match.span("secret")


def _looks_random(token: str) -> bool:
    """Has a digit, a capital after the first letter or base64 punctuation, as words do not."""
    return len(token) >= 8 and (
        any(character.isdigit() for character in token)
        or any(character.isupper() for character in token[1:])
        or any(character in "_+/=" for character in token)
    )


def _is_basic_credential(token: str) -> bool:
    """HTTP Basic credentials are base64 of `user:password`."""
    try:
        decoded = binascii.a2b_base64(token, strict_mode=True)
    except binascii.Error:
        return False
    return b":" in decoded


def _auth_credential(match: re.Match[str]) -> _Span | None:
    """After `Authorization:` always; a bare `Bearer x` or `Basic x` only if x looks the part."""
    scheme = match["scheme"].lower()
    credential = match["secret"]
    if match["header"] is not None:
        return match.span("secret")
    if scheme == "bearer" and _looks_random(credential):
        return match.span("secret")
    if scheme == "basic" and _is_basic_credential(credential):
        return match.span("secret")
    return None


def _assigned_value(match: re.Match[str]) -> _Span | None:
    """The quoted or bare value, unless it is a placeholder such as `null` or `str`."""
    for group in ("escaped", "double", "single", "bare"):
        if match[group] is not None:
            if match[group].lower() in _PLACEHOLDER_VALUES:
                return None
            return match.span(group)
    return None


# One pattern for every fixed-prefix token: a scan per rule costs more than a longer alternation.
# No match is ever declined, since a declined match would hide any secret inside it.
_VENDOR_TOKEN = re.compile(
    r"\b(?P<secret>"
    # Anthropic and OpenAI; without a known prefix no hyphens, or sk-learn-style prose would match
    r"sk-(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{20,}+"
    r"|sk-[A-Za-z0-9_]{20,}+"
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}+"  # Stripe
    r"|AIza[A-Za-z0-9_-]{35,}+"  # Google
    r"|(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,}+"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}+"  # GitLab
    r"|hf_[A-Za-z0-9]{30,}+"  # Hugging Face
    r"|npm_[A-Za-z0-9]{36,}+"  # npm
    r"|xox[abposr]-[A-Za-z0-9-]{10,}+"  # Slack
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS access key id
    r")"
)
# A key or option name only has to contain one of these: GITHUB_TOKEN, client_secret,
# db-password; `tokens` (max_tokens, input_tokens: counts) and `tokenizer` are not secrets.
_CREDENTIAL_WORD = r"(?i:api[_-]?key|token(?!s|iz)|secret(?!ary)|passw(?:or)?d|passphrase)"
_ASSIGNMENT_KEY = (
    _CREDENTIAL_WORD + r"[\w.-]{0,40}+"
    # a closing quote, possibly escaped inside a JSON string: \"api_key\": \"...\"
    r"(?:\\?+[\"'])?+"
    r"[ \t]*+(?::=|=>|[:=](?![=:]))[ \t]*+"
)
_ASSIGNMENT_VALUE = (
    r"(?:\\\"(?P<escaped>(?:[^\"\\\n]|\\[^\"\n])++)\\\""
    r"|\"(?P<double>(?:[^\"\\\n]|\\.)++)\""
    r"|'(?P<single>(?:[^'\\\n]|\\.)++)'"
    rf"|\\?+[\"']?+(?P<bare>{re.escape(REDACTED)}|[^\s\"'`,;&)}}\]]++))"
)
# `--password hunter3`, `--api-key "..."`: a long option and its value after a space (with `=`
# it is an assignment); a value that starts with `-` is the next option.
_OPTION = r"(?<![\w-])--(?P<name>[A-Za-z0-9][\w-]*+)[ \t]++(?!-)" + _ASSIGNMENT_VALUE
_CREDENTIAL_IN_NAME = re.compile(_CREDENTIAL_WORD)
# Names whose value only says where the secret is, or what it is called: --token-file PATH.
_POINTER_OPTION = re.compile(r"[_-](?i:file|path|dir|stdin|env|id|name|type|url)$")


def _option_value(match: re.Match[str]) -> _Span | None:
    """The value of an option whose name holds a secret word, unless the name says the value
    only points at the secret."""
    name = match["name"]
    if _CREDENTIAL_IN_NAME.search(name) is None or _POINTER_OPTION.search(name) is not None:
        return None
    return _assigned_value(match)


_RULES = (
    _Rule(_VENDOR_TOKEN, _whole_secret),
    _Rule(
        # the body is base64, header lines (Proc-Type: 4,ENCRYPTED) and newlines, perhaps
        # escaped inside JSON; the BEGIN and END lines stay so a reader sees what was there
        re.compile(
            r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----"
            r"(?P<secret>(?:[A-Za-z0-9+/=\s\\:,]++|-(?!----))++)"
        ),
        _whole_secret,
    ),
    # no brackets in user or password, so a URL whose password was redacted does not match again
    _Rule(re.compile(r"://[^\s/@:\[\]]*+:(?P<secret>[^\s/@\[\]]++)@"), _whole_secret),
    _Rule(
        re.compile(
            r"(?P<header>(?i:authorization)(?:\\?+[\"'])?+[ \t]*+[:=][ \t]*+(?:\\?+[\"'])?+)?"
            # the credential is only looked at, not consumed, so a declined `Bearer Bearer`
            # still lets the second one be checked
            r"\b(?P<scheme>(?i:bearer|basic|token))[ \t]++"
            r"(?=(?P<secret>[A-Za-z0-9._~+/-]++=*+))"
        ),
        _auth_credential,
    ),
    _Rule(re.compile(_ASSIGNMENT_KEY + _ASSIGNMENT_VALUE), _assigned_value),
    _Rule(re.compile(_OPTION), _option_value),
)


# A known secret shorter than this is left out: too likely to occur in other text.
MIN_KNOWN_SECRET_CHARS = 8


def redact(text: str) -> str:
    """The text with every secret found replaced by `[REDACTED]`; everything else is kept."""
    return _replace_spans(text, _secret_spans(text), start=0)


def redact_known(text: str, secrets: Iterable[str]) -> str:
    """``redact``, with each of ``secrets`` (values known to be secret, such as an
    environment's tokens) replaced too wherever it occurs; where two overlap, both go whole;
    an empty value is no secret."""
    return _replace_spans(text, _secret_spans(text, tuple(secrets)), start=0)


def secret_values(
    environ: Mapping[str, str], *, configured: Iterable[Mapping[str, str]] = ()
) -> tuple[str, ...]:
    """The values known to be secret, for ``redact_known``: those of ``environ``'s variables
    whose names say they hold a credential (an API key, a token, a secret, a password), and
    every value of the ``configured`` environments (wrighty.json's `agents.<name>.env`, which
    may hold a secret under any name); values shorter than `MIN_KNOWN_SECRET_CHARS` are left
    out."""
    named = (value for name, value in environ.items() if _CREDENTIAL_IN_NAME.search(name))
    given = (value for env in configured for value in env.values())
    return tuple(
        dict.fromkeys(value for value in (*named, *given) if len(value) >= MIN_KNOWN_SECRET_CHARS)
    )


def tail_window_bytes(limit: int) -> int:
    """How many bytes before the end `redact_bytes_tail` reads for a tail of ``limit``
    characters (the tail and the context a secret that straddles the cut needs)."""
    return (limit + _TAIL_CONTEXT_CHARS) * _MAX_UTF8_BYTES_PER_CHAR


def redact_bytes_tail(
    data: bytes,
    limit: int,
    *,
    keep_undecodable: bool = False,
    dropped_before: int = 0,
    secrets: Sequence[str] = (),
) -> str:
    """The last `limit` characters of `data` as text, with secrets replaced.

    Invalid UTF-8 shows as U+FFFD, or with ``keep_undecodable`` as the lone surrogates of
    Python's "surrogateescape", which encode back to the very bytes. When anything is cut, the
    text starts with a line saying how many bytes were dropped, counting ``dropped_before``:
    the bytes before ``data`` that the caller did not read. Secrets (found, and the known
    ``secrets``) are looked for with context from before the cut, so one that straddles the cut
    shows as `[REDACTED]` rather than as its tail.
    """
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    window_start = max(0, len(data) - tail_window_bytes(limit))
    # surrogateescape maps every undecodable byte to one character, so the number of bytes cut
    # off stays exact; the kept part is decoded again with "replace" below
    window = data[window_start:].decode("utf-8", errors="surrogateescape")
    cut = max(0, len(window) - limit)
    kept = _replace_spans(window, _secret_spans(window, secrets), start=cut)
    text = kept if keep_undecodable else replace_undecodable(kept)
    dropped = dropped_before + window_start
    dropped += len(window[:cut].encode("utf-8", errors="surrogateescape"))
    if dropped == 0:
        return text
    return f"…[truncated {dropped} bytes]\n{text}"


def replace_undecodable(text: str) -> str:
    """Text decoded with "surrogateescape", with its undecodable bytes as U+FFFD."""
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def _secret_spans(text: str, known: Sequence[str] = ()) -> list[_Span]:
    """Where the secrets are (those the rules find and each occurrence of a ``known`` one),
    sorted, with overlapping and touching spans merged."""
    found = sorted(
        [
            span
            for rule in _RULES
            for match in rule.pattern.finditer(text)
            if (span := rule.secret_span(match)) is not None
        ]
        + [span for secret in set(known) if secret for span in _occurrences(text, secret)]
    )
    merged: list[_Span] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _occurrences(text: str, value: str) -> list[_Span]:
    """Every place ``value`` occurs in ``text``, overlapping ones merged as they are found."""
    spans: list[_Span] = []
    start = text.find(value)
    while start != -1:
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], start + len(value))
        else:
            spans.append((start, start + len(value)))
        start = text.find(value, start + 1)
    return spans


def _replace_spans(text: str, spans: list[_Span], *, start: int) -> str:
    """`text[start:]` with each span replaced; a span reaching across `start` still counts."""
    parts: list[str] = []
    position = start
    for span_start, span_end in spans:
        if span_end <= start:
            continue
        parts.append(text[position : max(span_start, position)])
        parts.append(REDACTED)
        position = span_end
    parts.append(text[position:])
    return "".join(parts)
