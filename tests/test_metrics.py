"""`GET /metrics`: scraped before and after a mention is answered and a sync runs, through the real
app over signed HTTP — the counts moved by exactly what happened. Scraped on the metrics port's
app (`bot.serve.metrics_app`, as `kb serve` runs it on KB_METRICS_PORT); where `/metrics` is
served and who may read it is tests/test_metrics_port.py's."""

from __future__ import annotations

import uuid

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.slack_api_server import FakeSlack
from tests.support.slack_harness import bot_settings, mention, new_channel, posts_in, running_bot

from bot.serve import METRICS_PATH, metrics_app, serving_in_thread
from connectors.markdown import MarkdownFolder
from indexing.ingest import indexed_sources
from indexing.ingest.sync import sync_documents


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    response = httpx.get(url + METRICS_PATH, timeout=10)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_a_question_and_a_sync(index, sample_synced, tmp_path):
    slack = FakeSlack().start()
    source = f"metrics-{uuid.uuid4().hex[:6]}"
    (tmp_path / "wiki").mkdir()
    (tmp_path / "wiki" / "metrics.md").write_text("# Metrics\n\nThe metrics page counts one sync.\n")
    try:
        with running_bot(bot_settings(slack), index) as bot, serving_in_thread(metrics_app(index)) as metrics_url:
            before = scrape(metrics_url)
            assert value(before, "docent_index_readable") == 1
            channel = new_channel()
            bot.event(mention("how many days of annual leave do I get?", channel))
            slack.wait_for(lambda: posts_in(slack, channel))
            bot.wait_idle()
            sync_documents(index, MarkdownFolder(tmp_path / "wiki", source=source, access=source).documents(), source)
            after = scrape(metrics_url)
        asked = {labels: n - before.get((name, labels), 0) for (name, labels), n in after.items()
                 if name == "docent_questions_total" and n != before.get((name, labels), 0)}
        assert asked == {(("outcome", "answered"), ("surface", "mention")): 1.0}
        assert value(after, "docent_answer_seconds_count", surface="mention") == \
            value(before, "docent_answer_seconds_count", surface="mention") + 1
        assert value(after, "docent_answer_stage_seconds_count", stage="embed") > \
            value(before, "docent_answer_stage_seconds_count", stage="embed")
        assert value(after, "docent_slack_ack_seconds_count") > value(before, "docent_slack_ack_seconds_count")
        assert value(after, "docent_sync_runs", source=source, result="ok") == 1
        assert value(after, "docent_chunks", source=source) == 1
        assert value(after, "docent_documents", status="SUCCESS") == value(before, "docent_documents", status="SUCCESS") + 1
    finally:
        slack.stop()
        indexed_sources.forget(index, source)


def test_a_scrape_while_the_database_is_away_says_so_instead_of_failing():
    from starlette.testclient import TestClient

    class Unreachable:
        def session(self):
            raise ConnectionError("the database is away")

        def chunk_count(self):
            raise ConnectionError("the database is away")

    with TestClient(metrics_app(Unreachable())) as client:
        response = client.get(METRICS_PATH)
    assert response.status_code == 200 and "docent_index_readable 0.0" in response.text
    assert "# TYPE docent_questions_total counter" in response.text  # this process's own counters still there
