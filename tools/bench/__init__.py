"""Benchmarks run by `python manage.py bench NAME` (docs/benchmarks.md). Never part of the test suite's timing."""
