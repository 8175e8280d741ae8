"""The sim-to-real report of the shipped Franka pick-and-place policy (``training/policies/CenicFranka-v0``).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/franka_policy_report.py [--episodes 20] [--section-only]

Runs ``cenic-gym sim2real report`` on the policy (what a user runs: ``cenic-gym sim2real report --policy
training/policies/CenicFranka-v0/model.zip --out training/policies/CenicFranka-v0/report --episodes 20``; the env and
its options come from the policy's ``run.json``): the accuracy sweep (ε = 1e-1 … 1e-5 and fixed steps of 50, 10
and 2 ms: does it succeed only where the integration is loose?), the robustness sweeps (observation noise, action
delay, controller gains, effort limits, friction, mass, pushes on the box) and the same episodes with MuJoCo and, where
pydrake is installed, Drake as the physics (MuJoCo with its default contact parameters, Drake with our contact
stiffness, dissipation and friction: the gap between simulators is a modeling gap, not numerical error). Seeds
0 … episodes−1 (none of them a training or evaluation seed of the recipe).

Writes ``training/policies/CenicFranka-v0/report/`` (``report.md``, the plots, ``episodes.jsonl``) and the RESULTS.md
section ``franka-policy-report``: the report's three tables and a closing verdict derived from the numbers.
``--section-only`` rebuilds the section from that folder (the provenance line then names the report's own run).
About 6 min at 20 episodes; not a timing benchmark.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

from bench_common import REPO, git_rev, provenance, write_section  # noqa: E402

ENV_ID = "CenicFranka-v0"
POLICY = REPO / "training" / "policies" / ENV_ID
REPORT = POLICY / "report"


def episodes_by(path):
    """{(sweep, setting): [episode rows]} of the report's episodes.jsonl."""
    out = {}
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if e["sweep"] == "accuracy":
            key = ("accuracy", e["setting"])
        elif e["sweep"] == "robustness":
            key = ("robustness", f"{e['family']}={e['level']:g}")
        else:
            key = ("sim2sim", e["peer"])
        out.setdefault(key, []).append(e)
    return out


def rate(rows, key="success"):
    return sum(bool(r[key]) for r in rows) / len(rows)


def conclusion(eps):
    """What the numbers say about taking the policy to a real Panda (a paragraph built from them)."""
    acc = {k[1]: rate(v) for k, v in eps.items() if k[0] == "accuracy"}
    nominal = acc.get("ε=0.001", acc.get("ε = 0.001"))
    rob = {k[1]: rate(v) for k, v in eps.items() if k[0] == "robustness"}
    peers = {k[1]: rate(v, "success_peer") for k, v in eps.items() if k[0] == "sim2sim"}

    def levels(family):
        return sorted((float(k.split("=")[1]), v) for k, v in rob.items() if k.startswith(family + "="))

    base = rob.get("obs_noise=0", nominal or 1.0)
    keep, lose = [], []
    for fam in ("action_delay", "obs_noise", "gain", "effort_limit", "friction", "mass", "push"):
        lv = levels(fam)
        ok = [x for x, v in lv if v >= base - 0.1]
        bad = [x for x, v in lv if v < base - 0.1]
        if not bad:
            keep.append(f"{fam} ≤ {max(ok):g}" if ok else fam)
        else:
            lose.append(f"{fam} (holds to {max(ok):g}, fails from {min(bad):g})" if ok else f"{fam} (fails at every level)")
    tight = [acc[k] for k in ("ε = 1e-05", "fixed δt = 0.002 s") if k in acc]
    above = [k for k, v in acc.items() if nominal is not None and v > nominal + 0.1]
    if above:
        verdict = (f"**For a real Panda**: the policy succeeds more often at {', '.join(above)} than at the task's "
                   "ε = 1e-3 (integration artefacts); check it at ε = 1e-5 before trusting it on hardware. ")
    elif nominal is not None and tight and min(tight) >= nominal - 0.1:
        verdict = ("**For a real Panda**: numerical error is not a risk (the policy succeeds as well at ε = 1e-5 and "
                   "at 2 ms fixed steps as at the task's 1e-3, and no loose setting beats 1e-3). ")
    else:
        verdict = ("**For a real Panda**: the policy's success changes with the integration (ε = 1e-5 or 2 ms fixed "
                   "steps against 1e-3): look at the accuracy table before anything else. ")
    verdict += ("It keeps its success across the whole swept range of " + ", ".join(keep or ["none"]) + "; it loses it "
                "under " + (", ".join(lose) if lose else "none of them") + ". ")
    if peers:
        worst_peer = min(peers, key=peers.get)
        if peers[worst_peer] < (nominal or 0) - 0.1:
            verdict += (f"The largest risk is the contact model: with {worst_peer} as the physics the same network "
                        f"succeeds in {100 * peers[worst_peer]:.0f} % of the episodes"
                        + (", with " + ", ".join(f"{p} in {100 * v:.0f} %" for p, v in peers.items()
                                                 if p != worst_peer) if len(peers) > 1 else "")
                        + f" (cenic-gym: {100 * (nominal or 0):.0f} %): the grasp depends on how the finger pads' "
                        "contact is modelled, so measure the real pads (friction, compliance under the squeeze), "
                        "match the simulator to them or train over their range before trusting the grasp. ")
        else:
            verdict += "Other simulators' physics (" + ", ".join(peers) + ") give the same success. "
    return verdict + ("Not tested: how well a real camera estimates the box's pose (here it is exact up to the noise "
                      "model).")


