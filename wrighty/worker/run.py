"""One claim's run, as the steps of its life: prepare, watch, verify, finish.

A ClaimRun is made for one claim, in the thread that will watch its agent, with everything it
needs passed in: the worker's Setting (identity, agent plan, lease terms, retry policy, clock,
output) and a PatientStore bound to the claim's lease. Each step is a module of its own that
reads and adds to the claim's shared `ClaimLife` (worker/life.py); where the item goes is
decided once, by `domain/decide.py`, from the facts the steps gathered. Every write it makes
about the item goes through the store's guarded operations; when one reports the claim lost,
the run stops the agent's whole tree and writes nothing more about the item (invariant 2 of
docs/claims.md).
"""

from __future__ import annotations

import threading

from wrighty.domain.claims import Claim
from wrighty.domain.model import Change
from wrighty.supervisor.process import AgentProcess
from wrighty.worker.finish import finish
from wrighty.worker.lease import LeaseGuard
from wrighty.worker.life import ClaimLife, Setting
from wrighty.worker.patient import PatientStore
from wrighty.worker.prepare import prepare
from wrighty.worker.verify import verify
from wrighty.worker.watch import watch

__all__ = ["ClaimRun", "Setting"]


class ClaimRun:
    """The life of one claim, from the claim to the item's settlement (or to the claim's loss).

    ``wake`` is set when the agent exits, when its vendor tells the session id, and when the
    worker is asked to stop.
    """

    def __init__(
        self,
        setting: Setting,
        store: PatientStore,
        claim: Claim,
        wake: threading.Event,
        guard: LeaseGuard,
    ) -> None:
        self.life = ClaimLife(setting, store, claim, wake, guard)

    def work(self) -> None:
        life = self.life
        prepared = prepare(life)
        if prepared is None:
            return
        ended = watch(life, prepared)
        if ended is None:
            return
        finish(life, verify(life, ended))

    def settle_internal_error(self, error: Exception) -> None:
        """wrighty failed on this item: stop its agent, if one runs, and settle the item as
        internal-error under its claim (LeaseGone if the store stayed away)."""
        self.life.settle_internal_error(error)

    # How far the run got, for settling the item if wrighty fails on the way.

    @property
    def run_id(self) -> str | None:
        return self.life.run_id

    @property
    def agent(self) -> AgentProcess | None:
        return self.life.agent

    @property
    def pending(self) -> Change | None:
        return self.life.pending
