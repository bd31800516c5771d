# nbgrader configuration for chapter 69, used by autograde/grade.py and tools/course/build/ (copied into the
# course directory they build, so `nbgrader ...` run by hand there behaves the same way).
c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "llm-inference-69"

# What every exercise body becomes in the student release: the chapter's stub, exactly.
c.ClearSolutions.code_stub = {"python": 'raise NotImplementedError("请先完成 TODO 代码！")'}
c.ClearSolutions.text_stub = "请在这里写下你的回答。"

# Execution while grading. grade.py can override the per-cell timeout (--cell-timeout), runs the cells under its
# rule for hanging cells (tools/course/grading/cell_limits.py: --hung-timeout, --after-hang-budget) and adds a limit
# per submission of its own. The kernel is the project's own (python -m ipykernel install --sys-prefix --name python3).
c.Execute.kernel_name = "python3"
c.Execute.timeout = 120  # seconds per cell; the slowest legitimate cell (hidden speed test) stays under 5
c.Execute.startup_timeout = 120
c.Execute.interrupt_on_timeout = True
c.Execute.execute_retries = 0

# Keep what a submission prints from flooding the autograded notebook and the feedback.
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 60

# grade.py puts deleted test cells back itself, at their place, before nbgrader runs (nbgrader's own
# add_missing_cells fails when the previous cell is a read-only one), so nbgrader's option stays off.
c.OverwriteCells.add_missing_cells = False
