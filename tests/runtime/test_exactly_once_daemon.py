"""The daemon's exactly-once checkpoint (issue 10 item 8) without a broker: with a ``transaction`` the
checkpoint document joins it and the transaction's commit replaces the sink flush + offset commit."""

from __future__ import annotations

from collections import namedtuple

from streamarms.daemon import Daemon
from streamarms.runtime.scheduler import EventClock, Scheduler, SchedulerConfig, _ExamplePolicy

Rec = namedtuple("Rec", "topic partition offset timestamp key value")


class Source:
    def __init__(self, recs):
        self.recs, self.pos, self.exhausted, self.commits = recs, 0, False, 0

    def poll(self, timeout):
        b = self.recs[self.pos:self.pos + 50]
        self.pos += len(b)
        self.last = len(b)
        self.exhausted = not b
        return b

    def state(self):
        return {"t:0": [self.pos, None]}

    def rollback(self, n):  # the records after the n-th of the last batch are read again
        self.pos -= self.last - n

    def commit(self, state):
        self.commits += 1

    def close(self):
        pass


class Log:
    """Records the order of events of the sinks, the store and the transaction."""

    def __init__(self):
        self.events = []

    def send(self, alert):
        self.events.append(("alert", alert["alert_id"]))

    def flush(self):
        self.events.append(("flush",))

    def close(self):
        pass

    def save(self, doc):
        self.events.append(("save", doc["source"]["t:0"][0]))

    def commit(self, state):
        self.events.append(("commit", state["t:0"][0]))


def test_checkpoint_in_a_transaction_saves_then_commits_and_skips_flush_and_offset_commit():
    recs = [Rec("t", 0, i, 1000 * i, b"abcd"[i % 4:i % 4 + 1], b'{"reward": %d}' % (i % 4 == 3)) for i in range(400)]
    clock, log = EventClock(), Log()
    s = Scheduler(lambda arms, ep: _ExamplePolicy(arms), clock=clock, emit_alert=log.send,
                  config=SchedulerConfig(discovery_records=8, max_episodes=1))
    src = Source(recs)
    d = Daemon(s, src, clock=clock, alert_sink=log, checkpoint=log, transaction=log, handle_signals=False)
    assert d.run() == 0 and s.finished
    kinds = [e[0] for e in log.events]
    assert "flush" not in kinds and src.commits == 0  # the transaction's commit does both
    assert kinds.count("save") == kinds.count("commit") >= 1
    # every save is followed by the commit of the same positions; the alert precedes the first commit after it
    for i, e in enumerate(log.events):
        if e[0] == "save":
            assert log.events[i + 1] == ("commit", e[1])
    a = kinds.index("alert")
    assert "commit" in kinds[a:]
