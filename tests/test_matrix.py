"""What ``make test`` runs in each row (``measure/matrix.py``): the tests it runs apart from the rest
name tests of the suite, so that a renamed test is not silently run in every row, or in none."""

import ast
import os
import re

from . import conftest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tests_in(path):
    with open(os.path.join(ROOT, path)) as handle:
        tree = ast.parse(handle.read())
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def _matrix_lists():
    with open(os.path.join(ROOT, "measure", "matrix.py")) as handle:
        tree = ast.parse(handle.read())
    return {target.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name) and target.id.isupper()
            and isinstance(node.value, ast.List)}


def test_each_test_the_conftest_marks_for_the_matrix_is_a_test_of_the_suite():
    marked = conftest.RELEASE_INDEPENDENT + conftest._RELEASE_DEPENDENT + conftest.RELEASE_SAMPLED
    assert len(set(marked)) == len(marked)
    for entry in marked:
        path, _, name = entry.partition("::")
        name = re.sub(r"\[.*$", "", name)  # a parametrization's id
        assert any(test.startswith(name) for test in _tests_in(path)), entry


def test_each_file_a_matrix_row_runs_apart_exists_and_the_sampled_releases_are_rows():
    lists = _matrix_lists()
    for name in ("WRAPT_SUITE", "SWITCH_SUITE"):
        assert lists[name] and all(_tests_in(path) for path in lists[name]), name
    assert set(lists["SAMPLED_RELEASES"]) <= set(lists["RELEASES"])
    assert set(lists["WRAPT_1_RELEASES"]) <= set(lists["RELEASES"])
