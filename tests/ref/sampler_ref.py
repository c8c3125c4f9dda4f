"""NumPy reference of the Wan2.1 flow-matching samplers.

A port of FlowUniPCMultistepScheduler (Wan2.1 wan/utils/fm_solvers_unipc.py) restricted
to the configuration the Wan2.1 pipelines use: num_train_timesteps=1000, solver_order=2,
solver_type="bh2", predict_x0=True, prediction_type="flow_prediction",
lower_order_final=True, disable_corrector=[], use_dynamic_shifting=False,
final_sigmas_type="zero", shift=1 at construction and set_timesteps(steps, shift=SHIFT)
at use. The structure (stateful scheduler, convert_model_output, UniP / UniC B(h)
updates, step) mirrors the original so the two can be read side by side.

dtypes, as in the original:
  * training sigmas are an fp32 tensor, so sigma_max = float32(0.999) widened to double
    and sigma_min = 0;
  * the inference schedule is built in float64 (np.linspace, shift); the model
    timesteps are those float64 values * 1000 truncated to int64;
  * the sigmas the solver uses are the same values rounded to fp32.
The original then evaluates its step coefficients in fp32 scalar arithmetic; here they
are evaluated in float64 by default (coef_dtype=np.float32 approximates the original).

API:
  sampling_schedule(steps, shift) -> (sigmas float64 [steps + 1], timesteps int64 [steps])
  EulerSampler(steps, shift), UniPCSampler(steps, shift): .timesteps, .sigmas and
  .step(i, v, x) -> x_next, where v is the guided velocity predicted at x for step i.
  Steps must be taken in order i = 0, 1, ..., steps - 1.
"""

import numpy as np

NUM_TRAIN_TIMESTEPS = 1000


def _train_sigmas(num_train_timesteps=NUM_TRAIN_TIMESTEPS, shift=1.0):
    """Training sigmas as the scheduler's constructor builds them (fp32)."""
    alphas = np.linspace(1, 1 / num_train_timesteps, num_train_timesteps)[::-1].copy()
    sigmas = (1.0 - alphas).astype(np.float32)
    shift = np.float32(shift)
    sigmas = (shift * sigmas / (np.float32(1) + (shift - np.float32(1)) * sigmas)).astype(
        np.float32)
    return sigmas


def _set_timesteps(steps, shift, num_train_timesteps=NUM_TRAIN_TIMESTEPS):
    """set_timesteps(steps, shift=shift) on a scheduler constructed with shift=1.

    Returns (sigmas fp32 [steps + 1], timesteps int64 [steps])."""
    if int(steps) != steps or steps < 1:
        raise ValueError("steps must be a positive integer")
    if not (shift > 0):
        raise ValueError("shift must be positive")
    train = _train_sigmas(num_train_timesteps, 1.0)
    sigma_max = train[0].item()
    sigma_min = train[-1].item()
    sigmas = np.linspace(sigma_max, sigma_min, int(steps) + 1).copy()[:-1]
    sigmas = shift * sigmas / (1 + (shift - 1) * sigmas)
    sigma_last = 0
    timesteps = sigmas * num_train_timesteps
    sigmas = np.concatenate([sigmas, [sigma_last]]).astype(np.float32)
    return sigmas, timesteps.astype(np.int64)


def sampling_schedule(steps, shift):
    """(sigmas float64 [steps + 1] (fp32 values, last 0), timesteps int64 [steps])."""
    sigmas, timesteps = _set_timesteps(steps, shift)
    return sigmas.astype(np.float64), timesteps


class EulerSampler:
    """x_{i+1} = x_i + (sigma_{i+1} - sigma_i) v_i on the same schedule."""

    def __init__(self, steps, shift):
        self.sigmas, self.timesteps = sampling_schedule(steps, shift)
        self.num_inference_steps = len(self.timesteps)
        self._step_index = 0

    def step(self, i, v, x):
        if i != self._step_index:
            raise ValueError("steps must be taken in order: expected %d, got %d" %
                             (self._step_index, i))
        self._step_index += 1
        return x + (self.sigmas[i + 1] - self.sigmas[i]) * v


