"""Settings from the environment, and production settings that pass `check --deploy` (separate processes)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings import base

ROOT = Path(__file__).resolve().parents[2]


def run_env(drop=()) -> dict[str, str]:
    """This process's environment without the Django settings it runs the tests under."""
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("DJANGO_")}


def run_manage(*args, env_extra=None, drop=()):
    env = {**run_env(drop), **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_production_settings_pass_check_deploy_once_migrated(tmp_path):
    """Issue 47: before `migrate`, check --deploy logged the database's relation errors and reported nothing."""
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": "k" * 20 + "production-grade-secret-0123456789-abcdefghij",
        "ALLOWED_HOSTS": "monitor.example.org",
        "VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.sqlite3'}",  # a fresh database of its own, in either pass
    }
    check = ("check", "--deploy", "--fail-level", "WARNING")
    before = run_manage(*check, env_extra=env, drop=("SECRET_KEY",))
    assert before.returncode == 1
    assert "brokerage.W202" in before.stderr
    assert "Run `manage.py migrate`" in before.stderr
    assert "does not exist" not in before.stderr + before.stdout
    assert "no such table" not in before.stderr + before.stdout
    migrated = run_manage("migrate", "--noinput", env_extra=env, drop=("SECRET_KEY",))
    assert migrated.returncode == 0, migrated.stderr
    result = run_manage(*check, env_extra=env, drop=("SECRET_KEY",))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    simulated = run_manage(*check, env_extra={**env, "GRID_SIMULATOR": "on"}, drop=("SECRET_KEY",))
    assert simulated.returncode == 1
    assert "brokerage.W203" in simulated.stderr


def test_the_old_settings_and_entry_point_names_still_work_for_one_release(tmp_path):
    """Issue 48: the project moved from `brokerage` to `config`; a deployment still naming the old modules starts,
    and is told the new names."""
    env = {
        "DJANGO_SETTINGS_MODULE": "brokerage.settings.production",
        "SECRET_KEY": "k" * 20 + "production-grade-secret-0123456789-abcdefghij",
        "ALLOWED_HOSTS": "monitor.example.org",
        "VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'old-names.sqlite3'}",
    }
    checked = run_manage("check", env_extra=env, drop=("SECRET_KEY",))
    assert checked.returncode == 0, checked.stderr
    assert "DJANGO_SETTINGS_MODULE=brokerage.settings.production is now config.settings.production" in checked.stderr
    code = (
        "import brokerage.wsgi, config.wsgi, brokerage.celery, config.celery;"
        "print(brokerage.wsgi.application is config.wsgi.application, brokerage.celery.app is config.celery.app)"
    )
    same = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**run_env(drop=("SECRET_KEY",)), **env},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert same.stdout.split() == ["True", "True"], same.stderr


def test_production_refuses_to_start_without_secret_key(tmp_path):
    result = run_manage(
        "check",
        env_extra={"DJANGO_SETTINGS_MODULE": "config.settings.production", "VAR_DIR": str(tmp_path)},
        drop=("SECRET_KEY",),
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DJANGO_DEBUG is off" in result.stderr


def test_development_runs_with_embedded_defaults(tmp_path):
    result = run_manage(
        "check",
        env_extra={"DJANGO_SETTINGS_MODULE": "config.settings.development", "VAR_DIR": str(tmp_path)},
        drop=("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"),
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "broker" / "queue").is_dir()
    assert (tmp_path / "cache").is_dir()


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("TRUE", True), ("off", False), ("", False)])
def test_env_bool_words(monkeypatch, raw, expected):
    monkeypatch.setenv("SOME_FLAG", raw)
    assert base.env_bool("SOME_FLAG", not expected) is expected


def test_env_bool_refuses_unclear_words(monkeypatch):
    monkeypatch.setenv("DJANGO_DEBUG", "sometimes")
    with pytest.raises(ImproperlyConfigured, match="DJANGO_DEBUG='sometimes' is not a boolean"):
        base.env_bool("DJANGO_DEBUG", False)


