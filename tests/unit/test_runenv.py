"""What the worker gives a run (wrighty/runenv.py): the store without its password, the
pricing, and the same read back by the commands an agent calls from inside the run."""

from __future__ import annotations

from pathlib import Path

from wrighty.domain.usage import Price
from wrighty.runenv import PRICING_VARIABLE, STORE_VARIABLE, run_pricing, run_store, run_variables
from wrighty.store import StoreTarget, parse_store_url


def test_a_postgresql_store_is_given_without_its_password() -> None:
    target = parse_store_url("postgresql://wrighty:Hunter2Secret@db1:5432/queue", base=Path("/"))
    variables = run_variables(target, {}, config_path=None)
    assert "Hunter2Secret" not in repr(variables)
    assert run_store(variables) == StoreTarget(postgres_url=variables[STORE_VARIABLE])
    assert variables[STORE_VARIABLE].startswith("postgresql://")
    assert "WRIGHTY_CONFIG" not in variables


def test_a_sqlite_store_and_the_pricing_read_back_as_the_worker_gave_them(tmp_path: Path) -> None:
    target = parse_store_url("state/wrighty.db", base=tmp_path)
    pricing = {"house-model": Price(10, 30, 1, 2.5), "*": Price(0.5, 1)}
    variables = run_variables(target, pricing, config_path=tmp_path / "wrighty.json")
    assert variables[STORE_VARIABLE] == f"sqlite:///{tmp_path}/state/wrighty.db"
    assert variables["WRIGHTY_CONFIG"] == str(tmp_path / "wrighty.json")
    assert run_store(variables) == target
    assert run_pricing(variables) == pricing


def test_a_run_given_nothing_reads_nothing() -> None:
    assert run_store({}) is None
    assert run_pricing({STORE_VARIABLE: "sqlite:////x.db"}) == {}
    assert PRICING_VARIABLE == "WRIGHTY_RUN_PRICING"
