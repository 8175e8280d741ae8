"""Robustness sweeps: success rate of a policy as one kind of perturbation grows.

Families (level 0 is the nominal env in each):

==============  ===========================  ===============================================================
family          level                        what one episode gets
==============  ===========================  ===============================================================
obs_noise       env option ``obs_noise``     Gaussian noise, level × the task's per-element scales (env RNG)
action_delay    env option ``action_delay``  actions applied ``level`` control periods late (0–3)
gain            spread s                     every joint controller's K_p and K_d × f, f log-uniform in
                                             [1/(1+s), 1+s]
effort_limit    reduction r                  every external system's effort limits × f, f ~ U(1 − r, 1)
friction        spread s                     every geometry's μ_s and μ_d × f, f log-uniform in [1/(1+s), 1+s]
mass            spread s                     every free body's mass (and rotational inertia) × f, f log-uniform
push            impulse p [N s]              one horizontal impulse of magnitude p on a free body's origin, in a
                                             uniform direction, before a uniform step of the episode
==============  ===========================  ===============================================================

Per episode the perturbation is drawn from ``numpy.random.default_rng([seed, family, level])`` (family: its index in
:data:`FAMILIES`, level: its index in the sweep's levels): the episode's reset seed plus the family and level
reproduce it exactly, and it is logged with the seed.
Physical perturbations are applied to the simulator after ``env.reset`` (the reset sets the nominal or the
domain-randomized parameters; the perturbation multiplies them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from .rollout import make_env, run_episode, summarize

FAMILIES = {  # name -> default levels
    "obs_noise": (0.0, 1.0, 2.0, 4.0),
    "action_delay": (0, 1, 2, 3),
    "gain": (0.0, 0.25, 0.5, 1.0),
    "effort_limit": (0.0, 0.25, 0.5, 0.75),
    "friction": (0.0, 0.25, 0.5, 1.0),
    "mass": (0.0, 0.25, 0.5, 1.0),
    "push": (0.0, 0.1, 0.2, 0.4),
}
ENV_OPTION = {"obs_noise", "action_delay"}


@dataclass
class Perturbation:
    """Multipliers applied to the simulator after a reset, and an optional push. gain_scale: K_p, K_d of every
    joint controller; effort_scale: every external system's effort limits; friction_scale: μ of every geometry;
    mass_scale: mass (and inertia) of every free body; push: (env step index, body name, world impulse (3,) [N s])
    applied just before that step."""

    gain_scale: float = 1.0
    effort_scale: float = 1.0
    friction_scale: float = 1.0
    mass_scale: float = 1.0
    push: tuple | None = None
    label: dict = field(default_factory=dict)

    def apply(self, env):
        """Scale the simulator's current parameters (call right after ``env.reset``)."""
        sim = env.unwrapped.sim
        for s in sim.external:
            if self.gain_scale != 1.0 and hasattr(s, "kp"):
                s.set_gains(kp=s.kp * self.gain_scale, kd=s.kd * self.gain_scale)
            if self.effort_scale != 1.0:
                s.effort_limit = s.effort_limit * self.effort_scale
        if self.friction_scale != 1.0:
            for i in range(len(sim.system.geometries)):
                m = sim.geometry_material(i)
                sim.set_geometry_material(i, mu_static=m["mu_static"] * self.friction_scale,
                                          mu_dynamic=m["mu_dynamic"] * self.friction_scale)
        if self.mass_scale != 1.0:
            for body in sim.system.body_names:
                sim.set_body_inertia(body, mass=sim.body_inertia(body)[0] * self.mass_scale)

    def before_step(self, env, step):
        if self.push is not None and step == self.push[0]:
            apply_impulse(env.unwrapped.sim, self.push[1], self.push[2])

    def describe(self):
        """The applied values (JSON-able), with the family and level they were drawn for."""
        out = dict(self.label)
        for k in ("gain_scale", "effort_scale", "friction_scale", "mass_scale"):
            if getattr(self, k) != 1.0:
                out[k] = float(getattr(self, k))
        if self.push is not None:
            out["push"] = dict(step=int(self.push[0]), body=self.push[1], impulse=[float(x) for x in self.push[2]])
        return out


def apply_impulse(sim, body, impulse):
    """Add the velocity change of a world-frame impulse [N s] at the origin of free body ``body``: Δv = M(q)⁻¹ Γ,
    Γ the generalized impulse (:meth:`~cenic_gym.model.MultibodySystem.free_body_force`). For a free body whose
    centre of mass is its origin the linear velocity changes by impulse / mass."""
    system = sim.system
    q = sim.q
    gamma = system.free_body_force(q, body, np.asarray(impulse, dtype=float))
    model = sim.integrator.model  # the simulator's own (randomized) inertias
    M = pin.crba(model, model.createData(), q)
    M = np.triu(M) + np.triu(M, 1).T
    sim.set_state(v=sim.v + np.linalg.solve(M, gamma))


def _log_uniform(rng, spread):
    return float(math.exp(rng.uniform(-math.log1p(spread), math.log1p(spread)))) if spread > 0 else 1.0


