"""Django's PostgreSQL backend, whose psycopg pool takes its ``check`` callback from the
database's ``POOL_CHECK`` setting (config/pool_checks.py's check of idle connections).

Django builds the pool itself and passes ``check`` as its own keyword (psycopg_pool's
check_connection, or none, by CONN_HEALTH_CHECKS), so the pool options cannot carry another;
psycopg_pool takes ``check`` only in its constructor. The callback is set on the pool Django
built, before the pool is opened at the first checkout."""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> Any:
        pool = super().pool
        check = self.settings_dict.get("POOL_CHECK")
        if pool is not None and check is not None and pool._check is not check:
            pool._check = check
        return pool
