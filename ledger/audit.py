"""Run read-only SQL over the ledger with DuckDB.

An :class:`AuditSession` opens an in-memory DuckDB, attaches the ledger as ``ledger`` (and
extra SQLite files under their aliases) and creates views in DuckDB's own catalog:

* ``events``: the ledger's columns up to the session's head, with ``"at"`` TIMESTAMPTZ,
  payload JSON, ids VARCHAR and hash lowercase hex. ``at`` is a DuckDB keyword: quote it.
* ``ledger_meta``: the ledger's key/value metadata.
* With ``cold`` segments (Parquet files exported by :func:`export_parquet`, ADR 0032), the
  ``events`` view reads positions up to the last segment's end from them and the rest from
  the live ledger: one view, the same columns.
* one view per kind, named with ``.`` and ``-`` turned into ``_`` (``neuron_activated``):
  position, event_id, stream, version, actor, ``"at"``, then one typed column per payload
  field, read from the stored payload as is (no upcast); ``payload_<name>`` if the name
  clashes with an envelope column (a payload ``id`` stays ``id``: the event's is ``event_id``).
  A personal field sealed under its subject's key (ADR 0039) shows ``[sealed]``, or
  ``[forgotten]`` once a later ``subject.forgotten`` names its subject: an audit reads
  the ledger's structure, never personal content, and needs no key store. The one exception
  is a session given ``opened`` fields: the caller opened them (``engram sql --as SUBJECT``
  opens the subject's own, ADR 0086), and the kind views show those in place of
  ``[sealed]``.

Consistency: positions are assigned in commit order, gap-free, and never change, so the
rows with ``position <= head`` are a consistent prefix of the ledger whatever is appended
meanwhile. The head is fixed at open; :meth:`AuditSession.refresh` moves it to the end.

Writes are refused in three layers:

1. :meth:`AuditSession.query` checks every statement before running any: only SELECT and
   EXPLAIN of a SELECT pass, and no scanner function (``sqlite_scan``, ``postgres_query``).
2. The ledger and extra files are attached READ_ONLY (PostgreSQL: READ ONLY transactions).
3. Then external access is disabled and the configuration locked: no COPY TO, file reads,
   ATTACH, LOAD, or SET undoing this. The scanners open their databases outside DuckDB's
   file system, so the attachments stay readable (and scanner functions are refused).

TIMESTAMPTZ results come back as aware UTC datetimes (naive UTC inside lists and structs):
DuckDB's own conversion needs pytz, which engram does not depend on. Not thread-safe.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import logging
import os
import re
import shutil
import sqlite3
import tempfile
import threading
import types
import typing
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import duckdb
import msgspec

from engram.ledger import backends
from engram.ledger.audit_result import AuditResult
from engram.ledger.backend import AuditTarget
from engram.ledger.errors import (
    AuditError,
    AuditQueryError,
    AuditUnavailableError,
    AuditWriteError,
    ConfigError,
    StoreError,
    driver_message,
)
from engram.ledger.shred import DEFAULT_PERSONAL, FORGOTTEN, SEALED_PREFIX
from engram.ledger.sqlite import readable_uri

_log = logging.getLogger(__name__)

__all__ = ["AuditResult", "AuditSession", "AuditTarget", "export_parquet", "open_audit"]

DEFAULT_PG_SCHEMA = "engram"
#: A query holds at most this much memory, past which DuckDB spills to the session's own
#: folder or stops the query with an error: a query one agent hands another reads the ledger,
#: it does not take the machine (ADR 0183; DuckDB's default is 80% of it).
MEMORY_LIMIT = "2GB"
_CONFIG = dict[str, Any](
    autoinstall_known_extensions=False, autoload_known_extensions=False, memory_limit=MEMORY_LIMIT
)
_TZ = "TIMESTAMP WITH TIME ZONE"
_ENVELOPE = ("position", "event_id", "stream", "version", "actor", "at")
_RESERVED_ALIASES = frozenset({"ledger", "main", "memory", "system", "temp"})
_ALIAS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PASSWORD = re.compile(r"(://[^/@:]*:)[^/@]*@")
_SCALARS: tuple[tuple[object, str], ...] = ((bool, "BOOLEAN"), (int, "BIGINT"), (float, "DOUBLE"))
_SCALARS += ((str, "VARCHAR"), (dt.datetime, "TIMESTAMPTZ"), (uuid.UUID, "VARCHAR"))
# One blank a step: ``(?:\s+|...)*`` could split a run of n blanks 2**n ways, each tried
# again when what follows fails to match (40 blanks took minutes).
_GAP = r"(?:\s|--[^\n]*|/\*.*?\*/)*"
_EXPLAIN = re.compile(
    rf"\A{_GAP}EXPLAIN\b{_GAP}(?:ANALY[SZ]E\b|\((?:[^()'\"]|'[^']*')*\))?", re.I | re.S
)
# Table functions may open any file or server named in their arguments (the scanners'
# sqlite_scan/postgres_query/postgres_execute, or query() running SQL built from strings),
# bypassing the read-only attachments and the external-access lock. Only these pass.
_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest", "json_each", "json_tree"})
_SELECT, _EXPLAIN_TYPE = duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN
# The events view's columns, from the ledger's table or a cold segment alike.
_EVENT_COLUMNS = """CAST(position AS BIGINT) AS position, CAST(id AS VARCHAR) AS id, stream,
    CAST(version AS BIGINT) AS version, kind, CAST("schema" AS INTEGER) AS "schema",
    actor, CAST("at" AS TIMESTAMPTZ) AS "at", CAST(decode(payload) AS JSON) AS payload,
    CAST(causation_id AS VARCHAR) AS causation_id,
    CAST(correlation_id AS VARCHAR) AS correlation_id, lower(hex(hash)) AS hash"""


class AuditSession:
    """Query a read-only, head-fixed view of the ledger with DuckDB SQL."""

    def __init__(
        self,
        target: AuditTarget,
        kinds: Mapping[str, type[msgspec.Struct]] | None = None,
        *,
        extra_attachments: Mapping[str, str] = {},
        cold: Sequence[tuple[str, int]] = (),
        personal: Mapping[str, Sequence[str]] = DEFAULT_PERSONAL,
        opened: Iterable[tuple[str, str, str]] = (),
    ) -> None:
        """Attach the ledger (and ``extra_attachments``: alias -> SQLite path) read-only.

        ``cold``: (Parquet file, its last position) of contiguous segments from position 1.
        ``personal``: the personal fields by kind, masked in the kind views (ADR 0039).
        ``opened``: (event id, field, text) of sealed fields the caller opened, shown in
        the kind views instead of ``[sealed]``.
        """
        self._personal = {kind: tuple(names) for kind, names in personal.items()}
        self._opened = list(opened)
        self._cold = [str(Path(path).resolve()) for path, _ in cold]
        self._cold_last = max((last for _, last in cold), default=0)
        missing = [path for path in self._cold if not Path(path).is_file()]
        if missing:
            raise AuditUnavailableError(f"no cold segment file at {missing[0]!r}")
        kind = _backend(target)
        server = f"schema {target.schema or DEFAULT_PG_SCHEMA!r} of the {kind.title} ledger"
        self._where = server if kind.server else repr(target.location)
        self._kinds = {
            k.replace(".", "_").replace("-", "_"): (k, s) for k, s in (kinds or {}).items()
        }
        if len(self._kinds) < len(kinds or {}) or {"events", "ledger_meta"} & self._kinds.keys():
            raise AuditError(f"kind view names clash: {sorted(self._kinds)}")
        self._scratch: list[str] = []  # snapshot folders of files on read-only media
        self._con: duckdb.DuckDBPyConnection | None = duckdb.connect(":memory:", config=_CONFIG)
        try:
            self._attach(target, extra_attachments)
            if self._cold:
                # Only these files stay readable once external access is off.
                self._run(f"SET allowed_paths = [{', '.join(map(_literal, self._cold))}]")
            self._run("SET TimeZone = 'UTC'")
            # What a large query spills goes to a folder of its own, removed on close, not
            # into the caller's working directory (DuckDB's default, ".tmp").
            self._scratch.append(tempfile.mkdtemp(prefix="engram-audit-spill-"))
            self._run(f"SET temp_directory = {_literal(self._scratch[-1])}")
            self._run("SET enable_external_access = false")
            self._run("SET lock_configuration = true")
            self._head = self._read_head()
            self._create_views()
        except BaseException:
            self.close()
            raise

    @property
    def head(self) -> int:
        """Return the last position this session sees (0 for an empty ledger)."""
        return self._head

    def refresh(self) -> int:
        """Move the session to the ledger's current head and return it."""
        self._head = self._read_head()
        self._run(self._events_view_sql())
        return self._head

    def query(
        self, sql: str, params: Sequence[object] | None = None, *, timeout: float | None = None
    ) -> AuditResult:
        """Run read-only SQL and return the last statement's result (``params`` bind to it).
        With ``timeout`` (seconds), a query still running then is stopped (ADR 0130).

        Raises AuditWriteError, running nothing, if any statement could write;
        AuditQueryError if it fails or runs past ``timeout``.
        """
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < float("inf")
        ):
            raise AuditError(f"timeout must be a positive number of seconds, got {timeout!r}")
        con = self._connection()
        if isinstance(sql, str) and _PRAGMA.search(sql):  # DuckDB runs one as it parses it
            raise AuditWriteError(
                "audit is read-only: a PRAGMA reaches past the read-only attachments;"
                " only SELECT and EXPLAIN are allowed"
            )
        try:
            statements = duckdb.extract_statements(sql)
        except duckdb.Error as exc:
            raise AuditQueryError(driver_message(exc)) from exc
        if not statements:
            raise AuditQueryError("no SQL statement to run")
        for index, statement in enumerate(statements, 1):
            _check_read_only(index, statement)
        timer = threading.Timer(timeout, con.interrupt) if timeout is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            for statement in statements[:-1]:
                con.execute(statement.query)
            return _fetch(con.sql(statements[-1].query, params=params))
        except duckdb.InterruptException as exc:
            raise AuditQueryError(
                f"the query ran past {timeout:g} s and was stopped (a longer --timeout lets it run)"
            ) from exc
        except duckdb.Error as exc:
            raise AuditQueryError(driver_message(exc)) from exc
        finally:
            if timer is not None:
                timer.cancel()

    def close(self) -> None:
        """Close the DuckDB connection; the session cannot be used afterwards."""
        if self._con is not None:
            self._con.close()
            self._con = None
        while self._scratch:
            shutil.rmtree(self._scratch.pop(), ignore_errors=True)

    def __enter__(self) -> AuditSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise AuditError("the audit session is closed")
        return self._con

    def _run(self, sql: str) -> list[tuple[Any, ...]]:
        return self._connection().execute(sql).fetchall()

    def _attach(self, target: AuditTarget, extra: Mapping[str, str]) -> None:
        bad = [a for a in extra if not _ALIAS.match(a) or a.lower() in _RESERVED_ALIASES]
        if bad:
            raise AuditError(f"bad attachment alias {bad[0]!r}: use a plain, unreserved name")
        files = dict(extra)
        kind = _backend(target)
        if not kind.server:
            files = {"ledger": target.location, **extra}
        else:
            self._run(f"LOAD {_literal(_extension_path(kind.duckdb_extension))}")
            self._attach_one("ledger", target.location, _attach_options(kind, target))
        if files:
            self._run(f"LOAD {_literal(_extension_path('sqlite_scanner'))}")
        for alias, path in files.items():
            # DuckDB attaches a missing file read-only without complaint, then fails obscurely.
            if not Path(path).is_file():
                raise AuditUnavailableError(f"no SQLite database file at {path!r}")
            self._attach_one(alias, self._readable(path), "TYPE sqlite, READ_ONLY")

    def _attach_one(self, alias: str, location: str, options: str) -> None:
        try:
            self._run(f"ATTACH {_literal(location)} AS {_ident(alias)} ({options})")
        except duckdb.Error as exc:
            shown = _PASSWORD.sub(r"\1***@", location)
            message = driver_message(exc).replace(location, shown)
            raise AuditUnavailableError(f"cannot attach {shown} as {alias}: {message}") from exc

    def _readable(self, path: str) -> str:
        """Return ``path``, or a snapshot of it when it sits on read-only media.

        The scanner opens files itself and, for a WAL database, must create the WAL index
        beside it, which read-only media refuse. There, the file cannot change, so a copy
        made through SQLite's backup API from a read-only handle is exact; its folder goes
        when the session closes.
        """
        try:
            uri = readable_uri(path)
        except StoreError as exc:
            raise AuditUnavailableError(f"cannot audit {path}: {exc}") from exc
        if not uri.endswith("immutable=1"):
            return path
        folder = tempfile.mkdtemp(prefix="engram-audit-")
        self._scratch.append(folder)
        copy = os.path.join(folder, os.path.basename(path))
        try:
            source = sqlite3.connect(uri, uri=True)
            try:
                target = sqlite3.connect(copy)
                try:
                    source.backup(target)
                finally:
                    target.close()
            finally:
                source.close()
        except (sqlite3.Error, StoreError, OSError) as exc:
            raise AuditUnavailableError(f"cannot read {path} to audit it: {exc}") from exc
        _log.info("%s is on read-only media: auditing a snapshot of it", path)
        return copy

    def _read_head(self) -> int:
        try:
            (head,) = self._run("SELECT coalesce(max(position), 0) FROM ledger.events")[0]
        except duckdb.CatalogException as exc:
            raise AuditUnavailableError(f"no ledger events table in {self._where}") from exc
        except duckdb.Error as exc:
            raise AuditUnavailableError(f"cannot read {self._where}: {exc}") from exc
        return int(head)

    def _events_view_sql(self) -> str:
        live = f"ledger.events WHERE position <= {self._head:d}"
        if not self._cold:
            return f"CREATE OR REPLACE VIEW main.events AS SELECT {_EVENT_COLUMNS} FROM {live}"
        files = ", ".join(map(_literal, self._cold))
        return f"""CREATE OR REPLACE VIEW main.events AS
            SELECT {_EVENT_COLUMNS} FROM read_parquet([{files}])
            WHERE position <= {min(self._head, self._cold_last):d}
            UNION ALL
            SELECT {_EVENT_COLUMNS} FROM {live} AND position > {self._cold_last:d}"""

    def _create_views(self) -> None:
        self._run(self._events_view_sql())
        try:
            self._run("CREATE VIEW main.ledger_meta AS SELECT key, value FROM ledger.ledger_meta")
        except duckdb.CatalogException as exc:
            raise AuditUnavailableError(f"no ledger_meta table in {self._where}") from exc
        if self._opened:
            self._run(
                "CREATE TABLE main.opened_fields (event_id VARCHAR, field VARCHAR,"
                " value VARCHAR, PRIMARY KEY (event_id, field))"
            )
            self._connection().executemany(
                "INSERT INTO main.opened_fields VALUES (?, ?, ?)", self._opened
            )
        for view, (kind, struct) in self._kinds.items():
            personal = self._personal.get(kind, ())
            self._run(_kind_view_sql(view, kind, struct, personal, bool(self._opened)))


