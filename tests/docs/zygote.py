"""A fork server for the docs examples: `wrighty` without an interpreter start-up per command.

The docs examples type a few hundred `wrighty` commands; each installed `wrighty` spends about
half a second importing typer, rich and pydantic before it does anything. So the docs run puts a
`wrighty` of its own first on PATH (``SHIM``): it hands its argv, folder, environment and its
standard input, output and error (the file descriptors themselves) to this server, which has
imported wrighty once. For each command the server forks a runner, which forks the command's
process: that process sets up the descriptors, folder, environment and argv it was handed and
calls the function the installed `wrighty` calls (``wrighty.cli.entry:main``); the runner waits
for it and sends its exit status back to the shim, which exits with it. The command is still
its own process (its own pid, its own children, killed by a signal like any: the shim passes
SIGINT, SIGTERM and SIGHUP on to it), started by the entry point of the executable; only the
import is shared. ``WRIGHTY_DOCS_EXECUTABLE=1`` runs
the docs examples with the installed executable instead (docs/testing.md).

Run as ``python -m tests.docs.zygote SOCKET``: it prints ``ready`` once it listens.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import pkgutil
import socket
import struct
import sys

# Not imported ahead: `python -m wrighty` (it runs), the inbox (Textual) and the example agent.
NOT_PRELOADED = ("wrighty.__main__", "wrighty.inbox", "wrighty.example_agent")
# What commands import as they parse their options.
ALSO_PRELOADED = ("typer._adapters", "typer._click.decorators", "pydantic.type_adapter")

# The `wrighty` the docs examples run: a stripped interpreter that only hands the command over.
SHIM = """#!{python} -IS
import json, os, signal, socket, struct, sys
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect({socket_path!r})
payload = json.dumps({{"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(connection, [struct.pack("!I", len(payload)) + payload], [0, 1, 2])
def read(size):
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            sys.exit(125)
        data += chunk
    return struct.unpack("!i", data)[0]
pid = read(4)
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, lambda received, _frame: os.kill(pid, received))
sys.exit(read(4))
"""


def _receive(connection: socket.socket) -> tuple[dict[str, object], list[int]]:
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 20, 3)
    (length,) = struct.unpack("!I", data[:4])
    body = data[4:]
    while len(body) < length:
        chunk = connection.recv(length - len(body))
        if not chunk:
            raise EOFError
        body += chunk
    return json.loads(body), fds


def _become_the_command(request: dict[str, object], fds: list[int]) -> None:
    """In the command's process: its descriptors, folder, environment and argv; then main()."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update({str(key): str(value) for key, value in env.items()})
    argv = request["argv"]
    assert isinstance(argv, list)
    sys.argv = [str(arg) for arg in argv]
    # Click names the program from __main__'s package when there is one ("python -m ..."):
    # the installed executable's __main__ has none, so neither may this one.
    sys.modules["__main__"].__package__ = None
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    # Buffered, as an interpreter's own stdin is: a read of N bytes waits for them (or EOF).
    sys.stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8"
    )
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = io.TextIOWrapper(
            io.FileIO(fd, "w", closefd=False),
            encoding="utf-8",
            errors="backslashreplace" if fd == 2 else "strict",
            line_buffering=os.isatty(fd) or fd == 2,
            write_through=unbuffered,
        )
        setattr(sys, name, stream)
    from wrighty.cli.entry import main

    code: object = 0
    try:
        code = main()
    except SystemExit as stop:
        code = stop.code
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    if code is None:
        os._exit(0)
    if isinstance(code, int):
        os._exit(code & 0xFF)
    print(code, file=sys.stderr)
    os._exit(1)


def _run(connection: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    """In the runner: start the command's process, wait for it, send its status."""
    pid = os.fork()
    if pid == 0:
        connection.close()
        try:
            _become_the_command(request, fds)
        finally:
            os._exit(70)
    for fd in fds:
        os.close(fd)
    connection.sendall(struct.pack("!i", pid))  # the shim passes its signals on to it
    _pid, wait_status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    connection.sendall(struct.pack("!i", 128 - code if code < 0 else code))
    os._exit(0)


def serve(socket_path: str) -> None:
    import wrighty

    for module in pkgutil.walk_packages(wrighty.__path__, "wrighty."):
        if not module.name.startswith(NOT_PRELOADED):
            importlib.import_module(module.name)
    for name in ALSO_PRELOADED:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        connection, _address = listener.accept()
        try:
            request, fds = _receive(connection)
        except (EOFError, ValueError, OSError):
            connection.close()
            continue
        if os.fork() == 0:
            listener.close()
            _run(connection, request, fds)
        connection.close()
        for fd in fds:
            os.close(fd)
        reap_ended_children()


def reap_ended_children() -> None:
    """Collect the forked runs that have ended, without waiting for the others."""
    while True:
        try:
            ended, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if ended == 0:
            return


if __name__ == "__main__":
    serve(sys.argv[1])
