"""Synonyms (`[synonyms]` in the sources file, `indexing.keyword.synonyms`): the asker's word searched as the
wiki's words in the keyword leg, one way, through the keyword analyser, after typo repair, shown in
"Searched for …" and logged; a bad entry stops Docent at start naming the file, table and key."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bot.knowledge import KnowledgeBase
from sources import Audience, SourcesError, read_sources_file
from indexing.keyword.keyword_segments import KeywordIndex, KeywordRow
from indexing.search.retrieval import retrieve
from indexing.keyword.synonyms import EXPANSION_WEIGHT, Synonyms
from tests.support.corpora import SAMPLE_WIKI
from tests.support.databases import scratch_database
from tests.test_answer_and_cli import _kb

README_QUESTION = "how many vacation days do I get?"
SAMPLE = Audience.limited(["sample"])


def write(tmp_path, body: str, name: str = "kb.toml"):
    (tmp_path / "wiki").mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


SOURCE = '[[source]]\nname = "w"\nlocation = "wiki"\n\n'


# -- the table in the sources file -------------------------------------------------------------


def test_the_synonyms_table_is_read_from_toml_and_yaml(tmp_path):
    toml = write(tmp_path, SOURCE + '[synonyms]\nvacation = ["annual leave", "paid time off", "PTO"]\n'
                                    '"年假" = ["annual leave"]\n"time  off" = ["leave"]\n')
    assert read_sources_file(toml).synonyms == {
        "vacation": ["annual leave", "paid time off", "PTO"], "年假": ["annual leave"], "time off": ["leave"]}
    yaml = write(tmp_path, "sources:\n  - name: w\n    location: wiki\nsynonyms:\n  vacation: [annual leave, PTO]\n",
                 "kb.yaml")
    assert read_sources_file(yaml).synonyms == {"vacation": ["annual leave", "PTO"]}
    assert read_sources_file(write(tmp_path, SOURCE)).synonyms == {}


@pytest.mark.parametrize("table, message", [
    ('vacation = "annual leave"',
     "[synonyms] 'vacation': must be a list, e.g. vacation = [\"annual leave\"] (a single synonym too goes in [ ])"),
    ("vacation = []", "[synonyms] 'vacation': must be a non-empty list of words or phrases in quotes"),
    ('vacation = ["annual leave", 3]', "[synonyms] 'vacation': 3 is not a word or phrase in quotes"),
    ('vacation = [""]', "[synonyms] 'vacation': '' is not a word or phrase in quotes"),
])
def test_a_badly_shaped_entry_names_the_file_the_table_and_the_key(tmp_path, table, message):
    path = write(tmp_path, SOURCE + "[synonyms]\n" + table + "\n")
    with pytest.raises(SourcesError) as raised:
        read_sources_file(path)
    assert str(raised.value) == f"{path}: {message}"


@pytest.mark.parametrize("line, key", [('年假 = ["annual leave"]', "年假"), ('time off = ["leave"]', "time off")])
def test_a_toml_key_that_needs_quotes_says_how_to_write_it(tmp_path, line, key):
    path = write(tmp_path, SOURCE + "[synonyms]\n" + line + "\n")
    with pytest.raises(SourcesError) as raised:
        read_sources_file(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert str(raised.value).endswith(f"(at line 6, column {1 if key == '年假' else 6}) — a key with spaces or "
                                      f"non-ASCII letters goes in quotes: \"{key}\" = …")


@pytest.mark.parametrize("table, message", [
    ({"Vacation": ["annual leave"], "vacations": ["PTO"]},
     "[synonyms] 'vacations': is the same word as 'Vacation' to the keyword index (case and endings are ignored); "
     "put both lists under one of them"),
    ({"it": ["the laptop"]}, "[synonyms] 'it': has no word the keyword index searches (only stop words such as "
                             "\"the\", \"it\"); use the word people actually type"),
    ({"laptop": ["the"]}, "[synonyms] 'laptop': synonym 'the' has no word the keyword index searches"),
])
def test_an_entry_the_keyword_leg_cannot_use_is_refused(table, message):
    with pytest.raises(SourcesError) as raised:
        Synonyms.from_table(table, "kb.toml: [synonyms]")
    assert str(raised.value) == f"kb.toml: {message}"


@pytest.mark.slow
def test_a_bad_entry_stops_kb_at_start_with_one_line(tmp_path):
    path = write(tmp_path, SOURCE + '[synonyms]\nit = ["laptop"]\n')
    result = _kb("ask", "anything?", env={"KB_SOURCES": str(path), "KB_HOME": str(tmp_path / "home")})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: {path}: [synonyms] 'it': has no word")


# -- what a question is expanded with ----------------------------------------------------------


VOCABULARY = Synonyms.from_table({"vacation": ["annual leave", "paid time off", "PTO"], "time off": ["leave"],
                                  "年假": ["annual leave"], "parental leave": ["leave for new parents"]})


def test_case_and_endings_do_not_matter():
    for question in ("VACATIONS next year?", "is my vacation approved", "Vacation"):
        assert [s.key for s in VOCABULARY.expand(question).used] == ["vacation"]
    assert VOCABULARY.expand("how many vacation days").terms == {
        "annual": EXPANSION_WEIGHT, "leav": EXPANSION_WEIGHT, "paid": EXPANSION_WEIGHT, "time": EXPANSION_WEIGHT,
        "off": EXPANSION_WEIGHT, "pto": EXPANSION_WEIGHT}


def test_a_key_of_several_words_matches_them_in_order():
    assert [s.key for s in VOCABULARY.expand("how much time off do I get").used] == ["time off"]
    assert not VOCABULARY.expand("is the off time paid").used
    assert not VOCABULARY.expand("how much time do I have").used


def test_synonyms_are_one_way():
    assert not VOCABULARY.expand("how many days of annual leave do I get").used
    assert not VOCABULARY.expand("what is PTO").used


def test_a_chinese_key_matches_where_the_question_holds_it_as_written():
    expansion = VOCABULARY.expand("今年的年假有几天？")
    assert [s.key for s in expansion.used] == ["年假"] and set(expansion.terms) == {"annual", "leav"}
    assert not VOCABULARY.expand("今年有几天假？").used  # 年 and 假, not 年假


def test_terms_the_question_already_has_are_not_added_again():
    expansion = VOCABULARY.expand("how long is parental leave")
    assert expansion.terms == {"new": EXPANSION_WEIGHT}  # "leav" and "parent" are the asker's own: they count fully


def test_an_added_term_counts_its_weight_of_a_question_term():
    """The keyword leg's arithmetic: a term weighed w adds exactly w × what it adds at weight 1."""
    rows = [KeywordRow(f"n{i}", f"d{i}", f"p{i}", "public") for i in range(3)]
    index = KeywordIndex.build(rows, [["vacat", "day"], ["annual", "leav"], ["park", "car"]], 1)
    plain = dict((r.node_id, s) for r, s in index.search(["vacat", "annual", "leav"], None, 3))
    weighted = dict((r.node_id, s) for r, s in index.search(["vacat", "annual", "leav"], None, 3, [1.0, 0.5, 0.5]))
    assert weighted["n0"] == plain["n0"]  # the asker's word: unchanged
    assert weighted["n1"] == pytest.approx(plain["n1"] / 2, rel=1e-6)
    assert index.search(["vacat", "annual"], None, 3, [1.0, 1.0]) == index.search(["vacat", "annual"], None, 3)


