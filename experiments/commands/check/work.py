"""The work of ``mdcert check`` (`run`): load the problem (or the ``--run`` trajectory's), run and
record the training path when asked, check the theorem's hypotheses, and say what the report means
for the path; its `Result` gives the terminal text (`Result.lines`) and the JSON report
(`Result.write`). Nothing is printed here but the progress bars."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from experiments.commands.check.config import Config
from experiments.runtime.problemkind import is_classification_file

__all__ = ["PathNotes", "Result", "run", "path_notes"]


@dataclass(frozen=True)
class PathNotes:
    """What a report means for the trained path: ``lines`` for the terminal and ``record`` for the
    JSON report's ``path_notes`` (both empty without a path)."""

    lines: tuple[str, ...] = ()
    record: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Result:
    """A finished check: the ``report`` (`theorems.verdict.TheoremReport`) on ``problem``, the
    path ``notes``, and ``seconds`` (wall times: ``training_path`` when a path ran, ``total``).
    ``exit_code`` is 0 whatever the verdicts: the check ran."""

    config: Config
    report: Any
    problem: Any
    notes: PathNotes
    seconds: dict
    exit_code: int = 0

    def lines(self, width: int) -> list[str]:
        """The terminal summary at ``width`` columns: the problem (when it has lengths or a
        provenance), the table of hypotheses, and alpha, the SVM bracket, path notes and time."""
        from experiments.commands.check.text import summary_lines, table_lines
        from experiments.runtime.terminal import problem_lines, wrap_lines

        out = []
        if self.problem.lengths is not None or self.problem.provenance:
            out += problem_lines(self.problem, width)
        out += table_lines(self.report, width=width)
        tail = summary_lines(
            self.report,
            from_training=self.config.from_training,
            steps=self.config.steps,
            notes=self.notes.lines,
            seconds=self.seconds["total"],
        )
        return out + wrap_lines(tail, width)

    def to_json(self) -> dict:
        """The JSON report: the theorem report, the inputs, the path notes and the wall times."""
        c = self.config
        payload = self.report.to_json()
        payload["inputs"] = {
            "problem": c.problem,
            "p": c.p,
            "alpha": c.alpha,
            "init": c.init,
            "lr": c.lr,
            "steps": c.steps if c.lr else None,
            "mu": c.mu,
            "R": c.R,
            "loss": c.loss,
            "digits": c.digits,
            "segment": c.segment,
            "step_rule": c.step_rule,
            "run": c.run,
            "trajectory": c.trajectory,
        }
        payload["path_notes"] = self.notes.record
        payload["quantities"]["seconds"] = {
            **payload["quantities"].get("seconds", {}),
            **self.seconds,
        }
        return payload

    def write(self, out) -> None:
        """Write the JSON report to the file ``out`` (atomically: complete or absent)."""
        from certify.io.jsonenc import dumps
        from experiments.runtime.outputs import write_text_atomic

        write_text_atomic(out, dumps(self.to_json(), indent=2, default=str))


def _final_tokens(problem, W):
    """The tokens the attention of W selects: argmax of the logits, padding never attended."""
    import numpy as np

    logits = np.einsum("ntd,de,ne->nt", problem.X, W, problem.z)
    logits[~problem.token_mask] = -np.inf
    return np.argmax(logits, axis=1)


def path_notes(config: Config, report, trajectory, problem, run_traj) -> PathNotes:
    """What the report means for the trained path: the step rule checked, the re-run against the
    run's record (``run_traj``, a `experiments.paths.trajectory.RunTrajectory`), and a training that
    ended at tokens that are not locally optimal."""
    lines: list[str] = []
    out: dict = {}
    if trajectory is None:
        return PathNotes(tuple(lines), out)
    rule = (
        "normalized steps G/||G||_q (eta_k = lr/||G(W_k)||_q)"
        if config.normalize
        else "constant steps (eta_k = lr)"
    )
    lines.append(f"path: {config.steps} steps of {rule}, lr {config.lr}")
    out["step_rule"] = config.step_rule
    alpha_last = _final_tokens(problem, trajectory[-1])
    if run_traj is not None:
        from experiments.paths.trajectory import compare_endings

        cmp = compare_endings(run_traj, trajectory[-1], alpha_last)
        out["run"] = {"dir": run_traj.run_dir, "trajectory": run_traj.index, **cmp}
        rel = cmp["relative_distance_W_final"]
        lines.append(
            f"trajectory {run_traj.index} of {run_traj.run_dir}: the re-run "
            + (
                "ends at the run's final tokens"
                if cmp["same_final_tokens"]
                else "does NOT end at the run's final tokens"
            )
            + ("" if rel is None else f", ||W_K - W_run||_F / ||W_run||_F = {rel:.1e}")
            + (
                ""
                if run_traj.dtype == "float64"
                else f" (the run was {run_traj.dtype}, the re-run float64)"
            )
        )
    local = next((h for h in report.hypotheses if h.name == "tokens_locally_optimal"), None)
    if config.from_training and local is not None and local.verdict.value == "fails":
        lines.append(
            f"training ended at a non-locally-optimal selection: the tokens the final "
            f"attention selects after {config.steps} steps are not locally optimal, so "
            f"Theorem {report.theorem}'s conclusion says nothing about this path's limit "
            f"(train longer, or from another W(0))"
        )
        out["training_ended_non_locally_optimal"] = True
    return PathNotes(tuple(lines), out)


