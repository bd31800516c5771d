"""The chapter's content, the one source of truth: lesson cells, exercises with their tests, region markers.

Nothing here touches nbgrader or a file system: ``build`` turns it into notebooks, ``grading`` reads the
region markers to keep hidden tests out of feedback.
"""
