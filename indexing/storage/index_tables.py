"""Docent's own tables (sqlmodel), in the same database as the vectors.

These classes are the Python view of the tables; `indexing.storage.migrations` creates and changes them.

- `documents`: one row per source document — the registry that makes sync incremental.
- `parent_sections`: the parents' text (our docstore): what answers read and cite.
- `embedding_cache`: vectors by hash of (model, text), so identical text is never re-embedded.
- `sync_runs`: one row per sync, for `kb status`, with its result (ok, refused, aborted).
- `sources`: one row per source ever synced (kind, location, its settings when synced ad hoc),
  so `kb sources` can list them and `kb sync PATH` gives the same folder the same name.
- `index_state`: small key/values, e.g. the BM25 version readers compare against.

Child chunks live in PGVectorStore's own table (`data_docent_chunks`).
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from sqlalchemy import JSON, Column, DateTime, LargeBinary, Text
from sqlmodel import Field, SQLModel

RUNNER_ID = f"{socket.gethostname()}:{os.getpid()}"  # which process ran a sync
GENERATION_KEY = "generation"  # bumped by every committed document change (ChunkStore.log_change)


def utcnow() -> datetime:
    """Now, in UTC, zone-aware: the one clock every stored timestamp uses."""
    return datetime.now(timezone.utc)


def timestamptz(**kwargs: Any) -> Column[datetime]:
    """A timestamptz column: times are stored with their zone and read back aware."""
    return Column(DateTime(timezone=True), **kwargs)


class Status(str, Enum):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"  # could not be read or indexed; the previous version (if any) keeps serving
    SKIPPED = "SKIPPED"  # read fine, nothing to index (an empty page); `error` holds the reason


class RunResult(str, Enum):
    RUNNING = "running"
    OK = "ok"
    REFUSED = "refused"  # the deletion guard stopped it: nothing was deleted (`reason` says why)
    ABORTED = "aborted"  # the source could not be read at all: nothing was deleted


class DocumentRecord(SQLModel, table=True):
    __tablename__ = "documents"

    id: str = Field(primary_key=True)  # "source:relative/path.md"
    source: str = Field(index=True)
    path: str
    title: str = ""
    url: str = ""
    access: str = "public"
    content_hash: str = ""  # sync.indexed_hash of the version currently indexed ("" if none yet)
    status: Status = Field(default=Status.PENDING, index=True)
    error: str | None = Field(default=None, sa_column=Column(Text))
    chunk_count: int = 0
    updated_at: datetime | None = Field(default=None, sa_column=timestamptz())  # when the page itself last changed
    indexed_at: datetime | None = Field(default=None, sa_column=timestamptz())  # when this version was committed to the index


class ParentSection(SQLModel, table=True):
    __tablename__ = "parent_sections"

    id: str = Field(primary_key=True)
    doc_id: str = Field(index=True)
    position: int
    heading_path: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    url: str = ""
    text: str = Field(sa_column=Column(Text))


class EmbeddingCache(SQLModel, table=True):
    __tablename__ = "embedding_cache"

    key: str = Field(primary_key=True)  # sha256 of model name + text
    vector: bytes = Field(sa_column=Column(LargeBinary))  # float32, native byte order


class SyncRun(SQLModel, table=True):
    __tablename__ = "sync_runs"

    id: int | None = Field(default=None, primary_key=True)
    source: str = Field(index=True)
    trigger: str = "cli"  # cli / watcher / schedule / admin
    runner: str = ""  # host:pid of the process that ran it
    started_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))
    finished_at: datetime | None = Field(default=None, sa_column=timestamptz())
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    skipped: int = 0
    guarded_deletes: int = 0  # deletions the guard counted (not --allow-deletes), summed over its window
    result: str = RunResult.RUNNING.value
    reason: str | None = Field(default=None, sa_column=Column(Text))
    errors: list[str] = Field(default_factory=list, sa_column=Column(JSON))


class SourceRecord(SQLModel, table=True):
    """A source as last synced. `origin` is "config" (the sources file or KB_WIKI) or "adhoc"
    (`kb sync PATH`); an ad-hoc source's settings are kept so a re-sync reads it the same way."""

    __tablename__ = "sources"

    name: str = Field(primary_key=True)
    kind: str = ""
    location: str = ""
    origin: str = "config"
    settings: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # include, exclude, access, ...
    first_synced_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))
    last_synced_at: datetime = Field(default_factory=utcnow, sa_column=timestamptz(nullable=False))


class IndexState(SQLModel, table=True):
    __tablename__ = "index_state"

    key: str = Field(primary_key=True)
    value: str
