"""Compares sampler plans dumped by `test_sampler --dump FILE` with sampler_ref (TAP).

usage: sampler_plan_check.py PLANS.json

For every dumped case (solver, steps, shift): sigmas and timesteps must equal
sampler_ref.sampling_schedule exactly, and the trajectory the plan gives on the
synthetic model (X before every step and the final X) must match the reference sampler
driven by the same model to max-abs <= 1e-10. The synthetic model, on n values with
timestep t:  v[k] = 0.3 x[k] - 0.2 x[(k + 1) % n] + 0.1 sin(k + t / 100).
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampler_ref  # noqa: E402

TOL = 1e-10
EXPECTED_SOLVERS = ("euler", "unipc")
EXPECTED_STEPS = (1, 2, 3, 10, 50)
EXPECTED_SHIFTS = (1.0, 3.0, 5.0)


def fake_model(x, t):
    k = np.arange(x.shape[0], dtype=np.float64)
    return 0.3 * x - 0.2 * np.roll(x, -1) + 0.1 * np.sin(k + float(t) / 100.0)


def reference_trajectory(solver, steps, shift, x_init, coef_dtype=np.float64):
    if solver == "euler":
        s = sampler_ref.EulerSampler(steps, shift)
    elif coef_dtype is np.float64:
        s = sampler_ref.UniPCSampler(steps, shift)
    else:
        s = sampler_ref.UniPCSampler(steps, shift, coef_dtype=coef_dtype)
    x = np.array(x_init, dtype=np.float64)
    traj = [x]
    for i, t in enumerate(s.timesteps):
        v = fake_model(x, t)
        x = s.step(i, v, x)
        traj.append(x)
    return np.stack(traj)


def main(argv):
    if len(argv) != 2:
        print("usage: sampler_plan_check.py PLANS.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        cases = json.load(f)["cases"]

    results = []
    worst = {"euler": 0.0, "unipc": 0.0}
    fp32_gap = 0.0
    seen = set()
    for c in cases:
        solver, steps, shift = c["solver"], int(c["steps"]), float(c["shift"])
        seen.add((solver, steps, shift))
        name = "%s steps %d shift %g" % (solver, steps, shift)
        sig_ref, ts_ref = sampler_ref.sampling_schedule(steps, shift)
        sig = np.array(c["sigmas"], dtype=np.float64)
        ts = np.array(c["timesteps"], dtype=np.float64)
        ok = sig.shape == sig_ref.shape and np.array_equal(sig, sig_ref)
        results.append((ok, "%s: sigmas exact" % name))
        ok = ts.shape == ts_ref.shape and np.array_equal(ts, ts_ref.astype(np.float64))
        results.append((ok, "%s: timesteps exact" % name))

        traj = np.array(c["traj"], dtype=np.float64)
        ref = reference_trajectory(solver, steps, shift, c["x_init"])
        if traj.shape != ref.shape:
            results.append((False, "%s: trajectory shape %s vs %s" %
                            (name, traj.shape, ref.shape)))
            continue
        err = float(np.max(np.abs(traj - ref)))
        worst[solver] = max(worst[solver], err)
        results.append((err <= TOL, "%s: trajectory max-abs %.3g" % (name, err)))
        if solver == "unipc":
            ref32 = reference_trajectory(solver, steps, shift, c["x_init"], np.float32)
            fp32_gap = max(fp32_gap, float(np.max(np.abs(ref32[-1] - ref[-1]))))

    missing = [(a, b, s) for a in EXPECTED_SOLVERS for b in EXPECTED_STEPS
               for s in EXPECTED_SHIFTS if (a, b, s) not in seen]
    results.append((not missing, "dump covers solvers x steps %s x shifts %s%s" %
                    (EXPECTED_STEPS, EXPECTED_SHIFTS,
                     "" if not missing else " (missing %s)" % (missing,))))

    print("1..%d" % len(results))
    failed = 0
    for k, (ok, msg) in enumerate(results, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", k, msg))
        failed += not ok
    print("# max-abs plan vs reference: euler %.3g, unipc %.3g" % (worst["euler"],
                                                                  worst["unipc"]))
    print("# reference with fp32 step coefficients differs from float64 by up to %.3g"
          % fp32_gap)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
