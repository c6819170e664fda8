"""Slots for costly requests (issue 47): one per client at a time, COSTLY_CONCURRENT on the site, given back."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from brokerage.costly import SlotsBusy, costly_slot


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def test_one_slot_per_client_and_the_sites_bound(settings):
    settings.COSTLY_CONCURRENT, settings.WHAT_IF_SECONDS = 2, 8
    with costly_slot(client="user:1", what="what-if"):
        with (
            pytest.raises(SlotsBusy, match="Your previous what-if is still running") as own,
            costly_slot(client="user:1", what="what-if"),
        ):
            pass
        assert own.value.retry_after == 5
        with costly_slot(client="user:2", what="what-if"):
            with (
                pytest.raises(SlotsBusy, match="2 costly requests are running on the site") as site,
                costly_slot(client="user:3", what="what-if"),
            ):
                pass
            assert site.value.retry_after == 8
        # user 3's refusal gave its own slot back at once
        with costly_slot(client="user:3", what="what-if"):
            pass
    assert not any(cache.get(f"costly:site:{index}") for index in range(2))
    assert cache.get("costly:client:user:1") is None


def test_a_slot_is_given_back_when_the_work_fails(settings):
    with pytest.raises(RuntimeError), costly_slot(client="user:1", what="what-if"):
        raise RuntimeError("the replay failed")
    with costly_slot(client="user:1", what="what-if"):
        pass


def test_a_lapsed_slot_taken_by_another_is_not_freed_by_its_old_holder(settings):
    settings.COSTLY_CONCURRENT = 1
    with costly_slot(client="user:1", what="what-if"):
        cache.set("costly:site:0", "someone-else", 60)  # ours lapsed meanwhile and another request took it
    assert cache.get("costly:site:0") == "someone-else"
