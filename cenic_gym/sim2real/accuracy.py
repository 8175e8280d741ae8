"""Accuracy sweep: separate numerical error (it shrinks as CENIC's ε tightens) from what the policy does.

The same policy runs the same seeded episodes at every ε in ``accuracies`` (error control) and at every fixed step
δt in ``fixed_steps`` (plain fixed-step ICF, no error control). For each setting: success rate, mean return and the
divergence of each episode's final configuration from the same episode at the tightest ε (the reference):
‖pin.difference(q_ref, q)‖∞ [m, rad]. A policy whose success rate at some loose setting exceeds the reference's by
more than ``flag_margin`` is flagged: it succeeds only where the integration is inaccurate (it exploits numerical
artifacts), and will not transfer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .rollout import make_env, run_episode, state_divergence, summarize

FLAG_MARGIN = 0.2  # a setting is flagged when its success rate beats the reference's by more than this
ACCURACIES = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
FIXED_STEPS = (0.05, 0.01, 0.002)


@dataclass
class SweepRow:
    """One setting: label, env options, the summary of :func:`~cenic_gym.sim2real.rollout.summarize`, the final-
    state divergences [m, rad] per seed from the reference setting, and the episodes."""

    label: str
    options: dict
    summary: dict
    divergence: np.ndarray
    episodes: list = field(repr=False, default_factory=list)


@dataclass
class AccuracySweep:
    env_id: str
    policy: str
    seeds: list
    rows: list
    reference: str
    flagged: list  # labels of the settings where the policy does better than at the reference by > flag_margin
    flag_margin: float

    @property
    def exploits_numerics(self):
        return bool(self.flagged)


def _check_values(name, values, upper):
    values = tuple(values)
    for x in values:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not (0 < x <= upper):
            raise ValueError(f"{name} must be numbers in (0, {upper:g}], got {x!r} in {values!r}")
    return values


def accuracy_sweep(env_id, policy, seeds, accuracies=ACCURACIES, fixed_steps=FIXED_STEPS, env_kwargs=None,
                   max_steps=None, flag_margin=FLAG_MARGIN, progress=None):
    """Run the sweep (see the module docstring). ``seeds``: episode seeds (the same episodes in every setting);
    ``env_kwargs``: further env options; ``max_steps``: cut episodes short (tests); ``progress(label, summary)``:
    called after each setting. Returns an :class:`AccuracySweep`."""
    accuracies = _check_values("accuracies", accuracies, 1.0)
    fixed_steps = _check_values("fixed_steps", fixed_steps, 10.0)
    if not accuracies:
        raise ValueError("accuracies must hold at least one ε (the tightest is the reference)")
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    if not (0 <= flag_margin < 1):
        raise ValueError(f"flag_margin must be in [0, 1), got {flag_margin!r}")
    env_kwargs = dict(env_kwargs or {})
    for key in ("accuracy", "fixed_step"):
        if key in env_kwargs:
            raise ValueError(f"env_kwargs must not set {key!r}: the sweep sets it")
    settings = [(f"ε = {a:g}", dict(accuracy=a)) for a in sorted(accuracies, reverse=True)]
    settings += [(f"fixed δt = {h:g} s", dict(fixed_step=h)) for h in sorted(fixed_steps, reverse=True)]
    ref_label = f"ε = {min(accuracies):g}"
    runs = {}
    for label, options in sorted(settings, key=lambda s: s[0] != ref_label):  # the reference first
        env = make_env(env_id, **env_kwargs, **options)
        runs[label] = [run_episode(env, policy, s, max_steps=max_steps) for s in seeds]
        model = env.unwrapped.sim.system.model  # the same kinematic model in every setting
        env.close()
        if progress is not None:
            progress(label, summarize(runs[label]))
    ref = runs[ref_label]
    rows = []
    for label, options in settings:
        div = np.array([state_divergence(model, r0.q, r.q) for r0, r in zip(ref, runs[label])])
        rows.append(SweepRow(label, options, summarize(runs[label]), div, runs[label]))
    flagged = flag_loose_success({r.label: r.summary["success_rate"] for r in rows}, ref_label, flag_margin)
    return AccuracySweep(env_id, policy.name, seeds, rows, ref_label, flagged, flag_margin)


def flag_loose_success(success_rates, reference, margin):
    """Labels of the settings whose success rate exceeds the reference setting's by more than ``margin`` (a
    fraction): where a policy succeeds only because the integration is loose."""
    ref = success_rates[reference]
    return [label for label, rate in success_rates.items() if rate > ref + margin]


def sweep_table(sweep):
    """Markdown table of an :class:`AccuracySweep`."""
    lines = [f"Reference: {sweep.reference} (divergence = ‖pin.difference(q_ref, q_final)‖∞ per seed, "
             "[m, rad]).", "",
             "| setting | success | mean return | divergence median / max | substeps / env step | max penetration "
             "[mm] | sim failures |",
             "|---|---|---|---|---|---|---|"]
    for r in sweep.rows:
        s = r.summary
        n = s["episodes"]
        flag = " ⚑" if r.label in sweep.flagged else ""
        lines.append(f"| {r.label}{flag} | {round(s['success_rate'] * n)}/{n} ({100 * s['success_rate']:.0f} %) | "
                     f"{s['mean_return']:.1f} | {np.median(r.divergence):.2e} / {np.max(r.divergence):.2e} | "
                     f"{s['substeps_per_step']:.2f} | {1e3 * s['max_penetration']:.2f} | {s['sim_failures']} |")
    lines.append("")
    if sweep.flagged:
        lines.append(f"⚑ **Flagged**: the policy succeeds more often at {', '.join(sweep.flagged)} than at the "
                     f"reference (by more than {100 * sweep.flag_margin:.0f} points): it exploits numerical "
                     "artifacts of loose integration.")
    else:
        lines.append(f"Not flagged: no setting beats the reference's success rate by more than "
                     f"{100 * sweep.flag_margin:.0f} points.")
    return "\n".join(lines)
