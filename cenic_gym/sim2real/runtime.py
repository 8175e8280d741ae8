"""A minimal runtime for an exported policy, as a robot's control computer would run it: numpy + onnxruntime only.

This file imports nothing from cenic-gym, torch, Stable-Baselines3 or Ray: copy it next to ``policy.onnx`` on the
control computer. The ONNX graph (:func:`cenic_gym.sim2real.export.export_onnx`) maps a raw observation batch
``obs`` (B, n_obs) float32 to actions ``action`` (B, n_act) float32, observation normalization and action clipping
included. A policy of a goal-conditioned env (dict observations) takes the dict's entries flattened and
concatenated in the order the file's metadata ``obs_layout`` names (``"achieved_goal:3,desired_goal:3,..."``);
:class:`OnnxRuntimePolicy` does that itself when given a dict.

    python runtime.py policy.onnx observations.csv [-o actions.csv]   # one observation per row (CSV or .npy)

or, in a control loop::

    policy = OnnxRuntimePolicy("policy.onnx")
    for obs in stream:                     # (n_obs,) each
        send(policy(obs))                  # (n_act,)
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


OBS_LAYOUT_KEY = "obs_layout"  # metadata of an exported policy whose observations are dicts


def layout_to_text(layout):
    """[(key, size), ...] -> "key:size,..." (the metadata value)."""
    return ",".join(f"{k}:{int(n)}" for k, n in layout)


def layout_from_text(text):
    """"key:size,..." -> [(key, size), ...]."""
    out = []
    for item in text.split(","):
        key, _, n = item.rpartition(":")
        out.append((key, int(n)))
    return out


def flatten_obs(obs, layout):
    """A dict observation as one float32 vector: its entries (each flattened) concatenated in ``layout`` order
    ([(key, size), ...]); ValueError naming a missing key or a wrong size."""
    parts = []
    for key, n in layout:
        if key not in obs:
            raise ValueError(f"observation has no entry {key!r} (the policy takes {[k for k, _ in layout]})")
        x = np.asarray(obs[key], dtype=np.float32).reshape(-1)
        if x.shape[0] != n:
            raise ValueError(f"observation entry {key!r} has {x.shape[0]} values, the policy takes {n}")
        parts.append(x)
    return np.concatenate(parts)


class OnnxRuntimePolicy:
    """An exported policy in an onnxruntime session (CPU, one thread: deterministic and cheap). ``policy(obs)``
    takes one observation (n_obs,) or a batch (B, n_obs) and returns float32 actions of the same leading shape;
    a policy exported from dict observations also takes one dict (flattened by its ``obs_layout``)."""

    def __init__(self, path, threads=1):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = threads
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        inp = self.session.get_inputs()[0]
        self.input_name = inp.name
        self.n_obs = inp.shape[-1] if isinstance(inp.shape[-1], int) else None
        meta = self.session.get_modelmeta().custom_metadata_map
        self.obs_layout = layout_from_text(meta[OBS_LAYOUT_KEY]) if OBS_LAYOUT_KEY in meta else None

    def __call__(self, obs):
        if isinstance(obs, dict):
            if self.obs_layout is None:
                raise ValueError("this policy takes flat observations (n_obs,), got a dict")
            obs = flatten_obs(obs, self.obs_layout)
        x = np.asarray(obs, dtype=np.float32)
        single = x.ndim == 1
        x = x[None] if single else x
        if x.ndim != 2 or (self.n_obs is not None and x.shape[1] != self.n_obs):
            raise ValueError(f"observation must have shape ({self.n_obs},) or (B, {self.n_obs}), got {np.shape(obs)}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"observation must be finite, got {obs!r}")
        (y,) = self.session.run(None, {self.input_name: x})
        return y[0] if single else y


def run_stream(policy, observations):
    """Yield ``policy(obs)`` for each observation of an iterable (one control period each)."""
    for obs in observations:
        yield policy(obs)


def _read(path):
    if str(path).endswith(".npy"):
        return np.load(path)
    return np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=2)


def main(argv=None):
    p = argparse.ArgumentParser(description="Run an exported ONNX policy on a stream of observations "
                                            "(numpy + onnxruntime only).")
    p.add_argument("policy", help="exported .onnx policy")
    p.add_argument("observations", help="observations, one per row: CSV (comma-separated, no header) or .npy")
    p.add_argument("-o", "--out", default=None, help="write the actions here (CSV or .npy); default: print them")
    a = p.parse_args(argv)
    policy = OnnxRuntimePolicy(a.policy)
    actions = np.array(list(run_stream(policy, _read(a.observations))), dtype=np.float32)
    if a.out is None:
        np.savetxt(sys.stdout, actions, delimiter=",", fmt="%.9g")
    elif a.out.endswith(".npy"):
        np.save(a.out, actions)
    else:
        np.savetxt(a.out, actions, delimiter=",", fmt="%.9g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
