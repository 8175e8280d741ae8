"""What a policy costs the CenicSuction-v0 simulation: env steps/s and substeps per env step under random actions,
the scripted picker, the recipe's teacher, the shipped learned policy and a policy that presses the sealed cups
down as hard as it can, with the gantry's force and lead limits on (the default) and off.

    python benchmarks/suction_throughput.py [--steps 2000] [--repeats 3] [--no-write]

(the script sets NUMBA_NUM_THREADS=1 and OMP_NUM_THREADS=1 itself unless they are set; run it on an idle machine.)

Each row: ``gym.make("CenicSuction-v0", **options)`` at its default ε = 1e-3, an untimed warm-up, then ``--repeats``
runs of ``--steps`` env steps over the same seeded episodes (seeds 1000, 1001, …; episodes of 200 steps restart
untimed), the run of median wall time reported (``env_throughput.run``): env steps/s = env steps / wall time of
``env.step`` (the policy's own time excluded: the network's forward pass, the teacher's reasoning), attempts
(accepted + rejected substeps) and Newton iterations per env step, the deepest penetration of the run
(``info["sim"]``).
``press`` follows the teacher until the target is held, then commands the tool down at full speed with the suction
on for the rest of the episode. Limits: the gantry's z force limit about its gravity compensation and the height target
at most ``z_lead`` below the measured tool (``envs/suction_pick.py``); "limits off": ``gantry_effort_limit=(inf,)*4,
z_lead=1.0``.

Writes the RESULTS.md section ``suction-throughput``. About 1 min; a timing benchmark: run it on an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from bench_common import REPO, provenance, warm_up, write_section  # noqa: E402
from cenic_gym.envs import suction_constants as sc  # noqa: E402
from cenic_gym.envs.suction_pick import ScriptedPicker, SuctionExpert, default_config  # noqa: E402
from env_throughput import RandomPolicy, run  # noqa: E402

ENV_ID = "CenicSuction-v0"
POLICY = REPO / "training" / "policies" / ENV_ID / "model.zip"
NO_LIMITS = dict(gantry_effort_limit=(np.inf,) * 4, z_lead=1.0)  # the gantry before its limits


class Press(SuctionExpert):
    """The teacher until the target is held, then the tool down at full speed with the suction on."""

    def __call__(self, obs=None):
        if self.env.attached:
            return np.array([0.0, 0.0, -1.0, 0.0, 1.0], np.float32)
        return super().__call__(obs)


class Learned:
    def __init__(self, env):
        from cenic_gym.sim2real.policy import load_policy

        self.env = env
        self.policy = load_policy(POLICY, ENV_ID)

    def reset(self):
        self.policy.reset(self.env)

    def __call__(self, obs):
        return self.policy(obs)


ROWS = [("random actions", {}, lambda e: RandomPolicy(e, 0)),
        ("ScriptedPicker", {}, ScriptedPicker),
        ("SuctionExpert (the recipe's teacher)", {}, SuctionExpert),
        ("learned policy (training/policies)", {}, Learned),
        ("press (limits on: the default)", {}, Press),
        ("random actions, limits off", NO_LIMITS, lambda e: RandomPolicy(e, 0)),
        ("press, limits off", NO_LIMITS, Press)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2000, help="env steps per run (default 2000: 10 episodes)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per row; the median one is reported (default 3)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    t_start, load0 = time.perf_counter(), os.getloadavg()[0]
    warm_up()
    rows = []
    for name, options, make_policy in ROWS:
        env = gym.make(ENV_ID, **options)
        run(env, make_policy, 20)  # warm-up
        reps = sorted((run(env, make_policy, args.steps) for _ in range(args.repeats)), key=lambda r: r["step_wall"])
        r = reps[len(reps) // 2]
        r["name"] = name
        rows.append(r)
        print(f"{name}: {r['steps'] / r['step_wall']:.0f} env steps/s, "
              f"{(r['substeps'] + r['rejected']) / r['steps']:.2f} attempts/step, {r['newton'] / r['steps']:.1f} "
              f"Newton/step, max penetration {1e3 * r['penetration']:.2f} mm", flush=True)
        env.close()
    rate = {r["name"]: r["steps"] / r["step_wall"] for r in rows}
    random_rate, learned_rate = rate[ROWS[0][0]], rate[ROWS[3][0]]
    table = ["| policy | env steps/s | real-time factor | attempts / env step | substeps / env step | Newton "
             "iterations / env step | max penetration [mm] | episodes | sim failures |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = r["steps"]
        table.append(f"| {r['name']} | {n / r['step_wall']:.0f} | {r['sim_time'] / r['step_wall']:.1f} | "
                     f"{(r['substeps'] + r['rejected']) / n:.2f} | {r['substeps'] / n:.2f} | {r['newton'] / n:.1f} | "
                     f"{1e3 * r['penetration']:.2f} | {r['episodes']} | {r['failures']} |")
    command = "python benchmarks/suction_throughput.py" + (f" --steps {args.steps}" if args.steps != 2000 else "") + \
        (f" --repeats {args.repeats}" if args.repeats != 3 else "")
    body = "\n".join([
        *provenance("benchmarks/suction_throughput.py", f"`{command}` (sets NUMBA_NUM_THREADS=1, OMP_NUM_THREADS=1 "
                    "itself)", time.perf_counter() - t_start, load0, ("numba", ("pinocchio (pin)", "pin"), "numpy")),
        f"`{ENV_ID}` at ε = 1e-3, {args.steps} env steps per run over the same seeded episodes, the run of median "
        f"`env.step` wall time of {args.repeats} (the policy's own time excluded). Limits: the gantry's z force limit "
        f"({sc.GANTRY_EFFORT_LIMIT[2]:g} N about its gravity compensation) and the height target at most `z_lead` = "
        f"{100 * default_config()['z_lead']:g} cm below the measured tool (`envs/suction_pick.py`); \"limits off\": "
        "`gantry_effort_limit=(inf,)*4, z_lead=1.0`. `press`: the teacher until the target is held, then the tool "
        "down at full speed, suction on.", "", *table, "",
        f"The learned policy runs at {learned_rate:.0f} env steps/s, {learned_rate / random_rate:.2f}× the "
        f"random-action rate ({random_rate:.0f})."])
    print(body)
    if not args.no_write:
        write_section("suction-throughput", body, f"## Throughput of {ENV_ID} under each policy")


if __name__ == "__main__":
    main()
