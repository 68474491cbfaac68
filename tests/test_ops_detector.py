"""OutlierArmDetector: river's own estimator checks, the score scale, episodes, pickling."""

from __future__ import annotations

import copy
import itertools
import pickle
import random
import warnings
from decimal import Decimal

import numpy as np
import pytest
from river import checks, compose, datasets

from streamarms import OutlierArmDetector
from streamarms.policies.anytime import AnytimeKSigma
from streamarms.policies.ksigma import RoundRobin, WeightedRoundRobin

# -- river's check_estimator, offline ----------------------------------------------------------
# For anomaly detectors river's checks stream `datasets.CreditCard().take(1000)`, a 150 MB download.
# The tests run offline, so `_yield_datasets` is replaced by streams of the same shape: a stand-in of
# CreditCard (30 numeric features "Time", "V1".."V28", "Amount", no "key" -- the detector must cope
# with records that do not have its features) and a keyed stream in which the label says whether the
# record's key is an outlier (so `check_roc_auc` tests something real). Everything else is river's.

def _creditcard_like(n: int, seed: int = 0):
    rng = random.Random(seed)
    for i in range(n):
        fraud = rng.random() < 0.02
        x = {"Time": float(i), "Amount": rng.expovariate(0.02)}
        x.update({f"V{j}": rng.gauss(1.5 if fraud else 0.0, 1.0) for j in range(1, 29)})
        yield x, int(fraud)


def _keyed(n: int, seed: int = 1):
    rng = random.Random(seed)
    means = {f"k{i}": 0.1 for i in range(9)} | {"k9": 0.9}
    keys = sorted(means)
    for _ in range(n):
        k = rng.choice(keys)
        yield {"key": k, "reward": int(rng.random() < means[k]), "other": rng.random()}, int(means[k] > 0.5)


def _offline_datasets(model, scale: int = 1):
    yield list(_creditcard_like(1000 * scale))
    yield list(_keyed(1000 * scale))


@pytest.mark.slow  # (river.checks' full battery, ~20 s: the long tier (and the floor subset) runs it; the quick suite stays under 15 minutes)
def test_river_check_estimator(monkeypatch):
    monkeypatch.setattr(checks, "_yield_datasets", _offline_datasets)
    names = [c.__name__ for c in checks.yield_checks(OutlierArmDetector())]
    assert "check_roc_auc" in names and "check_pickling" in names  # the dataset checks do run
    checks.check_estimator(OutlierArmDetector())
    for params in OutlierArmDetector._unit_test_params():
        checks.check_estimator(OutlierArmDetector(**params))


@pytest.mark.skipif(not datasets.CreditCard().is_downloaded, reason="CreditCard not downloaded (150 MB)")
def test_river_check_estimator_with_creditcard():  # pragma: no cover - needs the download
    checks.check_estimator(OutlierArmDetector())


# -- behaviour -------------------------------------------------------------------------------------
def _stream(means: dict[str, float], n: int, seed: int):
    rng = random.Random(seed)
    keys = sorted(means)
    for _ in range(n):
        k = rng.choice(keys)
        yield {"key": k, "reward": int(rng.random() < means[k])}


MEANS = {f"a{i}": 0.1 for i in range(9)} | {"a9": 0.85}


def test_score_scale_moves_from_unknown_to_confident():
    det = OutlierArmDetector(discovery=50)
    assert det.score_one({"key": "a9"}) == 0.5           # nothing known
    assert det.score_one({"nokey": 1}) == 0.5
    seen = {"a9": [], "a0": []}
    for x in _stream(MEANS, 8000, seed=3):
        det.learn_one(x)
        for k in seen:
            seen[k].append(det.score_one({"key": k}))
    s9, s0 = seen["a9"], seen["a0"]
    assert s9[-1] == 1.0 and s0[-1] == 0.0
    # undecided scores are strictly inside (0, 1); the outlier's graded score rises above 1/2 first
    undecided9 = [s for s in s9 if s not in (0.0, 0.5, 1.0)]
    assert undecided9 and all(0.0 < s < 1.0 for s in undecided9)
    assert max(undecided9) > 0.5
    assert det.outliers == ["a9"]
    assert det.n_samples < det.n_records


