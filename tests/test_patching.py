"""``patching.Patch``: the one reversible patch (attributes and dict entries, undone in reverse)."""

import types

import pytest

from kwshim.patching import Patch


class Base:
    inherited = "base"


def test_attributes_are_restored_as_they_were_own_inherited_or_absent():
    owner = type("Owner", (Base,), {"own": 1})
    with Patch() as patch:
        patch.setattr(owner, "own", 2)
        patch.setattr(owner, "inherited", "patched")
        patch.setattr(owner, "new", 3)
        assert (owner.own, owner.inherited, owner.new) == (2, "patched", 3)
    assert owner.own == 1 and "inherited" not in vars(owner) and owner.inherited == "base"
    assert not hasattr(owner, "new")


def test_dict_entries_are_restored_or_removed():
    namespace = {"kept": 1}
    patch = Patch()
    patch.setitem(namespace, "kept", 2)
    patch.setitem(namespace, "added", 3)
    assert namespace == {"kept": 2, "added": 3} and patch
    patch.undo()
    assert namespace == {"kept": 1} and not patch


def test_the_same_name_set_twice_is_undone_in_reverse_to_the_first_value():
    module = types.ModuleType("m")
    module.value = "first"
    patch = Patch()
    patch.setattr(module, "value", "second")
    patch.setattr(module, "value", "third")
    patch.undo()
    assert module.value == "first"
    patch.undo()  # twice: nothing left to undo
    assert module.value == "first"


def test_a_scope_is_undone_when_its_body_raises():
    namespace = {"x": 1}
    with pytest.raises(ZeroDivisionError):
        with Patch() as patch:
            patch.setitem(namespace, "x", 2)
            1 / 0
    assert namespace == {"x": 1}


def test_a_refused_setattr_records_nothing():
    patch = Patch()
    with pytest.raises(TypeError):  # no __dict__: nothing to record a prior value in
        patch.setattr(object(), "x", 1)
    frozen = type("Frozen", (), {"__setattr__": lambda self, name, value: (_ for _ in ()).throw(AttributeError)})()
    with pytest.raises(AttributeError):
        patch.setattr(frozen, "x", 1)
    assert not patch
