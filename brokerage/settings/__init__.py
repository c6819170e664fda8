"""The settings moved to `config.settings` (issue 48). These modules are aliases kept for one release, so that an
environment file or a systemd unit still naming `brokerage.settings.production` keeps working: each one loads its
new module and says, once at start (a FutureWarning: shown by default), which name to use."""

import warnings


def moved(old: str, new: str) -> None:
    warnings.warn(f"DJANGO_SETTINGS_MODULE={old} is now {new}; the old name goes in the next release",
                  FutureWarning, stacklevel=3)  # fmt: skip
