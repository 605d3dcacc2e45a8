"""Deliberately broken (and correct) mirror-descent updates for the kit's tests (docs/theory.md section 2)."""

from __future__ import annotations

import torch

EPS = torch.finfo(torch.float64).eps


def mirror(W, p):
    return W.abs().pow(p - 1) * W.sign()


def inverse(Q, p):
    return Q.abs().pow(1 / (p - 1)) * Q.sign()


def lp(g, r):
    """||g||_r computed after dividing by max|g| (no underflow of |g|^r for large r)."""
    m = g.abs().max()
    return m * torch.linalg.vector_norm(g / m, r) if m > 0 else m


def good_step(W, G, lr, p):
    out = inverse(mirror(W, p) - lr * G, p)
    if not torch.isfinite(G).all() or not torch.isfinite(out).all():
        raise FloatingPointError("overflow")
    return out


def wrong_exponent(W, G, lr, p):
    out = (mirror(W, p) - lr * G).abs().pow(1 / p) * (mirror(W, p) - lr * G).sign()
    if not torch.isfinite(out).all():
        raise FloatingPointError("overflow")
    return out


def no_sign(W, G, lr, p):
    out = (W.abs().pow(p - 1) - lr * G).abs().pow(1 / (p - 1))
    if not torch.isfinite(out).all():
        raise FloatingPointError("overflow")
    return out


def clipping(W, G, lr, p):
    fmax = torch.finfo(W.dtype).max
    return torch.nan_to_num(inverse(mirror(W, p) - lr * G, p), nan=0.0, posinf=fmax, neginf=-fmax)


def ascent(W, G, lr, p):
    return good_step(W, -G, lr, p)


def in_place(W, G, lr, p):
    new = good_step(W, G, lr, p)
    W.copy_(new)
    return new


def checks_dual_only(W, G, lr, p):
    """Raises when the dual step overflows, but not when the inverse map does (that needs p < 2)."""
    Q = mirror(W, p) - lr * G
    if not torch.isfinite(Q).all():
        raise FloatingPointError("dual overflow")
    return inverse(Q, p)


class Mirror(torch.optim.Optimizer):
    """A configurable l_p mirror-descent optimizer: correct by default, one defect per flag."""

    def __init__(
        self,
        params,
        lr=0.1,
        p=2.0,
        *,
        group_p=True,
        group_lr=True,
        skip_none=True,
        closure=True,
        normalize=None,
        eps=0.0,
        no_grad_closure=False,
    ):
        super().__init__(params, dict(lr=lr, p=p))
        self.flags = dict(
            group_p=group_p, group_lr=group_lr, skip_none=skip_none, normalize=normalize, eps=eps
        )
        self.takes_closure, self.no_grad_closure = closure, no_grad_closure

    def step(self, *args):
        if args and not self.takes_closure:
            raise TypeError("step() takes no closure")
        closure = args[0] if args else None
        loss = None
        if closure is not None:
            if self.no_grad_closure:
                with torch.no_grad():
                    loss = closure()
            else:
                with torch.enable_grad():
                    loss = closure()
        with torch.no_grad():
            for group in self.param_groups:
                p = group["p"] if self.flags["group_p"] else self.defaults["p"]
                lr = group["lr"] if self.flags["group_lr"] else self.defaults["lr"]
                params = [
                    w for w in group["params"] if w.grad is not None or not self.flags["skip_none"]
                ]
                grads = [w.grad for w in params]
                q = p / (p - 1)
                if self.flags["normalize"] == "global":
                    total = float(lp(torch.stack([lp(g, q) for g in grads]), q))
                    grads = [g / (total + self.flags["eps"]) for g in grads]
                elif self.flags["normalize"] == "per_tensor":
                    grads = [g / (lp(g, q) + self.flags["eps"]) for g in grads]
                news = [good_step(w, g, lr, p) for w, g in zip(params, grads)]
                for w, new in zip(params, news):
                    w.copy_(new)
        return loss


class HalfWritten(torch.optim.Optimizer):
    """Writes the clipped result first and raises afterwards: a half-written parameter."""

    def __init__(self, params, lr=0.1, p=2.0):
        super().__init__(params, dict(lr=lr, p=p))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for w in group["params"]:
                new = clipping(w, w.grad, group["lr"], group["p"])
                w.copy_(new)
                if (
                    not torch.isfinite(w.grad).all()
                    or (new.abs() == torch.finfo(new.dtype).max).any()
                ):
                    raise FloatingPointError("overflow detected after writing")
