"""Setting up the real code: without a reachable package index the differential tests skip and say why."""

import pytest

from tools.peer.setup import PeerUnavailable, peer_ready

pytestmark = pytest.mark.peer


def test_an_unreachable_index_is_reported_not_raised_as_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("PEER_DIR", str(tmp_path / "peer"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    with pytest.raises(PeerUnavailable, match="installing the peer's packages failed"):
        peer_ready()


def test_without_mariadb_the_dirac_test_says_what_is_missing(monkeypatch):
    from tools.peer import dirac_setup

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(dirac_setup, "SYSTEM_PATHS", ())
    with pytest.raises(PeerUnavailable, match="mariadbd is not installed"):
        dirac_setup.dirac_peer_ready()


def _hold(path, log, held, release):
    from tools.peer.setup import setup_lock

    with setup_lock(path):
        log.put("first in")
        held.set()
        release.wait(10)
        log.put("first out")


def _wait_then_enter(path, log):
    from tools.peer.setup import setup_lock

    with setup_lock(path):
        log.put("second in")


def test_two_processes_setting_up_the_same_tree_take_turns(tmp_path):
    # `make test-peer` runs in several processes: the second waits until the first has unpacked and installed
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    log, held, release = context.Queue(), context.Event(), context.Event()
    first = context.Process(target=_hold, args=(tmp_path / "venv", log, held, release))
    first.start()
    assert held.wait(30)
    second = context.Process(target=_wait_then_enter, args=(tmp_path / "venv", log))
    second.start()
    second.join(1)
    assert second.is_alive(), "the second process entered while the first held the lock"
    release.set()
    first.join(30)
    second.join(30)
    assert [log.get(timeout=5) for _ in range(3)] == ["first in", "first out", "second in"]
    assert (first.exitcode, second.exitcode) == (0, 0)
