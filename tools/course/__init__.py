"""The course side of the project: build the chapter 69 notebook, release it with nbgrader, grade submissions.

    lesson_69.py       the notebook's content (cells, nbgrader roles, points)
    build_notebook.py  writes solutions/69_prefix_cache_benchmark.ipynb from lesson_69.py
    release.py         nbgrader generate_assignment -> notebooks/ (and the CI staleness / leak checks)
    colab_links.py     colab_links.md from the one configured repository slug
    nbgrader_course.py a headless nbgrader course directory (build, release, run converters in-process)
    grading.py         check and grade one submission in a worker process; used by autograde/grade.py
    grade_worker.py    the worker: nbgrader autograde + feedback for one student
    feedback.py        strip hidden tests from what goes back to students
"""
