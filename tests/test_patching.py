"""``patching.Patch``: the one reversible patch (attributes, dict entries and undo functions, undone in
reverse)."""

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


def test_an_undo_function_is_called_once_in_order_with_the_entries():
    module = types.ModuleType("m")
    module.value = "first"
    seen = []
    patch = Patch()
    patch.setattr(module, "value", "second")
    patch.on_undo(lambda: seen.append(module.value))  # undone before "second" is
    patch.setattr(module, "value", "third")
    patch.undo()
    patch.undo()
    assert seen == ["second"] and module.value == "first" and not patch


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


# -- Scope: the same patch, prepared once, for every launch of a wrapped kernel ------------------

def test_a_scope_sets_its_entries_for_the_call_and_restores_each_as_it_was():
    import threading

    from kwshim.patching import Scope

    owner = type("Owner", (Base,), {"own": 1})
    instance, namespace = Base(), {"kept": 1}
    derived = type("Derived", (Base,), {})
    scope = Scope([(owner, "own", 2), (owner, "inherited", "patched"), (owner, "new", 3),
                   (instance, "__class__", derived), (namespace, "kept", 2), (namespace, "added", 3)],
                  threading.RLock())
    seen = scope.call(lambda: (owner.own, owner.inherited, owner.new, type(instance), dict(namespace)))
    assert seen == (2, "patched", 3, derived, {"kept": 2, "added": 3})
    assert owner.own == 1 and "inherited" not in vars(owner) and not hasattr(owner, "new")
    assert type(instance) is Base and namespace == {"kept": 1}


def test_a_scope_restores_when_the_call_raises_passes_arguments_and_holds_its_lock():
    import threading

    from kwshim.patching import Scope

    lock, namespace = threading.RLock(), {"x": 1}
    scope = Scope([(namespace, "x", 2)], lock)
    with pytest.raises(ZeroDivisionError):
        scope.call(lambda: 1 / 0)
    assert namespace == {"x": 1}
    held = scope.call(lambda a, b=0: (a, b, namespace["x"], lock._is_owned()), 5, b=6)
    assert held == (5, 6, 2, True) and not lock._is_owned()


def test_a_held_scope_sets_nothing_and_a_nested_call_restores_to_the_outer_values():
    import threading

    from kwshim.patching import Scope

    namespace, lock = {"x": 1}, threading.RLock()
    scope = Scope([(namespace, "x", 2)], lock)
    with Patch() as patch:
        patch.setattr(scope, "held", True)  # as the switch holds the GPU arithmetic
        assert scope.call(lambda: (namespace["x"], lock._is_owned())) == (1, True)  # serialized all the same
    assert not lock._is_owned()
    assert scope.held is False
    assert scope.call(lambda: (scope.call(lambda: namespace["x"]), namespace["x"])) == (2, 2)
    assert namespace == {"x": 1}
