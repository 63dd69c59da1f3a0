"""Answers from a tracker acted on at the operator's desk (docs/sources.md#answers-that-act):
`/wrighty accept` is the same accept the command, the inbox and the console make, and so on.
What the desk says (or why it refused) is the answer wrighty gives on the issue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wrighty.errors import WrightyError

if TYPE_CHECKING:
    from wrighty.domain.conversation import Answer
    from wrighty.operator.context import AppContext
    from wrighty.operator.desk import Desk
    from wrighty.services.conversation import Act
    from wrighty.store.port import Store


def desk_act(desk: Desk) -> Act:
    """What acts on an answer: ``desk``'s action of the same name."""

    def act(item_id: int, answer: Answer, who: str) -> str:
        del who  # the answer's record keeps who; the desk's history says operator
        if answer.action == "accept":
            return desk.accept(item_id)
        if answer.action == "reject":
            return desk.reject(item_id, answer.text)
        if answer.action == "retry":
            return desk.requeue(item_id, resume=True)
        if answer.action == "handoff":
            return desk.handoff(item_id, answer.agent, answer.text or None)
        if answer.action == "cancel":
            return desk.cancel(item_id)
        if answer.action == "priority" and answer.priority is not None:
            return desk.set_priority(item_id, answer.priority)
        raise WrightyError(f"wrighty does not answer /wrighty {answer.action}")

    return act


def tracker_act(app_ctx: AppContext, store: Store) -> Act:
    """The operator's desk on ``store``, acting on tracker answers."""
    from wrighty.operator.desk import OperatorDesk, board_settings

    return desk_act(OperatorDesk(app_ctx, store, board_settings(app_ctx)))
