"""Turn the content into what is published: the nbgrader source notebook, the student release, colab_links.md,
and the headless nbgrader course directory that both the release and the grader build on; and the rule every
course command follows before it removes a folder (owned.py: apart from the repository, and written by us)."""