def open_audit(
    target: AuditTarget,
    kinds: Mapping[str, type[msgspec.Struct]] | None = None,
    *,
    extra_attachments: Mapping[str, str] = {},
    cold: Sequence[tuple[str, int]] = (),
    personal: Mapping[str, Sequence[str]] = DEFAULT_PERSONAL,
    opened: Iterable[tuple[str, str, str]] = (),
) -> AuditSession:
    """Open an audit session over ``target`` with one view per kind in ``kinds``.

    ``extra_attachments`` (alias -> SQLite file) are attached read-only beside the ledger,
    e.g. the projection store as ``projections``; ``cold`` segments (Parquet file, last
    position) serve the ``events`` view up to their end; ``personal`` fields (by kind) show
    ``[sealed]`` or ``[forgotten]`` in the kind views when sealed (ADR 0039), except the
    ``opened`` ones: (event id, field, text) the caller opened with the key store.
    """
    return AuditSession(
        target,
        kinds,
        extra_attachments=extra_attachments,
        cold=cold,
        personal=personal,
        opened=opened,
    )


def export_parquet(target: AuditTarget, path: str, first: int, last: int) -> int:
    """Copy the ledger rows ``first..last`` to a zstd Parquet file with DuckDB; return the rows.

    The file keeps every column as stored (``at`` as TIMESTAMPTZ, payload and hash as
    bytes), so the hash chain can be recomputed from it alone.
    """
    con = duckdb.connect(":memory:", config=_CONFIG)
    try:
        kind = _backend(target)
        con.execute(f"LOAD {_literal(_extension_path(kind.duckdb_extension))}")
        options = _attach_options(kind, target)
        con.execute(f"ATTACH {_literal(target.location)} AS ledger ({options})")
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            f"""COPY (SELECT CAST(position AS BIGINT) AS position, CAST(id AS VARCHAR) AS id,
                stream, CAST(version AS BIGINT) AS version, kind,
                CAST("schema" AS INTEGER) AS "schema", actor, CAST("at" AS TIMESTAMPTZ) AS "at",
                CAST(payload AS BLOB) AS payload, CAST(causation_id AS VARCHAR) AS causation_id,
                CAST(correlation_id AS VARCHAR) AS correlation_id, CAST(hash AS BLOB) AS hash
                FROM ledger.events WHERE position BETWEEN {first:d} AND {last:d}
                ORDER BY position)
            TO {_literal(path)} (FORMAT parquet, COMPRESSION zstd)"""
        )
        row = con.execute(f"SELECT count(*) FROM read_parquet({_literal(path)})").fetchone()
        return int(row[0]) if row else 0
    except duckdb.Error as exc:
        raise AuditError(f"cannot export positions {first}..{last} to {path}: {exc}") from exc
    finally:
        con.close()