# -- in retrieval and the reply ----------------------------------------------------------------


@pytest.fixture
def with_synonyms(index, monkeypatch):
    def use(table: dict[str, list[str]]):
        monkeypatch.setattr(index, "config", replace(index.config, synonyms=Synonyms.from_table(table)))
        return index
    return use


def test_the_readme_question_is_uncertain_without_a_synonym_and_answered_with_one(index, sample_synced, with_synonyms):
    """Why the sample wiki's own sources file has `vacation = ["annual leave"]`: the wiki never
    says "vacation", and without the entry the holiday page comes first and the answer is unsure."""
    without = KnowledgeBase(index, []).ask(README_QUESTION, SAMPLE)
    assert without.outcome == "uncertain" and without.sources[0].path == "people/holidays.md"
    assert without.searched is None
    with_synonyms({"vacation": ["annual leave"]})
    answer = KnowledgeBase(index, []).ask(README_QUESTION, SAMPLE)
    assert answer.outcome == "answered" and answer.sources[0].path == "people/leave.md"
    assert answer.sources[0].heading_path == ("Annual leave",)
    assert answer.lead.startswith("Full-time employees get 25 days of paid annual leave")
    assert answer.question == README_QUESTION
    assert answer.searched == "how many vacation days do I get? (synonyms: vacation → annual leave)"


def test_a_question_without_a_key_is_searched_exactly_as_without_synonyms(index, sample_synced, with_synonyms):
    question = "how many days of annual leave do I get?"
    before = retrieve(index, question, scopes=["sample"])
    with_synonyms({"vacation": ["annual leave"], "WFH": ["remote work"]})
    after = retrieve(index, question, scopes=["sample"])
    assert not after.expansion and after.searched_for is None
    assert [(h.parent_id, h.score, h.cosine, h.bm25) for h in after.hits] == [
        (h.parent_id, h.score, h.cosine, h.bm25) for h in before.hits]
    assert after.signals == before.signals and after.outcome == before.outcome


def test_typos_are_repaired_first_then_synonyms_added(index, sample_synced, with_synonyms):
    """"hoilday" is repaired to the wiki's "holiday" (one swap), and the repaired word is a key."""
    with_synonyms({"holiday": ["day off"]})
    found = retrieve(index, "can I work on a public hoilday?", scopes=["sample"])
    assert found.repair.corrections == [("hoilday", "holiday")]
    assert [s.key for s in found.expansion.used] == ["holiday"]
    assert found.searched_for == "can I work on a public holiday? (synonyms: holiday → day off)"


