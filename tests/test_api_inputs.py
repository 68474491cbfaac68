"""The Python API's settings, as a drill of hostile inputs found them (session 48): numpy's numbers are numbers,
a string is no list of arms, a flag is True or False, and a feature's name names a feature."""
import numpy as np
import pytest

from streamarms import OutlierArmDetector
from streamarms.monitor import ContinuousMonitor
from streamarms.registry import build_policy
from streamarms.validation import check_k


def test_numpys_numbers_are_ks_and_a_bool_is_not():
    assert check_k(np.float32(2.0)) == 2.0 and check_k(np.int64(3)) == 3.0  # ("not a finite number" before)
    for bad in (True, np.True_, "2", float("nan")):
        with pytest.raises(ValueError, match="k must be a finite number"):
            check_k(bad)
    assert build_policy("cs", [f"a{i}" for i in range(8)], k=np.float64(2.5)).k == 2.5


def test_a_string_is_no_list_of_arms():
    with pytest.raises(ValueError, match="got the string 'abc': one arm is \\['abc'\\]"):
        build_policy("cs", "abc")  # (the arms were a, b and c)
    assert build_policy("cs", ("a", "b", "c")).arms == ["a", "b", "c"]


def test_the_monitors_flags_and_counts():
    m = ContinuousMonitor(key_ttl=np.int64(5), window=np.int64(10))
    assert (m.key_ttl, m.window) == (5, 10) and type(m.key_ttl) is int  # (refused before; JSON-safe as ints)
    for kw in ({"forget_silent": "no"}, {"forget_silent": 1}, {"window": True}, {"key_ttl": 2.5}, {"window": 0}):
        with pytest.raises(ValueError):
            ContinuousMonitor(**kw)  # ("no" turned forgetting on)


@pytest.mark.parametrize("name", [None, "", ["a"]])
def test_a_feature_name_that_names_no_feature_is_refused(name):
    with pytest.raises(ValueError, match="must be the name of a feature"):
        OutlierArmDetector(key=name)  # (None: every record ignored, in silence for 1,000 records)
    assert OutlierArmDetector(key=5).key == 5  # (river's features may be named by any hashable)
