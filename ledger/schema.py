"""The ledger's tables, defined once with SQLAlchemy Core for both backends."""

from __future__ import annotations

import enum

import sqlalchemy as sa

FORMAT_VERSION = "1"
HASH_ALGORITHM = "sha256-chain-v1"


class Column(enum.IntEnum):
    """The index of each column in a storage row (rows stay plain tuples: naming is free)."""

    POSITION = 0
    ID = 1
    STREAM = 2
    VERSION = 3
    KIND = 4
    SCHEMA = 5
    ACTOR = 6
    AT = 7
    PAYLOAD = 8
    CAUSATION_ID = 9
    CORRELATION_ID = 10
    HASH = 11


#: Column order of every storage row the backends exchange with the store.
COLUMNS = tuple(column.name.lower() for column in Column)


def build_metadata(schema: str | None = None) -> sa.MetaData:
    """Return MetaData holding the ``events`` and ``ledger_meta`` tables."""
    # The PostgreSQL dialect is imported here, not with the module: a process on SQLite that
    # opens an existing ledger never loads it.
    from sqlalchemy.dialects import postgresql

    # SQLite needs exactly INTEGER for the rowid alias; PostgreSQL gets native types.
    _Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    _Uuid = sa.String(36).with_variant(postgresql.UUID(as_uuid=False), "postgresql")
    _Time = sa.Text().with_variant(postgresql.TIMESTAMP(timezone=True), "postgresql")
    _Bytes = sa.LargeBinary().with_variant(postgresql.BYTEA(), "postgresql")
    metadata = sa.MetaData(schema=schema)
    sa.Table(
        "events",
        metadata,
        sa.Column("position", _Position, primary_key=True, autoincrement=False),
        sa.Column("id", _Uuid, nullable=False),
        sa.Column("stream", sa.Text(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("schema", sa.Integer(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("at", _Time, nullable=False),
        sa.Column("payload", _Bytes, nullable=False),
        sa.Column("causation_id", _Uuid, nullable=True),
        sa.Column("correlation_id", _Uuid, nullable=True),
        sa.Column("hash", _Bytes, nullable=False),
        sa.UniqueConstraint("id", name="events_id_key"),
        sa.UniqueConstraint("stream", "version", name="events_stream_version_key"),
    )
    sa.Table(
        "ledger_meta",
        metadata,
        sa.Column("key", sa.Text(), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )
    return metadata


APPEND_ONLY_MESSAGE = "engram ledger is append-only"
