"""``mdcert regpath``'s work: `run` computes the path of a validated `Config` into a `Result`."""

from __future__ import annotations

from experiments.commands.regpath.options import JOINT_EXAMPLE, KIND, Config
from experiments.commands.regpath.summary import DEFINITIONS, Result, token_notes

__all__ = ["run"]


def _load(name: str):
    from certify import AttentionProblem

    if name == JOINT_EXAMPLE:
        from experiments.regpath.joint import joint_example

        return joint_example()
    return AttentionProblem.load(name)


def run(config: Config) -> Result:
    """Load the problem, certify the reference SVM(s) of alpha and compute the path (and, with
    ``md_steps``, the joint mirror-descent path); nothing is written (`Result.write`).

    Reports on stdout, as progress, the problem read (variable lengths or provenance) and one line
    per radius; float64 overflow warnings (extreme radii) become ``summary["float_limits"]``.

    Raises:
        MdcertError: an unreadable problem, bad alpha, an infeasible or tied reference, ...
    """
    import warnings

    import numpy as np

    from certify.exact import format_fraction
    from certify.problem import resolve_alpha
    from experiments.runtime.progress import progress
    from experiments.regpath.svm_reference import reference_direction
    from experiments.runtime.terminal import problem_lines, terminal_width

    c, p, radii = config, config.p, np.asarray(config.radii, dtype=np.float64)
    problem = _load(c.problem)
    if problem.lengths is not None or problem.provenance:
        print("\n".join(problem_lines(problem, terminal_width())))
    alpha = resolve_alpha(
        problem, c.alpha if c.alpha is not None else ("opt" if problem.alpha is None else None)
    )
    reference = reference_direction(problem, p, alpha=alpha, digits=c.digits)
    bar = progress(len(radii), desc="regpath: radii", unit="R")

    def show(res) -> None:
        extra, loss = "", f"loss={res.loss:.6g}"
        if hasattr(res, "r"):
            extra = f" r={res.r:<9.4g} D_v={res.bregman_v_to_svm:.3e}"
            loss = f"log L={res.log_loss:.6g}"
        bar.write(
            f"R={res.R:<10.4g}{extra} D_W={res.bregman_to_svm:.3e} {loss} "
            f"stationarity={res.stationarity:.1e} tokens={list(res.selected)} "
            f"winner={res.winner}"
        )
        bar.update()

    starts = dict(
        starts=c.starts,
        seed=c.seed,
        alpha=alpha,
        reference=reference,
        svm_start=c.svm_start,
        dual_start=c.dual_start,
        loss=c.loss,
        progress=show,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        arrays: dict[str, np.ndarray] = {"radii": radii}
        if c.joint:
            from experiments.regpath.joint import joint_regularization_path
            from experiments.regpath.joint_md import joint_md_path
            from experiments.regpath.radius_function import parse_radius_function

            r_fun = parse_radius_function(c.r_of_R)
            v_reference = reference_direction(
                problem, p, alpha=alpha, svm="decoder", digits=c.digits
            )
            path = joint_regularization_path(
                problem, p, radii=radii, r_of_R=r_fun, v_reference=v_reference, **starts
            )
            bar.close()
            body = path.to_json()
            arrays["W"] = np.stack([r.W for r in path.results])
            arrays["v"] = np.stack([r.v for r in path.results])
            arrays["r"] = np.array(r_fun.values(radii))
            if c.md_steps:
                md_bar = progress(c.md_steps, desc="regpath: joint mirror descent", unit="step")
                with md_bar:
                    md = joint_md_path(
                        problem,
                        p,
                        steps=c.md_steps,
                        lr=c.md_lr,
                        alpha=alpha,
                        reference=reference,
                        v_reference=v_reference,
                        loss=c.loss,
                        progress=md_bar.set,
                    )
                body["joint_md"] = md.to_json()
        else:
            from experiments.regpath.fixed import regularization_path

            path = regularization_path(problem, p, radii=radii, digits=c.digits, **starts)
            bar.close()
            body = path.to_json()
            arrays["W"] = np.stack([r.W for r in path.results])
    for w in caught:
        if not issubclass(w.category, RuntimeWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    lengths = {"lengths": [int(k) for k in problem.lengths]} if problem.lengths is not None else {}
    summary = {
        "kind": KIND,
        "format": "mdcert-regpath/1",
        "joint": c.joint,
        "r_of_R": c.r_of_R,
        "problem": {
            "source": c.problem,
            "n": problem.n,
            "T": problem.T,
            "d": problem.d,
            "data_hash": problem.data_hash(),
            **lengths,
            **({"provenance": problem.provenance} if problem.provenance else {}),
        },
        "command": {
            "p": c.p_text,
            "radii": c.radii_text,
            "starts": c.starts,
            "seed": c.seed,
            "alpha": c.alpha,
            "loss": c.loss,
            "digits": c.digits,
        },
        **body,
    }
    summary["p"] = format_fraction(p)
    summary["definitions"] = dict(DEFINITIONS)
    limits = sorted(
        {
            f"{w.category.__name__}: {w.message}"
            for w in caught
            if issubclass(w.category, RuntimeWarning)
        }
    )
    if limits:
        summary["float_limits"] = limits
    summary["token_notes"] = token_notes(summary)
    return Result(summary=summary, arrays=arrays, output=c.output, overwrite=c.overwrite)
