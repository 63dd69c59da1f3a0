"""Talking on a tracker, on SQL (docs/sources.md#talking-on-the-issue): what wrighty wrote about
an item there (its status comment, its pull request: `tracker_items`), each `/wrighty` answer
by its comment's id (`tracker_answers`: inserted once, so an answer read again is not acted on
again), and where the reading of a source's comments stands (two columns of `sources`)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING

from wrighty.store.fields import to_db_time
from wrighty.store.fleet_rows import answer_from_row, tracker_item_from_row
from wrighty.store.sqlbase import SqlBase

if TYPE_CHECKING:
    from wrighty.domain.conversation import AnswerRecord, TrackerItem
    from wrighty.store.port import Rows


class TrackerSql(SqlBase):
    def get_tracker_item(self, item_id: int) -> TrackerItem | None:
        rows = self._read_all(
            self._rows("select_tracker_item", {"item_id": item_id}), tracker_item_from_row
        )
        return rows[0] if rows else None

    def list_open_pulls(self) -> Rows[TrackerItem]:
        return self._read_all(self._rows("select_open_pulls", {}), tracker_item_from_row)

    def write_tracker_item(self, record: TrackerItem) -> None:
        with self._write() as tx:
            tx.run("upsert_tracker_item", dataclasses.asdict(record))

    def take_answer(self, record: AnswerRecord) -> bool:
        with self._write() as tx:
            cursor = tx.run("insert_answer", dataclasses.asdict(record))
        return cursor.rowcount == 1

    def update_answer(self, record: AnswerRecord) -> None:
        with self._write() as tx:
            tx.run("update_answer", dataclasses.asdict(record))

    def unfinished_answers(self, source: str) -> Rows[AnswerRecord]:
        return self._read_all(
            self._rows("select_unfinished_answers", {"source": source}), answer_from_row
        )

    def write_answers_cursor(self, name: str, since: datetime | None, etag: str | None) -> None:
        with self._write() as tx:
            tx.run(
                "update_source_answers",
                {"name": name, "answers_since": to_db_time(since), "answers_etag": etag},
            )
