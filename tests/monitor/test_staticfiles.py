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


def test_a_missing_static_file_is_a_404_through_the_whole_stack(client):
    assert client.get("/static/js/no-such-file.js").status_code == 404
    assert client.get("/static/plotly/nothing.js").status_code == 404
    assert client.get("/static/js/monitor.js").status_code == 200


def test_collected_files_are_served_compressed_under_their_hash_and_cached_a_year(settings, tmp_path):
    # the storage of production and make run (config/settings/base.py); the tests render from the source tree
    from django.contrib.staticfiles.storage import staticfiles_storage
    from django.core.management import call_command
    from django.http import HttpResponse
    from whitenoise.middleware import WhiteNoiseMiddleware

    settings.STATIC_ROOT = tmp_path
    settings.WHITENOISE_USE_FINDERS = False
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    call_command("collectstatic", interactive=False, verbosity=0)
    hashed = staticfiles_storage.url("plotly/plotly.min.js")
    assert hashed.startswith("/static/plotly/plotly.min.")
    assert hashed != "/static/plotly/plotly.min.js"
    original = (tmp_path / "plotly" / "plotly.min.js").stat().st_size
    compressed = (tmp_path / hashed.removeprefix("/static/")).with_suffix(".js.gz").stat().st_size
    assert compressed < original / 2  # 4.8 MB -> about 1.4 MB

    middleware = WhiteNoiseMiddleware(lambda request: HttpResponse(status=404))
    response = middleware(RequestFactory().get(hashed, HTTP_ACCEPT_ENCODING="gzip, deflate, br"))
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert int(response["Content-Length"]) == compressed
    assert "max-age=315360000" in response["Cache-Control"]
    assert "immutable" in response["Cache-Control"]
    # the unhashed name still answers (a bookmark, a stale page) but is not cached for long
    plain = middleware(RequestFactory().get("/static/plotly/plotly.min.js"))
    assert plain.status_code == 200
    assert "immutable" not in plain.get("Cache-Control", "")
    assert middleware(RequestFactory().get("/static/js/no-such-file.js")).status_code == 404
