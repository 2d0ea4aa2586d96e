"""Deliveries in SQL: what ``context(..., session=)`` handed out, per session."""

from __future__ import annotations

from ..model import Delivery
from . import codec
from .sqlsession import SQLSession


class DeliveriesTable:
    """The ``deliveries`` table."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def add_delivery(self, namespace: str, delivery: Delivery) -> None:
        self.session._run(
            "INSERT INTO deliveries (namespace, session, seq, anchor, time, items) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                namespace, delivery.session, delivery.seq, delivery.anchor, delivery.time,
                codec.dumps([list(item) for item in delivery.items]),
            ),
        )  # fmt: skip

    def deliveries(self, namespace: str, session: str) -> list[Delivery]:
        rows = self.session._all(
            "SELECT seq, anchor, time, items FROM deliveries WHERE namespace = ? "
            "AND session = ? ORDER BY seq",
            (namespace, session),
        )
        return [
            Delivery(
                session, int(seq), anchor, float(when),
                tuple((str(i), int(r)) for i, r in codec.loads(items)),
            )
            for seq, anchor, when, items in rows
        ]  # fmt: skip
