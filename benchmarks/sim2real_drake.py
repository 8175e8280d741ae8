"""Sim-to-sim with Drake, the second peer: the free-motion check of the mapping, policies run closed loop with Drake
as the physics, and the two CENICs (cenic-gym's, Drake's) at tightening accuracy.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_drake.py [--episodes 10] [--go1-episodes 5]
        [--go1-steps 500] [--integrators lagged cenic] [--tight-episodes 2] [--tight-steps 100] [--no-write]

(needs ``pydrake``: ``pip install 'cenic-gym[peers]'``.) Drake's scene is generated from the env's own model by
``cenic_gym.drake_model`` (same bodies, inertias, armature as rotor inertia, joint limits, collision shapes,
candidate pairs, our per-geometry contact stiffness, Hunt & Crossley dissipation and friction, which Drake combines
per pair with our rules; point contact, boxes on moving bodies with corner spheres for a multi-point support); the
env's control laws: JointPD as Drake's implicit PD actuators, the Franka arm's inverse-dynamics PD evaluated on
Drake's state and held over each 1 ms, applied as a generalized force (``cenic_gym.sim2real.sim2sim.DrakePhysics``).
Drake's default here is its discrete SAP solver with the lagged approximation at 1 ms (convex, no step limit from
the stiff contacts and gains, and the lagged model is ours: H&C with the same k and d); ``cenic`` is Drake's own
error-controlled CENIC.

1. Free motion (the mapping and the control laws checked): from ``reset(seed=0)`` with the free bodies raised 2 m
   (nothing touches) and a fixed action, one control period in cenic-gym at tightening ε against Drake's CENIC at
   ε = 1e-7 (explicit laws held 0.25 ms) and Drake SAP at 1 ms (``free_motion_gaps``). Against Drake's CENIC the
   gap keeps shrinking with our ε on the Go1 (implicit PD on 12 joints, free base, armature: the same trajectory
   in the limit); on the Franka it levels off at the error of holding the arm's inverse-dynamics PD constant over
   0.25 ms in Drake (ours is evaluated continuously); against SAP it levels off at SAP's first-order error.
2. Closed loop (``cenic_gym.sim2real.sim2sim(peer="drake")``, also ``cenic-gym sim2real sim2sim --peer drake``):
   the scripted expert on CenicFranka-v0 (``--episodes`` seeds) and the open-loop trot on CenicQuadruped-v0
   (``--go1-episodes`` seeds, ``--go1-steps`` steps; it ignores the episode's random velocity command, so success
   is rare in both simulators: the base gap is the measure), in cenic-gym (ε = 1e-3) and in Drake with each of
   ``--integrators`` (``lagged``: SAP, 1 ms; ``cenic``: Drake's CENIC at ε = 1e-3): success in both, the final
   free-body gap, the closed-loop and one-step divergence (as in ``sim2real_mujoco.py``). With the same contact
   model as ours Drake grasps, carries and places the box as cenic-gym does (compare MuJoCo's default soft contact
   in ``sim2real_mujoco.py``); on the Go1 the per-period gap (foot touchdowns) compounds over an open-loop gait.
3. Two CENICs at tightening accuracy (``--tight-episodes`` seeds of ``--tight-steps`` steps, 0: skipped): cenic-gym
   and Drake's CENIC both at ε = 1e-3 and 1e-5 (explicit laws held 0.25 ms). Where the divergences shrink from
   1e-3 to 1e-5 they were integration error; what is left at 1e-5 is the modeling difference between the two
   implementations (Drake's point contact engages at penetration, ours speculatively; one point per pair vs our
   manifolds; box corners as spheres).

Writes ``benchmarks/sim2real_drake.png`` (divergence per env step) and the ``sim2real-drake`` section of
``benchmarks/RESULTS.md``. About 10–25 min (mostly part 2); not a timing benchmark.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from bench_common import provenance, write_section  # noqa: E402
from cenic_gym.sim2real.policy import load_policy  # noqa: E402
from cenic_gym.sim2real.report import plot_sim2sim  # noqa: E402
from cenic_gym.sim2real.sim2sim import free_motion_gaps, sim2sim, sim2sim_table  # noqa: E402

HERE = Path(__file__).resolve().parent
ENV_ID = "CenicFranka-v0"
GO1_ID = "CenicQuadruped-v0"
FREE_ACCURACIES = (1e-4, 1e-5, 1e-6, 1e-7)
FREE_PEERS = (("Drake CENIC ε = 1e-7, hold 0.25 ms", dict(integrator="cenic", accuracy=1e-7, timestep=2.5e-4)),
              ("Drake SAP (lagged) 1 ms", dict(integrator="lagged", timestep=1e-3)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=10, help="CenicFranka-v0 episodes of the scripted expert")
    p.add_argument("--go1-episodes", type=int, default=5, help="CenicQuadruped-v0 episodes of the trot (0: none)")
    p.add_argument("--go1-steps", type=int, default=500, help="env steps per Go1 episode (50 per second)")
    p.add_argument("--integrators", nargs="+", default=["lagged", "cenic"], choices=["lagged", "similar", "cenic"])
    p.add_argument("--tight-episodes", type=int, default=2, help="episodes per env of the accuracy study (0: none)")
    p.add_argument("--tight-steps", type=int, default=100, help="env steps per episode of the accuracy study")
    p.add_argument("--no-write", action="store_true")
    a = p.parse_args(argv)
    t0, load0 = time.time(), os.getloadavg()[0]
    free, closed = free_motion(), closed_loop(a)
    tight_rows = tight(a) if a.tight_episodes else []
    cmd = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_drake.py" + \
        (f" --episodes {a.episodes}" if a.episodes != 10 else "") + \
        (f" --go1-episodes {a.go1_episodes}" if a.go1_episodes != 5 else "") + \
        (f" --go1-steps {a.go1_steps}" if a.go1_steps != 500 else "") + \
        (f" --integrators {' '.join(a.integrators)}" if a.integrators != ["lagged", "cenic"] else "") + \
        (f" --tight-episodes {a.tight_episodes}" if a.tight_episodes != 2 else "") + \
        (f" --tight-steps {a.tight_steps}" if a.tight_steps != 100 else "")
    body = [
        *provenance("benchmarks/sim2real_drake.py", f"`{cmd}`", time.time() - t0, load0,
                    ("numba", ("pinocchio (pin)", "pin"), "numpy", "drake")),
        "Drake's scene generated from the env's model by `cenic_gym.drake_model` (our contact stiffness, Hunt & "
        "Crossley dissipation and friction; point contact), the env's control laws "
        "(`cenic_gym.sim2real.sim2sim.DrakePhysics`; details and how to read the tables: the script's docstring). "
        "**Free motion** (no contact): one control period from the same state (free bodies raised 2 m, a fixed "
        "action), ‖pin.difference(q_cenic-gym(ε), q_Drake)‖∞ [m, rad]:", "",
        "| env | peer | " + " | ".join(f"ε = {e:g}" for e in FREE_ACCURACIES) + " |",
        "|---|---|" + "---|" * len(FREE_ACCURACIES),
        *(f"| {env_id} | {label} | " + " | ".join(f"{g:.2e}" for g in gaps) + " |" for env_id, label, gaps in free),
        "", "**Closed loop**: the same seeded episodes in cenic-gym (ε = 1e-3) and with Drake as the physics "
        f"(Franka: scripted expert; Go1: open-loop trot, {a.go1_steps} steps); closed-loop divergence: the largest "
        "over an episode, one-step: one control period from cenic-gym's state. Plot: `benchmarks/sim2real_drake.png`.",
        "", sim2sim_table(closed)]
    if tight_rows:
        table = sim2sim_table([r for _, r in tight_rows]).splitlines()
        table[0] = "| cenic-gym ε " + table[0]
        table[1] = "|---" + table[1]
        for i, (acc, _) in enumerate(tight_rows):
            table[2 + i] = f"| {acc:g} " + table[2 + i]
        body += ["", f"**Two CENICs at tightening accuracy**: the first {a.tight_steps} env steps of "
                 f"{a.tight_episodes} seed{'s' if a.tight_episodes > 1 else ''}, cenic-gym and Drake's CENIC at the same ε (Drake's explicit laws held "
                 "0.25 ms): what is left at 1e-5 is the modeling difference between the implementations.", "",
                 *table]
    body = "\n".join(body)
    print(body)
    if not a.no_write:
        plot_sim2sim(closed, HERE / "sim2real_drake.png")
        write_section("sim2real-drake", body, f"## Sim-to-sim: Drake ({ENV_ID}, {GO1_ID})")
    return 0


def free_motion():
    """[(env id, peer label, [gap per FREE_ACCURACIES])]: one control period without contact."""
    free = []
    for env_id in (ENV_ID, GO1_ID):
        for label, opts in FREE_PEERS:
            gaps = free_motion_gaps(env_id, FREE_ACCURACIES, peer="drake", **opts)
            free.append((env_id, label, gaps))
            print(env_id, label, gaps, flush=True)
    return free


def closed_loop(a):
    """The closed-loop sim-to-sim results, per integrator: the Franka's scripted expert, the Go1's trot."""
    closed = []
    for integ in a.integrators:
        if a.episodes:
            closed.append(sim2sim(ENV_ID, load_policy("scripted", ENV_ID), range(a.episodes), peer="drake",
                                  integrator=integ, progress=lambda s, ep: print(f"{integ} seed {s}: {ep.row()}",
                                                                                 flush=True)))
        if a.go1_episodes:
            closed.append(sim2sim(GO1_ID, load_policy("trot", GO1_ID), range(a.go1_episodes), max_steps=a.go1_steps,
                                  peer="drake", integrator=integ,
                                  progress=lambda s, ep: print(f"go1 {integ} seed {s}: {ep.row()}", flush=True)))
    return closed


def tight(a):
    """[(ε, result)]: both CENICs at ε = 1e-3 and 1e-5 on the same short episodes, per env."""
    rows = []
    for env_id, policy in ((ENV_ID, "scripted"), (GO1_ID, "trot")):
        for acc in (1e-3, 1e-5):
            rows.append((acc, sim2sim(env_id, load_policy(policy, env_id), range(a.tight_episodes),
                                      max_steps=a.tight_steps, env_kwargs=dict(accuracy=acc), peer="drake",
                                      integrator="cenic", accuracy=acc, timestep=2.5e-4,
                                      progress=lambda s, ep: print(f"tight {env_id} {acc:g} seed {s}: {ep.row()}",
                                                                   flush=True))))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
