"""The per-policy evaluation report: Markdown plus PNG plots (accuracy sweep, robustness curves, log replay) and a
JSON-lines log of every episode (seed, setting, perturbation drawn, outcome), written into one folder."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import matplotlib.ticker
import numpy as np

from .accuracy import accuracy_sweep, sweep_table
from .robustness import robustness_sweep, robustness_table, tolerated_levels


def _plt():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy(sweep, out):
    """Success rate and final-state divergence against ε (error control) and against δt (fixed steps)."""
    plt = _plt()
    eps = [(r.options["accuracy"], r) for r in sweep.rows if "accuracy" in r.options]
    fixed = [(r.options["fixed_step"], r) for r in sweep.rows if "fixed_step" in r.options]
    fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharey="row")
    for col, (data, xlabel) in enumerate(((eps, "CENIC accuracy ε [m, rad]"), (fixed, "fixed step δt [s]"))):
        if not data:
            axes[0, col].set_visible(False)
            axes[1, col].set_visible(False)
            continue
        x = np.array([d[0] for d in data])
        axes[0, col].semilogx(x, [100 * d[1].summary["success_rate"] for d in data], "o-")
        axes[0, col].set_ylim(-5, 105)
        axes[0, col].set_ylabel("success [%]")
        med = np.array([np.median(d[1].divergence) for d in data])
        mx = np.array([np.max(d[1].divergence) for d in data])
        keep = mx > 0  # the reference itself has divergence 0
        axes[1, col].loglog(x[keep], med[keep], "o-", label="median")
        axes[1, col].loglog(x[keep], mx[keep], "x--", label="max")
        axes[1, col].set_ylabel(f"final-state divergence from {sweep.reference} [m, rad]")
        axes[1, col].set_xlabel(xlabel)
        axes[1, col].legend()
        for ax in axes[:, col]:
            ax.grid(True, which="both", alpha=0.3)
            ax.set_xticks(x, [f"{v:g}" for v in x])  # the swept values (log axes over < 1 decade crowd labels)
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    fig.suptitle(f"{sweep.policy} on {sweep.env_id}: accuracy sweep ({len(sweep.seeds)} episodes per setting)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_robustness(results, policy_name, env_id, out):
    """One success-rate curve per perturbation family."""
    plt = _plt()
    n = len(results)
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.8 * rows), squeeze=False)
    for ax, r in zip(axes.flat, results.values()):
        ax.plot(r.levels, [100 * s["success_rate"] for s in r.summaries], "o-")
        ax.set_ylim(-5, 105)
        ax.set_title(r.family)
        ax.set_xlabel("level")
        ax.set_ylabel("success [%]")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle(f"{policy_name} on {env_id}: robustness")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_replay(result, out, title=""):
    """Joint tracking error over time (one line per joint) and object position errors."""
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for j, name in enumerate(result.joints):
        axes[0].plot(result.t, result.q_err[:, j], label=name)
    axes[0].set_ylabel("q_sim − q_log [rad, m]")
    axes[0].legend(fontsize=6, ncol=2)
    for b, e in result.pose_err.items():
        axes[1].plot(result.t, e, label=b)
    axes[1].set_ylabel("object position error [m]")
    axes[1].set_xlabel("t [s]")
    if result.pose_err:
        axes[1].legend()
    for ax in axes:
        ax.grid(True, alpha=0.3)
    mode = f"fixed δt = {result.fixed_step:g} s" if result.fixed_step else f"ε = {result.accuracy:g}"
    fig.suptitle(title or f"log replay ({mode})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_sim2sim(results, out):
    """Closed-loop state divergence between cenic-gym and the peer (MuJoCo or Drake) per env step (one line per
    episode) and the one-step divergence, one column per result."""
    from .sim2sim import describe_options

    plt = _plt()
    fig, axes = plt.subplots(2, len(results), figsize=(5 * len(results), 6), squeeze=False)
    for col, r in enumerate(results):
        for e in r.episodes:
            axes[0, col].semilogy(np.arange(1, e.divergence.size), e.divergence[1:], label=f"seed {e.seed}")
            if e.one_step.size:
                axes[1, col].semilogy(np.arange(1, e.one_step.size + 1), e.one_step, label=f"seed {e.seed}")
        axes[0, col].set_title(f"{r.policy} on {r.env_id}\nvs {describe_options(r)}", fontsize=9)
        axes[0, col].set_ylabel("closed-loop divergence [m, rad]")
        axes[1, col].set_ylabel("one-step divergence [m, rad]")
        axes[1, col].set_xlabel("env step")
        for ax in axes[:, col]:
            ax.grid(True, which="both", alpha=0.3)
        axes[0, col].legend(fontsize=7)
    fig.suptitle("cenic-gym vs " + ", ".join(sorted({r.peer_name for r in results})))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def replay_table(results):
    """Markdown: one row per replay setting."""
    lines = ["| replay setting | rows | max abs q error [rad, m] | RMS q error | max abs v error "
             "| max object error [m] | sim failure |", "|---|---|---|---|---|---|---|"]
    for r in results:
        s = r.summary()
        mode = f"fixed δt = {r.fixed_step:g} s" if r.fixed_step else f"ε = {r.accuracy:g}"
        objs = ", ".join(f"{b} {e:.2e}" for b, e in s["max_pose_err"].items()) or "-"
        lines.append(f"| {mode} | {s['rows']} | {s['max_q_err']:.2e} | {s['rms_q_err']:.2e} | {s['max_v_err']:.2e} | "
                     f"{objs} | {s['sim_failure'] or '-'} |")
    return "\n".join(lines)


def _sim2sim_section(env_id, policy, seeds, max_steps, env_kwargs, out):
    """The report's sim-to-sim lines with every peer that is installed (MuJoCo, Drake; sim2sim.png, episodes
    appended to episodes.jsonl); says why a peer did not run (package not installed, a system it does not map)."""
    from ..drake_model import DrakeMissing, import_drake
    from ..mujoco_model import RenderError, import_mujoco
    from ..peer_map import MappingError
    from .sim2sim import describe_options, sim2sim, sim2sim_table

    lines, results = ["## Sim-to-sim (MuJoCo, Drake)", ""], []
    for peer, check, missing, install in (("mujoco", import_mujoco, RenderError, "cenic-gym[render]"),
                                          ("drake", import_drake, DrakeMissing, "cenic-gym[peers]")):
        try:
            check()
        except missing:
            lines += [f"{peer}: skipped, the package is not installed (`pip install '{install}'`).", ""]
            continue
        try:
            results.append(sim2sim(env_id, policy, seeds, max_steps=max_steps, env_kwargs=env_kwargs, peer=peer))
        except MappingError as e:
            lines += [f"{peer}: not run: {e}.", ""]
    if not results:
        return lines
    plot_sim2sim(results, out / "sim2sim.png")
    with open(out / "episodes.jsonl", "a") as f:
        for res in results:
            for e in res.episodes:
                f.write(json.dumps(dict(sweep="sim2sim", peer=res.peer, **res.options, **e.row())) + "\n")
    return lines + [
        "The same seeded episodes with a second simulator as the physics: a scene generated from the env's model "
        "(`cenic_gym.mujoco_model`, `cenic_gym.drake_model`), the env's own controllers, observations, rewards "
        "and success test on the peer's state (`cenic_gym.sim2real.sim2sim`; "
        + "; ".join(describe_options(r) for r in results) + "; MuJoCo with its default contact parameters, Drake "
        "with our contact stiffness, dissipation and friction). The gap between the simulators is a modeling gap "
        "(contact model, friction model), not numerical error.", "",
        sim2sim_table(results), "", "![sim-to-sim](sim2sim.png)", ""]


def write_report(env_id, policy, out_dir, seeds, accuracies=None, fixed_steps=None, families=None, max_steps=None,
                 log=None, replay_accuracies=(1e-3, 1e-5), env_kwargs=None, progress=None, sim2sim=True):
    """Run the accuracy sweep, the robustness sweeps, (with ``log``) the log replay and (with ``sim2sim``) the
    sim-to-sim comparison with MuJoCo and Drake (:mod:`.sim2sim`) for ``policy`` on ``env_id``; write ``report.md``,
    ``accuracy.png``, ``robustness.png``, ``replay.png``, ``sim2sim.png`` and ``episodes.jsonl`` into ``out_dir``
    (created); ``env_kwargs``: env options for every run. Returns the path of report.md."""
    from .replay import replay

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kw = {k: v for k, v in (("accuracies", accuracies), ("fixed_steps", fixed_steps)) if v is not None}
    sweep = accuracy_sweep(env_id, policy, seeds, max_steps=max_steps, env_kwargs=env_kwargs,
                           progress=None if progress is None else lambda lb, s: progress("accuracy", lb, s), **kw)
    plot_accuracy(sweep, out / "accuracy.png")
    robust = robustness_sweep(env_id, policy, seeds, families=families, max_steps=max_steps, env_kwargs=env_kwargs,
                              progress=None if progress is None else
                              lambda f, lv, s: progress("robustness", f"{f} = {lv:g}", s))
    plot_robustness(robust, policy.name, env_id, out / "robustness.png")
    ref_rate = next(r.summary["success_rate"] for r in sweep.rows if r.label == sweep.reference)
    verdict = (f"**flagged**: succeeds more often at {', '.join(sweep.flagged)} than at {sweep.reference} (exploits "
               "numerical artifacts)") if sweep.flagged else "not flagged"
    with open(out / "episodes.jsonl", "w") as f:
        for r in sweep.rows:
            for e in r.episodes:
                f.write(json.dumps(dict(sweep="accuracy", setting=r.label, **e.row()), ensure_ascii=False) + "\n")
        for fam in robust.values():
            for level, eps in zip(fam.levels, fam.episodes):
                for e in eps:
                    f.write(json.dumps(dict(sweep="robustness", family=fam.family, level=level, **e.row())) + "\n")
    lines = [f"# Sim-to-real report: {policy.name} on {env_id}", "",
             *([f"Env options: `{json.dumps(env_kwargs)}`.", ""] if env_kwargs else []),
             f"Episodes per setting: {len(list(seeds))} (seeds {', '.join(str(s) for s in seeds)})"
             + (f", cut at {max_steps} steps" if max_steps else "") + ". Every episode (seed, setting, perturbation "
             "drawn, outcome) is in `episodes.jsonl`.", "",
             "## Summary", "",
             f"- Accuracy: {verdict}; success at {sweep.reference}: {100 * ref_rate:.0f} %.",
             "- Robustness (largest level keeping the success rate within 10 points of nominal): "
             + ", ".join(f"{f} {lv:g}" for f, lv in tolerated_levels(robust).items()) + ".", "",
             "## Accuracy sweep", "",
             "Numerical error shrinks as ε tightens; what remains at the tightest ε is the policy and the model. ",
             "", sweep_table(sweep), "", "![accuracy sweep](accuracy.png)", "",
             "## Robustness", "",
             "Perturbations are drawn per episode from `numpy.random.default_rng([seed, family, level])` "
             "(see `cenic_gym.sim2real.robustness`).", "",
             robustness_table(robust), "", "![robustness](robustness.png)", ""]
    if log is not None:
        results = [replay(env_id, log, accuracy=a, env_kwargs=env_kwargs) for a in replay_accuracies]
        plot_replay(results[-1], out / "replay.png", title=f"replay of {Path(str(log)).name}")
        lines += ["## Log replay", "", f"Log: `{log}`; its commands replayed through {env_id}'s controllers.", "",
                  replay_table(results), "", "![replay](replay.png)", ""]
    if sim2sim:
        lines += _sim2sim_section(env_id, policy, seeds, max_steps, env_kwargs, out)
    (out / "report.md").write_text("\n".join(lines))
    return out / "report.md"