def test_the_slack_reply_and_the_query_log_say_what_was_searched(index, sample_synced, with_synonyms):
    from bot.records import question_log
    from bot.slack.blocks import answer_blocks

    with_synonyms({"vacation": ["annual leave"]})
    answer = KnowledgeBase(index, []).ask(README_QUESTION, SAMPLE)
    shown = "_Searched for “how many vacation days do I get? (synonyms: vacation → annual leave)”_"
    assert shown in json.dumps(answer_blocks(answer), ensure_ascii=False)
    row = question_log.log_query(index, surface="mention", user_id="USYN", question=README_QUESTION, answer=answer)
    assert row.question == README_QUESTION and row.signals["searched"] == answer.searched
    again = question_log.answer_from_log(question_log.find_answer(index, answer.id))  # re-rendered after a vote
    assert shown in json.dumps(answer_blocks(again), ensure_ascii=False)


def test_the_readme_example_through_the_real_cli_with_the_sample_wikis_own_sources(index, tmp_path):
    """`echo "how many vacation days do I get?" | kb run` with nothing configured — the README's
    "Try it": the sample wiki synced with its `docent.toml` and its [synonyms], then the question
    answered at the prompt — and `kb ask --json`, in a database of their own."""
    with scratch_database(index, "docent_synonyms") as url:
        env = {"KB_HOME": str(tmp_path / "home"), "DATABASE_URL": url.render_as_string(hide_password=False),
               "KB_SOURCES": None, "KB_WIKI": None, "SLACK_BOT_TOKEN": None, "COLUMNS": "200"}
        run = _kb("run", env=env, stdin=README_QUESTION + "\n", timeout=300)
        assert run.returncode == 0, run.stderr
        assert "searched for: how many vacation days do I get? (synonyms: vacation → annual leave)" in run.stdout
        assert "not sure" not in run.stdout and "Full-time employees get 25 days" in run.stdout
        assert "[1] Leave policy › Annual leave" in run.stdout
        result = _kb("ask", "--json", env=env, stdin=README_QUESTION + "\n")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["outcome"] == "answered"
        assert data["lead"].startswith("Full-time employees get 25 days of paid annual leave")
        assert (data["sources"][0]["title"], data["sources"][0]["heading_path"]) == ("Leave policy", "Annual leave")
        assert data["searched"] == "how many vacation days do I get? (synonyms: vacation → annual leave)"


def test_the_sample_wikis_sources_file_is_the_default_configuration():
    from bot.settings import SAMPLE_SOURCES, Settings

    assert SAMPLE_SOURCES.parent == SAMPLE_WIKI.resolve()
    settings = Settings(kb_sources=None, kb_wiki=None)
    [source] = settings.sources()
    assert (source.name, source.location, source.exclude) == ("sample", SAMPLE_WIKI.resolve(), ["*.jsonl"])
    assert "vacation" in {s.key for s in settings.synonyms().entries}
    assert not Settings(kb_sources=None, kb_wiki=SAMPLE_WIKI).synonyms()  # KB_WIKI: no synonyms


def test_a_synonym_only_restricted_pages_use_is_neither_searched_nor_shown_outside_their_scope(
        index, sample_synced, with_synonyms, tmp_path):
    """`bonus = ["zorbplan", "annual leave"]`, "zorbplan" on an HR page only: asked where HR's scope
    is not visible, "Searched for …" named it (saying what HR's pages hold) and the keyword leg
    searched it. Now only the visible phrase is."""
    import uuid

    from connectors.markdown import MarkdownFolder
    from indexing.ingest.sync import sync_documents

    scope = f"syn-hr-{uuid.uuid4().hex[:6]}"
    (tmp_path / "bonus.md").write_text("# Bonus\n\nThe zorbplan pays out in March for every team.\n")
    sync_documents(index, MarkdownFolder(tmp_path, source=scope, access=scope).documents(), scope)
    with_synonyms({"bonus": ["zorbplan", "annual leave"]})
    public = KnowledgeBase(index, []).ask("when is the bonus paid?", SAMPLE)
    assert public.searched == "when is the bonus paid? (synonyms: bonus → annual leave)"
    hr = KnowledgeBase(index, []).ask("when is the bonus paid?", Audience.limited(["sample", scope]))
    assert hr.searched == "when is the bonus paid? (synonyms: bonus → zorbplan, annual leave)"
    only_hidden = retrieve(index, "when is the bonus paid?", scopes=["sample"])
    with_synonyms({"bonus": ["zorbplan"]})
    assert not retrieve(index, "when is the bonus paid?", scopes=["sample"]).expansion
    assert [s.key for s in only_hidden.expansion.used] == ["bonus"]
