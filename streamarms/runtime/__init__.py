"""The streaming runtime: records in, a policy driven over them, alerts out.

Read it in this order: :mod:`.records` (why a record is refused), :mod:`.codec` (record -> arm and
reward), :mod:`.clock` (stream time), :mod:`.config` (the knobs), then the parts of the scheduler, each
owning its state and its snapshot -- :mod:`.stats` (counters), :mod:`.keys` (known keys),
:mod:`.episodes` (the phase machine), :mod:`.requests` (active mode's requests in flight),
:mod:`.plan` (following a policy's plan over a stream) -- and :mod:`.scheduler`, the facade that
wires them.
"""

from .clock import EventClock
from .codec import RewardCodec
from .config import ACTIVE, PASSIVE, SchedulerConfig
from .episodes import DISCOVERING, FINISHED, IDLE, PHASES, RUNNING
from .records import INVALID_REASONS, InvalidRecord
from .scheduler import Scheduler
from .stats import SchedulerStats, StatsView

__all__ = ["EventClock", "RewardCodec", "ACTIVE", "PASSIVE", "SchedulerConfig", "INVALID_REASONS",
           "InvalidRecord", "SchedulerStats", "StatsView", "DISCOVERING", "RUNNING", "IDLE", "FINISHED", "PHASES", "Scheduler"]
