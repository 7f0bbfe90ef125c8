"""Independent NumPy implementation of docs/semantics.md (test oracle; shares no code with
snnexport). Forward in float32 in the documented operation order; BPTT in float64."""
import math

import numpy as np

F32 = np.float32


def sigmoid_grad(x, alpha):
    sg = 1.0 / (1.0 + np.exp(-alpha * np.asarray(x, np.float64)))
    return alpha * sg * (1.0 - sg)


def atan_grad(x, alpha):
    x = np.asarray(x, np.float64)
    return (alpha / 2.0) / (1.0 + (math.pi / 2.0 * alpha * x) ** 2)


def _x(x):
    return np.asarray(x, np.float64)


def _squarewave(x, n, period):
    w = 2.0 * math.pi / period
    return 4.0 / period * sum(np.cos((2 * i - 1) * w * _x(x)) for i in range(1, int(n)))


def _s2nn(x, a, b):
    x = _x(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = b / (x + 1.0)
    return np.where(x < 0, sigmoid_grad(x, a), tail)


def _fake_numerical(x, a):
    x = _x(x)
    with np.errstate(divide="ignore"):
        return np.minimum(np.where(x >= 0, 1.0, -1.0) / x, a)


def _log_tailed(x, a):
    x = _x(x)
    with np.errstate(divide="ignore"):
        return np.where(x > 1, 1.0 / x, np.where(x <= 0, a, 1.0))


# dS/dx of every surrogate (SpikingJelly's activation_based.surrogate), f(x, first parameter
# [, second]).
SURROGATE_GRAD = {
    "sigmoid": sigmoid_grad,
    "atan": atan_grad,
    "piecewise_quadratic": lambda x, a: np.where(np.abs(_x(x)) > 1 / a, 0.0,
                                                 a - a * a * np.abs(_x(x))),
    "piecewise_exp": lambda x, a: a / 2 * np.exp(-a * np.abs(_x(x))),
    "soft_sign": lambda x, a: 1.0 / (2 * a * (1 / a + np.abs(_x(x))) ** 2),
    "super_spike": lambda x, a: a / (np.abs(_x(x)) + 1.0) ** 2,
    "nonzero_sign_log_abs": lambda x, a: 1.0 / (1 / a + np.abs(_x(x))),
    "erf": lambda x, a: a / math.sqrt(math.pi) * np.exp(-(a * _x(x)) ** 2),
    "piecewise_leaky_relu": lambda x, w, c: np.where(np.abs(_x(x)) < w, 1 / (2 * w), c),
    "squarewave_fourier_series": _squarewave,
    "s2nn": _s2nn,
    "q_pseudo_spike": lambda x, a: (1 + 2 / (a - 1) * np.abs(_x(x))) ** (-a),
    "leaky_k_relu": lambda x, leak, k: np.where(_x(x) >= 0, k, leak),
    "fake_numerical_gradient": _fake_numerical,
    "log_tailed_relu": _log_tailed,
    "rect": lambda x, a: np.where(np.abs(_x(x)) < 0.5 / a, a, 0.0),
}


def _k(kind, tau, w):
    """The factor 1/tau (LIF) or sigmoid(w) (PLIF) used by the charge equation."""
    if kind == "ParametricLIFNode":
        return 1.0 / (1.0 + math.exp(-float(w)))
    return 1.0 / tau


def forward(kind, x, v_threshold=1.0, v_reset=0.0, tau=2.0, decay_input=True, w=None):
    """x: float32 [T, ...]. Returns (spikes [T, ...], H [T, ...], V after every step [T, ...])."""
    x = np.asarray(x, F32)
    thr = F32(v_threshold)
    vr = F32(0.0 if v_reset is None else v_reset)
    v = np.full(x.shape[1:], vr, F32)
    spikes, hs, vs = [], [], []
    for xt in x:
        if kind == "IFNode":
            h = v + xt
        elif kind == "LIFNode":
            t = F32(tau)
            h = v + (xt - (v - vr)) / t if decay_input else v - (v - vr) / t + xt
        else:
            k = F32(_k(kind, tau, w))
            h = v + (xt - (v - vr)) * k if decay_input else v - (v - vr) * k + xt
        s = (h - thr >= 0).astype(F32)
        v = (s * vr + (F32(1) - s) * h) if v_reset is not None else h - s * thr
        spikes.append(s), hs.append(h), vs.append(v)
    return np.stack(spikes), np.stack(hs), np.stack(vs)


def backward(kind, x, grad_s, v_threshold=1.0, v_reset=0.0, tau=2.0, decay_input=True, w=None,
             surrogate="sigmoid", alpha=4.0, detach_reset=False, beta=None):
    """BPTT by hand. Returns (dL/dx [T, ...], dL/dw scalar or None) for L = sum(grad_s * S)."""
    s, h, v = (a.astype(np.float64) for a in forward(kind, x, v_threshold, v_reset, tau,
                                                     decay_input, w))
    x = np.asarray(x, np.float64)
    thr, hard = v_threshold, v_reset is not None
    vr = v_reset if hard else 0.0
    k = _k(kind, tau, w) if kind != "IFNode" else None
    v_prev = np.concatenate([np.full((1,) + x.shape[1:], vr), v[:-1]])
    dsurr = SURROGATE_GRAD[surrogate]
    gx, gk, gv = np.zeros_like(x), 0.0, np.zeros(x.shape[1:])
    for t in reversed(range(x.shape[0])):
        dv_ds = 0.0 if detach_reset else ((vr - h[t]) if hard else -thr)
        dv_dh = (1.0 - s[t]) if hard else 1.0
        g_s = grad_s[t] + gv * dv_ds
        params = (alpha,) if beta is None else (alpha, beta)
        g_h = g_s * dsurr(h[t] - thr, *params) + gv * dv_dh
        if kind == "IFNode":
            dh_dx, dh_dv = 1.0, 1.0
        else:
            dh_dx, dh_dv = (k if decay_input else 1.0), 1.0 - k
            if kind == "ParametricLIFNode":
                dh_dk = (x[t] - (v_prev[t] - vr)) if decay_input else -(v_prev[t] - vr)
                gk += float(np.sum(g_h * dh_dk))
        gx[t] = g_h * dh_dx
        gv = g_h * dh_dv
    gw = gk * k * (1.0 - k) if kind == "ParametricLIFNode" else None
    return gx, gw
