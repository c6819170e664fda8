"""Alias of config.settings.development for one release (issue 48)."""

from config.settings.development import *  # noqa: F403

from . import moved

moved("brokerage.settings.development", "config.settings.development")
