"""A training run survives its faults: a killed process continues from its last checkpoint (``--resume``) exactly as
the run that was never killed (same updates, episodes, evaluations and final weights), and a killed Ray actor
costs the run the episodes that were running there (reported truncated), not the run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from cenic_gym.train import train
from cenic_gym.train.sb3_backend import latest_checkpoint

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

ENV = "CenicSuction-v0"
SMALL = ["eval_every=200", "checkpoint_every=200", "eval_episodes=1", "learning_starts=100", "batch_size=32",
         "env_kwargs.max_episode_steps=50", "sb3.policy_kwargs.net_arch=[32,32]"]


def _weights(path):
    from stable_baselines3 import SAC

    model = SAC.load(path, device="cpu")
    return model, model.policy.state_dict()


def test_a_killed_run_resumes_exactly(tmp_path):
    """SIGKILL a ``cenic-gym train`` process after its first checkpoint, ``--resume`` the run folder: the resumed
    run's evaluations, update and episode counts and final weights equal those of an uninterrupted run."""
    reference = train(ENV, "sac", steps=600, out=tmp_path / "reference", hyperparams=SMALL, progress=False)
    run = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "cenic_gym", "train", ENV, "--algo", "sac", "--steps", "100000",
                             "--out", str(run), "--no-progress", "--hyperparams", *SMALL],
                            env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while latest_checkpoint(run) is None:
            assert proc.poll() is None and time.time() < deadline, "the run ended or stalled before its checkpoints"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    killed_at = latest_checkpoint(run)
    assert killed_at is not None and int(killed_at.stem.split("_")[1]) < 600
    resumed = train(ENV, "sac", steps=600, out=run, hyperparams=SMALL, progress=False, resume=str(run))
    (ref, w_ref), (res, w_res) = _weights(reference), _weights(resumed)
    assert (res.num_timesteps, res._n_updates, res._episode_num) == (ref.num_timesteps, ref._n_updates,
                                                                      ref._episode_num) == (600, 500, 12)
    assert all(torch.equal(w_ref[k], w_res[k]) for k in w_ref)
    a, b = np.load(tmp_path / "reference" / "eval" / "evaluations.npz"), np.load(run / "eval" / "evaluations.npz")
    assert list(a["timesteps"]) == list(b["timesteps"]) == [200, 400, 600]
    for key in ("results", "ep_lengths", "successes", "updates"):
        assert np.array_equal(a[key], b[key]), key
    assert b["wall"][-1] > b["wall"][0] > 0.0


def test_resume_without_the_env_states_is_not_the_same_run(tmp_path):
    """The exactness above needs the checkpoint's env states: resumed with fresh episodes instead (what a run on Ray
    workers does), the final weights differ — so the test above can fail."""
    import pickle
    import shutil

    from cenic_gym.train.sb3_backend import run_state_path

    reference = train(ENV, "sac", steps=400, out=tmp_path / "reference", hyperparams=SMALL, progress=False)
    run = tmp_path / "fresh"
    shutil.copytree(tmp_path / "reference", run)
    ckpt = run / "checkpoints" / "model_200_steps.zip"
    state = pickle.loads(run_state_path(ckpt).read_bytes())
    state["envs"] = None
    run_state_path(ckpt).write_bytes(pickle.dumps(state))
    resumed = train(ENV, "sac", steps=400, out=run, hyperparams=SMALL, progress=False, resume=str(ckpt))
    (_, w_ref), (_, w_res) = _weights(reference), _weights(resumed)
    assert not all(torch.equal(w_ref[k], w_res[k]) for k in w_ref)


def test_a_killed_ray_actor_costs_episodes_not_the_run(ray_local, tmp_path):
    """Kill the Ray actor that steps the training envs mid-run: the run goes on to its last step; the episodes that
    were running there are reported truncated and counted (``actor_restarts`` in the evaluations)."""
    import ray
    from stable_baselines3.common.callbacks import BaseCallback

    class KillActor(BaseCallback):
        def _on_step(self):
            if self.model.num_timesteps == 150:
                ray.kill(self.model.env.unwrapped.venv.actors[0])
            return True

    path = train(ENV, "sac", steps=400, workers=1, num_envs=2, out=tmp_path, hyperparams=SMALL, progress=False,
                 callbacks=[KillActor()])
    ev = np.load(tmp_path / "eval" / "evaluations.npz")
    assert path.is_file() and list(ev["timesteps"]) == [200, 400]
    assert list(ev["actor_restarts"]) == [2, 2]  # both sub-envs of the dead actor: truncated once
