"""streamarms: find the outlier keys of an event stream while reading as few of their events as possible.

Each stream key is an arm of a multi-armed bandit; its events are rewards. Pure-exploration policies
from the research literature decide which keys to sample and stop, or alert, as soon as they can say
with probability at least ``1 - delta`` which keys are outliers.
"""

from .detector import OutlierArmDetector
from .models import BernoulliModel, BoundedModel, RewardModel, make_model
from .policies.base import Decision, Event, Policy, Request

__version__ = "0.1.0"

__all__ = ["BernoulliModel", "BoundedModel", "RewardModel", "make_model",
           "Decision", "Event", "Policy", "Request", "OutlierArmDetector", "__version__"]
