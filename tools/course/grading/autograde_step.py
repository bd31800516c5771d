"""nbgrader's Autograde on one submission, and what its outcome means: scores, cells that were cut short or not
run (cell_limits.py), or the reason no grade could be computed (the kernel died, a fork bomb wrote into its
channels, ...)."""

from __future__ import annotations

import re
from pathlib import Path

from traitlets.config import Config

from .. import config, sandbox
from ..build.nbgrader_course import course_config, run_converter
from .cell_limits import LimitedExecute

FORKED_SEND = "attempted to send message from fork"
"""What jupyter_client logs (into the worker's log, through the kernel's stderr) when a forked copy of the kernel
tries to talk on its channels."""


def autograded_path(course: Path, student: str) -> Path:
    return course / "autograded" / student / config.ASSIGNMENT_ID / config.NOTEBOOK_FILE


NBGRADER_AUTOFLUSH_WARNING = r"Object of type <Submitted\w+> not in session, add operation along"
"""What SQLAlchemy 2.0.19 and later warn, three times per submission, while nbgrader's gradebook records it: the
relationship is flushed before nbgrader adds the object itself, which it does next. Every score the tests read
back from the gradebook is right with it; left unfiltered it filled every worker log."""


def quiet_gradebook_warnings() -> None:
    """Drop only that warning (its message, SQLAlchemy's category) in this grading process."""
    import warnings

    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", message=NBGRADER_AUTOFLUSH_WARNING, category=SAWarning)


def autograde(course: Path, student: str, settings: dict, sandboxed: bool) -> dict:
    """Run Autograde in this process, its cells under the rule of cell_limits.py; the kernel goes through the
    sandbox when ``sandboxed``."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    quiet_gradebook_warnings()
    overrides = Config()
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    overrides.Autograde.autograde_preprocessors = [LimitedExecute if pp is Execute else pp for pp in default]
    overrides.Execute.timeout = max(1, round(settings["cell_timeout"]))
    overrides.LimitedExecute.hung_timeout = float(settings["hung_timeout"])
    overrides.LimitedExecute.after_hang_budget = float(settings["after_hang_budget"])
    overrides.Execute.shutdown_kernel = "immediate"  # every output is in; what the kernel left running dies with it
    if sandboxed:
        overrides.Execute.kernel_manager_class = sandbox.KERNEL_MANAGER
    return run_converter(Autograde, course, student_id=student, overrides=overrides, force=True, create_student=True)


def scores(course: Path, student_id: str) -> dict[str, dict]:
    from nbgrader.api import Gradebook

    course_id = course_config(course).CourseDirectory.get("course_id", "")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id) as gb:
        submission = gb.find_submission_notebook(config.NOTEBOOK_NAME, config.ASSIGNMENT_ID, student_id)
        return {grade.name: {"score": grade.score, "auto_score": grade.auto_score, "max_score": grade.max_score,
                             "needs_manual_grade": grade.needs_manual_grade} for grade in submission.grades}


def forked_copies_talked(work: Path) -> bool:
    log = work / "worker.log"
    try:
        with log.open("rb") as handle:
            head = handle.read(4 << 20)
            handle.seek(max(0, log.stat().st_size - (4 << 20)))
            tail = handle.read()
    except OSError:
        return False
    return FORKED_SEND.encode() in head or FORKED_SEND.encode() in tail


def failure_reason(result: dict, forked: bool = False) -> str:
    text = (result.get("log") or "") + "\n" + (result.get("error") or "")
    if forked or "Invalid Signature" in text:
        return ("processes forked by the notebook (a fork bomb?) ran the kernel's code and wrote into its "
                "message channels: no grade could be computed")
    if "DeadKernelError" in text or "Kernel died" in text:
        return ("the kernel died while running the notebook (os._exit, exit(), a crash or the memory limit): "
                "no grade could be computed")
    if "Timeout waiting for IOPub output" in text or "UnresponsiveKernelError" in text:
        return ("a cell kept running after its timeout and ignored the interrupt (an infinite loop that catches "
                "KeyboardInterrupt?): the rest of the notebook could not run")
    if "Notebook failed to validate" in text or "ValidationError" in text:
        return "the nbgrader metadata of the notebook is corrupted (nbgrader could not validate it)"
    errors = [line for line in text.splitlines() if line.startswith("[ERROR]")]
    detail = next((e for e in errors if "Please see" not in e and "There was an error" not in e), None)
    last_exc = re.findall(r"^\s*(\w+(?:Error|Exception)[^\n]*)$", text, re.M)
    return "nbgrader autograde failed: " + ((detail or "")[8:] or (last_exc[-1] if last_exc else "see the worker log"))


def fork_bomb_reason(reason: str, processes: int, spec: sandbox.Spec | None) -> str:
    """The reason, prefixed when the sandbox user ran about as many processes as it may."""
    if spec is not None and spec.uid is not None and processes >= spec.nproc // 2:
        return (f"the notebook forked {processes} processes, up to the limit of {spec.nproc} (a fork bomb?), "
                f"and then it could not run on; {reason}")
    return reason
