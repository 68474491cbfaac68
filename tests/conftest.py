import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# The fast subset that CI also runs against the lowest allowed dependency versions (`pytest -m floor`,
# see .ci/run): one test per way streamarms uses each dependency. Listed here, in one place, rather
# than as decorators scattered over the files; a listed test that no longer exists is an error.
FLOOR_TESTS = {
    "tests/test_floor.py": None,  # every test in the file
    "tests/test_ops_detector.py": ["test_river_check_estimator",
                                   "test_quantile_filter_with_protection_off_keeps_detecting_episode_after_episode",
                                   "test_in_a_river_pipeline"],
    "tests/test_heavy_estimators.py": None,
    "tests/runtime/test_runtime_daemon.py": ["test_metrics_endpoint_serves_required_series",
                                     "test_run_embedded_default_finds_the_known_outliers"],
    "tests/cli/test_cli.py": ["test_simulate_json_contract"],
    "tests/kafka/test_runtime_kafka.py": ["test_wrr_alerts_exactly_the_two_outliers",
                                          "test_active_mode_with_a_responder",
                                          "test_checkpoint_in_a_compacted_topic"],
}


def pytest_collection_modifyitems(config, items):
    root = str(config.rootpath)
    seen: set[tuple[str, str]] = set()
    for item in items:
        rel = os.path.relpath(str(item.path), root).replace(os.sep, "/")
        if rel not in FLOOR_TESTS:
            continue
        names = FLOOR_TESTS[rel]
        base = item.name.split("[")[0]
        if names is None or base in names:
            item.add_marker(pytest.mark.floor)
            seen.add((rel, base))
    if "floor" in (config.getoption("-m") or ""):
        collected = {os.path.relpath(str(i.path), root).replace(os.sep, "/") for i in items}
        missing = [f"{f}::{n}" for f, ns in FLOOR_TESTS.items() if f in collected for n in (ns or [])
                   if (f, n) not in seen]
        if missing:
            raise pytest.UsageError(f"FLOOR_TESTS names tests that do not exist: {', '.join(missing)}")
