"""Delivering the notification outbox (docs/notifications.md): the sinks (sinks.py) and the
delivery pass and the worker's delivery thread (delivery.py).

Only the worker's delivery thread and the `wrighty notify` commands import this package, and
Apprise is imported only when an Apprise sink delivers, so that no other command pays for it.
"""
