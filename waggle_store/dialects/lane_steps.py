"""A lane as a sequence of statements, and sending its first statement ahead (Postgres).

A lane whose next statement depends on the rows of the one before (Postgres's vector lane: the
KNN, widened while the manifest check drops stale candidates) is written as a generator of
:data:`LaneSteps`: it yields ``(sql, params)`` (``:name`` binds, as for :func:`run_lane`), is
sent that statement's rows, and returns its hits. :func:`drive_lane` runs it on one connection,
one statement after the other — what a plain ``vector_search`` does.

:class:`SentLane` runs the same generator with its first statement *sent ahead*: on a connection
that nothing else uses until the lane's hits are asked for (the search's second connection,
``search/engine.py``), psycopg's pipeline mode sends the statement without waiting for its rows,
so the server runs it while the search runs its keyword lane on its first connection (it is
sent just after the keyword lane's first statement: :func:`~.common.beside_next_statement`);
asking for the hits syncs the pipeline (the one round trip the statement costs anyway) and goes
on with any further statement as :func:`drive_lane` would.

Why not a worker thread running the lane on the second connection, as before: the thread's
handoffs (queue, wake-up, future) cost ~0.2 ms of client CPU a search on 2 vCPUs, and the server
starts the statement no sooner (``benchmarks/README.md``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Final

from sqlalchemy import Connection

from waggle_store.dialects.base import LaneHit
from waggle_store.dialects.common import (
    driver_statement,
    raise_driver_error,
    request_rows,
    run_lane,
)

#: A lane's statements: yields ``(sql, params)``, is sent each one's rows, returns the hits.
LaneSteps = Generator[tuple[str, dict[str, Any]], list[Any], list[LaneHit]]

#: Why a :class:`SentLane` leaves its pipeline unread (psycopg then logs a failure to sync it
#: instead of raising, and the pool resets or discards the connection).
_GIVEN_UP: Final = "the search ended without the lane's hits"


def drive_lane(conn: Connection, steps: LaneSteps, rows: list[Any] | None = None
               ) -> list[LaneHit]:
    """Run ``steps`` to its hits, each statement on ``conn`` after the one before (``rows``: those
    of the statement it yielded last, already run)."""
    try:
        step = next(steps) if rows is None else steps.send(rows)
        while True:
            step = steps.send(run_lane(conn, *step))
    except StopIteration as done:
        hits: list[LaneHit] = done.value
        return hits


class SentLane:
    """``steps`` with its first statement to be sent ahead on ``conn`` (see the module):
    :meth:`send` sends it, :meth:`result` collects it (sending it first if it was not) and runs
    the rest on ``conn``. ``conn`` must be used by nothing else until :meth:`result` or
    :meth:`close` (a statement run on it meanwhile would join the pipeline).

    The statement goes out with a flush request, so its rows come back as soon as the server has
    them: :meth:`collect_if_arrived` collects them then, while the search still awaits its
    keyword statement (:func:`~.common.beside_next_statement`), and keeps the outcome for
    :meth:`result`.

    The steps' own preparation (binding the vector, the first statement's text) runs here, so
    :meth:`send` is only the send. A driver error, when sending or collecting, is raised by
    :meth:`result` as SQLAlchemy's ``DBAPIError`` (a lost connection invalidated), as
    :func:`run_lane` raises it; :meth:`send` never raises it (it runs inside another
    connection's statement: :func:`~.common.beside_next_statement`)."""

    def __init__(self, conn: Connection, steps: LaneSteps) -> None:
        self._conn = conn
        self._steps = steps
        self._hits: list[LaneHit] | None = None
        #: What failed, sending or collecting: raised by :meth:`result`.
        self._failure: Exception | None = None
        self._pipeline: Any = None
        self._cursor: Any = None
        self._sent = False
        try:
            sql, params = next(steps)
        except StopIteration as done:  # nothing to run (no mind to search)
            self._hits = done.value
            return
        self._statement: tuple[str, Any] = driver_statement(conn.dialect, sql, params)

    def send(self) -> None:
        """Send the first statement (once; nothing to send once the lane has its hits)."""
        if self._sent or self._hits is not None:
            return
        self._sent = True
        conn = self._conn
        statement, args = self._statement
        dbapi_conn: Any = conn.connection.dbapi_connection
        try:
            pipeline = dbapi_conn.pipeline()
            pipeline.__enter__()
        except conn.dialect.loaded_dbapi.Error as exc:
            self._failure = _wrapped(conn, exc, statement, args)
            return
        self._pipeline, self._cursor = pipeline, dbapi_conn.cursor()
        try:
            self._cursor.execute(statement, args)
            request_rows(dbapi_conn)
        except conn.dialect.loaded_dbapi.Error as exc:
            self._end(exc)
            self._failure = _wrapped(conn, exc, statement, args, self._cursor)
            self._cursor.close()

    def _end(self, exc: BaseException | None) -> None:
        """Leave the pipeline: with ``exc`` None, syncs it and raises the statement's error if
        it failed; with ``exc``, only leaves it (psycopg logs a failure to sync)."""
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            pipeline.__exit__(None if exc is None else type(exc), exc, None)

    def awaited_socket(self) -> int | None:
        """The lane connection's socket while the statement sent ahead is awaited."""
        if self._pipeline is None:
            return None
        socket: int = self._conn.connection.dbapi_connection.fileno()  # type: ignore[union-attr]
        return socket

    def collect_if_arrived(self) -> bool:
        """Collect the lane (its first statement's rows, then the rest as :meth:`result`) if
        those rows have arrived; what it returns or raises is kept for :meth:`result`."""
        if self._pipeline is None:
            return False
        conn = self._conn
        pgconn: Any = conn.connection.dbapi_connection.pgconn  # type: ignore[union-attr]
        try:
            pgconn.consume_input()
            arrived = not pgconn.is_busy()
        except conn.dialect.loaded_dbapi.Error:
            arrived = True  # the connection failed: collecting meets it and keeps it
        if arrived:
            self._collect()
        return arrived

    def _collect(self) -> None:
        """Sync the pipeline, read the first statement's rows, run the rest of the steps; the
        hits or the failure kept."""
        conn, cursor = self._conn, self._cursor
        try:
            try:
                self._end(None)
                rows: list[Any] = cursor.fetchall()
            except conn.dialect.loaded_dbapi.Error as exc:
                raise_driver_error(conn, exc, *self._statement, cursor)
            finally:
                cursor.close()
            self._hits = drive_lane(conn, self._steps, rows)
        except Exception as exc:  # noqa: BLE001 - kept, raised by result()
            self._failure = exc

    def result(self) -> list[LaneHit]:
        """The lane's hits: the first statement collected (waits for it), then the rest."""
        if self._hits is None and self._failure is None:
            self.send()
            if self._failure is None:
                self._collect()
        if self._failure is not None:
            raise self._failure
        assert self._hits is not None  # collected: hits or a failure
        return self._hits

    def close(self) -> None:
        """Give the lane up (the search ended without its hits): the pipeline is left, so the
        connection goes back to the pool out of pipeline mode."""
        if self._pipeline is not None:
            # A new exception each time: the one thrown into psycopg's pipeline keeps its
            # traceback, and with it the connection's frames.
            self._end(RuntimeError(_GIVEN_UP))
            self._cursor.close()
        self._steps.close()


def _wrapped(conn: Connection, exc: Any, statement: str, args: Any,
             cursor: Any = None) -> Exception:
    """The driver's ``exc`` as :func:`raise_driver_error` raises it, to raise later."""
    try:
        raise_driver_error(conn, exc, statement, args, cursor)
    except Exception as wrapped:  # noqa: BLE001 - returned, raised by SentLane.result
        return wrapped