def _backend(target: AuditTarget) -> backends.BackendKind:
    try:
        return backends.named(target.backend)
    except ConfigError:
        raise AuditUnavailableError(f"unknown ledger backend {target.backend!r}") from None


def _attach_options(kind: backends.BackendKind, target: AuditTarget) -> str:
    """Return DuckDB's ATTACH options for the ledger: read-only, in its schema on a server."""
    options = f"TYPE {kind.duckdb_type}, READ_ONLY"
    if kind.server:
        options += f", SCHEMA {_literal(target.schema or DEFAULT_PG_SCHEMA)}"
    return options


def _extension_path(name: str) -> str:
    wanted = f"duckdb-extension-{name.replace('_', '-')}=={duckdb.__version__}"
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        raise AuditUnavailableError(f"the DuckDB {name} extension is missing: install {wanted}")
    root = Path(next(iter(spec.submodule_search_locations))) / "extensions"
    path = root / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        built = sorted(p.parent.name for p in root.glob(f"v*/{name}.duckdb_extension"))
        raise AuditUnavailableError(
            f"the DuckDB {name} extension wheel is built for {', '.join(built) or 'nothing'}, "
            f"but DuckDB is v{duckdb.__version__}: install {wanted}"
        )
    return str(path)


#: A PRAGMA opening a statement, comments before it aside: DuckDB rewrites one into a SELECT
#: before it can be checked ("PRAGMA database_list", "PRAGMA import_database('dir')").
_PRAGMA = re.compile(
    r"(?:^|;)\s*(?:(?:--[^\n]*(?:\n|$)|/\*.*?\*/)\s*)*PRAGMA\b", re.IGNORECASE | re.DOTALL
)


