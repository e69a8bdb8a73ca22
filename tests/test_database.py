"""The database Docent needs: pgvector 0.8 or later, checked at start with one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.support.databases import scratch_database
from indexing.storage.database import DatabaseUnsupported, connect, is_unreachable, pgvector_version

REPO = Path(__file__).resolve().parents[1]
KB = [sys.executable, "-m", "bot.cli"]  # this checkout's code, whichever checkout the venv was installed from


@pytest.fixture
def old_pgvector(index):
    """A database of the test server whose `vector` extension reports version 0.7.4.

    No pgvector older than 0.8 can be installed here (the embedded server ships 0.8.5 and only its
    upgrade scripts), so the extension's catalog row is set back to what an older server reports
    — the same row Docent reads."""
    with scratch_database(index, "docent_oldvector") as url:
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION vector"))
            conn.execute(text("UPDATE pg_extension SET extversion = '0.7.4' WHERE extname = 'vector'"))
        engine.dispose()
        yield url


def test_pgvector_older_than_0_8_is_refused_with_its_version(old_pgvector):
    with pytest.raises(DatabaseUnsupported, match=r"^pgvector 0\.7\.4 at .* is too old: Docent needs 0\.8 or later") as caught:
        connect(old_pgvector)
    assert not is_unreachable(caught.value), "not an outage: nobody should be told to try again in a minute"


def test_kb_stops_at_start_with_one_error_line_naming_the_version(old_pgvector, tmp_path):
    env = {**os.environ, "KB_HOME": str(tmp_path / "home"), "KB_LOG_LEVEL": "WARNING",
           "DATABASE_URL": old_pgvector.render_as_string(hide_password=False)}
    env.pop("KB_SOURCES", None)
    done = subprocess.run([*KB, "status"], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: pgvector 0.7.4 at "), done.stderr
    assert "too old: Docent needs 0.8 or later" in lines[0]


def test_the_test_servers_pgvector_is_new_enough(index):
    with index.engine.connect() as conn:
        version = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
    assert pgvector_version(version) >= (0, 8)
    assert pgvector_version("0.7.4") == (0, 7, 4) and pgvector_version("0.10.0") > (0, 8)
    assert pgvector_version(None) == (0,)


def test_times_come_back_in_utc_whatever_zone_the_database_is_set_to(index):
    """`kb status` and Slack print times as UTC: the session must be in UTC even when the database
    (or server) is configured for another zone."""
    with scratch_database(index, "docent_tokyo") as url:
        with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"ALTER DATABASE \"{url.database}\" SET timezone = 'Asia/Tokyo'"))
        engine = connect(url)
        try:
            with engine.connect() as conn:
                assert conn.execute(text("SELECT current_setting('TimeZone')")).scalar_one() == "UTC"
                assert conn.execute(text("SELECT now()")).scalar_one().utcoffset().total_seconds() == 0
        finally:
            engine.dispose()
