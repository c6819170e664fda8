"""The brokerage monitor: domain model, brokerage engine, Celery cycles and the project's Django wiring.

Nothing is imported here, so `brokerage.engine` and `brokerage.gdpconfig` load without Django or Celery.
The Celery application lives in `brokerage.celery` (`celery -A brokerage.celery worker`) and is loaded by
BrokerageConfig.ready() whenever Django starts.
"""
