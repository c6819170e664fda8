"""Static files come from our own tree and the installed plotly package; a missing one is a 404, never a 500."""

import pytest
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.views import serve
from django.http import Http404
from django.test import RequestFactory

from monitor.staticfiles import PlotlyFinder


def test_the_plotly_finder_finds_its_one_file_and_nothing_else():
    finder = PlotlyFinder()
    assert finder.find("plotly/plotly.min.js").endswith("plotly.min.js")
    assert finder.find("plotly/plotly.min.js", find_all=True)[0].endswith("plotly.min.js")
    assert finder.find("plotly/nothing.js") == []
    assert finder.find("plotly/nothing.js", find_all=True) == []


def test_a_missing_static_file_is_not_found_by_any_finder():
    assert finders.find("js/no-such-file.js") is None
    assert finders.find("js/no-such-file.js", find_all=True) == []


def test_the_development_server_answers_404_for_a_missing_static_file(settings):
    settings.DEBUG = True  # make run's runserver serves /static/ through the finders
    request = RequestFactory().get("/static/js/no-such-file.js")
    with pytest.raises(Http404):
        serve(request, "js/no-such-file.js")
    assert serve(request, "plotly/plotly.min.js").status_code == 200
