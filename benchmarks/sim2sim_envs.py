"""Sim-to-sim gap per env: every cenic-gym env's scripted policy run closed loop in cenic-gym and with
each installed peer as the physics (MuJoCo, Drake), on the same seeded episodes.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2sim_envs.py [--episodes 4] [--peers mujoco drake]
        [--envs CenicFranka-v0 ...] [--no-write]

Policies: ``load_policy("scripted", env_id)`` (``cenic_gym.envs.SCRIPTED_POLICIES``: the Franka's ScriptedExpert,
the suction gantry's ScriptedPicker, the Allegro's ScriptedRotator, the Go1's open-loop TrotGait). Episode lengths:
the env's own (Franka, suction: one pick and place), ``STEPS`` otherwise (Allegro 200 steps = 10 s, Go1 500 steps =
10 s). Peers at their defaults (MuJoCo: 1 ms, implicitfast, its default contact parameters; Drake: the discrete
SAP solver, lagged contact approximation with our stiffness and dissipation, 1 ms); cenic-gym at ε = 1e-3. Columns
as ``cenic_gym.sim2real.sim2sim_table``: success in both (the env's ``evaluate()``), the final gap of every free
body, the closed-loop divergence (compounds) and the one-step divergence (one control period of the peer from each
cenic-gym state: the per-period model gap). The Allegro's success is the env's 0.1 rad goal, which the quarter-turn
rotator does not aim at: read its gap columns. Writes the ``sim2sim-envs`` section of ``benchmarks/RESULTS.md``.
About 3–8 min (4 episodes; needs ``mujoco`` and ``pydrake``); not a timing benchmark.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from bench_common import provenance, write_section  # noqa: E402
from cenic_gym.envs import SCRIPTED_POLICIES  # noqa: E402
from cenic_gym.sim2real.policy import load_policy  # noqa: E402
from cenic_gym.sim2real.sim2sim import sim2sim, sim2sim_table  # noqa: E402

HERE = Path(__file__).resolve().parent
STEPS = {"CenicAllegro-v0": 200, "CenicQuadruped-v0": 500}  # env steps per episode (None: the env's episode)
PEERS = ("mujoco", "drake")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=4, help="seeded episodes per env and peer (seeds 0, 1, ...)")
    p.add_argument("--envs", nargs="+", default=sorted(SCRIPTED_POLICIES), choices=sorted(SCRIPTED_POLICIES))
    p.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    p.add_argument("--no-write", action="store_true")
    a = p.parse_args(argv)
    t0, load0 = time.time(), os.getloadavg()[0]
    results = []
    for env_id in a.envs:
        for peer in a.peers:
            results.append(sim2sim(env_id, load_policy("scripted", env_id), range(a.episodes),
                                   max_steps=STEPS.get(env_id), peer=peer,
                                   progress=lambda s, ep, e=env_id, pr=peer: print(f"{e} {pr} seed {s}: {ep.row()}",
                                                                                   flush=True)))
    cmd = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2sim_envs.py" + \
        (f" --episodes {a.episodes}" if a.episodes != 4 else "") + \
        (f" --envs {' '.join(a.envs)}" if a.envs != sorted(SCRIPTED_POLICIES) else "") + \
        (f" --peers {' '.join(a.peers)}" if a.peers != list(PEERS) else "")
    lengths = ", ".join(f"{e} {STEPS[e]} steps" for e in a.envs if e in STEPS)
    body = "\n".join([
        *provenance("benchmarks/sim2sim_envs.py", f"`{cmd}`", time.time() - t0, load0,
                    ("numba", ("pinocchio (pin)", "pin"), "numpy", "mujoco", "drake")),
        f"Each env's scripted policy on seeds 0–{a.episodes - 1}, cenic-gym at ε = 1e-3 against each peer at its "
        f"default settings (episodes cut at {lengths}; the others run to the env's end); success: the env's own "
        "`evaluate()`; closed-loop divergence: the largest over an episode, one-step: one control period of the "
        "peer from each cenic-gym state (definitions: the script's docstring).", "", sim2sim_table(results)])
    print(body)
    if not a.no_write:
        write_section("sim2sim-envs", body, "## Sim-to-sim gap per env: MuJoCo and Drake")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
