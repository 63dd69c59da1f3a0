"""The settings wrighty gives git so that no program the repository's config names runs
(domain/git_programs.py, docs/work-product.md#what-git-runs): every setting of git-config(1)
that names a program is reset when the repository sets it, to the user's own value or none."""

from __future__ import annotations

import pytest

from wrighty.domain.git_programs import (
    FIXED,
    NO_HOOKS,
    PROGRAM_SETTINGS,
    listing,
    names_a_program,
    overrides,
    variables,
)


def listed(*entries: tuple[str, str, str | None]) -> str:
    """``git config --list --show-scope -z``'s output for ``entries`` (scope, key, value)."""
    return "".join(
        f"{scope}\0{key}\0" if value is None else f"{scope}\0{key}\n{value}\0"
        for scope, key, value in entries
    )


def example_key(section: str, subsection: str | None, variable: str) -> str:
    middle = "" if subsection is None else f".{'Any.Driver=x' if subsection == '*' else subsection}"
    return f"{section}{middle}.{'anything' if variable == '*' else variable}"


@pytest.mark.parametrize("setting", PROGRAM_SETTINGS, ids=lambda s: example_key(*s))
def test_every_program_setting_the_repository_sets_is_reset_to_none(
    setting: tuple[str, str | None, str],
) -> None:
    key = example_key(*setting)
    assert names_a_program(key)
    given = overrides(listing(listed(("local", key, "touch /tmp/planted"))), hooks=False)
    assert given[-1] == (key, "")
    assert all(value != "touch /tmp/planted" for _, value in given)


def test_the_users_own_value_is_kept_and_a_list_is_reset_before_it() -> None:
    text = listed(
        ("global", "credential.helper", "store"),
        ("global", "filter.lfs.clean", "git-lfs clean -- %f"),
        ("local", "credential.helper", "planted"),
        ("local", "filter.lfs.clean", "planted"),
        ("worktree", "FILTER.lfs.Clean", "planted too"),  # git folds section and variable
        ("local", "filter.lfs.required", None),
    )
    given = overrides(listing(text), hooks=False)
    assert given[len(FIXED) + 1 :] == [
        ("credential.helper", ""),
        ("credential.helper", "store"),
        ("filter.lfs.clean", ""),
        ("filter.lfs.clean", "git-lfs clean -- %f"),
    ]


def test_settings_that_name_no_program_are_left_alone_and_hooks_only_when_asked() -> None:
    text = listed(("local", "user.name", "A"), ("local", "core.hooksPath", ".husky"))
    assert not names_a_program("user.name")
    assert not names_a_program("filter.clean")  # no driver: not a filter's setting
    assert overrides(listing(text), hooks=False) == [*FIXED, NO_HOOKS]
    assert overrides(listing(text), hooks=True) == list(FIXED)


def test_a_driver_named_with_an_equals_sign_or_a_newline_in_its_value_is_read_whole() -> None:
    text = listed(("local", "filter.a=b.c.clean", "line one\nline two"))
    (setting,) = listing(text)
    assert (setting.key, setting.value) == ("filter.a=b.c.clean", "line one\nline two")
    assert overrides([setting], hooks=True)[-1] == ("filter.a=b.c.clean", "")


def test_a_proxy_the_repository_names_is_switched_off_by_the_environment() -> None:
    # git keeps the first core.gitProxy it reads (the repository's): a later one cannot win.
    planted = listing(listed(("local", "core.gitProxy", "planted for example.com")))
    assert variables(planted) == {"GIT_PROXY_COMMAND": ""}
    assert variables(listing(listed(("global", "core.gitProxy", "mine")))) == {}
