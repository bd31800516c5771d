"""The course side of the project: the chapter 69 notebook, its nbgrader release, and grading a class.

Packages, one concern each, in layer order; a module may import from its own layer and the layers before it,
never from a later one (tests/course/test_course_layers.py checks this, function-level imports included, and
that no two course modules import each other in a cycle):

    config.py    the names every layer agrees on (repository slug, notebook paths, stub text)
    content/     the single source: the notebook's cells as files (cells/: .py code, .md prose per edition,
                 manifest.toml), read by lesson.py; region markers
    build/       content -> solutions/ (source notebook), notebooks/ (release), colab_links.md; the headless
                 nbgrader course directory
    sandbox/     where student code runs: spec, user ids, confinement, launcher, kernel boot, kernel manager
    diagnosis/   the probe engine naming a student's likely mistake, and its run inside the sandbox
    grading/     grade a class: checks, workers, nbgrader autograde, feedback, results

    release.py   ``python -m tools.course.release [--check]`` (the work is in build/release.py)

Data flows one way: content -> build -> sandbox -> diagnosis -> grading. The student notebook itself imports
``tools.course.diagnosis`` (its self-check cell); autograde/grade.py drives ``tools.course.grading``.
"""
