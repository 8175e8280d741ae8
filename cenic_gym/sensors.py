"""Sensors that read a simulator's state the way hardware does.

:class:`WrenchSensor` is a six-axis force/torque sensor mounted between a robot's flange and its tool (a wrist F/T
sensor, such as an ATI Mini45 between a Panda's flange and its hand). It reads the net *contact* wrench the tool
receives: the sum over the contacts of the last accepted step whose one geometry is the tool's and the other is
not, each force taken on the tool's side, with its moment about the sensor's origin, both in the sensor's axes::

    f = Σ_c s_c f_c,   τ = Σ_c (p_c − o) × s_c f_c,   reading = (Rᵀ f, Rᵀ τ)

with s_c = +1 when the tool's geometry is the contact's B (``ContactResults.force`` acts on B), −1 when it is A.
The tool's own weight and inertia are not in it: a real sensor reads them too and the robot's software subtracts
them (gravity and load compensation); what is left is what this sensor gives. A part the tool holds by friction
(a peg in the fingers) is not the tool: the sensor reads the part's weight and whatever pushes on it through the
grip, as a wrist sensor does. Forces are the step's average forces (impulse / step), so a reading after
``advance_to`` is that of the control period's last integrator step.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Wrench(NamedTuple):
    """A wrench in a sensor's frame: ``force`` (3,) [N] and ``torque`` (3,) [N m] about the frame's origin."""

    force: np.ndarray
    torque: np.ndarray


class WrenchSensor:
    """A wrist force/torque sensor (module docstring): ``frame`` names the sensor frame (a body, link or frame of
    the system: ``"panda/panda_hand"`` for the flange of a Panda's hand), ``tool`` the geometries on the tool side
    (names or name prefixes: ``("panda/panda_hand_", "panda/panda_leftfinger_", "panda/panda_rightfinger_")``).
    ``read(sim)`` -> :class:`Wrench` of the last accepted step."""

    def __init__(self, system, frame, tool):
        names = [g.name for g in system.geometries]
        prefixes = (tool,) if isinstance(tool, str) else tuple(tool)
        self.tool = np.array([any(n.startswith(p) for p in prefixes) for n in names], dtype=bool)
        if not self.tool.any():
            raise ValueError(f"WrenchSensor: no geometry starts with any of {prefixes!r}")
        system.frame_id(frame)  # raises naming it when the frame does not exist
        self.frame = frame

    def read(self, sim) -> Wrench:
        cr = sim.contact_results()
        origin, R = sim.body_pose(self.frame)
        sign = self.tool[cr.geom_b].astype(float) - self.tool[cr.geom_a].astype(float)  # on B: +1, on A: −1
        f = sign[:, None] * cr.force
        tau = np.cross(cr.point - origin, f)
        return Wrench(R.T @ f.sum(axis=0), R.T @ tau.sum(axis=0))
