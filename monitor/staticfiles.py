"""Serves Plotly's JavaScript from the installed plotly package as static/plotly/plotly.min.js: the dashboard
never reaches a CDN (the machines it runs on may have no internet), and the file always matches the package
that draws the figures."""

from __future__ import annotations

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"
SERVED = {"plotly/plotly.min.js": "plotly.min.js"}


class PlotlyFinder(BaseFinder):
    """A static-files finder for the one file of the plotly package the pages load."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(PACKAGE_DATA))
        self.storage.prefix = "plotly"

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path in SERVED:
            found = str(PACKAGE_DATA / SERVED[path])
            return [found] if find_all else found
        # nothing, as Django's own finders say it: an empty list (staticfiles.finders.find turns a None into a
        # match, and every missing file under /static/ then answered 500 instead of 404)
        return []

    def list(self, ignore_patterns):
        for name in SERVED.values():
            yield name, self.storage