def test_wrong_answers_bounded():
    """delta = 0.1: over 30 seeded runs the final outlier set is wrong at most the 1e-3 upper binomial
    quantile of Bin(30, 0.1) = 10 times (and here, in practice, never)."""
    wrong = 0
    for seed in range(30):
        det = OutlierArmDetector(discovery=50)
        for x in _stream(MEANS, 6000, seed=seed):
            det.learn_one(x)
        wrong += det.outliers != ["a9"]
    assert wrong <= 10


def test_records_without_features_are_ignored_and_bad_rewards_raise():
    det = OutlierArmDetector(discovery=5)
    det.learn_one({"key": "a"})                 # no reward
    det.learn_one({"reward": 1})                # no key
    assert det.n_ignored == 2 and det.n_samples == 0
    before = pickle.dumps(det)
    with pytest.raises(ValueError, match=r"'a'.*0\.5 \(the default; other rewards: policy_params=\{'reward_model'"):
        det.learn_one({"key": "a", "reward": 0.5})   # Bernoulli model (the default) refuses 0.5 and says what else
    with pytest.raises(ValueError, match="not a number"):
        det.learn_one({"key": "a", "reward": "1"})
    with pytest.raises(ValueError, match="not finite"):
        det.learn_one({"key": "a", "reward": float("nan")})
    assert pickle.dumps(det) == before           # unchanged
    det.learn_one({"key": 3, "reward": 1})       # an integer key is its digits (as a JSONL line's)
    det.learn_one({"key": b"b", "reward": 0})    # UTF-8 bytes are text (as a Kafka key)
    assert det._scheduler.known_arms == ["3", "b"]


@pytest.mark.parametrize("reward", [10 ** 400, 1 + 0j, np.array(1.0), "1"],
                         ids=["10**400", "complex", "array", "text"])
def test_rewards_the_daemon_refuses_raise(reward):
    """The daemon's rule: a reward is a number (or a boolean, below), and finite (an integer beyond the floats
    is not: ValueError, not OverflowError); the detector is unchanged."""
    det = OutlierArmDetector(discovery=5)
    det.learn_one({"key": "a", "reward": 1})
    before = pickle.dumps(det)
    with pytest.raises(ValueError, match="reward of key 'a' is"):
        det.learn_one({"key": "a", "reward": reward})
    assert pickle.dumps(det) == before


@pytest.mark.parametrize("key", [True, np.True_, 1.5, float("nan"), {"a": 1}, ["a"], "", b"\xff", "\ud800",
                                 "x" * 300])
def test_keys_the_daemon_refuses_raise(key):
    """The daemon's rule: a key is a string (or UTF-8 bytes) or an integer, not empty, at most 256 bytes; no
    str() of a bool or a dict as an arm name. learn_one raises, the detector unchanged; score_one is 0.5."""
    det = OutlierArmDetector(discovery=5)
    det.learn_one({"key": "a", "reward": 1})
    before = pickle.dumps(det)
    with pytest.raises(ValueError, match="key"):
        det.learn_one({"key": key, "reward": 1})
    assert pickle.dumps(det) == before
    assert det.score_one({"key": key}) == 0.5


def test_bounded_rewards_with_a_policy_class():
    det = OutlierArmDetector(policy=RoundRobin, policy_params={"k": 1.5, "model": "bounded"}, discovery=50)
    rng = random.Random(5)
    for _ in range(40000):
        k = rng.choice("abcdefgh")
        det.learn_one({"key": k, "reward": min(1.0, max(0.0, rng.gauss(0.9 if k == "h" else 0.2, 0.1)))})
    assert det.outliers == ["h"]
    with pytest.raises(ValueError, match="outside"):
        det.learn_one({"key": "a", "reward": 2.0})


