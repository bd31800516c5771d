# 环境准备 | Setup: find the course repository (or fetch it in Colab / ModelScope) and import the library.
EDITION = "zh"  # 中文版：提示中英双语 | the Chinese edition: messages in both languages
SETUP_DONE = False  # set at the end of this cell; every later cell checks it (require_setup)


def say(zh, en):
    """A message in this notebook's language (the Chinese edition shows both)."""
    return en if EDITION == "en" else f"{zh} | {en}"


class SetupProblem(Exception):
    """Shown as its message only (no traceback): what went wrong and what to do."""

    def _render_traceback_(self):
        return str(self).splitlines()


def require_setup():
    """The first line of every later cell: after a failed setup it says so, instead of a NameError."""
    if not globals().get("SETUP_DONE"):
        raise SetupProblem(say("请先运行环境准备单元格（第一个代码单元格），直到它成功，再运行这个单元格。",
                               "Run the setup cell first (the first code cell) until it succeeds, then run this cell."))


_TRY = {  # the smallest call of each exercise, to tell "not done yet" apart
    "simulate_prefix_cache": (([[1, 2]],), {"block_size": 1, "capacity_blocks": 2}, "TODO 0"),
    "summarize_prefix_cache": (([],), {}, "TODO 1"),
    "compare_prefix_cache_to_baseline": (({"hit_rate": 0.0, "ttft_ms": 1.0, "overhead": 0.0},) * 2, {}, "TODO 2"),
    "recommend_prefix_cache_run": (({"hit_rate": 0.0, "ttft_ms": 1.0, "overhead": 0.0},) * 2 + (0.5, 0.1), {},
                                   "TODO 3"),
}


def require_done(*names):
    """The lesson after the exercises runs on your functions: say which TODO to finish first, if any."""
    require_setup()
    for name in names:
        args, kwargs, todo = _TRY[name]
        if not callable(globals().get(name)):
            raise SetupProblem(say(f"这一步用你的 {name}：先运行定义它的单元格（{todo}）。",
                                   f"This step runs your {name}: run its cell ({todo}) first."))
        try:
            globals()[name](*args, **kwargs)
        except NotImplementedError:
            raise SetupProblem(say(f"这一步用你的 {name}：先完成 {todo}（它的可见测试通过之后再来）。",
                                   f"This step runs your {name}: finish {todo} first (until its visible test "
                                   "passes).")) from None
        except Exception:  # noqa: BLE001 - a wrong answer still runs here; its tests and the self-check say why
            pass


import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO_SLUG = "<<REPO_SLUG>>"  # configured in tools/course/config.py
REPO_URL = os.environ.get("PREFIXBENCH_REPO_URL") or f"https://github.com/{REPO_SLUG}.git"
REPO_DIRNAME = REPO_SLUG.split("/")[-1]
CLONE_TIMEOUT_S = 180
GRADING = bool(os.environ.get("NBGRADER_EXECUTION"))  # set by nbgrader while it grades this notebook
QUICK = GRADING  # while grading, the lesson's sweeps use fewer points (same figures, coarser)


def setup_problem(reason):
    if EDITION == "en":
        return SetupProblem(f"""\
Setup failed: {reason}
Fix it one of two ways, then re-run this cell:
  1. use a mirror of the repository:
       os.environ["PREFIXBENCH_REPO_URL"] = "https://<mirror>/{REPO_DIRNAME}.git"
  2. use a checkout you uploaded (unzip it first):
       os.environ["PREFIXBENCH_REPO"] = "/path/to/{REPO_DIRNAME}"
Add a code cell above this one with one of these lines (after import os) and run it, or use %env PREFIXBENCH_REPO=/path.""")
    return SetupProblem(f"""\
环境准备失败 | Setup failed: {reason}
解决方法（任选其一），然后重新运行本单元格 | Fix it one of two ways, then re-run this cell:
  1. 用镜像仓库 | use a mirror of the repository:
       os.environ["PREFIXBENCH_REPO_URL"] = "https://<镜像 mirror>/{REPO_DIRNAME}.git"
  2. 用已上传的仓库 | use a checkout you uploaded (unzip it first):
       os.environ["PREFIXBENCH_REPO"] = "/path/to/{REPO_DIRNAME}"
在本单元格上方新建一个代码单元格，写入其中一行（先 import os）并运行；也可以写 %env PREFIXBENCH_REPO=/path。
Add a code cell above this one with one of these lines (after import os) and run it, or use %env PREFIXBENCH_REPO=/path.""")


def find_repo():
    """The checkout that holds tools/prefixbench: $PREFIXBENCH_REPO, the current folder or a parent, or a clone."""
    here = Path.cwd().resolve()
    for start in (os.environ.get("PREFIXBENCH_REPO"), here, *here.parents,
                  Path("/content") / REPO_DIRNAME, Path.home() / REPO_DIRNAME, here / REPO_DIRNAME):
        if start and (Path(start) / "tools" / "prefixbench" / "__init__.py").is_file():
            return Path(start).resolve()
    return None


def clone_repo(url, target):
    """git clone --depth 1 with a time limit; the reason it failed in one line, or None."""
    print(f"clone {url} -> {target}")
    try:
        done = subprocess.run(["git", "clone", "--depth", "1", "--quiet", url, str(target)], capture_output=True,
                              text=True, timeout=CLONE_TIMEOUT_S, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except FileNotFoundError:
        return say("没有 git 命令", "git is not installed")
    except subprocess.TimeoutExpired:
        return say(f"git clone 超过 {CLONE_TIMEOUT_S} s 未完成", f"git clone took over {CLONE_TIMEOUT_S} s")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return say(f"git clone {url} 失败（{last}）", f"git clone {url} failed ({last})")
    return None


REPO_ROOT = find_repo()
if REPO_ROOT is None and os.environ.get("PREFIXBENCH_REPO"):
    raise setup_problem(say(f"PREFIXBENCH_REPO={os.environ['PREFIXBENCH_REPO']} 下没有 tools/prefixbench",
                            f"PREFIXBENCH_REPO={os.environ['PREFIXBENCH_REPO']} holds no tools/prefixbench"))
if REPO_ROOT is None and not GRADING:
    failure = clone_repo(REPO_URL, Path.cwd() / REPO_DIRNAME)
    if failure:
        raise setup_problem(failure)
    REPO_ROOT = Path.cwd() / REPO_DIRNAME
if REPO_ROOT is None:
    raise setup_problem(say("找不到课程仓库 tools/prefixbench", "the course repository (tools/prefixbench) is not here"))
# The CPU part needs only these; Colab and ModelScope already ship most of them.
missing = [name for name in ("matplotlib", "ipywidgets", "requests") if importlib.util.find_spec(name) is None]
if missing and not GRADING:
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as exc:
        raise SetupProblem(say(f"pip install {' '.join(missing)} 失败（{type(exc).__name__}）：请联网或换镜像源"
                               "（pip config set global.index-url ...）后重新运行本单元格",
                               f"pip install {' '.join(missing)} failed ({type(exc).__name__}): connect or set a "
                               "pip mirror (pip config set global.index-url ...), then re-run this cell")) from None
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import matplotlib.pyplot as plt
from tools.prefixbench import BlockKeys, PrefixCache  # the block model, for the demos and the seed policy
from tools.prefixbench.workload import generate_shared_prefix_workload

SETUP_DONE = True
print(say(f"课程仓库：{REPO_ROOT}", f"repository: {REPO_ROOT}"))
