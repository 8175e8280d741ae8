"""CenicPegInsertion-v0 side by side: the teacher on the same seeded episodes in cenic-gym, MuJoCo and Drake.

    python benchmarks/peg_side_by_side.py [--episodes 10] [--clearances 5e-4 1e-4] [--configs ...] [--no-write]

(needs ``mujoco`` and ``drake``: ``pip install -e .[peers]``; the script sets NUMBA_NUM_THREADS=1 and
OMP_NUM_THREADS=1 itself.)

Tight-clearance insertion is where the time step of a fixed-step simulator is tuned by hand (Isaac Lab's Factory
runs 1/120 s with 192 position iterations "to avoid interpenetration"). Here ``ForceSearchTeacher`` (the env's
feedback teacher; it reads the noise-free observation: the wrist wrench, the TCP and the observed hole) plays seeds
0 … episodes−1 of the task (default fixture poses, grasp and camera noise, no domain randomization) at each diametral
``--clearances`` (the env option ``clearance``), once per physics:

* cenic-gym at ε = 1e-2, 1e-3 (the task's), 1e-4;
* the env's generated MuJoCo twin (``cenic_gym.sim2real.sim2sim.MujocoPhysics``: the same bodies, inertias, joints,
  armature, collision shapes and this episode's fixture pose; the arm's inverse-dynamics PD evaluated explicitly
  before every MuJoCo step, the gripper PD as ``<position>`` actuators, implicitfast) at h = 1 ms and 2 ms, with
  MuJoCo's default contact (solref 0.02 s, solimp 0.9–0.95) and with contact matched to ours (direct solref
  (−k·A, −c·A): our pair stiffness k and a linear damping c = k·d·δ, d our Hunt & Crossley dissipation and δ the
  penetration under the grip force, A the geometry's normal inverse mass at the start — ``benchmarks/peers``'
  ``matched`` variant);
* Drake (``DrakePhysics``: our k and d, Hunt & Crossley): its discrete SAP solver at 1 ms (lagged approximation)
  and its error-controlled CENIC integrator at ε = 1e-3.

What the peers' contact models make of the grasp: Drake's point contact gives one contact per pad–peg pair (its
deepest point; ours gives the pad's side line, two points), so two pads hold the peg on a pivot about the closing
axis and it swings and slides in the fingers (the slip column); MuJoCo's matched stiffness (our steel's 5e6 N/m
per pair over the peg's inverse mass) is far beyond its explicit stability at 1–2 ms, so the peg is thrown at the
first touch of the fixture.

Every physics runs the env's own code (actions, observation, reward, success test): a peer replaces the simulator
for ``advance_to`` only and writes its state and contacts back each control period.

Reported per physics and clearance: success (``info["is_success"]`` at the end), the deepest peg–fixture contact
(each engine's own signed distance, sampled at the end of every control period), the deepest contact of any pair
over every step the engine took (finger pads included: their rubber is soft on purpose), tunnelling (episodes in
which the peg tip stood more than 1 mm inside a wall's material below the fixture's top, or below the hole's
floor), the insertion force peak (largest wrist force over the episode, median and max over episodes), steps per
control period and the wall time per episode (the teacher's few µs included). Episodes run seed by seed, every
physics in turn, so that the VM's drift falls on all alike. Writes ``benchmarks/peg_side_by_side.json`` and the
RESULTS.md section ``peg-side-by-side``; about 20 min with the defaults. The wall times want an idle machine.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from bench_common import provenance, write_section  # noqa: E402

ENV_ID = "CenicPegInsertion-v0"
OUT = Path(__file__).with_name("peg_side_by_side.json")
TUNNEL_DEPTH = 1e-3  # [m] tip inside a wall's material by more than this: tunnelled
MUJOCO_DEFAULT = ((0.02, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0))  # MuJoCo's default solref, solimp
# name -> (engine, options); cenic-gym's accuracy is the env's, the peers' options their physics'
CONFIGS = {
    "cenic-gym ε = 1e-2": ("cenic", dict(accuracy=1e-2)),
    "cenic-gym ε = 1e-3": ("cenic", dict(accuracy=1e-3)),
    "cenic-gym ε = 1e-4": ("cenic", dict(accuracy=1e-4)),
    "MuJoCo h = 1 ms, default contact": ("mujoco", dict(timestep=1e-3, contact="default")),
    "MuJoCo h = 1 ms, matched contact": ("mujoco", dict(timestep=1e-3, contact="matched")),
    "MuJoCo h = 2 ms, default contact": ("mujoco", dict(timestep=2e-3, contact="default")),
    "MuJoCo h = 2 ms, matched contact": ("mujoco", dict(timestep=2e-3, contact="matched")),
    "Drake SAP h = 1 ms": ("drake", dict(timestep=1e-3, integrator="lagged")),
    "Drake CENIC ε = 1e-3": ("drake", dict(timestep=1e-3, integrator="cenic", accuracy=1e-3)),
}


def matched_contact(env):
    """``benchmarks/peers``' matched MuJoCo contact on the peg–fixture pairs: direct solref (−k·A, −c·A) with
    c = k·d·δ, δ the pair's penetration under the grip force (Hunt & Crossley linearized there); MuJoCo's defaults
    on the other pairs (the finger pads: their normal is horizontal, so the peers' inverse mass towards the ground
    means nothing there)."""
    from peer_mujoco import matched_contact as peers_matched

    c, system = env.config, env.sim.system
    matched = peers_matched(system, c["dissipation"] * c["grip_force"])  # k·d·δ with δ = F / k
    peg = {i for i, g in enumerate(system.geometries) if g.name.startswith("peg")}
    fixture = {i for i, g in enumerate(system.geometries) if g.name in env.fixture_geoms}

    def contact(a, b):
        if {a, b} & peg and {a, b} & fixture:
            return matched(a, b)
        return MUJOCO_DEFAULT

    return contact


class Probe:
    """A :func:`~cenic_gym.sim2real.rollout.run_episode` hook: puts the peer's physics in place of the simulator
    after the reset (``apply``) and reads the state after every step (``before_step``, and :meth:`finish` after the
    last): the deepest peg–fixture contact, the wrist force peak and whether the peg tip went through a wall."""

    def __init__(self, engine, options):
        self.engine, self.options = engine, options
        self.real = None

    def apply(self, env):
        from cenic_gym.sim2real.sim2sim import DrakePhysics, MujocoPhysics

        u = env.unwrapped
        self.real, self.pen, self.force, self.tunnel, self.slip, self.held = u.sim, 0.0, 0.0, False, 0.0, None
        o = self.options
        if self.engine == "mujoco":
            u.sim = MujocoPhysics(self.real, o["timestep"],
                                  contact=matched_contact(u) if o["contact"] == "matched" else None)
        elif self.engine == "drake":
            u.sim = DrakePhysics(self.real, o["timestep"], o["integrator"],
                                 **({"accuracy": o["accuracy"]} if "accuracy" in o else {}))

    def before_step(self, env, step):
        if step > 0:
            self.read(env)

    def read(self, env):
        u = env.unwrapped
        sim, c = u.sim, u.config
        cr = sim.contact_results()
        names = set(u.fixture_geoms)
        pair = [i for i in range(cr.n) if {cr.body_a[i], cr.body_b[i]} & {"peg"}
                and (cr.names_a[i] in names or cr.names_b[i] in names)]
        if pair:
            self.pen = max(self.pen, float(-cr.phi[pair].min()))
        self.force = max(self.force, float(np.linalg.norm(u.sensor.read(sim).force)))
        view = u.view  # the state after the last step
        tip = view.p_tip
        held = view.R_tcp.T @ (tip - view.p_tip_nominal)  # where the fingers hold the tip, hand frame
        if self.held is None:
            self.held = held  # the episode's grasp (its offset noise included)
        self.slip = max(self.slip, float(np.linalg.norm(held - self.held)))
        d_xy = float(np.linalg.norm(tip[:2] - u.hole[:2]))
        depth = float(u.hole[2] - tip[2])
        in_wall = depth > TUNNEL_DEPTH and u.inner_radius + TUNNEL_DEPTH < d_xy < u.inner_radius + c["fixture_wall"]
        self.tunnel |= bool(in_wall or depth > c["hole_depth"] + TUNNEL_DEPTH)

    def finish(self, env):
        self.read(env)
        env.unwrapped.sim = self.real

    def describe(self):
        return {"physics": self.engine, **{k: v for k, v in self.options.items() if k != "contact"}}


def run(episodes, clearances, configs):
    from cenic_gym.envs.peg_insertion import ForceSearchTeacher
    from cenic_gym.sim2real.policy import ScriptedPolicy
    from cenic_gym.sim2real.rollout import make_env, run_episode

    out = {}
    for clearance in clearances:
        envs = {name: make_env(ENV_ID, clearance=clearance, **(CONFIGS[name][1] if CONFIGS[name][0] == "cenic"
                                                                 else {}))
                for name in configs}
        rows = {name: [] for name in configs}
        for name in configs:  # warm-up: compile and load what the timed episodes use
            probe = Probe(*CONFIGS[name])
            run_episode(envs[name], ScriptedPolicy(ForceSearchTeacher), 0, perturbation=probe, max_steps=20)
            probe.finish(envs[name])
        for seed in range(episodes):
            for name in configs:
                engine, options = CONFIGS[name]
                probe = Probe(engine, options)
                policy = ScriptedPolicy(ForceSearchTeacher)
                r = run_episode(envs[name], policy, seed, perturbation=probe)
                probe.finish(envs[name])
                rows[name].append(dict(seed=seed, success=bool(r.success), steps=r.steps, substeps=r.substeps,
                                       wall_s=r.wall_s, peg_penetration=probe.pen, max_penetration=r.max_penetration,
                                       force_peak=probe.force, tunnel=probe.tunnel, slip=probe.slip,
                                       lost=bool(r.terminated), failure=r.sim_failure))
                print(f"clearance {clearance * 1e3:g} mm seed {seed} {name}: success {r.success}, peg–fixture "
                      f"{probe.pen * 1e3:.3f} mm, force peak {probe.force:.1f} N, {r.wall_s:.1f} s", flush=True)
        for e in envs.values():
            e.close()
        out[f"{clearance:g}"] = rows
    return out


def summary(rows):
    a = lambda k: np.array([r[k] for r in rows], dtype=float)  # noqa: E731
    return dict(episodes=len(rows), success=float(a("success").mean()), peg_pen=float(a("peg_penetration").max()),
                any_pen=float(a("max_penetration").max()), tunnels=int(a("tunnel").sum()),
                force_median=float(np.median(a("force_peak"))), force_max=float(a("force_peak").max()),
                slip=float(np.median(a("slip"))), lost=int(a("lost").sum()),
                substeps=float(a("substeps").sum() / a("steps").sum()), wall=float(a("wall_s").mean()),
                failures=sum(r["failure"] is not None for r in rows))


def section(data):
    lines = provenance("benchmarks/peg_side_by_side.py", data["command"], data["runtime_s"], data["load0"],
                       ("numba", "mujoco", "drake"), note=data.get("note", ""))
    lines += [f"`ForceSearchTeacher` on seeds 0–{data['episodes'] - 1} of {ENV_ID} (default starts, no domain "
              "randomization), the same episodes for every physics; the env's own actions, observation and success "
              "test in each (a peer replaces the simulator's `advance_to` and writes its state and contacts back "
              "every control period). Peg–fixture: the deepest contact between the peg and the hole's walls, each "
              "engine's own signed distance at the end of every control period; any pair: over every step the "
              "engine took, finger pads included (soft rubber: 0.2–0.5 mm under the 40 N grip). Tunnelling: "
              "episodes with the peg tip > 1 mm inside a wall below the fixture's top or below the hole's floor. "
              "Peg lost: episodes the env ended because the peg left the grasp by > 2 cm; grasp slip: the largest distance "
              "the peg tip moved in the hand's frame since the first step (the grasp's own offset noise apart), median over "
              "episodes. Success is the env's test at the episode's end, also when the peg was lost right after an "
              "insertion. "
              "Force peak: the wrist sensor's largest force, median / max over episodes. Steps: the engine's steps "
              "per 50 ms control period. Wall: seconds per 10 s episode, the env layer included (the script's "
              "docstring has the contact mapping and why the peers lose the grasp).", ""]
    lines += ["| clearance | physics | success | peg–fixture max penetration [mm] | any pair [mm] | tunnelling | peg lost "
              "| grasp slip, median [mm] | force peak median / max [N] | steps / control period | wall / episode [s] "
              "| failures |", "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for clearance, rows in data["runs"].items():
        for name, r in rows.items():
            s = summary(r)
            lines.append(f"| {float(clearance) * 1e3:g} mm | {name} | {s['success']:.2f} | {s['peg_pen'] * 1e3:.3f} | "
                         f"{s['any_pen'] * 1e3:.3f} | {s['tunnels']} / {s['episodes']} | {s['lost']} | "
                         f"{s['slip'] * 1e3:.1f} | {s['force_median']:.0f} / {s['force_max']:.0f} | "
                         f"{s['substeps']:.1f} | {s['wall']:.2f} | {s['failures']} |")
    return "\n".join(lines).rstrip()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--clearances", type=float, nargs="+", default=[5e-4, 1e-4])
    p.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    p.add_argument("--no-write", action="store_true", help="print the section only")
    p.add_argument("--section-only", action="store_true", help="rebuild the section from the JSON of the last run")
    a = p.parse_args()
    if a.section_only:
        data = json.loads(OUT.read_text())
    else:
        t0, load0 = time.perf_counter(), os.getloadavg()[0]
        runs = run(a.episodes, a.clearances, a.configs)
        data = dict(runs=runs, episodes=a.episodes, runtime_s=time.perf_counter() - t0, load0=load0,
                    note=f"; besides it: {a.note}" if a.note else "",
                    command="`" + shlex.join(["python", "benchmarks/peg_side_by_side.py", *sys.argv[1:]]) + "`")
    text = section(data)
    print(text)
    if not a.no_write:
        if not a.section_only:
            OUT.write_text(json.dumps(data, indent=1))
        write_section("peg-side-by-side", text, f"## Peg insertion side by side ({ENV_ID}): cenic-gym, MuJoCo, Drake")


if __name__ == "__main__":
    main()
