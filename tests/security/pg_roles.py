"""A throwaway PostgreSQL login role for the security tests: neither superuser nor BYPASSRLS,
so row-level security and missing privileges apply to it as they would to a service's role."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa


@contextmanager
def login_role(admin_url: str) -> Iterator[tuple[str, sa.URL]]:
    """``(role, url)``: a new role and the URL to connect as it; dropped afterwards with
    everything granted to it."""
    role, password = f"waggle_rt_{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
    admin = sa.create_engine(admin_url)
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(
                f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE "
                f"PASSWORD '{password}'"
            )
        try:
            yield role, sa.make_url(admin_url).set(username=role, password=password)
        finally:
            with admin.begin() as conn:
                conn.exec_driver_sql(f"DROP OWNED BY {role}")
                conn.exec_driver_sql(f"DROP ROLE {role}")
    finally:
        admin.dispose()
