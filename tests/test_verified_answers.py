"""Verified answers through the real `kb` command line, on the session's index (the sample wiki):
added once, given to the same question asked another way, never to its near miss, only where
their scopes are visible, retired at once in a process that was already running, and due for
review when a page they cite changes.

The questions here are about things the sample wiki never mentions (guest wifi in the Lisbon
office), so no other test's answer can change while an answer is live; each test retires what
it added.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_answer_and_cli import _kb

REPO = Path(__file__).resolve().parents[1]
LISBON = "what's the guest wifi password in the Lisbon office?"
ANSWER = "Ask reception for the guest card: the password changes every Monday. <!channel> thanks!"

pytestmark = pytest.mark.integration


def added_id(result: subprocess.CompletedProcess[str]) -> int:
    assert result.returncode == 0, result.stderr
    return int(result.stdout.split()[-1])


def ask(env: dict[str, str], question: str, *args: str) -> dict:
    result = _kb("ask", "--json", *args, question, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def env(kb_home, sample_synced) -> dict[str, str]:
    return {"KB_HOME": str(kb_home), "KB_SOURCES": None, "KB_WIKI": None, "KB_LLM_BASE_URL": None}


def test_a_verified_answer_is_given_to_its_paraphrase_and_not_to_its_near_miss(env):
    answer_id = added_id(_kb("answers", "add", "--question", LISBON, "--question", "lisbon office guest wifi",
                             "--answer", ANSWER, "--by", "dana", "--review-by", "2099-01-31", env=env))
    try:
        given = ask(env, "how do I get on the guest wifi in the Lisbon office?")
        assert given["verified"] is not None and given["verified"]["id"] == answer_id, given
        verified = given["verified"]
        assert set(verified) == {"id", "answer", "by", "at", "scope", "review_by", "cites"}
        assert verified["by"] == "dana" and verified["scope"] == ["public"] and verified["review_by"] == "2099-01-31"
        assert "<!channel>" not in verified["answer"] and "@channel" in verified["answer"]  # stored inert
        assert given["outcome"] == "answered" and given["answer"].startswith("✅ Verified answer — by @dana, ")
        assert not given["llm_used"]

        near_miss = ask(env, "what's the guest wifi password in the Portland office?")
        assert near_miss["verified"] is None and "Verified answer" not in near_miss["answer"]
        unrelated = ask(env, "how many days of annual leave do I get?")
        assert unrelated["verified"] is None and "25 days" in unrelated["lead"]

        shown = json.loads(_kb("answers", "show", str(answer_id), "--json", env=env).stdout)
        assert shown["questions"] == [LISBON, "lisbon office guest wifi"] and shown["due_since"] is None
        listed = json.loads(_kb("answers", "list", "--json", env=env).stdout)
        assert answer_id in [row["id"] for row in listed]
    finally:
        assert _kb("answers", "retire", str(answer_id), "--by", "dana", env=env).returncode == 0
    assert ask(env, LISBON)["verified"] is None  # retired: never given again


def test_only_where_its_scope_is_visible(env, tmp_path):
    sources = tmp_path / "kb.toml"
    sample = (REPO / "sample-wiki" / "docent.toml").read_text().replace('location = "."', f'location = "{REPO / "sample-wiki"}"')
    sources.write_text(sample + '\n[scopes.office]\nchannels = ["C0OFFICE1"]\n', encoding="utf-8")
    scoped = {**env, "KB_SOURCES": str(sources)}
    refused = _kb("answers", "add", "-q", LISBON, "--answer", ANSWER, "--scope", "offfice", env=scoped)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1].startswith("error: unknown scope offfice")
    answer_id = added_id(_kb("answers", "add", "-q", LISBON, "--answer", ANSWER, "--scope", "office", env=scoped))
    try:
        assert ask(scoped, LISBON, "--as-channel", "C0OFFICE1")["verified"]["id"] == answer_id
        assert ask(scoped, LISBON, "--as-channel", "C0GENERAL")["verified"] is None
        assert ask(scoped, LISBON, "--as-channel", "C0OFFICE1", "--shared")["verified"] is None  # Slack Connect: public only
    finally:
        _kb("answers", "retire", str(answer_id), env=scoped)


def test_adding_and_retiring_take_effect_at_once_in_a_process_already_answering(env):
    """Another process (a replica, `kb serve`) sees each change from its next question on: its
    snapshot of the questions is reloaded when the table's revision moves."""
    full_env = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    asking = subprocess.Popen([sys.executable, "-m", "bot.cli", "ask", "--json"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env, cwd=REPO)
    answer_id = None

    def verified_now() -> dict | None:
        assert asking.stdin is not None and asking.stdout is not None
        asking.stdin.write(LISBON + "\n")
        asking.stdin.flush()
        return json.loads(asking.stdout.readline())["verified"]

    try:
        assert verified_now() is None
        answer_id = added_id(_kb("answers", "add", "-q", LISBON, "--answer", ANSWER, env=env))
        assert verified_now()["id"] == answer_id
        assert _kb("answers", "retire", str(answer_id), env=env).returncode == 0
        assert verified_now() is None
    finally:
        asking.kill()
        asking.wait()
        if answer_id is not None:
            _kb("answers", "retire", str(answer_id), env=env)


def test_a_cited_page_that_changes_makes_it_due_for_review(env, tmp_path):
    wiki = tmp_path / "office-wiki"
    wiki.mkdir()
    page = wiki / "lisbon.md"
    page.write_text("# Lisbon office\n\nThe Lisbon office is on Rua Augusta, third floor.\n", encoding="utf-8")
    assert _kb("sync", str(wiki), "--source", "lisbonwiki", env=env).returncode == 0
    try:
        answer_id = added_id(_kb("answers", "add", "-q", LISBON, "--answer", ANSWER, "--cites", "lisbon.md",
                                 "--by", "dana", env=env))
        assert json.loads(_kb("answers", "show", str(answer_id), "--json", env=env).stdout)["cites"] == ["lisbonwiki:lisbon.md"]
        assert answer_id not in [a["id"] for a in json.loads(_kb("answers", "list", "--due", "--json", env=env).stdout)]
        given = ask(env, LISBON)
        assert given["verified"]["id"] == answer_id and given["sources"][0]["path"] == "lisbon.md"
        page.write_text("# Lisbon office\n\nThe Lisbon office moved to Avenida da Liberdade, fourth floor.\n", encoding="utf-8")
        assert _kb("sync", str(wiki), "--source", "lisbonwiki", env=env).returncode == 0
        due = [a for a in json.loads(_kb("answers", "list", "--due", "--json", env=env).stdout) if a["id"] == answer_id]
        assert len(due) == 1 and due[0]["due_why"] == "lisbon.md changed", due
        still = ask(env, LISBON)
        assert still["verified"]["id"] == answer_id and "due for review since" in still["answer"]
        assert _kb("answers", "edit", str(answer_id), "--reviewed", "--by", "dana", env=env).returncode == 0
        assert answer_id not in [a["id"] for a in json.loads(_kb("answers", "list", "--due", "--json", env=env).stdout)]
        _kb("answers", "retire", str(answer_id), env=env)
    finally:
        assert _kb("forget", "lisbonwiki", "--yes", env=env).returncode == 0  # without --yes it asks, and keeps it


def test_export_and_import_keep_them_in_a_file(env, tmp_path):
    answer_id = added_id(_kb("answers", "add", "-q", LISBON, "-q", "guest wifi lisbon", "--answer", ANSWER,
                             "--by", "dana", "--review-by", "2099-01-31", env=env))
    exported = tmp_path / "answers.yaml"
    try:
        assert _kb("answers", "export", str(exported), env=env).returncode == 0
        [entry] = [e for e in yaml.safe_load(exported.read_text()) if e["id"] == answer_id]
        assert entry["questions"] == [LISBON, "guest wifi lisbon"] and entry["verified_by"] == "dana"
        entry["answer"] = "The guest card at reception has it."
        exported.write_text(yaml.safe_dump([entry]), encoding="utf-8")
        result = _kb("answers", "import", str(exported), env=env)
        assert result.returncode == 0 and "0 added, 1 replaced" in result.stdout, result.stdout + result.stderr
        assert ask(env, "guest wifi lisbon")["verified"]["answer"] == "The guest card at reception has it."
        exported.write_text("- questions: []\n  answer: x\n  verified_by: me\n", encoding="utf-8")
        broken = _kb("answers", "import", str(exported), env=env)
        assert broken.returncode == 1 and broken.stderr.strip().splitlines()[-1].startswith(
            f"error: {exported}: entry 1, questions:")
    finally:
        _kb("answers", "retire", str(answer_id), env=env)


def test_bad_input_is_one_error_line(env):
    for args, message in [
        (["-q", LISBON, "--answer", "  "], "error: the answer is empty"),
        (["--answer", ANSWER], "error: a verified answer needs at least one question"),
        (["-q", LISBON, "--answer", ANSWER, "--cites", "no/such/page.md"], "error: 'no/such/page.md' is not an indexed page"),
        (["-q", LISBON, "--answer", ANSWER, "--review-by", "next week"], "error: --review-by 'next week': expected a day"),
    ]:
        result = _kb("answers", "add", *args, env=env)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.strip().splitlines()[-1].startswith(message), result.stderr
    missing = _kb("answers", "retire", "999999", env=env)
    assert missing.returncode == 1 and missing.stderr.strip().splitlines()[-1] == "error: no verified answer 999999"


BROADBAND = "Can I expense my home internet bill?"


def test_a_question_worded_otherwise_is_offered_and_a_verifier_may_add_it(env, index):
    """"broadband" for "internet bill" in place reads as a near miss would ("electricity" for
    "internet"): not given, offered — its verified question shown beside the wiki's answer. Taken
    in a channel (Slack's button records it: tests/test_verified_slack_offer.py), it is a suggested
    question; a verifier's `kb answers accept` makes it one of the answer's questions, given from
    then on; `dismiss` leaves the answer as it is."""
    from bot.verified import suggestions

    answer_id = added_id(_kb("answers", "add", "-q", BROADBAND, "--answer", "Yes, up to 30 EUR a month.",
                             "--by", "dana", env=env))
    try:
        offered = ask(env, "expensing home broadband?")
        assert offered["verified"] is None and offered["verified_offer"] == {"id": answer_id, "question": BROADBAND}
        assert offered["signals"]["verified_offer_id"] == answer_id
        plain = _kb("ask", "expensing home broadband?", env=env)
        assert f"✅ A verified answer may answer this: “{BROADBAND}” — `kb answers show {answer_id}`" in plain.stdout
        assert ask(env, "Can I expense my home internet bill in Lisbon?")["verified_offer"] is None  # a name it lacks

        with index.session() as session:
            first = suggestions.suggest(session, answer_id, "expensing home broadband?", "U0ASKER1", "C0HELP001")
            again = suggestions.suggest(session, answer_id, "Expensing  home broadband?", "U0ASKER2", "C0HELP001")
            other = suggestions.suggest(session, answer_id, "is my home phone bill covered", "U0ASKER1", "C0HELP001")
            known = suggestions.suggest(session, answer_id, BROADBAND.lower(), "U0ASKER1", "C0HELP001")
            session.commit()
        assert first is not None and other is not None and again is None and known is None

        listed = json.loads(_kb("answers", "suggestions", "--json", env=env).stdout)
        assert [(s["id"], s["question"], s["status"]) for s in listed if s["answer_id"] == answer_id] == [
            (first, "expensing home broadband?", "open"), (other, "is my home phone bill covered", "open")]
        accepted = _kb("answers", "accept", str(first), "--by", "dana", env=env)
        assert accepted.returncode == 0, accepted.stderr
        assert _kb("answers", "dismiss", str(other), "--by", "dana", env=env).returncode == 0
        again_accepted = _kb("answers", "accept", str(first), "--by", "dana", env=env)
        assert again_accepted.returncode == 1 and "was added already" in again_accepted.stderr

        given = ask(env, "expensing home broadband?")
        assert given["verified"] is not None and given["verified"]["id"] == answer_id and given["verified_offer"] is None
        shown = json.loads(_kb("answers", "show", str(answer_id), "--json", env=env).stdout)
        assert shown["questions"] == [BROADBAND, "expensing home broadband?"]
        assert json.loads(_kb("answers", "suggestions", "--json", env=env).stdout) == []
        log = _kb("answers", "suggestions", "--all", env=env).stdout
        assert "(added)" in log and "(dismissed)" in log
    finally:
        assert _kb("answers", "retire", str(answer_id), "--by", "dana", env=env).returncode == 0
