"""The git settings that name a program, and the settings wrighty gives git so that none of
the repository's runs (docs/work-product.md#what-git-runs).

An agent can write its repository's config (`git config` in a worktree writes the shared
``.git/config``; ``include.path`` there brings in any file), its ``.gitattributes`` and the
shared hooks folder. So every git command wrighty runs gets, as command-line settings (which
win over every config file):

- ``FIXED``: settings that switch a program off whoever set it (the file-system monitor,
  signing, recursion into nested repositories, the ``ext::`` transport), and
  ``core.hooksPath`` pointing nowhere unless the command's hooks are asked for;
- for each setting that names a program (``PROGRAM_SETTINGS``) and that the repository's own
  config (scope ``local`` or ``worktree``) sets: what the user's config (``system``, ``global``,
  ``command``) says of it, or nothing (an empty value, which git takes as "no program": a
  filter that does not filter, a merge driver that fails, a credential helper list that is
  empty). A setting a driver is named in (``filter.<driver>.clean``) has a name the agent
  chooses, so the names are read from the config each time (``git config --list
  --show-scope -z``, ``listing``).

Pure: the caller runs git.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The config scopes an agent can write: the repository's config and its includes, a
# worktree's config.worktree.
UNTRUSTED_SCOPES = frozenset({"local", "worktree"})

# Settings every git command gets, whatever any config says.
FIXED: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # a hook program, or a daemon that outlives the command
    ("submodule.recurse", "false"),  # a nested repository's config is the agent's too,
    ("diff.ignoreSubmodules", "dirty"),  # and status and diff would run git in its work tree
    ("commit.gpgSign", "false"),  # gpg.program
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("merge.verifySignatures", "false"),
    ("protocol.ext.allow", "never"),  # ext::COMMAND URLs run COMMAND
)
# Hooks: git looks for <hooksPath>/<hook>, which is never there.
NO_HOOKS = ("core.hooksPath", "/dev/null")

# Each setting in git-config(1) that names a program, as (section, subsection, variable):
# ``subsection`` "*" is any subsection (a driver, a remote, a URL), None is none; a variable
# "*" is any (pager.<cmd>, sendemail.*).
PROGRAM_SETTINGS: tuple[tuple[str, str | None, str], ...] = (
    ("core", None, "askpass"),
    ("core", None, "sshcommand"),
    ("core", None, "gitproxy"),
    ("core", None, "alternaterefscommand"),
    ("core", None, "editor"),
    ("core", None, "pager"),
    ("sequence", None, "editor"),
    ("pager", None, "*"),
    ("diff", None, "external"),
    ("diff", "*", "command"),
    ("diff", "*", "textconv"),
    ("filter", "*", "clean"),
    ("filter", "*", "smudge"),
    ("filter", "*", "process"),
    ("merge", "*", "driver"),
    ("credential", None, "helper"),
    ("credential", "*", "helper"),
    ("gpg", None, "program"),
    ("gpg", "*", "program"),
    ("gpg", "ssh", "defaultkeycommand"),
    ("remote", "*", "receivepack"),
    ("remote", "*", "uploadpack"),
    ("remote", "*", "vcs"),  # git-remote-<vcs>
    ("protocol", None, "allow"),
    ("protocol", "*", "allow"),
    ("uploadpack", None, "packobjectshook"),
    ("difftool", "*", "cmd"),
    ("mergetool", "*", "cmd"),
    ("man", None, "viewer"),
    ("man", "*", "cmd"),
    ("man", "*", "path"),
    ("browser", "*", "cmd"),
    ("browser", "*", "path"),
    ("web", None, "browser"),
    ("instaweb", None, "browser"),
    ("instaweb", None, "httpd"),
    ("guitool", "*", "cmd"),
    ("imap", None, "tunnel"),
    ("interactive", None, "difffilter"),
    ("sendemail", None, "*"),
    ("sendemail", "*", "*"),
)

# One entry of `git config --list --show-scope -z`: SCOPE NUL KEY [LF VALUE] NUL.
_ENTRY = re.compile(r"([a-z]+)\0([^\n\0]+)(?:\n([^\0]*))?\0", re.DOTALL)


@dataclass(frozen=True)
class Setting:
    scope: str
    key: str  # section and variable in lowercase, as git lists them; the subsection as written
    value: str | None  # None: a bare key ("[core] bare"), which git reads as true


def listing(text: str) -> list[Setting]:
    """The settings of ``git config --list --show-scope -z``'s output, in git's order."""
    return [Setting(*match.groups()) for match in _ENTRY.finditer(text)]


def names_a_program(key: str) -> bool:
    """Whether the config key ``key`` (as git lists it) is one of PROGRAM_SETTINGS."""
    section, _, rest = key.partition(".")
    subsection, _, variable = rest.rpartition(".")
    section, variable = section.lower(), variable.lower()
    for known_section, known_subsection, known_variable in PROGRAM_SETTINGS:
        if section != known_section or known_variable not in ("*", variable):
            continue
        if known_subsection is None and not subsection:
            return True
        if known_subsection == "*" and subsection:
            return True
        if known_subsection is not None and known_subsection == subsection.lower():
            return True
    return False


def overrides(settings: list[Setting], *, hooks: bool) -> list[tuple[str, str]]:
    """The settings, in order, that git gets on top of ``settings`` (the config as it lists
    it) so that no program the repository's config names runs: FIXED, NO_HOOKS unless
    ``hooks``, and for every program setting the repository sets, an empty value followed
    by the user's own values (the last of which is the one a single-valued setting keeps)."""
    given: list[tuple[str, str]] = list(FIXED)
    if not hooks:
        given.append(NO_HOOKS)
    untrusted: dict[str, str] = {}  # the key folded as git folds it -> the key
    for setting in settings:
        if setting.scope in UNTRUSTED_SCOPES and names_a_program(setting.key):
            untrusted.setdefault(_folded(setting.key), setting.key)
    for folded, key in untrusted.items():
        given.append((key, ""))
        given.extend(
            (key, setting.value)
            for setting in settings
            if setting.scope not in UNTRUSTED_SCOPES
            and setting.value is not None
            and _folded(setting.key) == folded
        )
    return given


def variables(settings: list[Setting]) -> dict[str, str]:
    """Environment variables for the program settings git reads first-come rather than
    last (a later value cannot replace the repository's): ``core.gitProxy``, switched off by
    an empty GIT_PROXY_COMMAND when the repository sets it. (``remote.<name>.receivepack``,
    another, is given on the push's command line: workproduct/integrate.py.)"""
    if any(
        setting.scope in UNTRUSTED_SCOPES and _folded(setting.key) == "core.gitproxy"
        for setting in settings
    ):
        return {"GIT_PROXY_COMMAND": ""}
    return {}


def _folded(key: str) -> str:
    """``key`` as git compares keys: section and variable case-insensitive, the subsection
    as written."""
    section, _, rest = key.partition(".")
    subsection, _, variable = rest.rpartition(".")
    middle = f".{subsection}" if subsection else ""
    return f"{section.lower()}{middle}.{variable.lower()}"