def test_new_keys_join_the_next_episode_and_verdicts_carry_over():
    det = OutlierArmDetector(discovery=50)
    for x in _stream(MEANS, 6000, seed=11):
        det.learn_one(x)
    assert det.episodes >= 1 and "a9" in det.outliers
    assert det.score_one({"key": "new"}) == 0.5
    for x in _stream(MEANS | {"new": 0.1}, 20000, seed=12):
        det.learn_one(x)
    assert det.episodes >= 2 and det._final.keys() >= {"new"}
    assert det.score_one({"key": "new"}) == 0.0 and det.outliers == ["a9"]


def test_episode_timeout_keeps_graded_scores():
    # two arms exactly at the same mean and one far: keys near the threshold may stay undecided
    det = OutlierArmDetector(discovery=20, episode_timeout=300, policy_params={"k": 1.0})
    for x in _stream({"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.55}, 2000, seed=2):
        det.learn_one(x)
    assert det.episodes >= 5
    s = det.score_one({"key": "d"})
    assert 0.0 <= s <= 1.0


def test_seed_varies_per_episode():
    calls = []

    def factory(arms, seed=None, **kw):
        calls.append(seed)
        return WeightedRoundRobin(arms, **kw)

    det = OutlierArmDetector(policy=factory, policy_params={"seed": 10, "k": 1.5}, discovery=20,
                             episode_timeout=200)
    for x in _stream(MEANS, 1500, seed=1):
        det.learn_one(x)
    assert calls[:4] == [10, 10, 11, 12]  # (the first: the check of its params at construction, on stand-in keys)


def test_pickle_and_clone_resume_identically():
    det = OutlierArmDetector(discovery=50)
    xs = list(_stream(MEANS, 4000, seed=21))
    for x in xs[:1500]:
        det.learn_one(x)
    twin = pickle.loads(pickle.dumps(det))
    deep = copy.deepcopy(det)
    for x in xs[1500:]:
        a = det.score_one(x)
        assert twin.score_one(x) == a == deep.score_one(x)
        det.learn_one(x)
        twin.learn_one(x)
        deep.learn_one(x)
    assert twin.outliers == det.outliers and twin.n_samples == det.n_samples
    fresh = det.clone()
    assert fresh.n_records == 0 and repr(fresh) == repr(det)


def test_in_a_river_pipeline():
    pipe = compose.FuncTransformer(lambda x: {"key": x["host"], "reward": int(x["latency_ms"] > 500)}) \
        | OutlierArmDetector(discovery=50)
    rng = random.Random(4)
    slow = {f"h{i}": (0.05 if i else 0.8) for i in range(10)}
    for _ in range(10000):
        h = rng.choice(sorted(slow))
        x = {"host": h, "latency_ms": 800 if rng.random() < slow[h] else 100}
        pipe.learn_one(x)
    assert pipe.score_one({"host": "h0", "latency_ms": 100}) == 1.0
    assert pipe.score_one({"host": "h3", "latency_ms": 900}) == 0.0


def test_bad_parameters():
    with pytest.raises(ValueError, match="unknown policy"):
        OutlierArmDetector(policy="nope")
    with pytest.raises(ValueError, match="window must be >= 1"):
        OutlierArmDetector(window=0)
    with pytest.raises(ValueError, match="policy_params must be a dict"):
        OutlierArmDetector(policy_params=[1])  # type: ignore[arg-type]


@pytest.mark.parametrize("kw,said", [({"policy_params": {"delta": 2}}, "delta must be in"),
                                     ({"policy_params": {"k": -1}}, "k must be"),
                                     ({"policy": "lsa"}, r"needs policy_params\['threshold'\]"),
                                     ({"policy": "se"}, r"policy_params\['moment_bound'\]")])
def test_bad_policy_params_fail_at_construction_not_at_every_episode(kw, said):
    """They used to construct, then log "cannot start episode ... needs --threshold; next attempt in 1000 s"
    at every episode start while every score stayed 0.5."""
    with pytest.raises(ValueError, match=said):
        OutlierArmDetector(**kw)
    OutlierArmDetector(policy="lsa", policy_params={"threshold": 0.5})  # what the error asks for is enough


@pytest.mark.parametrize("kw,said", [
    ({"policy": AnytimeKSigma, "policy_params": {"k": -1}}, r"policy 'AnytimeKSigma' .*k must be"),
    ({"policy": AnytimeKSigma, "policy_params": {"kk": 3}}, r"policy 'AnytimeKSigma' .*'kk'"),
    ({"policy": "cs", "policy_params": {"reward_model": "subgaussian"}},
     r"policy_params\['model_params'\]=\{'sigma': S\}"),
    ({"policy": "cs", "policy_params": {"reward_model": "heavy_tailed"}},
     r"policy_params\['moment_bound'\] B .*policy_params\['model_params'\]=\{'B': \.\.\.\}\)$"),
    ({"policy": "cs", "policy_params": {"reward_model": "subgaussian", "sigma": 1}},
     r"unknown setting 'sigma' \(policy_params takes .* model_params"),
    ({"discovery": -5}, r"^discovery must be >= 1"),
    ({"episode_timeout": 0}, r"episode_timeout must be > 0 records"),
    ({"want_timeout": -1}, r"want_timeout must be > 0 records"),
    ({"key": "x", "reward": "x"}, "key and reward name the same feature 'x'"),
    ({"reward": ["a"]}, r"reward must be the name of a feature \(a string\), got \['a'\]"),
])
def test_a_policy_class_and_the_schedulers_settings_are_checked_in_the_detectors_names(kw, said):
    """A policy class with bad params used to construct, then log "cannot start episode ... next attempt in 1000 s"
    60 times over 60k records while every score stayed 0.5 (an unknown keyword: a TypeError at every learn_one);
    the scheduler's settings were named as the scheduler names them (``discovery_records``, "seconds")."""
    with pytest.raises(ValueError, match=said):
        OutlierArmDetector(**kw)


def test_a_misspelt_feature_is_warned_of_once_not_ignored_in_silence():
    det = OutlierArmDetector(key="host", reward="slow")
    with pytest.warns(RuntimeWarning, match=r"none of the first 1000 records had a value for key='host' .*"
                                            r"\['Host', 'slow'\].*misspelt") as caught:
        for i in range(3000):
            det.learn_one({"Host": f"h{i % 5}", "slow": i % 2})
    assert len(caught) == 1 and det.n_ignored == 3000
    ok = OutlierArmDetector(key="host", reward="slow")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok.learn_one({"host": "h1", "slow": 1})
        for _ in range(2000):  # one record with both features: a stream that has them, some records without
            ok.learn_one({"host": "h1"})


def test_islice_smoke():
    # learn on a long stream in constant memory: history is capped, tallies are per key
    det = OutlierArmDetector(discovery=20, episode_timeout=500)
    for x in itertools.islice(_stream(MEANS, 10**9, seed=8), 20000):
        det.learn_one(x)
    assert len(det._scheduler.history) <= 1


def test_readme_example():
    """The README's river-pipeline example, verbatim apart from the prints."""
    rng = random.Random(42)
    slow = {f"host-{i:02d}": 0.05 for i in range(30)} | {"host-07": 0.6}   # host-07 is often slow
    hosts = sorted(slow)

    def requests(n):
        for _ in range(n):
            h = rng.choice(hosts)
            mean_ms = 900 if rng.random() < slow[h] else 80
            yield {"host": h, "latency_ms": rng.expovariate(1 / mean_ms)}

    model = compose.Pipeline(
        compose.FuncTransformer(lambda x: {"key": x["host"], "reward": int(x["latency_ms"] > 500)}),
        OutlierArmDetector(policy="wrr", policy_params={"k": 2.0, "delta": 0.05}),
    )
    for x in requests(100_000):
        model.score_one(x)
        model.learn_one(x)
    detector = model[-1]
    assert detector.outliers == ["host-07"]
    assert model.score_one({"host": "host-07", "latency_ms": 10}) == 1.0
    assert model.score_one({"host": "host-03", "latency_ms": 10}) == 0.0
    assert detector.episodes >= 1 and detector.n_samples < detector.n_records


# -- seed and river's anomaly filters (issue 12) ---------------------------------------------------
def test_seed_parameter_seeds_each_episode_and_makes_runs_repeatable():
    calls = []

    def factory(arms, seed=None, **kw):
        calls.append(seed)
        return WeightedRoundRobin(arms, **kw)

    det = OutlierArmDetector(policy=factory, policy_params={"k": 1.5}, seed=10, discovery=20,
                             episode_timeout=200)
    for x in _stream(MEANS, 1500, seed=1):
        det.learn_one(x)
    assert calls[:4] == [10, 10, 11, 12]  # (the first: the check of its params at construction, on stand-in keys)
    # a policy with random draws (ADE's threshold pairs): same seed, same samples; the seed matters
    xs = list(_stream(MEANS, 6000, seed=2))

    def run(seed):
        d = OutlierArmDetector(policy="ade", policy_params={"k": 1.5}, seed=seed, discovery=50)
        for x in xs:
            d.learn_one(x)
        return d.n_samples, d.outliers, [d.score_one(x) for x in xs[:50]]

    assert run(5) == run(5)
    assert len({run(s)[0] for s in (5, 6, 7)}) > 1
    # a policy class without a seed parameter is built without one
    det = OutlierArmDetector(policy=RoundRobin, seed=3, discovery=20)
    for x in _stream(MEANS, 500, seed=1):
        det.learn_one(x)
    assert det._scheduler.policy is not None


def test_seed_parameter_is_checked():
    with pytest.raises(ValueError, match="seed must be an integer"):
        OutlierArmDetector(seed="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        OutlierArmDetector(seed=1, policy_params={"seed": 2})


def _hosts(n: int, seed: int):
    rng = random.Random(seed)
    slow = {f"h{i:02d}": 0.1 for i in range(30)} | {"h30": 0.9}
    hosts = sorted(slow)
    for _ in range(n):
        h = rng.choice(hosts)
        yield {"host": h, "slow": int(rng.random() < slow[h])}


def test_quantile_filter_with_protection_off_keeps_detecting_episode_after_episode():
    from river import anomaly

    det = OutlierArmDetector(key="host", reward="slow")
    filt = anomaly.QuantileFilter(det, q=0.95, protect_anomaly_detector=False)
    flagged: dict[str, int] = {}
    total: dict[str, int] = {}
    for x in _hosts(40_000, seed=3):
        total[x["host"]] = total.get(x["host"], 0) + 1
        if filt.classify(filt.score_one(x)):
            flagged[x["host"]] = flagged.get(x["host"], 0) + 1
        filt.learn_one(x)
    assert det.n_records == 40_000            # every record reached the detector
    assert det.episodes >= 3                  # and episodes keep ending
    assert det.outliers == ["h30"]
    # the filter classifies (nearly) all of the outlier key's records as anomalous, few of the others'
    share = {h: flagged.get(h, 0) / n for h, n in total.items()}
    assert share.pop("h30") > 0.9
    assert max(share.values()) < 0.1


def test_quantile_filter_in_a_pipeline_keeps_the_outlier_key_from_the_model_behind_it():
    from river import anomaly, compose
    det = OutlierArmDetector(key="host", reward="slow")
    learnt: dict[str, int] = {}

    def remember(x):
        learnt[x["host"]] = learnt.get(x["host"], 0) + 1
        return x

    class Remember(compose.FuncTransformer):
        def learn_one(self, x):
            remember(x)

    pipe = anomaly.QuantileFilter(det, q=0.95, protect_anomaly_detector=False) | Remember(lambda x: x)
    for x in _hosts(40_000, seed=4):
        pipe.learn_one(x)
    # after the first episode the outlier key's records are filtered out before the model behind
    assert det.outliers == ["h30"]
    share = {h: learnt.get(h, 0) / 40_000 for h in ("h30", "h00")}
    assert share["h30"] < 0.5 * share["h00"]


def test_protected_filters_starve_the_detector_documented():
    """Why the docstring says protect_anomaly_detector=False: with protection on the detector
    does not see the records it needs (river's behaviour, pinned here so a river change shows)."""
    from river import anomaly

    det = OutlierArmDetector(key="host", reward="slow")
    filt = anomaly.QuantileFilter(det, q=0.95)
    for x in _hosts(5000, seed=5):
        filt.score_one(x)
        filt.learn_one(x)
    assert det.n_records < 50
    det = OutlierArmDetector(key="host", reward="slow")
    filt = anomaly.ThresholdFilter(det, threshold=0.9, protect_anomaly_detector=False)
    for x in _hosts(2000, seed=5):
        filt.learn_one(x)
    assert det.n_records == 0   # river <= 0.26.1: ThresholdFilter learns only with protection on


def test_threshold_filter_classifies_while_the_detector_learns_every_record():
    from river import anomaly

    det = OutlierArmDetector(key="host", reward="slow")
    filt = anomaly.ThresholdFilter(det, threshold=1.0)
    flagged = set()
    for x in _hosts(40_000, seed=6):
        if filt.classify(filt.score_one(x)):
            flagged.add(x["host"])
        det.learn_one(x)
    assert det.episodes >= 3 and flagged == {"h30"}


def test_keys_beyond_max_arms_are_ignored_with_a_warning_once():
    """A user's 12k-key stream had its outliers among the last keys: ignored without a word (only
    ``n_refused`` told). Now a RuntimeWarning names the first key beyond ``max_arms``, once."""
    import warnings

    from streamarms.detector import OutlierArmDetector
    det = OutlierArmDetector(key="k", reward="r", max_arms=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(30):
            det.learn_one({"k": f"a{i % 12}", "r": i % 2})
    assert det.n_refused == 15  # a5..a11 at i = 5..11 and 17..23, a5 at 29
    assert [str(w.message).split(":")[0] for w in caught if w.category is RuntimeWarning] == ["OutlierArmDetector"]
    assert "'a5' is beyond max_arms=5" in str(caught[0].message)


@pytest.mark.parametrize("x", [[1, 2], "host=a", None, 3])
def test_learn_one_and_score_one_say_they_take_a_dict(x):
    from streamarms.detector import OutlierArmDetector
    det = OutlierArmDetector(key="k", reward="r")
    with pytest.raises(TypeError, match="takes a dict of features"):
        det.learn_one(x)
    with pytest.raises(TypeError, match="takes a dict of features"):
        det.score_one(x)
    assert det.n_records == 0


def _records_to_decide(feed):
    rng = random.Random(1)
    means = [0.1 + 0.1 * rng.random() for _ in range(30)]
    means[3], means[9] = 0.5, 0.55
    det = OutlierArmDetector(key="k", reward="r", policy="cs", passive_feed=feed)
    for i in range(300_000):
        a = rng.randrange(30)
        det.learn_one({"k": f"a{a}", "r": int(rng.random() < means[a])})
        if det._final:
            return i + 1, sorted(a for a, v in det._final.items() if v == 1.0)
    return None, []


def test_cs_in_the_detector_takes_every_reward_of_its_keys_by_default():
    """As ``streamarms run``: the policy's own feed (cs: every reward as it arrives), not its plan only --
    the detector needed ~4x the records of ``run`` on the same stream."""
    n_all, found_all = _records_to_decide(None)
    n_planned, found_planned = _records_to_decide("planned")
    assert found_all == found_planned == ["a3", "a9"]
    assert n_all is not None and n_planned is not None and 2 * n_all < n_planned


def test_passive_feed_is_checked():
    with pytest.raises(ValueError, match="passive_feed must be"):
        OutlierArmDetector(passive_feed="every")
    with pytest.raises(ValueError, match="any sampling order"):
        OutlierArmDetector(policy="lsa", passive_feed="all")


def test_readme_policy_loop(capsys):
    """The README's "In your own loop" block, run verbatim: it prints what its comment says."""
    import pathlib
    import re
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## In your own loop (Python)", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("outlier host-7 after ") and out[-1] == "['host-7'] 3865"


def test_clip_takes_rewards_beyond_the_bounded_range_as_its_ends_and_is_refused_without_one():
    """``clip=True`` (``streamarms run --clip``'s rule): latencies beyond the range are its end, counted; the
    slow host is found although a third of its requests time out far beyond the range. Without clip the same
    value raises, naming clip, with the detector unchanged; clip without the bounded model is refused."""
    bounded = {"reward_model": "bounded", "reward_range": (0, 1000)}
    rng = random.Random(4)
    det = OutlierArmDetector(key="host", reward="ms", policy="cs", policy_params=bounded, clip=True, seed=1,
                             discovery=100)
    hosts = [f"h{i}" for i in range(10)]
    for _ in range(20_000):
        h = rng.choice(hosts)
        slow = h == "h9"
        ms = 30_000 if slow and rng.random() < 0.3 else rng.uniform(400, 900) if slow else rng.uniform(100, 300)
        det.learn_one({"host": h, "ms": ms})
    assert det.outliers == ["h9"] and det.n_clipped > 300
    again = pickle.loads(pickle.dumps(det))
    assert again.n_clipped == det.n_clipped and again.outliers == ["h9"]

    plain = OutlierArmDetector(key="host", reward="ms", policy="cs", policy_params=bounded)
    plain.learn_one({"host": "h1", "ms": 200})
    before = pickle.dumps(plain)
    with pytest.raises(ValueError, match="clip=True"):
        plain.learn_one({"host": "h1", "ms": 31_000})
    assert pickle.dumps(plain) == before and plain.n_clipped == 0
    with pytest.raises(ValueError, match="bounded reward model"):
        OutlierArmDetector(policy="cs", clip=True)
    with pytest.raises(ValueError, match="True or False"):
        OutlierArmDetector(policy="cs", policy_params=bounded, clip="yes")


def test_boolean_rewards_are_flags_as_in_the_daemon():
    """True / numpy.True_ (river's binary targets) are the reward 1 and False 0 under the default Bernoulli
    model: the same detector as with 1 and 0; a model not of rates refuses them, unchanged."""
    flags, ints = OutlierArmDetector(discovery=5), OutlierArmDetector(discovery=5)
    for i in range(200):
        key, hit = f"k{i % 5}", (i % 5 == 3) or i % 7 == 0
        flags.learn_one({"key": key, "reward": np.bool_(hit) if i % 2 else hit})
        ints.learn_one({"key": key, "reward": int(hit)})
    assert pickle.dumps(flags) == pickle.dumps(ints)
    det = OutlierArmDetector(discovery=5, policy_params={"reward_model": "bounded", "reward_range": (2, 5)})
    det.learn_one({"key": "a", "reward": 3})
    before = pickle.dumps(det)
    with pytest.raises(ValueError, match=r"reward of key 'a' is a boolean \(True\): .* model of rates .*not the "
                                         r"bounded model"):
        det.learn_one({"key": "a", "reward": True})
    assert pickle.dumps(det) == before


@pytest.mark.parametrize("two_sided", [False, True])
def test_cs_scores_undecided_keys_by_their_margin_not_a_flat_quarter(two_sided):
    """cs exposes no significance: its undecided keys scored a flat 0.25 / 0.75 (a data-scientist drill: 50 regions,
    two distinct scores). Their margin comes from the confidence sequences now: graded, strictly inside (0, 1), above
    one half exactly for the keys above the threshold, and a classified key's verdict still reaches 0 or 1."""
    rng = random.Random(1)
    det = OutlierArmDetector(policy="cs", discovery=200, policy_params={"two_sided": two_sided})
    rates = [0.05 + 0.002 * i for i in range(49)] + [0.2]
    for _ in range(20_000):
        k = rng.randrange(50)
        det.learn_one({"key": f"r{k}", "reward": int(rng.random() < rates[k])})
    pol = det._scheduler.policy
    d = pol.decision()
    undecided = {a: det.score_one({"key": a}) for a in d.undecided}
    assert len(undecided) >= 20 and len(set(undecided.values())) >= 20
    assert all(0.0 < v < 1.0 for v in undecided.values())
    for a, v in undecided.items():
        ev = pol.arm_evidence(a)
        lower = d.extra.get("lower_threshold")
        beyond = ev["estimate"] > d.threshold or (lower is not None and ev["estimate"] < lower)
        assert (v > 0.5) == beyond, (a, v, ev, d.threshold, lower)
    assert all(det.score_one({"key": a}) == 0.0 for a in d.normals)


def test_a_reward_read_as_text_names_the_converter_that_reads_it():
    """river.stream.iter_csv without converters gives every field as a string: "is not a number: '0'" said nothing
    of why a 0 is not a number."""
    det = OutlierArmDetector(key="region", reward="clicked")
    with pytest.raises(ValueError, match=r"is not a number: '0' \(river.stream.iter_csv reads every field as text: "
                                         r"converters=\{'clicked': float\} reads it as a number\)"):
        det.learn_one({"region": "eu", "clicked": "0"})
    with pytest.raises(ValueError, match=r"is not a number: 'yes'$"):
        det.learn_one({"region": "eu", "clicked": "yes"})


def test_decimal_rewards_are_numbers_as_fractions_are():
    """A database's NUMERIC column arrives as Decimal (river's ``stream.iter_sql``): it was refused as "not a
    number" while a Fraction was read. The same detector as with floats; a Decimal NaN (quiet or signalling) or
    one beyond the floats is refused as not finite, unchanged."""
    decimals, floats = OutlierArmDetector(discovery=5), OutlierArmDetector(discovery=5)
    for i in range(200):
        hit = (i % 5 == 3) or i % 7 == 0
        decimals.learn_one({"key": f"k{i % 5}", "reward": Decimal(int(hit))})
        floats.learn_one({"key": f"k{i % 5}", "reward": float(hit)})
    assert pickle.dumps(decimals) == pickle.dumps(floats)
    before = pickle.dumps(decimals)
    for bad in (Decimal("NaN"), Decimal("sNaN"), Decimal("1e999999")):
        with pytest.raises(ValueError, match="reward of key 'k1' is not finite"):
            decimals.learn_one({"key": "k1", "reward": bad})
    assert pickle.dumps(decimals) == before


def test_too_few_keys_for_k_are_warned_of_once():
    det = OutlierArmDetector(policy="cs", discovery=50)
    rng = random.Random(4)
    with pytest.warns(RuntimeWarning, match=r"with 5 keys no key can be an outlier at k = 2: .*Samuelson") as caught:
        for i in range(3000):
            det.learn_one({"key": f"k{i % 5}", "reward": int(rng.random() < 0.5)})
    assert len([w for w in caught if "Samuelson" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = OutlierArmDetector(policy="cs", discovery=50)
        for i in range(3000):
            ok.learn_one({"key": f"k{i % 6}", "reward": int(rng.random() < 0.5)})