def report_parts(report):
    """{"## heading": [its non-empty lines]} of the report's sections (``report.md``'s text)."""
    parts, head = {}, None
    for line in report.splitlines():
        if line.startswith("## "):
            head = line
            parts[head] = []
        elif head is not None and line.strip() and not line.startswith("!["):
            parts[head].append(line)
    return parts


def sweep_sentence(rows):
    """The accuracy sweep table's rows (header and rule first) as one sentence: setting, success, substeps, contact."""
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows[2:]]
    return "; ".join(f"{c[0]}: {c[1]}, {c[4]}, {c[5]} mm" for c in cells)


def section_lines(report, eps):
    """The RESULTS section's body after the provenance lines: the report's tables, their definitions, the verdict."""
    parts = report_parts(report)
    table = lambda head: [x for x in parts.get(head, []) if x.startswith("|")]  # noqa: E731
    text = lambda head: [x for x in parts.get(head, []) if not x.startswith("|")]  # noqa: E731
    acc = text("## Accuracy sweep")
    acc_note = " ".join(x for x in acc if x.startswith(("Reference", "Not flagged", "⚑")))
    peers = next((h for h in parts if h.startswith("## Sim-to-sim")), None)
    peer_note = " ".join(text(peers)) if peers else ""
    folder = f"../training/policies/{ENV_ID}/report/"
    options = next((x for x in report.splitlines() if x.startswith("Env options")), "")
    seeds = next((x for x in report.splitlines() if x.startswith("Episodes per setting")), "").split(" (seeds")[0]
    lines = [f"The shipped policy `training/policies/{ENV_ID}/model.zip` (its README: training and held-out "
             f"success). {options} {seeds}. The full report ([report.md]({folder}report.md), plots, every episode in "
             f"`episodes.jsonl`): `training/policies/{ENV_ID}/report/`.", "",
             f"**Accuracy sweep** (success, CENIC substeps per env step, deepest contact; the full table in the "
             f"report): {sweep_sentence(table('## Accuracy sweep'))}. {acc_note}", "",
             "**Robustness**: " + " ".join(text("## Robustness")), "", *table("## Robustness")]
    if peers:
        lines += ["", f"**{peers[3:]}**: {peer_note}", "", *table(peers)]
    return lines + ["", conclusion(eps)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--section-only", action="store_true", help="rewrite the RESULTS section from the report folder")
    a = p.parse_args(argv)
    cmd = (f"NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/franka_policy_report.py --episodes {a.episodes}")
    t0, load0 = time.time(), os.getloadavg()[0]
    if not a.section_only:
        from cenic_gym import cli

        status = cli.main(["sim2real", "report", "--policy", str(POLICY / "model.zip"), "--out", str(REPORT),
                           "--episodes", str(a.episodes)])
        if status:
            return status
        (REPORT / "runtime.json").write_text(json.dumps(dict(
            runtime_s=time.time() - t0, load0=load0, git=git_rev(),
            date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))))
    info = json.loads((REPORT / "runtime.json").read_text())
    note = f"; report run {info['date']}, git {info['git']}" if a.section_only and "date" in info else ""
    lines = provenance("benchmarks/franka_policy_report.py", f"`{cmd}`", info["runtime_s"], info["load0"],
                       ("numba", ("pinocchio (pin)", "pin"), "stable-baselines3", "torch", "mujoco", "drake"), note=note)
    lines += section_lines((REPORT / "report.md").read_text(), episodes_by(REPORT / "episodes.jsonl"))
    write_section("franka-policy-report", "\n".join(lines), f"## Sim-to-real: the learned Franka policy ({ENV_ID})")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
