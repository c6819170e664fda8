"""An API token for a user, under any settings (issue 47: production had no way to make one but the admin form).
Shown once: printed, or written with --output to a file only its owner can read (without a newline, as a pilot's
PANDA_AUTH_TOKEN file wants it). Only its digest is kept; the admin lists it by owner, name and expiry."""

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from brokerage.services.accounts import api_token_create


class Command(BaseCommand):
    help = "Make an API token for a user (Authorization: Token …); it is shown only this once."

    def add_arguments(self, parser):
        parser.add_argument("username", help="an existing, active user: the token acts as this user")
        parser.add_argument("--name", default="", help="what the token is for (shown in the admin)")
        parser.add_argument(
            "--days", type=int, default=settings.API_TOKEN_DAYS, help="valid this many days (API_TOKEN_DAYS)"
        )
        parser.add_argument("--output", help="write the token to this file (owner-readable, no newline)")

    def handle(self, *args, **options):
        user = get_user_model().objects.filter(username=options["username"], is_active=True).first()
        if user is None:
            raise CommandError(f"username: no active user {options['username']!r}", returncode=2)
        if not 1 <= options["days"] <= 3660:
            raise CommandError("--days: from 1 to 3660", returncode=2)
        if len(options["name"]) > 100:
            raise CommandError("--name: at most 100 characters", returncode=2)
        path = Path(options["output"]) if options["output"] else None
        descriptor = None
        if path is not None:  # the file first: a token nobody could read is not made
            try:
                path.unlink(missing_ok=True)
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError as error:
                raise CommandError(f"--output: {path}: {error.strerror}", returncode=2) from error
        token, secret = api_token_create(user=user, name=options["name"], now=timezone.now(), days=options["days"])
        if descriptor is None:
            self.stdout.write(secret)
            return
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secret)
        self.stdout.write(f"token for {user} written to {path}, valid until {token.expiry:%Y-%m-%d %H:%M} UTC")
