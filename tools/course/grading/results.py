"""What a run writes for the instructor and the students: grades.csv, results.json, the run report, and a note
for each student whose notebook could not be graded."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tools.prefixbench.core.files import atomic_write_json, atomic_write_text

from .. import config, sandbox
from .model import Course, Result, Settings


def finite(data: Any) -> Any:
    """``data`` with every non-finite float (NaN, Infinity: not JSON) replaced by None, so the strict JSON
    writer never refuses a result a submission produced."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(value) for value in data]
    return data


def csv_text(results: list[Result], course: Course) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    cell_ids = [cell["id"] for cell in course.cells]
    writer.writerow(["student_id", "status", "score", "max_score", *cell_ids, "reason", "seconds"])
    for r in sorted(results, key=lambda r: r.student_id):
        fmt = lambda v: "" if v is None or not math.isfinite(v) else f"{v:g}"  # noqa: E731
        writer.writerow([r.student_id, r.status, fmt(r.score), fmt(course.max_score),
                         *[fmt(r.cells.get(cid)) for cid in cell_ids], r.reason, fmt(r.seconds)])
    return buffer.getvalue()


def run_report(caps: dict, settings: Settings, workers: int) -> dict:
    """How this run graded: the protections in force on this machine, and the parallelism."""
    spec = sandbox.Spec(sandbox_dir="", uid=sandbox.UID_BASE if caps["root"] else None, isolate=caps["namespaces"],
                        memory_mb=settings.memory_limit_mb, cpu_s=int(settings.submission_timeout) + 1)
    limits = {name: getattr(settings, name) for name in ("cell_timeout", "hung_timeout", "after_hang_budget",
                                                         "submission_timeout", "memory_limit_mb")}
    return {"workers": workers, "limits": limits, "sandbox": sandbox.protections(caps, spec)}


def write_results(out_dir: Path, results: list[Result], course: Course, report: dict | None = None) -> None:
    """grades.csv and results.json, each replaced atomically (a reader never sees half a file)."""
    atomic_write_text(Path(out_dir) / "grades.csv", csv_text(results, course))
    atomic_write_json(Path(out_dir) / "results.json", finite(
        {"max_score": course.max_score, "cells": course.cells, **({"run": report} if report else {}),
         "students": [asdict(r) for r in sorted(results, key=lambda r: r.student_id)]}))


WHAT_TO_DO = "怎么办 | What to do:\n"
RESAVE = (
    "1. 在 Jupyter 或 Colab 中打开你的作业笔记本并重新保存：Jupyter 用 File > Save，Colab 用 文件 > 下载 > "
    "下载 .ipynb。\n"
    "   Open your notebook in Jupyter or Colab and save it again: in Jupyter File > Save, in Colab "
    "File > Download > Download .ipynb.\n"
    f"2. 文件名必须是 {config.NOTEBOOK_FILE}，放在以你的学号命名的文件夹里；不要删除或复制测试单元格。\n"
    f"   Name the file {config.NOTEBOOK_FILE}, in a folder named after your student id; do not delete or copy "
    "the test cells.\n"
    "3. 重新提交这个 .ipynb 文件。| Submit that .ipynb file again.\n")
"""What a student whose notebook was not graded does next: re-save it from Jupyter or Colab and resubmit."""
TIPS = (
    (("nbgrader metadata",), "编辑器删掉了评分信息：请重新下载发布的作业笔记本，把你的答案粘贴到答题单元格里，再保存。"
                             "| The grading metadata was removed (some editors and copy-paste do that): download a "
                             "fresh copy of the released notebook, paste your answers into its answer cells and save "
                             "that."),
    (("not a notebook", "not a valid notebook", "not a Jupyter notebook", "not UTF-8", "MB limit"),
     "这个文件不是可用的 .ipynb 笔记本（也许是截图、PDF、压缩包或损坏的文件）。| The file is not a usable .ipynb "
     "notebook (perhaps a screenshot, a PDF, an archive or a damaged file)."),
    (("kernel died", "ignored the interrupt", "grading took longer", "fork bomb"),
     "你的代码让评分停止了：找出一直运行、退出内核（sys.exit、os._exit）或占用大量内存的代码，修改后再试。| Your code "
     "stopped the grading: find the code that runs forever, exits the kernel (sys.exit, os._exit) or uses a lot "
     "of memory, fix it and try again."),
)
"""Extra advice for a reason that contains one of the fragments."""
NOT_YOURS = ("这是评分程序一方的问题，不是你的错；老师会重新评分，你无需操作。| This is a problem on the grader's side, "
             "not yours: your teacher will grade it again; nothing to do.\n")
WITHHELD = ("你的笔记本已评分（见上面的得分）；反馈页面未能生成，请向老师索取。| Your notebook was graded (score above); "
            "its feedback page could not be made: ask your teacher for it.\n")


def note_text(result: Result) -> str:
    """The README.txt of a student who gets no feedback page: status, score, reason, and what to do, bilingual."""
    status = {"graded": "已评分 | graded", "not_graded": "未评分 | not graded",
              "error": "评分出错 | grader error"}.get(result.status, result.status)
    score = "" if result.score is None else f"{result.score:g} / {result.max_score:g}"
    text = (f"{config.NOTEBOOK_FILE}: {status}\n"
            f"得分 | score: {score}\n"
            f"原因 | reason: {result.reason}\n\n")
    if result.status == "not_graded":
        tips = [tip for fragments, tip in TIPS if any(f in result.reason for f in fragments)]
        return text + WHAT_TO_DO + "".join(f"- {tip}\n" for tip in tips) + RESAVE
    return text + (NOT_YOURS if result.status == "error" else WITHHELD)


def write_note(out_dir: Path, result: Result) -> None:
    """Students whose notebook could not be graded (or whose feedback was withheld) get a short note instead."""
    atomic_write_text(Path(out_dir) / "feedback" / result.student_id / "README.txt", note_text(result))
