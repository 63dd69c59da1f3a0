"""How long the read commands take to start, beside a bare interpreter.

Makes a scratch project (`wrighty init`, a few items) and times, in the same run, each of

- baseline: `python -c pass` with the interpreter wrighty is installed in;
- typer alone: a typer app with wrighty's two global options and a `list` command that prints
  one line, nothing of wrighty imported: what any command costs before wrighty's own code;
- `wrighty --version`, `wrighty list`, `wrighty show 1`, `wrighty status`, `wrighty status
  --json`: the installed executable, in the scratch project, as a user runs it;
- with `--before PATH` (another installation's `wrighty`, e.g. of the commit a change starts
  from), the same commands of that one too, in the same project and the same turns, so that
  before and after are measured side by side on a busy machine.

Bytecode is cached, as in any installed environment, also where PYTHONDONTWRITEBYTECODE is
set: in the scratch folder (PYTHONPYCACHEPREFIX), so that the source tree is left alone. The
commands are run in turns (one of each, then again), so that a slow moment of the machine
falls on all of them alike. Each is run --runs times; the median is reported, with its ratios
to the baseline's and to typer alone's. Beside the wall time, the CPU time the process used
(user + system), whose ratio to typer alone's moves less when other work shares the machine.

Usage: python bench/cli_latency.py [--runs 30] [--items 5] [--before PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = (("--version",), ("list",), ("show", "1"), ("status",), ("status", "--json"))

TYPER_ALONE = """
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def root(
    config: Annotated[Path | None, typer.Option("--config", dir_okay=False)] = None,
    store: Annotated[str | None, typer.Option("--store")] = None,
) -> None:
    pass


@app.command("list")
def list_items(state: Annotated[list[str] | None, typer.Option("--state")] = None) -> None:
    typer.echo("no items")


app()
"""


def installed_wrighty() -> str:
    beside_python = Path(sys.executable).parent / "wrighty"
    if not beside_python.exists():
        sys.exit(f"no wrighty executable beside {sys.executable}; run `pip install -e .`")
    return str(beside_python)


def make_project(root: Path, wrighty: str, items: int, env: dict[str, str]) -> None:
    def run(*args: str) -> None:
        subprocess.run([wrighty, *args], cwd=root, env=env, check=True, capture_output=True)

    run("init")
    for n in range(items):
        run("create", "--title", f"item {n}", "--body", "a small task", "--queue")


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall time, and the CPU time (user + system) the process itself used."""
    began = time.perf_counter()
    with subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as process:
        assert process.stderr is not None
        errors = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - began
    if process.returncode not in (0, 1):  # status exits 1 when unhealthy
        sys.exit(f"{' '.join(command)} failed: {errors.decode(errors='replace')}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--before", help="another installation's wrighty executable")
    args = parser.parse_args()
    wrighty = installed_wrighty()
    with tempfile.TemporaryDirectory(prefix="wrighty-latency-") as scratch:
        root = Path(scratch) / "project"
        root.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("WRIGHTY_")}
        env["XDG_CONFIG_HOME"] = str(Path(scratch) / "xdg")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / "pycache")
        make_project(root, wrighty, args.items, env)
        typer_alone = Path(scratch) / "typer_alone.py"
        typer_alone.write_text(TYPER_ALONE)
        contenders = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "typer alone: list": [sys.executable, str(typer_alone), "list"],
        }
        contenders |= {f"wrighty {' '.join(c)}": [wrighty, *c] for c in COMMANDS}
        if args.before:
            contenders |= {f"before: {' '.join(c)}": [args.before, *c] for c in COMMANDS}
        for command in contenders.values():  # untimed: fills the bytecode cache
            timed(command, root, env)
        times: dict[str, list[float]] = {name: [] for name in contenders}
        cpu: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, command in contenders.items():
                elapsed, used = timed(command, root, env)
                times[name].append(elapsed)
                cpu[name].append(used)
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    baseline, typer_floor = medians["python -c pass"], medians["typer alone: list"]
    typer_cpu = cpu_medians["typer alone: list"]
    print(f"median of {args.runs} runs each, {args.items} items, {sys.executable}")
    print(f"{'':<24} {'median':>10}  {'/python':>7}  {'/typer':>6}  {'cpu':>8}  {'/typer':>6}")
    for name, median in medians.items():
        print(
            f"{name:<24} {median * 1000:7.1f} ms  {median / baseline:6.1f}x  "
            f"{median / typer_floor:5.2f}x  {cpu_medians[name] * 1000:5.0f} ms  "
            f"{cpu_medians[name] / typer_cpu:5.2f}x"
        )


if __name__ == "__main__":
    main()