@pytest.mark.parametrize("raw", ["0", "-3", "thirty", "2.5"])
def test_retention_periods_are_whole_days(monkeypatch, raw):
    monkeypatch.setenv("DECISION_TRACE_DAYS", raw)
    with pytest.raises(ImproperlyConfigured, match=f"DECISION_TRACE_DAYS={raw!r}: give a whole number of days"):
        base.env_count("DECISION_TRACE_DAYS", 30)


@pytest.mark.parametrize("raw", ["0", "-5", "soon", "nan", "inf"])
def test_beat_intervals_and_other_durations_are_positive_numbers(monkeypatch, raw):
    monkeypatch.setenv("WATCHDOG_INTERVAL_SECONDS", raw)
    with pytest.raises(ImproperlyConfigured, match=f"WATCHDOG_INTERVAL_SECONDS={raw!r}: give a number of seconds"):
        base.env_positive("WATCHDOG_INTERVAL_SECONDS", 300)


def test_a_duration_reads_its_variable_or_its_default(monkeypatch):
    monkeypatch.setenv("WATCHDOG_INTERVAL_SECONDS", "2.5")
    assert base.env_positive("WATCHDOG_INTERVAL_SECONDS", 300) == 2.5
    monkeypatch.delenv("WATCHDOG_INTERVAL_SECONDS")
    assert base.env_positive("WATCHDOG_INTERVAL_SECONDS", 300) == 300.0


def test_a_bad_beat_interval_stops_the_start_naming_it(tmp_path):
    result = run_manage("check", env_extra={"TASK_BROKERAGE_INTERVAL_SECONDS": "0", "VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "TASK_BROKERAGE_INTERVAL_SECONDS='0': give a number of seconds above 0" in result.stderr


def test_a_trace_kept_longer_than_its_decision_is_refused(tmp_path):
    result = run_manage(
        "check", env_extra={"DECISION_TRACE_DAYS": "500", "DECISION_DAYS": "400", "VAR_DIR": str(tmp_path)}
    )
    assert result.returncode != 0
    assert "DECISION_TRACE_DAYS must not exceed DECISION_DAYS" in result.stderr


def test_sqlite_url_gets_wal_and_busy_timeout(tmp_path):
    config = base.database_from_url(f"sqlite:///{tmp_path / 'x.sqlite3'}")
    assert "journal_mode=WAL" in config["OPTIONS"]["init_command"]
    assert config["OPTIONS"]["timeout"] == 30
    assert config["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_postgres_url_is_parsed():
    config = base.database_from_url("postgres://broker:pw@db.example.org:5433/monitor")
    assert (config["ENGINE"], config["NAME"], config["HOST"], config["PORT"]) == (
        "django.db.backends.postgresql",
        "monitor",
        "db.example.org",
        5433,
    )
    assert config["OPTIONS"]["options"] == "-c jit=off"  # the monitor's reads are short: no compiling them


def test_postgres_jit_can_be_turned_back_on_and_other_server_options_are_kept(monkeypatch):
    monkeypatch.setenv("DB_JIT", "on")
    assert "options" not in base.database_from_url("postgres://db.example.org/monitor").get("OPTIONS", {})
    monkeypatch.setenv("DB_JIT", "off")
    config = base.database_from_url("postgres://db.example.org/monitor?options=-c%20work_mem%3D64MB")
    assert config["OPTIONS"]["options"] == "-c work_mem=64MB -c jit=off"


@pytest.mark.parametrize(
    ("url", "backend"),
    [
        ("redis://cache:6379/1", "brokerage.cache_backends.ResilientRedisCache"),
        ("locmem://x", "django.core.cache.backends.locmem.LocMemCache"),
        ("file:///tmp/c", "django.core.cache.backends.filebased.FileBasedCache"),
    ],
)
def test_cache_urls(url, backend):
    assert base.cache_from_url(url)["BACKEND"] == backend


def test_unknown_cache_url_is_a_configuration_error():
    with pytest.raises(ImproperlyConfigured, match="CACHE_URL='memcache://x'"):
        base.cache_from_url("memcache://x")


def test_sqlite_database_really_runs_in_wal_mode(tmp_path):
    script = (
        "import django; django.setup();"
        "from django.db import connection;"
        "c = connection.cursor(); c.execute('PRAGMA journal_mode'); print(c.fetchone()[0])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.development", "VAR_DIR": str(tmp_path)})
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.stdout.strip() == "wal", result.stderr
