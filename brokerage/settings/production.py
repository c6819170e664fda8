"""Alias of config.settings.production for one release (issue 48)."""

from config.settings.production import *  # noqa: F403

from . import moved

moved("brokerage.settings.production", "config.settings.production")
