"""The Django project (not an app): settings for each way of running it, the URL map, the WSGI and ASGI entry points
and the Celery application. The apps are `brokerage` (domain model, engine, services), `monitor` (pages, API) and
`tools` (benchmarks, the drivers of the real code)."""