def _classification(config: Config):
    """``--theorem pgd`` on a classification problem (`experiments.commands.check.pgd`); any other
    pairing of theorem and problem kind is refused in one line naming the one to use."""
    from certify.classification import ClassificationProblem, load_problem
    from certify.errors import MdcertError
    from experiments.commands.check.pgd import run_pgd

    if config.theorem != "pgd":
        raise MdcertError(
            f"{config.problem!r} is a classification problem; theorem {config.theorem} is about "
            f"attention problems: check the p-GD result on it with --theorem pgd"
        )
    problem = load_problem(config.problem)
    if not isinstance(problem, ClassificationProblem):
        raise MdcertError(
            f"{config.problem!r} is an attention problem; --theorem pgd needs a classification "
            f"problem (kind = 'classification': X, y): check attention problems with --theorem 6, "
            f"8, 10, 11 or 31"
        )
    return run_pgd(config, problem)


def run(config: Config) -> Result:
    """Check ``config.theorem``'s hypotheses (after running the training path, when it has one);
    ``--theorem pgd`` on a classification problem returns a `experiments.commands.check.pgd.PgdResult`
    (the same ``lines``, ``to_json``, ``write`` and ``exit_code``)."""
    from fractions import Fraction

    import numpy as np

    from certify.errors import MdcertError
    from certify.problem import AttentionProblem
    from experiments.commands.check.training import load_init, train_path
    from experiments.runtime.progress import progress
    from theorems.catalogue import check_theorem, get_theorem
    from theorems.context import CheckContext

    t0 = time.perf_counter()
    if config.theorem == "pgd" or (
        config.problem is not None and is_classification_file(config.problem)
    ):
        return _classification(config)
    theorem = get_theorem(config.theorem)
    run_traj = None
    if config.run is not None:
        from experiments.paths.trajectory import load_trajectory

        run_traj = load_trajectory(config.run, config.trajectory)
    problem = run_traj.problem if run_traj is not None else AttentionProblem.load(config.problem)
    W0 = trajectory = step_etas = None
    seconds = {}
    alpha = config.alpha
    if config.training:
        from experiments.runtime.resources import check_memory

        # the float64 path, then its exact integer logits and ball evaluations (Python objects)
        check_memory(
            (config.steps + 1) * (problem.d**2 + problem.n * problem.T) * 300,
            what=f"a checked path of {config.steps} steps (d={problem.d}, n={problem.n}, "
            f"T={problem.T})",
            fix="reduce --steps",
        )
        W0 = run_traj.W0 if run_traj is not None else load_init(config.init, problem.d)
        if not np.any(W0):
            raise MdcertError(
                "--init is the zero matrix; its direction is undefined - give a nonzero W0"
            )
        t1 = time.perf_counter()
        with progress(config.steps, desc="check: training path", unit="step") as bar:
            trajectory, step_etas = train_path(
                problem,
                W0,
                lr=float(config.eta),
                p=config.p_exact,
                steps=config.steps,
                loss=config.loss.strip().lower(),
                normalize=config.normalize,
                progress=bar.set,
            )
            if step_etas is not None:
                step_etas = [Fraction(x) for x in step_etas]  # exact: the float64 each step used
        seconds["training_path"] = round(time.perf_counter() - t1, 3)
        if config.from_training:
            alpha = [int(a) for a in _final_tokens(problem, trajectory[-1])]
    ctx = CheckContext(problem, digits=config.digits)
    with progress(
        len(theorem.hypotheses), desc="check: hypotheses", unit="checked", eta=False
    ) as bar:

        def told(done: int, total: int, name: str) -> None:
            bar.set(done)
            bar.stage(name, force=True)

        report = check_theorem(
            theorem.number,
            ctx,
            p=config.p_exact,
            alpha=alpha,
            loss=config.loss,
            W0=W0,
            mu=config.mu_exact,
            R=config.R_exact,
            eta=config.eta,
            trajectory=trajectory,
            segment=config.segment,
            progress=told,
            step_etas=step_etas,
        )
    notes = path_notes(config, report, trajectory, problem, run_traj)
    seconds["total"] = round(time.perf_counter() - t0, 3)
    return Result(config=config, report=report, problem=problem, notes=notes, seconds=seconds)
