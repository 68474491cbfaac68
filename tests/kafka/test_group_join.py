"""The group join's progress lines (:mod:`streamarms.connectors.kafka_join`), on a fake clock: a pending
join is reported every ``every`` seconds, never once joined, and a long join says when it ended."""

from __future__ import annotations

import logging

from streamarms.connectors.kafka_join import GroupJoin


def test_a_pending_join_is_reported_every_period_and_its_end_after_a_long_wait(caplog):
    t = [100.0]
    j = GroupJoin("g1", ["r1", "r2"], session_timeout=45.0, every=10.0, clock=lambda: t[0])
    with caplog.at_level(logging.INFO, logger="streamarms.kafka"):
        for t[0] in (100.0, 105.0, 109.9):
            j.remind()
        assert not caplog.records  # under one period: quiet (a join normally takes seconds)
        for t[0] in (110.0, 115.0, 120.5, 121.0):
            j.remind()
        msgs = [r.getMessage() for r in caplog.records]
        assert [m.split(" for ")[0] for m in msgs] == ["waiting 10 s", "waiting 20 s"], msgs
        assert "consumer group 'g1' to assign partitions of r1, r2" in msgs[0]
        assert "session timeout (45 s here)" in msgs[0]
        t[0] = 125.0
        j.done()
        assert caplog.records[-1].getMessage() == "consumer group 'g1' assigned partitions after 25 s"
        assert j.joined and j.waited() == 0.0
        n = len(caplog.records)
        t[0] = 200.0
        j.remind()
        assert len(caplog.records) == n  # joined: nothing to say


def test_a_short_join_ends_without_a_line_and_a_rejoin_counts_from_its_start(caplog):
    t = [0.0]
    j = GroupJoin("g2", ["r"], session_timeout=10.0, clock=lambda: t[0])
    with caplog.at_level(logging.INFO, logger="streamarms.kafka"):
        t[0] = 3.0
        j.done()
        assert not caplog.records
        t[0] = 50.0
        j.begin()  # partitions revoked: a rejoin
        assert not j.joined and j.waited() == 0.0
        t[0] = 57.0
        assert j.waited() == 7.0  # from the rejoin's start, not from the first join
        j.restart_count()  # an outage explained the wait
        assert j.waited() == 0.0
        t[0] = 60.0
        j.remind()
        assert not caplog.records  # counted again from the outage's end (57 s), not from the rejoin (50 s)


def test_a_join_pending_after_the_broker_came_back_does_not_blame_a_killed_member(caplog):
    """A Kafka drill: after a broker restart the wait said a killed daemon stays in the group until its session
    timeout -- on a new broker with no such member. A join pending at the outage's end, or begun within a minute of
    it, is the group forming anew; a rejoin long after says the usual."""
    t = [0.0]
    j = GroupJoin("gC", ["r"], session_timeout=45.0, every=10.0, clock=lambda: t[0])
    with caplog.at_level(logging.INFO, logger="streamarms.kafka"):
        t[0] = 5.0
        j.outage_ended()
        t[0] = 12.0
        j.remind()
        assert "the broker came back after an outage, and the group forms anew" in caplog.records[-1].getMessage()
        assert "killed daemon" not in caplog.records[-1].getMessage()
        j.done()
        t[0] = 1000.0
        j.begin()
        t[0] = 1011.0
        j.remind()
        assert "a killed daemon" in caplog.records[-1].getMessage()
