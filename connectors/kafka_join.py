"""The consumer group's join as a person watching the daemon sees it.

A join takes seconds normally, but 10-40 s after a daemon was killed (its member stays in the group until
the broker's session timeout expires, and the rebalance waits for it) or while a broker's coordinator
starts. Before this module the daemon said nothing in that time: a newcomer saw the start-up lines, then
silence, and could not tell a join from a hang. :class:`GroupJoin` keeps whether the group has assigned
partitions since the last (re)join began and since when it waits, and logs a line every ``every`` seconds
of waiting that says what the wait usually is. The source (:class:`~.kafka.KafkaRewardSource`) turns a
wait past its ``join_timeout`` into a :class:`~.kafka.GroupJoinTimeout`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("streamarms.kafka")


#: seconds after the broker came back within which a join that begins is still the group forming anew on it
AFTER_OUTAGE = 60.0


class GroupJoin:
    """Whether (and since when) a consumer group's join is pending, with a log line every ``every`` s of it.

    >>> t = [0.0]
    >>> j = GroupJoin("g1", ["rewards"], session_timeout=10.0, every=10.0, clock=lambda: t[0])
    >>> j.joined, j.waited()
    (False, 0.0)
    >>> t[0] = 12.0; j.remind()   # logs "waiting 12 s for consumer group 'g1' ..."
    >>> j.done(); j.joined, j.waited()
    (True, 0.0)
    """

    def __init__(self, group_id: str, topics: Sequence[str], *, session_timeout: float, every: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.group_id = group_id
        self.topics = list(topics)
        self.session_timeout = session_timeout
        self.every = every
        self.clock = clock
        #: the group has assigned partitions (possibly none: a standby) since the last (re)join began
        self.joined = False
        self.since = clock()
        self._next = self.since + every
        #: when the broker last came back after an outage: a join begun before or soon after it is the group
        #: forming anew on it (no killed member to blame)
        self.outage_ended_at: float | None = None

    def begin(self) -> None:
        """A (re)join starts: a new consumer subscribed, or partitions revoked."""
        self.joined = False
        self.since = self.clock()
        self._next = self.since + self.every

    def outage_ended(self) -> None:
        """The broker answers again after an outage: a join pending now or begun within :data:`AFTER_OUTAGE` s
        is the group forming anew on it."""
        self.outage_ended_at = self.clock()

    def done(self) -> None:
        """The group assigned partitions; a wait that was reported says how long it took."""
        if not self.joined and self.clock() - self.since >= self.every:
            log.info("consumer group %r assigned partitions after %.0f s", self.group_id, self.clock() - self.since)
        self.joined = True

    def waited(self) -> float:
        """Seconds the pending join has waited (0 once joined)."""
        return 0.0 if self.joined else self.clock() - self.since

    def restart_count(self) -> None:
        """Count the wait again from now (an outage explained it: the broker was not there to answer)."""
        self.since = self.clock()
        self._next = self.since + self.every

    def remind(self) -> None:
        """Log the wait every ``every`` seconds while the join is pending."""
        now = self.clock()
        if self.joined or now < self._next:
            return
        self._next = now + self.every
        why = ("the broker came back after an outage, and the group forms anew on it: a rebalance waits for every "
               "live member to join again" if self.outage_ended_at is not None and
               self.since <= self.outage_ended_at + AFTER_OUTAGE else
               f"a member that stopped without leaving (a killed daemon) stays in the group until its session timeout "
               f"({self.session_timeout:.0f} s here) ends, and a rebalance waits for every live member to join again")
        log.info("waiting %.0f s for consumer group %r to assign partitions of %s: %s",
                 now - self.since, self.group_id, ", ".join(self.topics), why)

    def finish(self, consumer: Any, grace: float) -> None:
        """Let a pending join finish before the consumer leaves, at most ``grace`` seconds (Tansu keeps a member
        that leaves mid-join as the group's leader: :mod:`.kafka`'s docstring, "Group joins"). The records
        polled meanwhile are dropped: the checkpoint is saved before."""
        if self.joined or grace <= 0:
            return
        log.info("finishing the group join before leaving group %s", self.group_id)
        deadline = self.clock() + grace
        try:
            while not self.joined and self.clock() < deadline:
                consumer.poll(timeout_ms=100, max_records=1)
        except Exception as e:  # closing goes on whatever happens
            log.debug("finishing the join failed: %s", e)
        if not self.joined:
            log.warning("leaving group %s with its join still pending (after %.0f s)", self.group_id, grace)
