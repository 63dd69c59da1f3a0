"""Links to the console from outside it (serve.publicUrl, docs/web.md#links-from-notices):
the address a person's phone reaches the console at, and an item's page under it. Pure.

A link never holds the console's token: whoever follows one without a session is asked for
the token once (docs/web.md#the-security-model).
"""

from __future__ import annotations

from urllib.parse import urlsplit

MAX_PUBLIC_URL_CHARS = 300


def check_public_url(text: str) -> str:
    """serve.publicUrl as a link is built on (without a trailing slash); ValueError saying
    what to change when it is not an http(s) URL of a host (and a port), without credentials,
    a path, a query or a fragment: the console's own links and its login's redirect start at
    `/`, so it is served at the root of its host."""
    if len(text) > MAX_PUBLIC_URL_CHARS:
        raise ValueError(f"is longer than {MAX_PUBLIC_URL_CHARS} characters")
    if any(not char.isprintable() or char.isspace() for char in text):
        raise ValueError("holds a space or a control character")
    try:
        parts = urlsplit(text)
        port = parts.port  # ValueError for a port that is not a number in range
    except ValueError:
        raise ValueError("is not a URL: give one like https://wrighty.example.net") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must start with https:// (or http://), as https://wrighty.example.net")
    if not parts.hostname:
        raise ValueError("names no host: give one like https://wrighty.example.net")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not hold a user name or password: the console asks for its token")
    if parts.query or text.rstrip("/").endswith("?"):
        raise ValueError("must not hold a query (?...): never put the token in it")
    if parts.fragment or "#" in text:
        raise ValueError("must not hold a fragment (#...)")
    if parts.path.strip("/"):
        raise ValueError(
            f"must not hold a path ({parts.path}): the console is served at the root of its "
            "host; give only the scheme, the host and a port"
        )
    del port
    return text.rstrip("/")


def item_link(public_url: str, item_id: int) -> str:
    """The address of item ``item_id``'s page under ``public_url`` (as `check_public_url`
    gives it)."""
    return f"{public_url}/items/{item_id}"


def public_host(public_url: str) -> str:
    """The Host header a browser sends for ``public_url`` (as `check_public_url` gives it):
    its host, with its port unless that is the scheme's own."""
    parts = urlsplit(public_url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    return host if parts.port in (None, default) else f"{host}:{parts.port}"
