"""Opening the history database: which URL, connecting, and bringing its schema to the newest revision.

The URL comes from ``--db``, else $LAUNCHBENCH_HISTORY_DB, else a SQLite file under ``results/``
(no server needed). PostgreSQL goes through the same code with a ``postgresql+psycopg://`` URL.
Every failure the user can cause (a server that does not answer, a locked SQLite file, a database of a
newer schema, a URL SQLAlchemy cannot parse) is a HistoryError: one line, exit 2 in the CLI.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, exc, inspect, text
from sqlalchemy.engine import make_url

from launchbench.history.errors import DuplicateKey, HistoryError, database_error, first_line
from launchbench.history.location import LOCK_TIMEOUT_S, resolve_url
from launchbench.history.migrations import HEAD
from launchbench.history.reading import Query

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory
    from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"
CONNECT_TIMEOUT_S = 5  # PostgreSQL: how long to wait for the server to answer
SCHEMA_LOCK_KEY = 0x6C62_6869_7374  # PostgreSQL: the advisory lock migrations hold ("lbhist")


def describe_url(url: str) -> str:
    """The URL with any password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except exc.ArgumentError:
        return url


def explain(err: exc.SQLAlchemyError, url: str, lock_timeout: float = LOCK_TIMEOUT_S) -> HistoryError:
    """One line for a database error: what failed, and on which database."""
    first = first_line(str(getattr(err, "orig", None) or err), type(err).__name__)
    server = isinstance(err, exc.OperationalError) and not url.startswith("sqlite")
    return database_error(first, describe_url(url), lock_timeout, server=server)


def _script() -> ScriptDirectory:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config)


class SqliteBegin(Enum):
    """How a SQLite engine's transactions begin: DEFERRED (the driver's own BEGIN, the write lock taken
    at the first write) or IMMEDIATE (BEGIN IMMEDIATE: the write lock taken at once)."""

    DEFERRED = "deferred"
    IMMEDIATE = "immediate"


def _engine(url: str, lock_timeout: float, begin: SqliteBegin = SqliteBegin.DEFERRED) -> Engine:
    """The engine of a database URL; a SQLite engine waits up to ``lock_timeout`` for the database's
    write lock, and with ``SqliteBegin.IMMEDIATE`` its transactions begin with BEGIN IMMEDIATE."""
    try:
        parsed = make_url(url)
    except exc.ArgumentError:
        raise HistoryError(
            f"{url!r} is not a database URL (sqlite:///FILE or postgresql+psycopg://USER@HOST/DB)"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"timeout": lock_timeout})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()
            if begin is SqliteBegin.IMMEDIATE:
                dbapi_connection.isolation_level = None  # the driver's own BEGIN off: _begin's instead

        if begin is SqliteBegin.IMMEDIATE:

            @event.listens_for(engine, "begin")
            def _begin(connection: Connection) -> None:
                connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    if parsed.get_backend_name() == "postgresql":
        return create_engine(parsed, connect_args={"connect_timeout": CONNECT_TIMEOUT_S}, pool_pre_ping=True)
    try:
        return create_engine(parsed)
    except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as err:
        raise HistoryError(f"{describe_url(url)}: cannot use this database ({err})") from None