def _check_read_only(index: int, statement: duckdb.Statement) -> None:
    kind = statement.type
    prefix = None
    if kind == _EXPLAIN_TYPE:
        # EXPLAIN ANALYZE runs its statement, so judge the statement explained.
        prefix = _EXPLAIN.match(statement.query)
        try:
            inner = duckdb.extract_statements(statement.query[prefix.end() :]) if prefix else []
        except duckdb.Error:
            inner = []
        if len(inner) != 1 or inner[0].type != _SELECT:
            what = inner[0].type.name if len(inner) == 1 else "an unrecognised statement"
            raise AuditWriteError(
                f"audit is read-only: statement {index} is EXPLAIN of {what}; "
                "only SELECT and EXPLAIN SELECT are allowed"
            )
    elif kind != _SELECT:
        raise AuditWriteError(
            f"audit is read-only: statement {index} is {kind.name}; "
            "only SELECT and EXPLAIN are allowed"
        )
    sql = statement.query
    if kind == _EXPLAIN_TYPE and prefix:
        sql = sql[prefix.end() :]
    for name in _table_functions(index, sql):
        if name.lower() not in _TABLE_FUNCTIONS:
            raise AuditWriteError(
                f"audit is read-only: statement {index} calls the table function {name}(), "
                "which can reach past the read-only attachments; query the views or "
                f"ledger.* instead (allowed: {', '.join(sorted(_TABLE_FUNCTIONS))})"
            )


