"""Setting a project up and checking it: `init`, `config validate`, `config schema` and
`agents`."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Annotated

import typer

from wrighty.cli.common import JsonFlag, WrightyGroup, app_context, console
from wrighty.cli.documents import print_json
from wrighty.domain.outcomes import OutcomeClass
from wrighty.domain.text import printable_line
from wrighty.errors import ConfigError, WrightyError
from wrighty.operator.documents import agent_json
from wrighty.store import init_store, parse_store_url


def init(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing wrighty.json with defaults.")
    ] = False,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="Where the state lives: a SQLite path or postgresql://... "
            "(same as the global --store).",
        ),
    ] = None,
    example: Annotated[
        bool,
        typer.Option(
            "--example",
            help="Make the example agent (wrighty-example-agent) the default agent of a new "
            "wrighty.json, to try wrighty without a coding agent.",
        ),
    ] = False,
) -> None:
    """Create wrighty.json and the state store here (safe to run again)."""
    from wrighty.config import CONFIG_FILENAME, DEFAULT_STORE_URL
    from wrighty.installation import installation_id
    from wrighty.project import (
        config_document,
        ensure_ignored,
        write_json_file,
        write_schema_copy,
    )

    app_ctx = app_context(ctx)
    if store is not None:
        app_ctx = dataclasses.replace(app_ctx, store_option=store)
    config_path = (app_ctx.config_option or app_ctx.cwd / CONFIG_FILENAME).absolute()
    root_dir = config_path.parent
    config_existed = os.path.lexists(config_path)  # a link that leads nowhere is there too
    if config_existed and config_path.is_dir():
        raise WrightyError(
            f"{config_path}: is a directory, not a regular file; move it away and run "
            "`wrighty init` again"
        )
    keep_existing = config_existed and not force
    kept_url = app_ctx.config().config.store.url if keep_existing else DEFAULT_STORE_URL
    if app_ctx.store_option is not None:
        target = parse_store_url(app_ctx.store_option, base=app_ctx.cwd)
    else:
        target = parse_store_url(kept_url, base=root_dir)
    done: list[str] = []
    verb = {"created": "created", "migrated": "opened (and migrated)", "opened": "opened"}
    done.append(f"{verb[init_store(target)]} store {target.describe()}")
    write_schema_copy(root_dir)
    store_url = None if app_ctx.store_option is None else target.url()
    # Without --force an existing file is kept, also one that a racing init wrote meanwhile.
    # wrighty.json is the project's file, for git like .gitignore: readable as git checks it
    # out. Everything under .wrighty/ is 0600 (docs/storage.md).
    if not keep_existing and write_json_file(
        config_path,
        config_document(store_url, example=example),
        mode=0o644,
        replace=config_existed,
    ):
        done.append(f"{'replaced' if config_existed else 'created'} {config_path}")
    else:
        done.append(f"kept existing {config_path} (use --force to replace it)")
    ignored_in = ensure_ignored(root_dir)
    if ignored_in is not None:
        done.append(f"added .wrighty/ to {ignored_in} (git ignores it; nothing tracked changed)")
    done.append(f"installation {installation_id()}")
    for line in done:
        typer.echo(printable_line(line))


def agents(
    ctx: typer.Context,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="Only this agent (default: every one known)."),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Run each installed agent once for real on a tiny task, and start each "
            "agent's sandbox with every mount of a run.",
        ),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Confirm --check: a real run may spend usage.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """The agents wrighty knows: installed where, which version, with which permission flags,
    in which sandbox (and whether it starts here)."""
    from wrighty.agents import describe_agent, plan_agent, probe_agent
    from wrighty.config import WrightyConfig, find_config
    from wrighty.config_file import STATE_DIRNAME
    from wrighty.services.sandboxes import sandbox_refusal
    from wrighty.worker.sandbox_check import agent_sandboxes

    if check and not yes:
        raise WrightyError(
            "--check starts each agent for real and may spend usage or credits; "
            "add --yes to go ahead"
        )
    app_ctx = app_context(ctx)
    config_path = find_config(app_ctx.cwd, app_ctx.config_option)
    if config_path is None:
        config, root = WrightyConfig(), app_ctx.cwd  # outside a project: built-in defaults
    else:
        loaded = app_ctx.config()  # a broken wrighty.json is reported, not ignored
        config, root, config_path = loaded.config, loaded.root, loaded.path
    names = [agent] if agent else [n for n in config.agent_names() if n != "command"]
    plans = [plan_agent(config, name, project_root=root) for name in names]
    sandboxes = agent_sandboxes(
        config, plans, check=check, project_root=root, state_dir=root / STATE_DIRNAME,
        config_path=config_path,  # the store's file is hidden in --check's sandboxes
        store=app_ctx.store_target() if check and config_path is not None else None,
    )  # fmt: skip
    rows = []
    for plan, sandbox in zip(plans, sandboxes, strict=True):
        info = describe_agent(plan)
        rows.append((info, probe_agent(plan) if check and info.path else None, sandbox))
    if as_json:
        print_json([agent_json(info, result, sandbox) for info, result, sandbox in rows])
    else:
        from wrighty.cli.render import agents_table

        console().print(agents_table(rows))
    broken = [(info.plan.name, s) for info, _, s in rows if s is not None and s.problem]
    for name, sandbox in broken:
        line = sandbox_refusal(sandbox.setting, sandbox.profile.program, sandbox.problem or "")
        typer.echo(printable_line(f"wrighty: agent {name!r}: {line}"), err=True)
    if any(r is not None and r.outcome_class is not OutcomeClass.SUCCEEDED for _, r, _ in rows):
        raise typer.Exit(1)
    if check and broken:
        raise typer.Exit(1)


config_app = typer.Typer(cls=WrightyGroup, help="Check and describe wrighty.json.")


@config_app.command("validate")
def config_validate(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Argument(help="Config file to check (default: the one wrighty would use)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check wrighty.json: print ok, or every problem as `JSON path: message`."""
    from wrighty.config import (
        CONFIG_FILENAME,
        check_config_text,
        config_warnings,
        find_config,
        read_config_text,
    )

    app_ctx = app_context(ctx)
    target = path or find_config(app_ctx.cwd, app_ctx.config_option)
    if target is None:
        raise ConfigError(f"no {CONFIG_FILENAME} here or above; run `wrighty init`")
    config, problems = check_config_text(read_config_text(target), deep=True)
    # Told, not refused: a check's program missing here (the workers' machines may have it),
    # an agent whose failed checks get no fix turn (a person may want just that).
    warnings = config_warnings(config) if config is not None else []
    if as_json:
        print_json(
            {
                "path": str(target),
                "valid": not problems,
                "problems": [{"path": p.path, "message": p.message} for p in problems],
                "warnings": [{"path": w.path, "message": w.message} for w in warnings],
            },
        )
    elif problems:
        for problem in problems:
            typer.echo(printable_line(str(problem)))
    else:
        typer.echo("ok")
        for warning in warnings:
            typer.echo(f"warning: {printable_line(str(warning))}", err=True)
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise WrightyError(f"{target}: {count}, listed on standard output")


@config_app.command("schema")
def config_schema() -> None:
    """Print the JSON Schema of wrighty.json."""
    from wrighty.config import config_json_schema

    print_json(config_json_schema())
