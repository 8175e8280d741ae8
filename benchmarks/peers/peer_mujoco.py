"""MuJoCo versions of a cenic-gym scene, generated from the cenic-gym MultibodySystem by the package's mapping
(``cenic_gym.mujoco_model``: same bodies, inertias, joints with axes / limits / damping / armature, couplers,
shapes, poses, the candidate pair set as explicit ``<pair>`` elements with our pair friction rule, initial state).
Solver settings are MuJoCo's defaults (Newton, pyramidal cones, Euler integrator, tolerance 1e-8, 100 iterations);
only ``opt.timestep`` and the contact parameters are set.

Contact parameter variants (see README.md, "MuJoCo"):

* ``matched``: direct-format ``solref = (-κ, -β)`` with κ = k · A and β = c · A, where k is cenic-gym's
  pair stiffness [N/m], c the linear damping standing in for H&C (peer_common.linear_damping) and A [1/kg] the
  normal inverse mass of the moving geometry's lowest point towards the ground at the initial configuration
  (peer_common.contact_inverse_mass: 1/m for a free sphere, 4/m for a face-down cube corner). Constant impedance
  ``solimp = (0.95, 0.95, 0.001, 0.5, 2)``, so the constraint dynamics read a1 = 0.05 a0 - κ r - β v: the spring
  and damper per unit mass match ours, but 95 % of the non-contact load is carried without penetration and friction
  is a soft constraint. A pair takes the element-wise minimum of its two geometries' values (fixed geometry:
  (-1e-12, -1e-12), so the moving geometry's values win), as MuJoCo combines two direct solrefs.
* ``default``: MuJoCo's default solref (0.02, 1) and solimp (0.9, 0.95, 0.001, 0.5, 2) (what the CENIC paper ran).

condim 3, friction μ = 2 μ_a μ_b / (μ_a + μ_b) of the dynamic coefficients per pair (all equal in these scenes).
Joint PD control: ``<position>`` actuators (kp, kv, forcerange = ± effort limit), explicit in MuJoCo's Euler
integrator.
"""
from __future__ import annotations

import time

import mujoco
import numpy as np
import pinocchio as pin

from cenic_gym import mujoco_model as mm

from peer_common import contact_inverse_mass, ground_normal, scene_joints_cached

SOLIMP_MATCHED = (0.95, 0.95, 0.001, 0.5, 2.0)


def matched_contact(system, damping_c):
    """(geom_a, geom_b) -> (solref, solimp) of the ``matched`` variant (module docstring)."""
    normal = ground_normal(system)
    cache = {}

    def geom_solref(i):
        if i not in cache:
            geo = system.geometries[i]
            if geo.joint == 0:
                cache[i] = np.array([-1e-12, -1e-12])
            else:
                k_pair = 0.5 * geo.material.stiffness  # both sides carry 2k in these scenes -> pair k (series rule)
                A = contact_inverse_mass(system, system.q0, i, normal)
                cache[i] = np.array([-k_pair * A, -damping_c * A])
        return cache[i]

    return lambda a, b: (np.minimum(geom_solref(a), geom_solref(b)), SOLIMP_MATCHED)


def spec(system, timestep, variant="matched", damping_c=0.0, controller=None, integrator="euler"):
    """The ``mujoco.MjSpec`` of a peer scene (``spec(...).to_xml()`` gives the MJCF)."""
    if variant not in ("matched", "default"):
        raise ValueError(f"variant must be 'matched' or 'default', got {variant!r}")
    names = {ji.joint: ji.name for ji in scene_joints_cached(system)}
    act = [] if controller is None else [
        (names[jid], controller["kp"][k], controller["kd"][k], controller["effort"][k])
        for k, jid in enumerate(controller["joints"])]
    return mm.build_spec(system, timestep, contact=matched_contact(system, damping_c) if variant == "matched" else None,
                         integrator=integrator, actuators=act)


class MujocoScene:
    def __init__(self, system, timestep, variant="matched", damping_c=0.0, controller=None, integrator="euler"):
        self.system = system
        self.joints = scene_joints_cached(system)
        self.timestep = float(timestep)
        self.controller = controller
        self.mapped = mm.MujocoModel(spec(system, timestep, variant, damping_c, controller, integrator), system)
        self.model = self.mapped.model

    @property
    def xml(self):
        return self.mapped.spec.to_xml()

    def new_data(self, q=None, v=None):
        """MuJoCo data at the cenic-gym state (q, v) (default: the system's initial state)."""
        d = mujoco.MjData(self.model)
        if self.controller is not None:
            d.ctrl[:] = self.controller["q_target"]
        self.mapped.set_state(d, self.system.q0 if q is None else q, self.system.v0 if v is None else v)
        return d

    def gym_state(self, d):
        """(q, v) in cenic-gym's layout, free-body quaternions normalized."""
        q, v = self.mapped.state(d)
        return pin.normalize(self.system.model, q), v

    def nsteps(self, t_end):
        return int(round(t_end / self.timestep))

    def unstable(self, d):
        return self.mapped.unstable(d)

    def timed_run(self, t_end):
        d = self.new_data()
        n = self.nsteps(t_end)
        t0 = time.perf_counter()
        mujoco.mj_step(self.model, d, nstep=n)
        wall = time.perf_counter() - t0
        q, v = self.gym_state(d)
        return dict(wall=wall, q=q, v=v, accepted=n, rejected=0, unstable=self.unstable(d))

    def monitored_run(self, t_end, penetration):
        d = self.new_data()
        worst = 0.0
        for _ in range(self.nsteps(t_end)):
            mujoco.mj_step(self.model, d)
            q, _ = self.gym_state(d)
            worst = max(worst, penetration.penetration(q))
        q, v = self.gym_state(d)
        return dict(q=q, v=v, penetration=worst, unstable=self.unstable(d))
