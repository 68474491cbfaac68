"""A flag the chosen policy or simulated arms would not read is refused, not ignored (a newcomer's drill:
``--policy wrr --threshold 0.5`` ran WRR's own k-sigma threshold and said nothing; ``simulate --estimator mom``
on Bernoulli arms ran the Bernoulli model; ``--env beta --bound bernoulli`` failed mid-run on a reward)."""

from __future__ import annotations

import json

import pytest

from streamarms.cli import main
from streamarms.detector import OutlierArmDetector
from streamarms.registry import OPTIONS, POLICIES


@pytest.mark.parametrize("flags, said", [
    (["--policy", "wrr", "--threshold", "0.5"],
     "--threshold does not apply to policy 'wrr' (it is read by lsa, apt, ucbe, uniform): drop it"),
    (["--policy", "cs", "--rho", "0.7"], "--rho does not apply to policy 'cs' (it is read by wrr, gold, gold-cs)"),
    (["--policy", "rr", "--alpha", "2"], "--alpha does not apply to policy 'rr' (it is read by lsa): drop it, or give "
                                         "--policy lsa"),
    (["--policy", "apt", "--threshold", "0.5", "--budget", "100", "--b", "2"], "--b does not apply to policy 'apt'"),
])
@pytest.mark.parametrize("command", ["run", "simulate"])
def test_an_option_the_policy_does_not_read_is_refused(tmp_path, capsys, command, flags, said):
    rewards = tmp_path / "r.jsonl"
    rewards.write_text("".join(json.dumps({"key": f"k{i % 5}", "reward": i % 2}) + "\n" for i in range(50)))
    args = ["run", "--rewards-file", str(rewards)] if command == "run" else ["simulate"]
    assert main([*args, *flags]) == 2
    assert f"streamarms {command}: error: {said}" in capsys.readouterr().err


def test_every_option_is_read_by_some_policy():
    for option in OPTIONS:
        readers = [name for name, spec in POLICIES.items() if option in spec.params]
        assert readers, option


@pytest.mark.parametrize("flags, said", [
    (["--estimator", "mom"], "--estimator: a setting of the heavy-tailed reward model, but policy 'wrr' on --env "
                             "bernoulli uses the bernoulli model"),
    (["--env", "gaussian", "--moment-p", "1.5", "--moment-bound", "2"],
     "--moment-p, --moment-bound: settings of the heavy-tailed reward model, but policy 'wrr' on --env gaussian uses "
     "the subgaussian model"),
    (["--policy", "lsa", "--threshold", "0.5", "--budget", "200", "--estimator", "ea"],
     "--estimator: a setting of the heavy-tailed reward model, but policy 'lsa' on --env bernoulli uses the bernoulli"),
    (["--df", "5"], "--df is the degrees of freedom of --env student-t, but the arms are bernoulli"),
    (["--env", "beta", "--bound", "bernoulli"], "--bound bernoulli is for 0/1 rewards, but --env beta draws rewards "
                                                "anywhere in [0, 1]: give --bound hoeffding"),
    (["--env", "gaussian", "--bound", "hoeffding"], "--bound hoeffding is for rewards in [0, 1], but --env gaussian "
                                                    "draws unbounded rewards: give no --bound"),
    (["--policy", "se", "--bound", "hoeffding"], "--bound does not apply to policy 'se': it always uses the "
                                                 "heavy-tailed model"),
    (["--policy", "lsa", "--threshold", "0.5", "--budget", "100", "--bound", "hoeffding"],
     "--bound does not apply to policy 'lsa': it takes its reward model from --env"),
])
def test_simulate_refuses_model_flags_its_arms_or_policy_would_not_read(capsys, flags, said):
    assert main(["simulate", *flags]) == 2
    assert f"streamarms simulate: error: {said}" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--env", "student-t", "--df", "5", "--estimator", "tea", "--max-pulls", "500"],
                                   ["--env", "beta", "--bound", "hoeffding", "--max-pulls", "500"],
                                   ["--policy", "se", "--estimator", "mom", "--max-pulls", "200"],
                                   ["--policy", "wrr", "--rho", "2", "--max-pulls", "500"],
                                   ["--policy", "apt", "--threshold", "0.5", "--budget", "200", "--epsilon", "0.1"]])
def test_the_flags_a_policy_reads_still_run(capsys, flags):
    assert main(["simulate", "--json", *flags]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 1


@pytest.mark.parametrize("params, said", [
    ({"threshold": 0.5}, "policy_params['threshold'] does not apply to policy 'wrr' (it is read by lsa, apt, ucbe, "
                         "uniform): drop it, or choose one of them with policy="),
    ({"ucbe_b": 1.0}, "policy_params['ucbe_b'] does not apply to policy 'wrr' (it is read by ucbe): drop it, or give "
                      "policy='ucbe'"),
])
def test_the_detector_names_the_policy_params_key(params, said):
    with pytest.raises(ValueError, match="policy 'wrr' with policy_params=") as e:
        OutlierArmDetector(policy="wrr", policy_params=params)
    assert said in str(e.value)


def test_student_t_arms_without_a_variance_ask_for_the_moment_bound_in_simulates_words(capsys):
    """It said "se and sr always use the heavy-tailed model, whatever --reward-model says" (a run flag) to a wrr run."""
    assert main(["simulate", "--env", "student-t", "--df", "2", "--max-pulls", "10"]) == 2
    err = capsys.readouterr().err
    assert "student-t arms with --df 2 have no finite variance" in err and "--reward-model" not in err
    assert main(["simulate", "--policy", "se", "--df", "2", "--moment-p", "1.5", "--moment-bound", "3",
                 "--max-pulls", "100", "--json"]) == 0


def test_the_student_t_note_is_for_simulated_arms_only():
    """The registry built with env student-t but no simulated means (a direct caller) said "student-t arms with
    --df 3 have no finite variance" -- false for df = 3; without the means it asks for --moment-bound as before."""
    from streamarms.registry import build_policy
    with pytest.raises(ValueError) as e:
        build_policy("se", ["a", "b", "c"], env="student-t")
    assert "no finite variance" not in str(e.value) and "need --moment-bound" in str(e.value)