def sample_perturbation(family, level, rng, episode_steps, body=None):
    """The :class:`Perturbation` of one episode of ``family`` at ``level`` (see the module table); ``rng`` a
    numpy Generator; ``episode_steps``: the episode's length (the push step is drawn in [0, episode_steps));
    ``body``: the pushed free body."""
    label = dict(family=family, level=level)
    if family in ENV_OPTION:
        return Perturbation(label=label)
    if family == "gain":
        return Perturbation(gain_scale=_log_uniform(rng, level), label=label)
    if family == "effort_limit":
        return Perturbation(effort_scale=float(rng.uniform(1.0 - level, 1.0)) if level > 0 else 1.0, label=label)
    if family == "friction":
        return Perturbation(friction_scale=_log_uniform(rng, level), label=label)
    if family == "mass":
        return Perturbation(mass_scale=_log_uniform(rng, level), label=label)
    if family == "push":
        if level == 0:
            return Perturbation(label=label)
        angle = rng.uniform(0.0, 2.0 * math.pi)
        step = int(rng.integers(0, episode_steps))
        return Perturbation(push=(step, body, level * np.array([math.cos(angle), math.sin(angle), 0.0])), label=label)
    raise ValueError(f"unknown perturbation family {family!r}; families: {sorted(FAMILIES)}")


def check_levels(family, levels):
    """Validate a family's levels: action_delay integers 0…; effort_limit reductions in [0, 1); others ≥ 0."""
    if family not in FAMILIES:
        raise ValueError(f"unknown perturbation family {family!r}; families: {sorted(FAMILIES)}")
    levels = tuple(levels)
    if not levels:
        raise ValueError(f"{family}: no levels")
    for x in levels:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not math.isfinite(x):
            raise ValueError(f"{family}: level {x!r} is not a finite number")
        if x < 0 or (family == "action_delay" and not float(x).is_integer()) or (family == "effort_limit" and x >= 1):
            raise ValueError(f"{family}: level {x!r} out of range (action_delay: integers >= 0; effort_limit: "
                             "[0, 1); others: >= 0)")
    return tuple(int(x) for x in levels) if family == "action_delay" else tuple(float(x) for x in levels)


@dataclass
class FamilyResult:
    family: str
    levels: tuple
    summaries: list  # one summarize() dict per level
    episodes: list  # one list of EpisodeResult per level


def robustness_sweep(env_id, policy, seeds, families=None, env_kwargs=None, max_steps=None, push_body=None,
                     progress=None):
    """Success-rate curves: for each family (name -> levels; default :data:`FAMILIES`) and level, the seeded
    episodes under a perturbation drawn per episode. Returns {family: FamilyResult}."""
    families = dict(FAMILIES if families is None else families)
    families = {f: check_levels(f, lv) for f, lv in families.items()}
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    env_kwargs = dict(env_kwargs or {})
    base = make_env(env_id, **env_kwargs)
    steps = max_steps or base.spec.max_episode_steps
    if steps is None:
        raise ValueError(f"{env_id} has no max_episode_steps: give max_steps")
    bodies = base.unwrapped.sim.system.body_names
    if "push" in families:
        push_body = push_body or (bodies[0] if bodies else None)
        if push_body not in bodies:
            raise ValueError(f"push body {push_body!r} is not a free body of {env_id}; free bodies: {bodies}")
    out = {}
    for family, levels in families.items():
        fi = list(FAMILIES).index(family)  # stable: a family's draws do not depend on which others run
        summaries, episodes = [], []
        for li, level in enumerate(levels):
            env = make_env(env_id, **{**env_kwargs, family: level}) if family in ENV_OPTION else base
            eps = []
            for s in seeds:
                rng = np.random.default_rng([s, fi, li])
                p = sample_perturbation(family, level, rng, steps, push_body)
                eps.append(run_episode(env, policy, s, perturbation=p, max_steps=max_steps))
            summaries.append(summarize(eps))
            episodes.append(eps)
            if progress is not None:
                progress(family, level, summaries[-1])
        out[family] = FamilyResult(family, levels, summaries, episodes)
    return out


def tolerated_levels(results, drop=0.1):
    """{family: the largest level up to which the success rate stays within ``drop`` (a fraction) of the family's
    first (nominal) level, every level before it included}."""
    out = {}
    for r in results.values():
        rates = [s["success_rate"] for s in r.summaries]
        k = 0
        while k + 1 < len(rates) and rates[k + 1] >= rates[0] - drop:
            k += 1
        out[r.family] = r.levels[k]
    return out


def robustness_table(results):
    """Markdown: one row per family, success rate per level."""
    lines = ["| perturbation | levels | success rate per level | mean return per level |", "|---|---|---|---|"]
    for r in results.values():
        lines.append(f"| {r.family} | {', '.join(f'{x:g}' for x in r.levels)} | "
                     f"{', '.join('%.0f %%' % (100 * s['success_rate']) for s in r.summaries)} | "
                     f"{', '.join('%.0f' % s['mean_return'] for s in r.summaries)} |")
    return "\n".join(lines)
