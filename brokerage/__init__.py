"""The brokerage monitor's domain: the model, the brokerage engine, its adapters, services and selectors, and the
Celery tasks. The project's wiring (settings, URLs, WSGI, the Celery application) is the `config` package.

Nothing is imported here, so `brokerage.engine` and `brokerage.gdpconfig` load without Django or Celery.
"""
