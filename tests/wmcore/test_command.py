"""`manage.py broker` runs a wmcore_pull scenario file: the report in words, the JSON, and bad input → exit 2."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "wmcore_pull.json"


def test_the_report_explains_each_element_left():
    out = io.StringIO()
    call_command("broker", str(EXAMPLE), stdout=out)
    report = out.getvalue()
    assert report.startswith("pullWork: 2 of 6 elements (50 jobs) to 2 sites")
    assert "rereco#1: At priority 200,000: sites T1_US_FNAL have 360 jobs at or above it, thresholds 300." in report
    assert "cern-only: It may use T2_CH_CERN; states there: T2_CH_CERN: Draining" in report


def test_json_and_a_bad_file(tmp_path):
    out = io.StringIO()
    call_command("broker", str(EXAMPLE), "--json", stdout=out)
    assert json.loads(out.getvalue())["chosen"] == "urgent-rereco#1"
    bad = json.loads(EXAMPLE.read_text())
    bad["site_jobs"] = {"T1_US_FNAL": {"200000": -3}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(CommandError, match=r"\$\.site_jobs\['T1_US_FNAL'\]\.200000: expected a number ≥ 0") as refused:
        call_command("broker", str(path))
    assert refused.value.returncode == 2
