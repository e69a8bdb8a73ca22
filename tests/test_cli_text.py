"""What `kb` prints is text: no part of a password, and no page title read as Rich markup.

Through the real CLI in a subprocess (`python -m bot.cli`, this checkout's code):

- DATABASE_URL of several shapes — an unencoded `@` in the password, `%40`, no user, a password
  in the query string, garbled ones — never shows any part of its password, on stdout, stderr or
  in DEBUG logs; a URL that cannot be read is not shown at all (issue 23, item 6).
- A wiki whose titles and headings hold Rich markup (`[/]`, `[link=…]`, `[bold]`) is synced and
  asked about: the literal titles print, with no traceback and no OSC-8 terminal hyperlink, even
  with colours forced on (issue 23, item 7).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OSC8 = "\x1b]8;"  # a terminal hyperlink: its target is not shown
ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b]*\x1b\\")


def kb(*args: str, env: dict[str, str | None], stdin: str | None = None,
       timeout: float = 240) -> subprocess.CompletedProcess:
    full = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin, capture_output=True, text=True,
                          env=full, cwd=REPO, timeout=timeout)


# -- passwords ---------------------------------------------------------------------------------

SECRET = "Pa55w0rdTail"  # every URL below holds it, whole or in parts


@pytest.mark.slow
@pytest.mark.parametrize("url, shown", [
    (f"postgresql://docent:Pa55@w0rd-{SECRET}@127.0.0.1:1/docent", None),
    (f"postgresql://docent:Pa55%40w0rd-{SECRET}@127.0.0.1:1/docent", "postgresql://docent:***@127.0.0.1:1/docent"),
    (f"postgresql://docent:{SECRET}@127.0.0.1:1/docent", "postgresql://docent:***@127.0.0.1:1/docent"),
    ("postgresql://127.0.0.1:1/docent", "postgresql://127.0.0.1:1/docent"),
    (f"postgresql://docent@127.0.0.1:1/docent?password={SECRET}&sslmode=disable",
     "postgresql://docent@127.0.0.1:1/docent?password=***&sslmode=disable"),
    (f"postgresql://docent:{SECRET}@[::1/docent", None),
    (f"postgresql://docent:{SECRET}@127.0.0.1:{SECRET}/docent", None),
    (f"docent:{SECRET}@127.0.0.1/docent", None),
], ids=["unencoded-at", "percent-40", "plain", "no-user", "query-password", "garbled-host", "garbled-port", "no-scheme"])
def test_no_part_of_a_password_is_printed_whatever_the_urls_shape(tmp_path, url, shown):
    env = {"KB_HOME": str(tmp_path / "home"), "DATABASE_URL": url, "KB_LOG_LEVEL": "DEBUG", "KB_SOURCES": None,
           "KB_LLM_BASE_URL": None, "SLACK_BOT_TOKEN": None}
    for command in (["status"], ["ask", "how many days of leave?"]):
        done = kb(*command, env=env, timeout=120)
        out = done.stdout + done.stderr
        assert done.returncode != 0 and "Traceback" not in out, out
        for part in (SECRET, "Pa55", "w0rd"):
            assert part not in out, (command, part, out)
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, done.stderr
        if shown is None:  # unreadable: no URL at all, but what is wrong with it
            assert "DATABASE_URL" in errors[0] and "postgresql://docent" not in errors[0] and "127.0.0.1" not in errors[0]
        else:
            assert f"database unreachable at {shown.replace('postgresql:', 'postgresql+psycopg2:')}:" in errors[0], errors[0]


def test_a_drivers_message_is_shown_without_the_password_it_quotes():
    from sqlalchemy.engine import make_url

    from indexing.storage.database import redacted

    url = make_url(f"postgresql://docent:{SECRET}%2Fx@db/docent?sslpassword=Key{SECRET}")
    message = f'invalid option "{SECRET}/x" and "{SECRET}%2Fx" and sslpassword=Key{SECRET}'
    assert redacted(message, url) == 'invalid option "***" and "***" and sslpassword=***'


def test_settings_and_index_config_never_show_the_database_url():
    from bot.settings import Settings

    settings = Settings(_env_file=None, database_url=f"postgresql://docent:{SECRET}@db/docent")
    shown = repr(settings) + str(settings.model_dump()) + repr(settings.index_config())
    assert SECRET not in shown
    assert settings.index_config().database_url == f"postgresql://docent:{SECRET}@db/docent"


# -- titles as text ----------------------------------------------------------------------------

TITLE = "Expenses [/] and [bold]receipts[/bold]"
LINKED = "Travel [link=https://evil.example/phish]booking[/link] rules"


@pytest.fixture
def markup_wiki(index, tmp_path):
    """A wiki whose titles and headings are Rich markup, with a database of its own on the test server."""
    from sqlalchemy import text

    wiki = tmp_path / "wiki [bold]"  # the folder name, printed as the source's location, too
    wiki.mkdir()
    (wiki / "expenses.md").write_text(
        f"# {TITLE}\n\n## Claims [red]now[/]\n\nClaim quokka-grooming expenses within 30 days, with the receipts.\n")
    (wiki / "travel.md").write_text(
        f"# {LINKED}\n\nBook quokka-sanctuary trips through the travel desk two weeks ahead.\n")
    name = "docent_markup_" + uuid.uuid4().hex[:8]
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    env = {"KB_HOME": str(tmp_path / "home"), "KB_WIKI": str(wiki), "KB_SOURCE_NAME": "mark[/]up",
           "DATABASE_URL": index.url.set(database=name).render_as_string(hide_password=False),
           "KB_LOG_LEVEL": None, "SLACK_BOT_TOKEN": None, "KB_SOURCES": None, "KB_LLM_BASE_URL": None,
           "FORCE_COLOR": "1", "COLUMNS": "200"}
    yield env
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))


def test_titles_and_names_with_rich_markup_print_as_written(markup_wiki):
    synced = kb("sync", env=markup_wiki)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "mark[/]up: 2 added" in ANSI.sub("", synced.stdout + synced.stderr)

    questions = "when must I claim quokka-grooming expenses?\nhow do I book a quokka-sanctuary trip?\n"
    asked = kb("ask", env=markup_wiki, stdin=questions)  # questions line by line: one process, one model load
    out = asked.stdout + asked.stderr
    assert asked.returncode == 0 and "Traceback" not in out and "MarkupError" not in out, out
    assert OSC8 not in out, "no hidden terminal hyperlink"
    shown = ANSI.sub("", asked.stdout)
    assert TITLE in shown and "Claims [red]now[/]" in shown and LINKED in shown, shown


# -- control characters (issue 33 item 7) --------------------------------------------------------

HOSTILE_TITLE = "Claims \x1b]0;pwned\x07window \x1b[2Jcleared \x9b31mred \x07bell"


def test_control_characters_in_titles_and_names_never_reach_the_terminal(index, tmp_path):
    """A title holding OSC 0 (window title), CSI 2J (clear screen), a C1 CSI and BEL, in a file
    whose name holds ESC too: `kb sync` and `kb ask` printed them raw. Now only Rich's own colour
    codes are escape sequences, and the words around the controls still print."""
    from sqlalchemy import text

    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "claims\x1b[2J.md").write_text(f"# {HOSTILE_TITLE}\n\nClaim wombat-grooming costs within 30 days.\n")
    name = "docent_controls_" + uuid.uuid4().hex[:8]
    with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    env = {"KB_HOME": str(tmp_path / "home"), "KB_WIKI": str(wiki), "KB_LOG_LEVEL": None, "SLACK_BOT_TOKEN": None,
           "KB_SOURCES": None, "KB_LLM_BASE_URL": None, "FORCE_COLOR": "1", "COLUMNS": "200",
           "DATABASE_URL": index.url.set(database=name).render_as_string(hide_password=False)}
    try:
        synced = kb("sync", env=env)
        asked = kb("ask", "when must I claim wombat-grooming costs?", env=env)
        listed = kb("status", env=env)
    finally:
        with index.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    assert synced.returncode == 0 and asked.returncode == 0, synced.stderr + asked.stderr
    for done in (synced, asked, listed):
        out = ANSI.sub("", done.stdout + done.stderr)  # Rich's own colours
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), repr(out)
    shown = ANSI.sub("", asked.stdout)
    assert "Claims" in shown and "pwnedwindow" in shown and "cleared" in shown and "bell" in shown, shown


def test_an_empty_setting_is_unset(tmp_path):
    """`KB_SOURCES=` read as the path "" — the working directory — and so did `KB_WIKI=`; an empty
    number failed to parse. Empty is unset: the defaults hold, and `kb sources` says so."""
    env = {"KB_HOME": str(tmp_path / "home"), "KB_SOURCES": "", "KB_WIKI": "", "KB_TOP_K": "", "DATABASE_URL": None,
           "SLACK_BOT_TOKEN": "", "KB_LOG_LEVEL": None}
    code = ("from bot.settings import Settings; s = Settings(_env_file=None); "
            "print(s.kb_sources, s.kb_wiki, s.kb_top_k == Settings.model_fields['kb_top_k'].default, s.slack_bot_token)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={k: v for k, v in {**os.environ, **env}.items() if v is not None})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "None", "True", "None"]
