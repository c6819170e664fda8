"""Selectors read: queries the monitor, the API and the cycles share (keyword-only, `<entity>_<action>`)."""
