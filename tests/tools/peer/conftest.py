"""The real panda-server 1.0.4, set up once per run (tools/peer/setup.py); its tests skip, saying why, when
the package index cannot be reached."""

import pytest

from tools.peer.setup import PeerUnavailable, peer_ready


@pytest.fixture(scope="session")
def real_panda():
    try:
        return peer_ready()
    except PeerUnavailable as error:
        pytest.skip(f"differential test skipped: the real PanDA code could not be set up ({error})")


@pytest.fixture
def production_access(settings):
    """The production settings' reading rule (issue 47, config/settings/production.py): nothing open to anonymous
    clients but the pilot's caches, so the real clients reach us with their tokens, as they reach PanDA."""
    settings.API_ANONYMOUS_READ = settings.DASHBOARD_ANONYMOUS_READ = False


def disagreements(report, *, real_code_failures_aside: bool = False) -> list[str]:
    """One line per scenario where ours and the real broker differ (real-code failures set aside on request)."""
    return [
        f"scenario {c.seed}: {c.note} {c.peer_error}".rstrip()
        for c in report.comparisons
        if not c.agrees and not (real_code_failures_aside and c.peer_error)
    ]


def real_skip_codes(theirs) -> set[str]:
    """Every skip code the real broker wrote over the scenarios."""
    return {code for t in theirs for codes in t.get("skipped", {}).values() for code in codes}
