"""The `billing` fact of a provider plugin: the built-in clouds declare their rule, a plugin that declares none
gets DEFAULT, a wrong one makes the plugin broken with the reason."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from vm_core.plugins import LoadedPlugin, MalformedPlugin, provider_plugins
from vm_core.providers import billing_rules
from vm_core.spend import rules


def _plugin(**facts: object) -> SimpleNamespace:
    return SimpleNamespace(**{"name": "odd", "title": "Odd", "settings": (), "connect": lambda settings: None,
                              **facts})


def test_the_built_in_clouds_declare_their_rule_and_others_get_the_default() -> None:
    loaded = provider_plugins({}).load_all()
    assert {name: loaded[name].billing for name in billing_rules.RULES} == billing_rules.RULES
    assert LoadedPlugin.of(_plugin()).billing is rules.DEFAULT
    custom = replace(rules.DEFAULT, granularity_seconds=3600, source="odd cloud's price list")
    assert LoadedPlugin.of(_plugin(billing=custom)).billing is custom


@pytest.mark.parametrize(("billing", "says"), [
    ("per second", "billing must be a vm_core.spend.rules.BillingRule, not str"),
    (replace(rules.DEFAULT, granularity_seconds=0), "billing.granularity_seconds must be a whole number of 1 or more"),
    (replace(rules.DEFAULT, granularity_seconds=1.5), "billing.granularity_seconds must be a whole number"),
    (replace(rules.DEFAULT, minimum_seconds=-1), "billing.minimum_seconds must be a whole number of 0 or more"),
    (replace(rules.DEFAULT, billed_states=frozenset({"RUNNING"})), "billing.billed_states must be a frozenset of"),
    (replace(rules.DEFAULT, billed_states={"running"}), "billing.billed_states must be a frozenset of"),
])
def test_a_wrong_billing_rule_makes_the_plugin_broken(billing: object, says: str) -> None:
    with pytest.raises(MalformedPlugin, match=says):
        LoadedPlugin.of(_plugin(billing=billing))


def test_a_misspelt_billing_fact_is_caught() -> None:
    with pytest.raises(MalformedPlugin, match="is it a misspelt 'billing'"):
        LoadedPlugin.of(_plugin(biling=rules.DEFAULT))
