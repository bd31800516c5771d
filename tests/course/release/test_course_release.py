"""The student release: exactly what nbgrader generates, no solution or hidden-test text, stubs that only raise,
and a Colab / ModelScope link for every notebook. The checks must also catch what they are meant to catch."""

import copy

import nbformat
import pytest

from tools.course import config
from tools.course.build import colab_links, release
from tools.course.build.nbgrader_course import load_nbgrader_config

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"


@pytest.fixture(scope="module")
def source_nb():
    return nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)


@pytest.fixture(scope="module")
def release_nb():
    return nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)


def test_committed_release_passes_every_check():
    assert release.check() == []


def _cell(nb, cell_id):
    return next(c for c in nb.cells if c.id == cell_id)


def test_stale_release_is_detected(tmp_path):
    stale = tmp_path / config.NOTEBOOK_FILE
    nb = nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)
    _cell(nb, "step1").source += "\nedited by hand"
    nbformat.write(nb, stale)
    problems = release.check(release_path=stale)
    assert any("out of date" in p for p in problems), problems


def test_leaked_solution_or_hidden_text_is_detected(source_nb, release_nb):
    for cell_id, needle in (("ex0-simulate", "victim, _ = evictable.popitem(last=False)"),
                            ("hidden-ex0-keys", "_A, _B, _C, _D = [1, 1], [2, 2], [3, 3], [4, 4]")):
        leaky = copy.deepcopy(release_nb)
        _cell(leaky, cell_id).source += "\n    " + needle
        assert any("solution/hidden line" in p for p in release.leak_problems(source_nb, leaky)), cell_id
    marked = copy.deepcopy(release_nb)
    _cell(marked, "ex1-summarize").source += "\n    ### BEGIN SOLUTION\n    ### END SOLUTION"
    assert any("marker" in p for p in release.leak_problems(source_nb, marked))
    with_output = copy.deepcopy(release_nb)
    _cell(with_output, "setup").outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    assert any("outputs" in p for p in release.leak_problems(source_nb, with_output))


@pytest.mark.parametrize("body", [
    "return {}",
    'if not token_sequences:\n        return {}\n    raise NotImplementedError("请先完成 TODO 代码！")',
    'raise NotImplementedError("TODO")',
    "raise ValueError('请先完成 TODO 代码！')",
])
def test_stub_that_does_more_than_raise_is_detected(release_nb, body):
    bad = copy.deepcopy(release_nb)
    cell = _cell(bad, "ex0-simulate")
    cell.source = cell.source.replace(config.STUB_CODE, body)
    assert release.stub_problems(bad), body
    assert release.stub_problems(release_nb) == []


def test_release_stubs_are_the_seed_stub(release_nb):
    for cell_id in ("ex0-simulate", "ex1-summarize", "ex2-compare", "ex3-recommend"):
        assert _cell(release_nb, cell_id).source.rstrip().endswith(config.STUB_CODE)
    cfg = load_nbgrader_config()
    assert cfg.ClearSolutions.code_stub == {"python": config.STUB_CODE}


def test_every_notebook_has_its_colab_link(release_nb):
    text = config.COLAB_LINKS.read_text(encoding="utf-8")
    notebooks = colab_links.notebooks()
    assert notebooks == [config.release_notebook(lang) for lang in config.LANGUAGES], notebooks
    for path in notebooks:
        url = config.colab_url(colab_links.repo_path(path))
        assert url.startswith(f"https://colab.research.google.com/github/{config.REPO_SLUG}/blob/")
        assert f"[![Open In Colab]({colab_links.BADGE})]({url})" in text
        assert "ModelScope" in text and config.clone_url() in text
        intro = nbformat.read(path, as_version=4).cells[0].source
        assert url in intro, f"{path.name}: the notebook's own badge must point at itself"
    assert f'REPO_SLUG = "{config.REPO_SLUG}"' in _cell(release_nb, "setup").source
    assert colab_links.problems() == []


def test_missing_colab_link_is_detected(tmp_path):
    links = tmp_path / "colab_links.md"
    links.write_text(colab_links.render().replace(config.NOTEBOOK_FILE, "renamed.ipynb"))
    assert any("no Colab link" in p for p in colab_links.problems(links))


def test_stale_english_edition_is_detected(tmp_path, monkeypatch):
    """--check keeps every edition fresh: a hand-edited English release fails it."""
    stale = tmp_path / "en" / config.NOTEBOOK_FILE
    stale.parent.mkdir()
    nb = nbformat.read(config.release_notebook("en"), as_version=4)
    _cell(nb, "step1").source += "\nedited by hand"
    nbformat.write(nb, stale)
    problems = release.check_edition("en", release_path=stale)
    assert any("out of date" in p for p in problems), problems
