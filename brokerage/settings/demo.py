"""Alias of config.settings.demo for one release (issue 48)."""

from config.settings.demo import *  # noqa: F403

from . import moved

moved("brokerage.settings.demo", "config.settings.demo")
