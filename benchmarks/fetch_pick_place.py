"""FetchPickAndPlace side by side: the Franka pick-and-place recipe (DAgger from a feedback teacher, the same code
and hyperparameters: ``CONFIGS["CenicFranka-v0"]["dagger"]``) on Gymnasium-Robotics' FetchPickAndPlace-v4 (MuJoCo).

gymnasium-robotics 1.4.2 does not build its Fetch models under mujoco 4, so this runs in a separate venv with
mujoco 3.3.7 and cenic-gym's core (the DAgger loop is ``cenic_gym.train.dagger``)::

    python -m venv /work/fetchvenv
    /work/fetchvenv/bin/pip install torch==2.13.0
    /work/fetchvenv/bin/pip install -e . stable-baselines3==2.9.2 gymnasium==1.2.2 gymnasium-robotics==1.4.2 \\
        mujoco==3.3.7 tqdm tensorboard
    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 /work/fetchvenv/bin/python benchmarks/fetch_pick_place.py --seeds 0 1 2

The teacher (:class:`FetchTeacher`) is the same kind of feedback policy as ``CartesianExpert``: from the simulator's
state it moves the gripper over the cube, down, closes, carries the cube to the goal (in the air for half of the
episodes) and holds it there. Observations are the env's dict flattened (``FlattenObservation``: achieved goal,
desired goal, observation). Each seed trains for the same env-step budget as the Franka runs
(``learning_franka.py``'s ``--steps``), is evaluated every ``eval_every`` env steps, then its final network plays 50
held-out episodes (seeds 10 000 …). The runs are written to ``benchmarks/learning_franka.json`` under the key
``"FetchPickAndPlace-v4"`` (with the date, commit and machine of the run); ``python benchmarks/learning_franka.py
--plot-only`` redraws the table and plot of the ``franka-learning`` section. Writes no section itself. About 40 min
for three seeds in one process on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import time
from importlib.metadata import version

import gymnasium as gym
import numpy as np

from bench_common import REPO, machine_info, threads
from learning_common import stamp

ENV_ID = "FetchPickAndPlace-v4"
FLAT_ID = "FetchPickAndPlaceFlat-v4"
JSON = REPO / "benchmarks" / "learning_franka.json"
FINAL_SEED = 10_000


class FetchTeacher:
    """Feedback pick-and-place for Fetch (4-D action: gripper translation × 5 cm, gripper command ±1): over the
    cube, down, close until the fingers stop on it, then carry it to the goal and hold."""

    def __init__(self, env):
        self.env = env.unwrapped

    def reset(self):
        pass

    def __call__(self, obs=None):
        o = self.env._get_obs()
        ob, goal = o["observation"], o["desired_goal"]
        grip, cube, width = ob[0:3], ob[3:6], float(ob[9] + ob[10])
        rel = cube - grip
        held = np.linalg.norm(rel) < 0.02 and width < 0.052
        if held:
            target, g = goal, -1.0
        elif np.linalg.norm(rel[:2]) > 0.01:
            target, g = cube + np.array([0.0, 0.0, 0.05 if np.linalg.norm(rel[:2]) > 0.02 or rel[2] < -0.03 else 0.0]), 1.0
            if np.linalg.norm(rel[:2]) > 0.02 and grip[2] < cube[2] + 0.03:
                target = np.array([*grip[:2], cube[2] + 0.05])
        elif abs(rel[2]) > 0.008:
            target, g = cube, 1.0
        else:
            target, g = cube, -1.0
        move = np.clip((target - grip) / 0.05, -1.0, 1.0)
        return np.array([*move, g], dtype=np.float32)


def register():
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    if FLAT_ID not in gym.registry:
        gym.register(FLAT_ID, entry_point=lambda **kw: gym.wrappers.FlattenObservation(gym.make(ENV_ID, **kw)),
                     max_episode_steps=None)


def project_config():
    from cenic_gym.train import get_config

    cfg = get_config("CenicFranka-v0", "dagger")
    cfg["env_kwargs"], cfg["train_env_kwargs"] = {}, {}
    cfg["dagger"]["teacher"] = f"{__name__}:FetchTeacher"
    return cfg


def run_seed(seed, steps, out_root):
    from cenic_gym.train import RunSpec, dagger

    cfg = project_config()
    spec = RunSpec(FLAT_ID, "dagger", "sb3", {}, seed, steps, 0, 1, {})
    t0 = time.perf_counter()
    path = dagger.train(spec, cfg, out_root / f"seed{seed}", progress=False)
    wall = time.perf_counter() - t0
    from cenic_gym.sim2real.policy import load_sb3
    from cenic_gym.train.common import run_episodes

    model, norm = load_sb3(path)
    final = run_episodes(lambda o: model.predict(norm.normalize_obs(np.asarray(o, np.float32)), deterministic=True)[0],
                         lambda: gym.make(FLAT_ID), 50, FINAL_SEED)
    ev = np.load(out_root / f"seed{seed}" / "eval" / "evaluations.npz")
    curve = [dict(steps=int(s), wall_s=float(w), success_rate=float(np.mean(ok)), mean_return=float(np.mean(r)))
             for s, w, ok, r in zip(ev["timesteps"], ev["wall"], ev["successes"], ev["results"])]
    return dict(seed=seed, wall_s=wall, curve=curve,
                final=dict(episodes=50, success_rate=final.success_rate, mean_return=final.mean_return,
                           mean_length=float(np.mean(final.lengths))))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=None, help="env steps per seed (default: the Franka recipe's)")
    p.add_argument("--out", default="runs/fetch_pick_place")
    p.add_argument("--check-teacher", type=int, default=0, metavar="N", help="only play N teacher episodes")
    p.add_argument("--beside", default="nothing", help="what else ran on the machine meanwhile (for the section)")
    a = p.parse_args(argv)
    register()
    if a.check_teacher:
        env = gym.make(FLAT_ID)
        ok = []
        for k in range(a.check_teacher):
            env.reset(seed=FINAL_SEED + k)
            teacher = FetchTeacher(env)
            for _ in range(50):
                _, _, term, trunc, info = env.step(teacher())
                if term or trunc:
                    break
            ok.append(info["is_success"])
        print(f"teacher: {np.mean(ok):.2f} success over {len(ok)} episodes")
        return 0
    from pathlib import Path

    steps = a.steps or project_config()["steps"]
    runs = [run_seed(s, steps, Path(a.out)) for s in a.seeds]
    for r in runs:
        print(f"seed {r['seed']}: final success {r['final']['success_rate']:.2f} over 50 held-out episodes, "
              f"{r['wall_s']:.0f} s")
    data = json.loads(JSON.read_text()) if JSON.is_file() else {}
    data[ENV_ID] = dict(runs=runs, machine=f"{machine_info()}; {threads()}", **stamp(), mujoco=version("mujoco"),
                        gymnasium_robotics=version("gymnasium-robotics"),
                        command="OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 /work/fetchvenv/bin/python "
                                f"benchmarks/fetch_pick_place.py --seeds {' '.join(map(str, a.seeds))}"
                                + (f" --steps {a.steps}" if a.steps else ""),
                        beside=a.beside)
    JSON.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
