"""Slots for costly requests (issue 47): a what-if replays thousands of decisions, and eight from one viewer at once
held every gunicorn worker while another user's page waited a minute. A costly request takes a slot first: one at
a time per client (a user, or an address when anonymous) and COSTLY_CONCURRENT at once on the whole site, so that
most web workers are always free for pages; a request that finds no slot is told to come back (429, Retry-After)
instead of queueing. Each runs within WHAT_IF_SECONDS (brokerage.selectors.whatif), and a slot lapses on its own
after twice that, should its holder die.

The slots live in the shared cache (Redis in production, a directory shared by make run's processes), so every
web worker sees them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache


class SlotsBusy(Exception):
    """No slot: `retry_after` seconds is when to try again; the message says whose slots are taken."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def _lapse_seconds() -> int:
    return int(2 * settings.WHAT_IF_SECONDS) + 5


@contextmanager
def costly_slot(*, client: str, what: str) -> Iterator[None]:
    """Holds the client's slot and one of the site's while the block runs; SlotsBusy when either is taken."""
    token, lapse = uuid.uuid4().hex, _lapse_seconds()
    mine = f"costly:client:{client}"
    if not cache.add(mine, token, lapse):
        raise SlotsBusy(f"Your previous {what} is still running; this one was not started.", retry_after=5)
    site = None
    try:
        for index in range(settings.COSTLY_CONCURRENT):
            if cache.add(f"costly:site:{index}", token, lapse):
                site = f"costly:site:{index}"
                break
        if site is None:
            raise SlotsBusy(
                f"{settings.COSTLY_CONCURRENT} costly requests are running on the site; this {what} was not started.",
                retry_after=max(1, int(settings.WHAT_IF_SECONDS)),
            )
        yield
    finally:
        for key in (site, mine):
            if key is not None and cache.get(key) == token:  # a lapsed slot someone else took is not ours to free
                cache.delete(key)


def costly_client(request) -> str:
    """Whose slot a request takes: the signed-in user's, else the client address's."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return f"address:{request.META.get('REMOTE_ADDR', '')}"
