"""No part of a notification URL but its scheme gets out, in any encoding (docs/notifications.md
#secrets): tokens planted plain, percent-encoded (upper and mixed case), with plus for space,
and as base64 in a query string, in URLs that Apprise decodes and then quotes in its messages.
Real `wrighty` processes go through every path such a message could take: `notify test`,
`config validate`, `worker start` (its refusal, and its notify-failed events, plain and
--json), `notify flush`, `notify pending` (plain and --json), and the outbox's last_error.
Each output, and the store, is searched for every planted token as written, decoded,
percent-encoded and base64-encoded."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.test_notify_sinks import Receiver

# Every planted token holds this, so that a partial quote is caught too.
CORE = "Kv4"


@dataclass(frozen=True)
class Planted:
    name: str
    url: str
    written: str  # the token as the URL holds it
    token: str  # the token as a library decodes it

    def forms(self) -> set[str]:
        """The token in each encoding that could reach an output."""
        forms = {self.written, self.token, CORE}
        for text in (self.written, self.token):
            forms.add(urllib.parse.quote(text, safe=""))
            forms.add(urllib.parse.quote_plus(text))
            forms.add(base64.b64encode(text.encode()).decode())
        return forms


def _b64_token() -> Planted:
    token = f"{CORE}B64Tok?>>"
    encoded = base64.b64encode(token.encode()).decode()
    written = urllib.parse.quote(encoded, safe="")
    assert "+" in encoded  # percent-encoded in the URL: Apprise decodes it
    return Planted("base64-query", f"slack://?token={written}", written, token)


PLANTED = [
    Planted("plain", f"slack://T1JJ3T3L2/A1BRTD4JD/{CORE}PlainTok!x", f"{CORE}PlainTok!x",
            f"{CORE}PlainTok!x"),
    Planted("percent", f"slack://T1JJ3T3L2/A1BRTD4JD/{CORE}Pc%74Tok%21x", f"{CORE}Pc%74Tok%21x",
            f"{CORE}PctTok!x"),
    Planted("mixed-case-percent", f"slack://T1JJ3T3L2/A1BRTD4JD/{CORE}Mi%78Tok%2a%2Ax",
            f"{CORE}Mi%78Tok%2a%2Ax", f"{CORE}MixTok**x"),
    Planted("plus-for-space", f"slack://T1JJ3T3L2/A1BRTD4JD/{CORE}Plus+Tok+x",
            f"{CORE}Plus+Tok+x", f"{CORE}Plus Tok x"),
    _b64_token(),
    Planted("telegram-percent", f"tgram://123456789:{CORE}Tg%52amTok%21/", f"{CORE}Tg%52amTok%21",
            f"{CORE}TgRamTok!"),
]  # fmt: skip


def _leaks(text: str, planted: list[Planted]) -> list[tuple[str, str]]:
    return [(p.name, form) for p in planted for form in sorted(p.forms()) if form in text]


def _project(root: Path, notify: dict[str, object]) -> None:
    root.mkdir(exist_ok=True)
    document = {
        "worker": {"defaultAgent": "failing", "pollSeconds": 0.05, "heartbeatSeconds": 0.2,
                   "leaseSeconds": 5, "workspaceMode": "directory"},
        "agents": {"failing": {"adapter": "command",
                               "command": [sys.executable, "-c", "import sys; sys.exit(4)"]}},
        "notify": notify,
    }  # fmt: skip
    (root / "wrighty.json").write_text(json.dumps(document))


def _wrighty(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
    environ["XDG_CONFIG_HOME"] = str(root / "config-home")
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "wrighty", "--config", str(root / "wrighty.json"), *args],
        cwd=root, env=environ, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_tokens_from_the_environment_reach_no_output_nor_the_store(
    tmp_path: Path, receiver: Receiver
) -> None:
    """Each URL in its own variable; a json:// one on a server that answers 503, with a token
    in its path and its query, fails at delivery rather than at Apprise's check."""
    receiver.status = 503
    webhook = Planted(
        "webhook-path-and-query",
        receiver.url(path=f"/hook/{CORE}Hook%21Tok?token={CORE}Q%2BTok"),
        f"{CORE}Hook%21Tok",
        f"{CORE}Hook!Tok",
    )
    planted = [*PLANTED, webhook]
    env = {f"WR_URL{index}": p.url for index, p in enumerate(planted)}
    root = tmp_path / "project"
    _project(root, {"urls": [{"env": name} for name in env]})
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    outputs["init"] = _wrighty(root, "init")
    outputs["notify test"] = _wrighty(root, "notify", "test", env=env)
    assert outputs["notify test"].returncode == 1
    lines = outputs["notify test"].stdout.splitlines()
    assert len(lines) == len(planted)
    assert lines[0] == (
        "slack:// (notify.urls.0, $WR_URL0): failed: $WR_URL0 Apprise cannot use this slack:// "
        "URL: it refused a token or an option; see https://appriseit.com/services/slack/"
    )
    assert lines[-1] == (
        f"json://127.0.0.1:{receiver.port} (notify.urls.6, $WR_URL6): failed: Apprise did not "
        "send it: the service answered HTTP 503 Service Unavailable"
    )
    for title in ("one", "two"):
        made = _wrighty(root, "create", "--title", title, "--body", "go", "--queue")
        assert made.returncode == 0, made.stderr
    outputs["worker --json"] = _wrighty(root, "worker", "start", "--once", "--json", env=env)
    outputs["worker"] = _wrighty(root, "worker", "start", "--once", env=env)
    events = [json.loads(line) for line in outputs["worker --json"].stdout.splitlines()]
    [failed] = [event for event in events if event["event"] == "notify-failed"]
    assert "Apprise cannot use this slack:// URL" in failed["error"]
    assert "notify-failed" in outputs["worker"].stdout + outputs["worker"].stderr
    outputs["notify flush"] = _wrighty(root, "notify", "flush", env=env)
    assert outputs["notify flush"].returncode == 1
    outputs["notify pending"] = _wrighty(root, "notify", "pending", env=env)
    outputs["notify pending --json"] = _wrighty(root, "notify", "pending", "--json", env=env)
    shown = json.loads(outputs["notify pending --json"].stdout)
    assert len(shown) == 2
    assert all("Apprise cannot use this slack:// URL" in n["last_error"] for n in shown)
    with sqlite3.connect(root / ".wrighty" / "wrighty.db") as db:
        stored = db.execute("SELECT last_error, payload, delivered_to FROM notices").fetchall()
    assert len(stored) == 2
    store_text = json.dumps(stored)
    assert "Apprise cannot use this slack:// URL" in store_text
    for name, result in outputs.items():
        assert _leaks(result.stdout + result.stderr, planted) == [], name
    assert _leaks(store_text, planted) == []
    # The whole store file too: no page of it holds a token.
    assert _leaks((root / ".wrighty" / "wrighty.db").read_bytes().decode("latin-1"), planted) == []


@pytest.mark.slow
@pytest.mark.parametrize("planted", PLANTED, ids=[p.name for p in PLANTED])
def test_a_token_written_in_the_file_reaches_no_refusal(tmp_path: Path, planted: Planted) -> None:
    root = tmp_path / "project"
    _project(root, {"urls": ["json://127.0.0.1:9/hook", planted.url]})
    assert _wrighty(root, "init").returncode == 0
    runs = {
        "config validate": _wrighty(root, "config", "validate"),
        "worker start": _wrighty(root, "worker", "start", "--once"),
        "notify flush": _wrighty(root, "notify", "flush"),
        "notify test": _wrighty(root, "notify", "test"),
        "notify test --url": _wrighty(root, "notify", "test", "--url", planted.url),
    }
    scheme = planted.url.split("://")[0]
    for name, result in runs.items():
        assert result.returncode == 2, (name, result.stderr)
        said = result.stdout + result.stderr
        assert f"Apprise cannot use this {scheme}:// URL: it refused a token or an option" in said
        assert _leaks(said, [planted]) == [], name