def _table_functions(index: int, sql: str) -> list[str]:
    """Return the table functions a SELECT calls, read from DuckDB's own parse tree."""
    with duckdb.connect() as parser:  # a private connection: the session's is locked down
        row = parser.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    tree = json.loads(row[0]) if row else {"error": True}
    if tree.get("error"):
        raise AuditWriteError(
            f"audit is read-only: statement {index} could not be checked "
            f"({tree.get('error_message', 'unparseable')})"
        )
    names: list[str] = []
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "TABLE_FUNCTION":
                names.append(str(node.get("function", {}).get("function_name", "?")))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return names


def _fetch(relation: duckdb.DuckDBPyRelation) -> AuditResult:
    columns = list(relation.columns)
    kinds = [str(t) for t in relation.types]
    aware = {i for i, kind in enumerate(kinds) if kind == _TZ}
    if any(_TZ in kind for kind in kinds):
        relation = relation.project(
            ", ".join(
                f"CAST(#{i} AS {kind.replace(_TZ, 'TIMESTAMP')}) AS {_ident(name)}"
                if _TZ in kind
                else f"#{i}"
                for i, (name, kind) in enumerate(zip(columns, kinds, strict=True), 1)
            )
        )
    rows = relation.fetchall()
    if aware:
        rows = [tuple(_utc(v) if i in aware else v for i, v in enumerate(row)) for row in rows]
    return AuditResult(columns, rows, kinds)


