"""A Redis cache that steps aside when Redis is away (issue 31: Redis stopped for a few seconds and /gdpconfig/ and
/api/v1/gdpconfig/parameters/ answered 500). Everything cached here is derived from the database, so a cache that
cannot be reached behaves as an empty one: reads miss (the caller reads the database), writes and deletes do
nothing, and one warning a minute says so. Connections give up after a second instead of hanging a request."""

from __future__ import annotations

import logging
import time

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)
WARN_EVERY_SECONDS = 60.0
_last_warning = 0.0


def _unreachable(method: str, error: Exception) -> None:
    global _last_warning
    if time.monotonic() - _last_warning >= WARN_EVERY_SECONDS:
        _last_warning = time.monotonic()
        logger.warning("cache unreachable (%s: %s): reading the database instead", method, error)


def _missing(method: str, fallback):
    def call(self, *args, **kwargs):
        try:
            return getattr(super(ResilientRedisCache, self), method)(*args, **kwargs)
        except RedisError as error:
            _unreachable(method, error)
            return fallback(args, kwargs) if callable(fallback) else fallback

    call.__name__ = method
    return call


class ResilientRedisCache(RedisCache):
    """django's RedisCache with every operation falling back to a cache miss when Redis cannot be reached."""

    def __init__(self, server, params):
        options = params.setdefault("OPTIONS", {})
        options.setdefault("socket_connect_timeout", 1.0)
        options.setdefault("socket_timeout", 1.0)
        super().__init__(server, params)

    get = _missing("get", lambda args, kwargs: args[1] if len(args) > 1 else kwargs.get("default"))
    get_many = _missing("get_many", {})
    has_key = _missing("has_key", False)
    set = _missing("set", None)
    set_many = _missing("set_many", lambda args, kwargs: list(args[0]) if args else [])
    add = _missing("add", False)
    touch = _missing("touch", False)
    delete = _missing("delete", False)
    delete_many = _missing("delete_many", None)
    clear = _missing("clear", False)
    incr = _missing("incr", None)
