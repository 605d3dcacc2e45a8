"""The property-test kit's entry points (docs/theory.md section 2): `run_kit` runs every property of an
l_p mirror-descent update in every (p regime, dtype, device) cell and returns a `KitReport`;
`check_mirror_update` does the same and raises ``AssertionError`` with the failing cells.

Example (a step function; an optimizer class or factory works the same way):

    >>> from experiments.testing import check_mirror_update
    >>> check_mirror_update(lambda W, G, lr, p: my_step(W, G, lr, p))  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from certify import lp as ref
from experiments.testing.adapters import Kind, KitUsageError, make_adapter
from experiments.testing.groups import GROUPS
from experiments.testing.properties import SINGLE, Context
from experiments.testing.reference import Expectation
from experiments.testing.report import CellResult, KitReport, Outcome
from experiments.testing.sign import BANDS, make_sign_caller, make_smoothed_sign
from experiments.testing.strategies import REGIMES, exponents, p_text, regime_of

__all__ = ["PROPERTIES", "SIGN_PROPERTIES", "DEFAULT_RTOL", "run_kit", "check_mirror_update"]

PROPERTIES = tuple(SINGLE) + tuple(GROUPS)
#: properties of another update, run on their own (``properties=SIGN_PROPERTIES``): the smoothed
#: sign step ``(W, G, lr, eps) -> W - lr G / (|G| + eps)`` of docs/theory.md section 8.7
SIGN_PROPERTIES = ("smoothed_sign",)
#: relative tolerance of the dual-space comparisons per dtype (about 80 ulps for float32)
DEFAULT_RTOL = {torch.float64: 1e-9, torch.float32: 1e-5}


def _skip_reason(prop: str, kind: Kind, regime: str, normalize: str | None) -> str | None:
    if prop in ("param_groups", "grad_none", "closure") and kind is Kind.STEP:
        return "needs an optimizer (a step function has no parameter groups or closure)"
    if prop == "normalization" and normalize is None:
        return "no normalized step declared (normalize='global' or 'per_tensor')"
    if prop == "gradient_descent" and regime != "two":
        return "only at p = 2"
    return None


def _devices(devices: Sequence[str]) -> list[torch.device]:
    out = []
    for name in devices:
        dev = torch.device(name)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise KitUsageError(f"device {name!r} requested but CUDA is not available")
        out.append(dev)
    return out


def run_kit(
    update: Callable,
    *,
    kind: str = "auto",
    p: Any = None,
    p_as: str = "float",
    properties: Sequence[str] = PROPERTIES,
    regimes: Sequence[str] = REGIMES,
    dtypes: Sequence[torch.dtype] = (torch.float64, torch.float32),
    devices: Sequence[str] = ("cpu",),
    normalize: str | None = None,
    norm: Any = "dual",
    max_examples: int = 25,
    rtol: float | None = None,
    gd_bitwise: bool = False,
    mirror_map: Callable | None = None,
    inverse_mirror_map: Callable | None = None,
    shrink: bool = True,
    eps: float = 1e-8,
    band: str = "safe",
    ulps: int = 0,
    samples: int = 4096,
    seed: int = 0,
) -> KitReport:
    """Run the docs/theory.md section 2 properties against ``update`` and report per p regime.

    Args:
        update: a step function ``(W, G, lr, p) -> W_new``, an Optimizer class taking ``lr=`` and ``p=``,
            or a factory ``(params, lr, p) -> Optimizer`` (see `experiments.testing.adapters`).
        kind: "auto" (guess from the signature), "step" or "optimizer".
        p: test only this exponent (its regime); default: every regime of ``regimes``.
        p_as: p reaches user code as a float ("float", an `Exponent` whose ``.exact`` is the Fraction)
            or as the Fraction itself ("fraction").
        properties: a subset of `PROPERTIES`; regimes: a subset of `experiments.testing.strategies.REGIMES`.
        dtypes: float64 and/or float32; devices: "cpu" and/or "cuda".
        normalize: the update's declared gradient normalization: None, "global" (one norm over all
            tensors of a group) or "per_tensor"; norm: "dual" (``||G||_q``) or a number r (``||G||_r``).
        max_examples: hypothesis examples per cell; rtol: dual-space tolerance (default per dtype).
        gd_bitwise: at p = 2 require bitwise ``torch.add(W, G, alpha=-lr)``.
        mirror_map, inverse_mirror_map: optional user maps ``(tensor, p) -> tensor`` to round-trip.
        shrink: shrink each failure to a minimal counterexample (False: report the first one found,
            faster).
        eps, band, ulps, samples, seed: options of ``properties=("smoothed_sign",)``
            (docs/theory.md section 8.7), which tests an update ``(W, G, lr, eps)`` (step function,
            Optimizer class taking ``lr=`` and ``eps=``, or factory ``(params, lr, eps)``) against
            ``W + ((-lr) G) / (|G| + eps)`` bit for bit: ``band="safe"`` on the safe band only
            (where Adam with betas (0, 0) matches it), ``"full"`` outside it too; ``ulps`` allows
            that many units in the last place; each cell also compares ``samples`` seeded
            vectorized gradients (``seed``). p, regimes and the l_p options do not apply to it.

    Raises:
        KitUsageError: the update cannot be called as given (the message names ``kind=``), unknown
            options, or CUDA requested without CUDA.
    """
    unknown = set(properties) - set(PROPERTIES) - set(SIGN_PROPERTIES)
    if unknown:
        raise KitUsageError(
            f"unknown properties {sorted(unknown)}; choose from {PROPERTIES + SIGN_PROPERTIES}"
        )
    if set(properties) & set(SIGN_PROPERTIES):
        if set(properties) - set(SIGN_PROPERTIES):
            raise KitUsageError(
                "smoothed_sign tests a different update (W, G, lr, eps) -> W_new; "
                "run it on its own: properties=('smoothed_sign',)"
            )
        return _run_sign(
            update,
            kind=kind,
            dtypes=dtypes,
            devices=devices,
            max_examples=max_examples,
            shrink=shrink,
            eps=eps,
            band=band,
            ulps=ulps,
            samples=samples,
            seed=seed,
        )
    if normalize not in (None, "global", "per_tensor"):
        raise KitUsageError(f"normalize must be None, 'global' or 'per_tensor', got {normalize!r}")
    if norm != "dual" and not (isinstance(norm, (int, float)) and norm >= 1):
        raise KitUsageError(f"norm must be 'dual' or a number >= 1, got {norm!r}")
    bad_dt = [d for d in dtypes if d not in DEFAULT_RTOL]
    if bad_dt:
        raise KitUsageError(f"dtypes must be torch.float64 and/or torch.float32, got {bad_dt}")
    adapter = make_adapter(update, kind=kind, p_as=p_as)
    devs = _devices(devices)
    if p is not None:
        exact = ref.exponents_of(p).exact
        regimes, fixed = [regime_of(exact)], st.just(exact)
    else:
        bad_r = set(regimes) - set(REGIMES)
        if bad_r:
            raise KitUsageError(f"unknown regimes {sorted(bad_r)}; choose from {REGIMES}")
        fixed = None
    cfg = _settings(max_examples, shrink)
    builders = {**SINGLE, **GROUPS}
    results = []
    for prop in properties:
        for regime in regimes:
            skip = _skip_reason(prop, adapter.kind, regime, normalize)
            for dev in devs:
                for dt in dtypes:
                    name = str(dt).replace("torch.", "")
                    if skip:
                        results.append(
                            CellResult(prop, regime, name, dev.type, Outcome.SKIPPED, skip)
                        )
                        continue
                    ctx = Context(
                        adapter,
                        dt,
                        dev,
                        Expectation(normalize, norm, rtol or DEFAULT_RTOL[dt]),
                        gd_bitwise,
                        mirror_map,
                        inverse_mirror_map,
                    )
                    test = cfg(
                        builders[prop](
                            ctx, fixed if fixed is not None else exponents(regime=regime)
                        )
                    )
                    try:
                        with warnings.catch_warnings():  # the kit's zero gradients are deliberate
                            warnings.filterwarnings(
                                "ignore",
                                "LpMirrorDescent: the gradient of .* is exactly zero",
                                RuntimeWarning,
                            )
                            test()
                    except AssertionError as exc:
                        results.append(
                            CellResult(
                                prop,
                                regime,
                                name,
                                dev.type,
                                Outcome.FAILED,
                                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                            )
                        )
                        continue
                    except Unsatisfiable:
                        results.append(
                            CellResult(
                                prop,
                                regime,
                                name,
                                dev.type,
                                Outcome.SKIPPED,
                                "no valid example in this regime",
                            )
                        )
                        continue
                    results.append(
                        CellResult(prop, regime, name, dev.type, Outcome.PASSED, "", max_examples)
                    )
    opts = [
        f"p={p_text(p)}" if p is not None else f"regimes {', '.join(regimes)}",
        "dtypes " + ", ".join(str(d).replace("torch.", "") for d in dtypes),
        "devices " + ", ".join(devices),
        f"normalize={normalize!r}"
        + (f" by {'||G||_q' if norm == 'dual' else f'||G||_{norm}'}" if normalize else ""),
        f"p passed as {p_as}",
        f"{max_examples} examples per cell",
    ]
    return KitReport(adapter.how(), "; ".join(opts), tuple(results))


def _settings(max_examples: int, shrink: bool):
    # no "explain" phase: it re-runs the failing case hundreds of times and adds little here
    phases = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        phases=phases + ((Phase.shrink,) if shrink else ()),
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )


def _run_sign(
    update: Callable,
    *,
    kind: str,
    dtypes,
    devices,
    max_examples: int,
    shrink: bool,
    eps: float,
    band: str,
    ulps: int,
    samples: int,
    seed: int,
) -> KitReport:
    """Run smoothed_sign per (band part, dtype, device) cell (docs/theory.md section 8.7)."""
    if band not in ("safe", "full"):
        raise KitUsageError(f"band must be 'safe' or 'full', got {band!r}")
    if not (isinstance(eps, (int, float)) and 0 < eps < float("inf")):
        raise KitUsageError(f"eps must be a positive finite number, got {eps!r}")
    if not (isinstance(ulps, int) and ulps >= 0) or not (isinstance(samples, int) and samples >= 0):
        raise KitUsageError(f"ulps and samples must be integers >= 0, got {ulps!r}, {samples!r}")
    bad_dt = [d for d in dtypes if d not in DEFAULT_RTOL]
    if bad_dt:
        raise KitUsageError(f"dtypes must be torch.float64 and/or torch.float32, got {bad_dt}")
    caller = make_sign_caller(update, kind=kind)
    devs = _devices(devices)
    cfg = settings(_settings(max_examples, shrink), derandomize=True)  # the same examples each run
    results = []
    for part in BANDS[: 1 if band == "safe" else 2]:
        for dev in devs:
            for dt in dtypes:
                name = str(dt).replace("torch.", "")
                examples, sampled = make_smoothed_sign(
                    caller, dt, dev, eps=eps, part=part, ulps=ulps, samples=samples, seed=seed
                )
                try:
                    cfg(examples)()
                    sampled()
                except AssertionError as exc:
                    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    results.append(
                        CellResult("smoothed_sign", part, name, dev.type, Outcome.FAILED, msg)
                    )
                    continue
                results.append(
                    CellResult(
                        "smoothed_sign",
                        part,
                        name,
                        dev.type,
                        Outcome.PASSED,
                        "",
                        max_examples + samples,
                    )
                )
    opts = [
        f"band={band!r}",
        f"eps={eps}",
        "bit for bit" if ulps == 0 else f"within {ulps} ulps",
        "dtypes " + ", ".join(str(d).replace("torch.", "") for d in dtypes),
        "devices " + ", ".join(devices),
        f"{max_examples} examples + {samples} sampled gradients per cell (seed {seed})",
    ]
    return KitReport(caller.how(), "; ".join(opts), tuple(results))


def check_mirror_update(update: Callable, **options) -> KitReport:
    """`run_kit`, raising ``AssertionError`` with the failing cells (each regime's counterexample) if any.

    Call it from a plain test function (not one decorated with ``@given``); it respects the active
    hypothesis profile (e.g. the deterministic ``ci`` profile) apart from its own settings.

    Returns:
        The `KitReport` when every cell passes.
    """
    report = run_kit(update, **options)
    if not report.ok:
        raise AssertionError(report.format(failures_only=True))
    return report