def current_revision(connection: Connection) -> str | None:
    """The database's schema revision (Alembic's version table, read with one query), None when it has
    none (an empty database)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


@contextmanager
def _schema_lock(engine: Engine, url: str, lock_timeout: float) -> Iterator[Connection]:
    """A transaction that holds the database's schema lock: a SQLite file's write lock (BEGIN
    IMMEDIATE) or a PostgreSQL advisory lock. Of processes opening a new database at once, one migrates
    it while the others wait, then find it at the newest revision."""
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and database != ":memory:":
        locking = _engine(url, lock_timeout, SqliteBegin.IMMEDIATE)
        try:
            with locking.begin() as connection:
                yield connection
        finally:
            locking.dispose()
        return
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":  # released when the transaction ends
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
        yield connection


def upgrade(engine: Engine, url: str, lock_timeout: float = LOCK_TIMEOUT_S) -> str:
    """Bring the schema to the newest revision (one transaction, under the schema lock); refuse a
    database of an unknown, newer revision. Returns the revision. A database at the newest revision
    costs one query (Alembic is loaded only to migrate or refuse)."""
    with engine.connect() as connection:
        if current_revision(connection) == HEAD:
            return HEAD
    from alembic import command
    from alembic.config import Config

    script = _script()
    head = script.get_current_head()
    with _schema_lock(engine, url, lock_timeout) as connection:
        current = current_revision(connection)  # again, under the lock: another process may have migrated
        if current is not None and current not in {r.revision for r in script.walk_revisions()}:
            raise HistoryError(
                f"{describe_url(url)}: the history database has schema revision {current!r}, newer than this "
                f"launchbench knows (newest {head!r}); upgrade launchbench"
            )
        if current != head:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    assert head is not None
    return head


def require_existing(db: str | None, reading: str) -> None:
    """A read-only command reads a history that exists: a SQLite file that is not there is a
    HistoryError (``reading`` says what was being read), and is not made."""
    url = resolve_url(db)
    if not url.startswith("sqlite"):
        return
    try:
        database = make_url(url).database
    except exc.ArgumentError:  # a URL SQLAlchemy cannot parse: HistoryDB says so
        return
    if database and database != ":memory:" and not Path(database).exists():
        raise HistoryError(
            f"{database}: no such history database (reading {reading}); ingest runs into it first "
            f"(launchbench history ingest --db {database} RUN_DIR...)"
        )


def open_existing(db: str | None, reading: str) -> HistoryDB:
    """The history database at ``db`` for a command that only reads it; a missing SQLite file is
    refused (require_existing) instead of created."""
    require_existing(db, reading)
    return HistoryDB(db)


class HistoryDB:
    """An open history database: an engine with its schema up to date; Core connections for queries,
    read() for the plain-SQL ones (a Reader, history.reading) and ORM sessions for writes."""

    def __init__(self, db: str | None = None, *, lock_timeout: float | None = None):
        self.url = resolve_url(db)
        self.lock_timeout = LOCK_TIMEOUT_S if lock_timeout is None else lock_timeout
        self.engine = _engine(self.url, self.lock_timeout)
        try:
            self.revision = upgrade(self.engine, self.url, self.lock_timeout)
        except exc.SQLAlchemyError as err:
            self.engine.dispose()
            raise explain(err, self.url, self.lock_timeout) from None
        except HistoryError:
            self.engine.dispose()
            raise
        self._sessions: sessionmaker[Session] | None = None

    @property
    def label(self) -> str:
        return describe_url(self.url)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection in one transaction (SQLAlchemy Core, what queries use): committed when the block
        ends, rolled back on any error."""
        try:
            with self.engine.begin() as connection:
                yield connection
        except exc.SQLAlchemyError as err:
            raise explain(err, self.url, self.lock_timeout) from None

    @contextmanager
    def session(self) -> Iterator[Session]:
        """An ORM session in one transaction (what writes use): committed when the block ends, rolled back
        on any error. Loads SQLAlchemy's ORM."""
        if self._sessions is None:
            from sqlalchemy.orm import sessionmaker

            self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        try:
            with self._sessions.begin() as session:
                yield session
        except exc.IntegrityError as err:
            raise DuplicateKey(str(explain(err, self.url, self.lock_timeout))) from None
        except exc.SQLAlchemyError as err:
            raise explain(err, self.url, self.lock_timeout) from None

    def read(self, *queries: Query) -> list[Sequence[Any]]:
        """Each query's rows, the queries run in one transaction (a Reader, history.reading)."""
        with self.connect() as connection:
            return [connection.execute(text(q.sql), dict(q.params)).all() for q in queries]

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> HistoryDB:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
