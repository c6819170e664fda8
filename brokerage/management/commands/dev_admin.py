"""Creates an `admin` superuser with a generated password for make run's demo or a development setup (the
DEV_ADMIN setting: config.settings.demo and .development, never production)."""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "For the demo, create the superuser 'admin' with a random password (written to var/admin-password)."

    def handle(self, *args, **options):
        if not settings.DEV_ADMIN:
            raise CommandError(
                "dev_admin runs only under the demo or development settings; use createsuperuser in production",
                returncode=2,
            )
        user_model = get_user_model()
        password_file = settings.VAR_DIR / "admin-password"
        if user_model.objects.filter(is_superuser=True).exists():
            if password_file.exists():
                self.stdout.write(f"Admin login: admin / {password_file.read_text().strip()}")
            return
        password = secrets.token_urlsafe(12)
        user_model.objects.create_superuser("admin", "admin@localhost", password)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
        self.stdout.write(self.style.SUCCESS(f"Created admin login: admin / {password} (kept in {password_file})"))
