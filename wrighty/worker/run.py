"""One claim's run, as the steps of its life: prepare, watch, verify, finish.

`work` is called for one claim, in the thread that will watch its agent, with the claim's
`ClaimLife` (worker/life.py): the worker's Setting (identity, agent plan, lease terms, retry
policy, clock, output), a PatientStore bound to the claim's lease, and how far the run got.
Each step is a module of its own that reads and adds to that life; where the item goes is
decided once, by `domain/decide.py`, from the facts the steps gathered. Every write it makes
about the item goes through the store's guarded operations; when one reports the claim lost,
the run stops the agent's whole tree and writes nothing more about the item (invariant 2 of
docs/claims.md).
"""

from __future__ import annotations

from wrighty.worker.finish import finish
from wrighty.worker.life import ClaimLife
from wrighty.worker.prepare import prepare
from wrighty.worker.verify import verify
from wrighty.worker.watch import watch


def work(life: ClaimLife) -> None:
    """One claim's life, from the claim to the item's settlement (or to the claim's loss):
    its steps in order, each stopping the rest when it settled the item or lost the claim."""
    prepared = prepare(life)
    if prepared is None:
        return
    ended = watch(life, prepared)
    if ended is None:
        return
    finish(life, verify(life, ended))
