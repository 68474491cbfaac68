"""The streaming runtime: records in, a policy driven over them, alerts out.

Read it in this order: :mod:`.records` (why a record is refused), :mod:`.codec` (record -> arm and
reward), :mod:`.clock` (stream time), :mod:`.config` (the knobs), :mod:`.scheduler` (episodes, the
passive and the active mode).
"""

from .clock import EventClock
from .codec import RewardCodec
from .config import ACTIVE, PASSIVE, SchedulerConfig
from .records import INVALID_REASONS, InvalidRecord
from .scheduler import DISCOVERING, FINISHED, IDLE, PHASES, RUNNING, Scheduler

__all__ = ["EventClock", "RewardCodec", "ACTIVE", "PASSIVE", "SchedulerConfig", "INVALID_REASONS",
           "InvalidRecord", "DISCOVERING", "RUNNING", "IDLE", "FINISHED", "PHASES", "Scheduler"]