def _utc(value: object) -> object:
    return value.replace(tzinfo=dt.UTC) if isinstance(value, dt.datetime) else value


def _kind_view_sql(
    view: str,
    kind: str,
    struct: type[msgspec.Struct],
    personal: Sequence[str] = (),
    opened: bool = False,
) -> str:
    columns = ["position", "id AS event_id", "stream", "version", "actor", '"at"']
    fields = msgspec.structs.fields(struct)
    has_agent = any(info.encode_name == "agent" for info in fields)
    for info in fields:
        name = info.encode_name
        column = f"payload_{name}" if name in _ENVELOPE else name
        pointer = _literal("/" + name.replace("~", "~0").replace("/", "~1"))
        sql_type = _duckdb_type(info.type)
        value = f"json_extract{'' if sql_type == 'JSON' else '_string'}(payload, {pointer})"
        if sql_type not in ("JSON", "VARCHAR"):
            value = f"CAST({value} AS {sql_type})"
        elif sql_type == "VARCHAR" and name in personal:
            value = _masked(value, has_agent, name if opened else None)
        columns.append(f"{value} AS {_ident(column)}")
    return (
        f"CREATE OR REPLACE VIEW main.{_ident(view)} AS SELECT {', '.join(columns)} "
        f"FROM main.events e WHERE kind = {_literal(kind)}"
    )


def _masked(value: str, has_agent: bool, opened: str | None = None) -> str:
    """Return SQL showing a sealed personal field as [sealed], or [forgotten] (ADR 0039);
    with ``opened`` (the field's name), its text where ``opened_fields`` holds it."""
    subject = (
        "coalesce(json_extract_string(e.payload, '$.agent'), e.actor)" if has_agent else "e.actor"
    )
    forgotten = (
        "EXISTS (SELECT 1 FROM main.events f WHERE f.kind = 'subject.forgotten'"
        f" AND f.position > e.position AND json_extract_string(f.payload, '$.subject') = {subject})"
        # A reflection drawn from a forgotten subject's memories is retracted (ADR 0110).
        " OR (e.kind = 'memory.reflected' AND EXISTS (SELECT 1 FROM main.events r"
        " WHERE r.kind = 'reflection.retracted' AND r.position > e.position AND list_contains("
        "CAST(json_extract(r.payload, '$.positions') AS BIGINT[]), e.position)))"
    )
    shown = "'[sealed]'"
    if opened is not None:
        shown = (
            "coalesce((SELECT o.value FROM main.opened_fields o WHERE o.event_id = e.id"
            f" AND o.field = {_literal(opened)}), {shown})"
        )
    return (
        f"CASE WHEN starts_with({value}, {_literal(SEALED_PREFIX)}) THEN CASE WHEN {forgotten}"
        f" THEN {_literal(FORGOTTEN)} ELSE {shown} END ELSE {value} END"
    )


def _duckdb_type(annotation: object) -> str:
    """Map a payload field's Python type to a DuckDB type; JSON when nothing fits better."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        present = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _duckdb_type(present[0]) if len(present) == 1 else "JSON"
    if origin is Literal and all(isinstance(v, str) for v in typing.get_args(annotation)):
        return "VARCHAR"
    return next((sql for python, sql in _SCALARS if annotation is python), "JSON")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
