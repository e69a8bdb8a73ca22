"""The keyword leg's one truth, in Postgres: published versions, the change log, saved bases.

- Every write that changes a document's children records the document in `keyword_changes`
  under a fresh *generation*, in the writing transaction (`ChunkStore.log_change`). Generations
  are handed out in commit order, so "every change up to generation G" is a well-defined set.
- A *version* is a generation someone published (`keyword_versions`, newest in `index_state`).
  Publishing is serialised by an advisory lock, reads the generation committed at that moment
  and only ever moves forward: a sync that finishes last cannot publish an older state. Only
  syncs publish; answering a question reads, never writes.
- A *base* (`keyword_bases`) is a whole index saved as one blob at some generation, so a process
  starting without one tokenises only the documents changed since, not the whole wiki. Bases
  are written by the publisher once enough has changed, and older change-log rows are dropped
  then (`keyword_log_floor` says below which generation the log is no longer complete). A blob
  over `PART_BYTES` is written in parts (the rest in `keyword_base_parts`): Postgres refuses any
  one message over 1 GB, and a million chunks' base is ~0.5 GB (docs/scaling.md).
- Every publication is announced on the `docent_index` channel (`indexing.storage.notify`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from indexing.keyword.bm25_terms import TERMS_VERSION
from indexing.storage.binary_copy import copy_column_into
from indexing.storage.locks import advisory_lock
from indexing.storage.notify import notify
from indexing.storage.index_tables import GENERATION_KEY, RUNNER_ID
from indexing.storage.status import KeywordState

PART_BYTES = 32 * 2**20  # a saved base is written and read in parts of at most this many bytes (sent hex-encoded:
# twice that; a part read is briefly held three times over, so a small part keeps a replica's load peak low)
VERSION_KEY = "keyword_version"  # the published generation
FLOOR_KEY = "keyword_log_floor"  # change-log rows at or below it may be gone
PUBLISH_LOCK = "keyword-publish"
KEEP_VERSIONS = 1000  # rows of publication history kept


@dataclass
class Base:
    generation: int
    payload: bytearray


def _int_state(session: Session, key: str) -> int | None:
    value = session.execute(text("SELECT value FROM index_state WHERE key = :k"), {"k": key}).scalar()
    return None if value is None else int(value)


def generation(session: Session) -> int:
    """The generation of the last committed document change."""
    return _int_state(session, GENERATION_KEY) or 0


def published(session: Session) -> int | None:
    """The published version, or None if nothing was ever published."""
    return _int_state(session, VERSION_KEY)


def log_floor(session: Session) -> int:
    return _int_state(session, FLOOR_KEY) or 0


def changed_documents(session: Session, after: int, upto: int) -> list[str]:
    """Documents changed at a generation in (after, upto]."""
    return list(session.execute(text(
        "SELECT DISTINCT doc_id FROM keyword_changes WHERE generation > :a AND generation <= :u ORDER BY doc_id"
    ), {"a": after, "u": upto}).scalars())


def changes_since(session: Session, after: int) -> int:
    count: int = session.execute(text("SELECT count(DISTINCT doc_id) FROM keyword_changes WHERE generation > :a"),
                                 {"a": after}).scalar_one()
    return count


def latest_base(session: Session, upto: int, terms_version: str) -> Base | None:
    row = session.execute(text(
        "SELECT generation FROM keyword_bases WHERE generation <= :u AND terms_version = :t "
        "AND generation >= :floor ORDER BY generation DESC LIMIT 1"
    ), {"u": upto, "t": terms_version, "floor": log_floor(session)}).first()
    if row is None:
        return None
    generation = int(row.generation)
    # The first part (in keyword_bases) and the rest, in order, written into one buffer as they
    # arrive over a binary COPY: the base is held once, and never as hex text (binary_copy).
    sizes = session.execute(text(
        "SELECT length(payload) FROM keyword_bases WHERE generation = :g "
        "UNION ALL SELECT length(payload) FROM keyword_base_parts WHERE generation = :g"), {"g": generation}).scalars()
    payload = bytearray(sum(sizes))
    written = copy_column_into(session, (
        f"SELECT payload FROM (SELECT 0 AS part, payload FROM keyword_bases WHERE generation = {generation} "
        f"UNION ALL SELECT part, payload FROM keyword_base_parts WHERE generation = {generation}) AS base ORDER BY part"
    ), payload)
    if written != len(payload):
        raise RuntimeError(f"keyword base {generation}: read {written:,} of its {len(payload):,} bytes")
    return Base(generation, payload)


def latest_base_generation(session: Session, terms_version: str) -> int | None:
    return session.execute(text("SELECT max(generation) FROM keyword_bases WHERE terms_version = :t"),
                           {"t": terms_version}).scalar()


def publish(engine: Engine) -> tuple[int, bool]:
    """Publish the generation committed now, if it is newer than the published version.

    Returns (the published version, whether this call published it). Serialised across every
    process by an advisory lock; the UPDATE's condition keeps it forward-only even so.
    """
    with advisory_lock(engine, PUBLISH_LOCK), Session(engine) as session, session.begin():
        current, before = generation(session), published(session)
        if before is not None and current <= before:
            return before, False
        session.execute(text(
            "INSERT INTO index_state (key, value) VALUES (:k, :v) ON CONFLICT (key) DO UPDATE SET value = :v "
            "WHERE index_state.value::bigint < :g"
        ), {"k": VERSION_KEY, "v": str(current), "g": current})
        session.execute(text("INSERT INTO keyword_versions (generation, runner) VALUES (:g, :r) ON CONFLICT DO NOTHING"),
                        {"g": current, "r": RUNNER_ID})
        session.execute(text(
            "DELETE FROM keyword_versions WHERE generation < (SELECT min(generation) FROM "
            "(SELECT generation FROM keyword_versions ORDER BY generation DESC LIMIT :n) AS kept)"
        ), {"n": KEEP_VERSIONS})
        notify(session, "keyword", version=current)  # delivered when this commits
        return current, True


def save_base(engine: Engine, generation_: int, terms_version: str, chunks: int, payload: bytes | bytearray,
              part_bytes: int = PART_BYTES) -> bool:
    """Save a base at a published generation (never one older than the newest saved), in parts of
    at most `part_bytes`, then drop what no reader can need any more: every base but the two
    newest (their parts go with them), and the change log up to the older of them. Returns
    whether it was saved."""
    with advisory_lock(engine, PUBLISH_LOCK), Session(engine) as session, session.begin():
        newest = latest_base_generation(session, terms_version)
        if newest is not None and newest >= generation_:
            return False
        view = memoryview(payload)  # parts are slices of it, not copies
        session.execute(text(
            "INSERT INTO keyword_bases (generation, terms_version, chunks, payload) VALUES (:g, :t, :c, :p)"
        ), {"g": generation_, "t": terms_version, "c": chunks, "p": view[:part_bytes]})
        for part, start in enumerate(range(part_bytes, len(payload), part_bytes), start=1):
            session.execute(text("INSERT INTO keyword_base_parts (generation, part, payload) VALUES (:g, :n, :p)"),
                            {"g": generation_, "n": part, "p": view[start : start + part_bytes]})
        kept = list(session.execute(text(
            "SELECT generation FROM keyword_bases WHERE terms_version = :t ORDER BY generation DESC LIMIT 2"
        ), {"t": terms_version}).scalars())
        oldest = min(kept)
        session.execute(text("DELETE FROM keyword_bases WHERE generation < :o OR terms_version <> :t"),
                        {"o": oldest, "t": terms_version})
        session.execute(text("DELETE FROM keyword_changes WHERE generation <= :o"), {"o": oldest})
        session.execute(text(
            "INSERT INTO index_state (key, value) VALUES (:k, :v) ON CONFLICT (key) DO UPDATE SET value = :v "
            "WHERE index_state.value::bigint < :g"
        ), {"k": FLOOR_KEY, "v": str(oldest), "g": oldest})
        return True


def published_versions(session: Session) -> list[int]:
    """Every publication still in the history, oldest first (for `kb status` and tests)."""
    return list(session.execute(text("SELECT generation FROM keyword_versions ORDER BY generation")).scalars())


def keyword_state(session: Session) -> KeywordState:
    """The keyword index as `kb status` shows it: the version served, the last committed change,
    the newest saved base of this tokenizer version, and what a cold start replays on top of it."""
    base = latest_base_generation(session, TERMS_VERSION)
    return KeywordState(
        published=published(session),
        committed=generation(session),
        base=base,
        changed_since_base=changes_since(session, base or 0),
    )