class UniPCSampler:
    """FlowUniPCMultistepScheduler (bh2, order 2, predict-x0, lower_order_final)."""

    solver_order = 2

    def __init__(self, steps, shift, coef_dtype=np.float64):
        self._f = np.dtype(coef_dtype).type
        sigmas32, self.timesteps = _set_timesteps(steps, shift)
        # Solver sigmas: fp32 values, held in the coefficient dtype.
        self._sig = [self._f(s) for s in sigmas32]
        self.sigmas = sigmas32.astype(np.float64)
        self.num_inference_steps = len(self.timesteps)
        self.model_outputs = [None] * self.solver_order
        self.lower_order_nums = 0
        self.last_sample = None
        self.this_order = None
        self.disable_corrector = []
        self._step_index = 0

    @property
    def step_index(self):
        return self._step_index

    def _sigma_to_alpha_sigma_t(self, sigma):
        return self._f(1) - sigma, sigma

    def _log(self, v):
        with np.errstate(divide="ignore"):
            return self._f(np.log(v))

    def _lambda(self, sigma):
        alpha, sigma = self._sigma_to_alpha_sigma_t(sigma)
        return self._f(self._log(alpha) - self._log(sigma))

    def convert_model_output(self, model_output, sample):
        sigma_t = self._sig[self.step_index]
        return sample - sigma_t * model_output

    def _b_coefficients(self, hh, order, rks):
        """R (order x order) and b of the B(h) update, bh2."""
        f = self._f
        with np.errstate(divide="ignore", invalid="ignore"):
            h_phi_1 = f(np.expm1(hh))
            h_phi_k = f(f(h_phi_1 / hh) - f(1))
            factorial_i = 1
            B_h = f(np.expm1(hh))
            R = []
            b = []
            for i in range(1, order + 1):
                R.append(np.power(rks, i - 1).astype(f))
                b.append(f(f(h_phi_k * f(factorial_i)) / B_h))
                factorial_i *= i + 1
                h_phi_k = f(f(h_phi_k / hh) - f(1 / factorial_i))
        return h_phi_1, B_h, np.stack(R), np.array(b, dtype=f)

    def multistep_uni_p_bh_update(self, model_output, sample, order):
        f = self._f
        model_output_list = self.model_outputs
        m0 = model_output_list[-1]
        x = sample

        sigma_t, sigma_s0 = self._sig[self.step_index + 1], self._sig[self.step_index]
        alpha_t, sigma_t = self._sigma_to_alpha_sigma_t(sigma_t)
        lambda_t = self._lambda(sigma_t)
        lambda_s0 = self._lambda(sigma_s0)
        h = f(lambda_t - lambda_s0)

        rks = []
        D1s = []
        for i in range(1, order):
            si = self.step_index - i
            mi = model_output_list[-(i + 1)]
            lambda_si = self._lambda(self._sig[si])
            rk = f(f(lambda_si - lambda_s0) / h)
            rks.append(rk)
            D1s.append((mi - m0) / rk)
        rks.append(f(1.0))
        rks = np.array(rks, dtype=f)

        hh = f(-h)
        h_phi_1, B_h, R, b = self._b_coefficients(hh, order, rks)

        if len(D1s) > 0:
            if order == 2:
                rhos_p = np.array([0.5], dtype=f)
            else:
                rhos_p = np.linalg.solve(R[:-1, :-1], b[:-1]).astype(f)
        else:
            D1s = None

        with np.errstate(invalid="ignore"):
            x_t_ = f(sigma_t / sigma_s0) * x - f(alpha_t * h_phi_1) * m0
        if D1s is not None:
            pred_res = sum(rhos_p[k] * D1s[k] for k in range(len(D1s)))
        else:
            pred_res = 0
        return x_t_ - f(alpha_t * B_h) * pred_res

    def multistep_uni_c_bh_update(self, this_model_output, last_sample, this_sample, order):
        f = self._f
        model_output_list = self.model_outputs
        m0 = model_output_list[-1]
        x = last_sample
        model_t = this_model_output

        sigma_t, sigma_s0 = self._sig[self.step_index], self._sig[self.step_index - 1]
        alpha_t, sigma_t = self._sigma_to_alpha_sigma_t(sigma_t)
        lambda_t = self._lambda(sigma_t)
        lambda_s0 = self._lambda(sigma_s0)
        h = f(lambda_t - lambda_s0)

        rks = []
        D1s = []
        for i in range(1, order):
            si = self.step_index - (i + 1)
            mi = model_output_list[-(i + 1)]
            lambda_si = self._lambda(self._sig[si])
            rk = f(f(lambda_si - lambda_s0) / h)
            rks.append(rk)
            D1s.append((mi - m0) / rk)
        rks.append(f(1.0))
        rks = np.array(rks, dtype=f)

        hh = f(-h)
        h_phi_1, B_h, R, b = self._b_coefficients(hh, order, rks)

        if order == 1:
            rhos_c = np.array([0.5], dtype=f)
        else:
            rhos_c = np.linalg.solve(R, b).astype(f)

        x_t_ = f(sigma_t / sigma_s0) * x - f(alpha_t * h_phi_1) * m0
        if len(D1s) > 0:
            corr_res = sum(rhos_c[k] * D1s[k] for k in range(len(D1s)))
        else:
            corr_res = 0
        D1_t = model_t - m0
        return x_t_ - f(alpha_t * B_h) * (corr_res + rhos_c[-1] * D1_t)

    def step(self, i, v, x):
        """One scheduler step: v is the guided velocity predicted at x for step i."""
        if i != self._step_index:
            raise ValueError("steps must be taken in order: expected %d, got %d" %
                             (self._step_index, i))
        sample = x
        use_corrector = (self.step_index > 0 and
                         self.step_index - 1 not in self.disable_corrector and
                         self.last_sample is not None)

        model_output_convert = self.convert_model_output(v, sample=sample)
        if use_corrector:
            sample = self.multistep_uni_c_bh_update(this_model_output=model_output_convert,
                                                    last_sample=self.last_sample,
                                                    this_sample=sample,
                                                    order=self.this_order)

        for k in range(self.solver_order - 1):
            self.model_outputs[k] = self.model_outputs[k + 1]
        self.model_outputs[-1] = model_output_convert

        this_order = min(self.solver_order, len(self.timesteps) - self.step_index)
        self.this_order = min(this_order, self.lower_order_nums + 1)
        assert self.this_order > 0

        self.last_sample = sample
        prev_sample = self.multistep_uni_p_bh_update(model_output=v,
                                                     sample=sample,
                                                     order=self.this_order)

        if self.lower_order_nums < self.solver_order:
            self.lower_order_nums += 1
        self._step_index += 1
        return prev_sample
