# 练习用到的类型与容器 | Types and containers for the exercises (read-only)
import copy
import os
from collections import OrderedDict
from contextlib import contextmanager
from typing import Dict, List, Optional

if "say" not in globals():  # the setup cell defines EDITION and say(); the exercises also work without it
    EDITION = "zh"

    def say(zh, en):
        return en if EDITION == "en" else f"{zh} | {en}"


def in_edition(message):
    """A bilingual test message ("中文 | English") in this notebook's language."""
    if globals().get("EDITION") == "en" and " | " in message:
        return message.rsplit(" | ", 1)[1]
    return message


@contextmanager
def explain_failure(exercise):
    """可见测试在这里面运行：失败时先打印该练习的诊断，再报错。
    Visible tests run inside this: when one fails, the self-check's diagnosis of ``exercise`` is printed first."""
    try:
        yield
    except NotImplementedError:
        raise
    except Exception as failure:
        if not os.environ.get("NBGRADER_EXECUTION"):  # while grading, the diagnosis goes into the feedback
            try:
                from tools.course.diagnosis import self_check
                self_check(globals(), exercises=[exercise])
            except Exception as exc:  # the diagnosis must never hide the test's own error
                print(say(f"（诊断不可用：{type(exc).__name__}）", f"(diagnosis unavailable: {type(exc).__name__})"))
        message = failure.args[0] if isinstance(failure, AssertionError) and failure.args else None
        if isinstance(message, str) and in_edition(message) != message:  # the English edition: English only
            raise AssertionError(in_edition(message)) from None
        raise


def unchanged(before, after, name):
    """The contract: no function modifies its arguments (a visible check of it)."""
    assert before == after, (f"{name} 被修改了：函数不能修改调用者传入的参数（不要原地 sort / pop / 赋值） | "
                             f"{name} was modified: a function never changes its caller's arguments "
                             "(no in-place sort / pop / assignment)")
