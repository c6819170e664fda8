"""Setting up the real code: without a reachable package index the differential tests skip and say why."""

import pytest

from brokerage.peer.setup import PeerUnavailable, peer_ready

pytestmark = pytest.mark.peer


def test_an_unreachable_index_is_reported_not_raised_as_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("PEER_DIR", str(tmp_path / "peer"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    with pytest.raises(PeerUnavailable, match="installing the peer's packages failed"):
        peer_ready()


def test_without_mariadb_the_dirac_test_says_what_is_missing(monkeypatch):
    from brokerage.peer import dirac_setup

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(dirac_setup, "SYSTEM_PATHS", ())
    with pytest.raises(PeerUnavailable, match="mariadbd is not installed"):
        dirac_setup.dirac_peer_ready()
