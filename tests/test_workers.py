"""The Slack app's pools: work handed to them is counted, and an error in it is logged, not lost."""

import logging

from bot.slack.workers import CountingPool


def test_an_error_in_pooled_work_is_logged_with_its_traceback(caplog):
    pool = CountingPool(1, "docent-answer")

    def publish_home():
        raise RuntimeError("views.publish failed")

    with caplog.at_level(logging.ERROR, logger="bot.slack.workers"):
        future = pool.submit(publish_home)
        assert pool.wait_idle(5)
    pool.shutdown()
    assert isinstance(future.exception(), RuntimeError)
    [record] = [r for r in caplog.records if r.name == "bot.slack.workers"]
    assert "docent-answer" in record.getMessage() and "publish_home" in record.getMessage()
    assert record.exc_info and "views.publish failed" in str(record.exc_info[1])


def test_finished_work_is_no_longer_pending():
    pool = CountingPool(2, "docent-listener")
    assert [pool.submit(lambda n=n: n * 2).result() for n in range(3)] == [0, 2, 4]
    assert pool.wait_idle(5) and pool.pending == 0
    pool.shutdown()
