"""A fork server for the guard mutation table: a pytest of its own per row, without an
interpreter start-up and pytest's imports per row.

tests/store/test_guards_mutation.py runs each row's tests in a pytest process of their own,
with that row's guard taken out (tests/store/guard_mutation.py). Starting Python, pytest, its
plugins and the test modules costs about a second per row, far more than the few tests a row
runs. So the table starts this server once: it imports pytest and the test modules the rows
name, then, for each request on its socket, forks a process that sets the row's variables
(``WRIGHTY_TEST_MUTATION``, ``WRIGHTY_TEST_OUTCOMES``), sends its output to a file and runs
``pytest.main`` with the row's arguments. Each row is still a process and a pytest session of
its own, with a fresh configuration and its own stores; only the imports are shared (the server
opens no store and runs no test). The process closes the connection when its pytest has ended.

Run as ``python -m tests.store.guard_runner SOCKET FILE...``: it prints ``ready`` once it listens.
"""

from __future__ import annotations

import gc
import importlib
import importlib.metadata
import json
import os
import pkgutil
import socket
import sys
from pathlib import Path

import pytest

from tests.docs.zygote import reap_ended_children


def _run_row(connection: socket.socket) -> None:
    """In the row's process: its variables, its output file, its pytest session."""
    request = json.loads(connection.makefile("rb").readline())
    os.environ.clear()
    os.environ.update(request["env"])
    with open(request["output"], "wb") as output:
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
    code = pytest.main(request["args"])
    sys.stdout.flush()
    sys.stderr.flush()
    connection.sendall(json.dumps({"exit": int(code)}).encode())
    connection.close()


def _preload(files: list[str]) -> None:
    """pytest's own modules, its plugins, and the test modules with what they import."""
    import _pytest

    for module in pkgutil.iter_modules(_pytest.__path__, "_pytest."):
        importlib.import_module(module.name)
    for plugin in importlib.metadata.entry_points(group="pytest11"):
        plugin.load()
    for file in files:
        importlib.import_module(".".join(Path(file).with_suffix("").parts))


def serve(socket_path: str, files: list[str]) -> None:
    _preload(files)
    # What the server imported is never garbage: the collections each pytest runs at its end
    # skip it (and leave its memory shared with the server's).
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        connection, _address = listener.accept()
        if os.fork() == 0:
            listener.close()
            try:
                _run_row(connection)
            finally:
                os._exit(0)
        connection.close()
        reap_ended_children()


def run_row(socket_path: str, args: list[str], env: dict[str, str], output: Path) -> None:
    """Run one row's pytest through the server at ``socket_path``; return when it has ended."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(socket_path)
        request = {"args": args, "env": env, "output": str(output)}
        connection.sendall(json.dumps(request).encode() + b"\n")
        while connection.recv(4096):
            pass


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
