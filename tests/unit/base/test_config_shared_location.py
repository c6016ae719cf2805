"""``maintenance.allow_shared_location``: the tables orphan removal may share a location
with (``icefloe.jobs.maintenance.sharing``), validated at load like every other key."""

from __future__ import annotations

import pytest

from icefloe.base.config import ConfigError, build_config

pytestmark = [pytest.mark.unit]


def test_none_allowed_by_default_and_layered_per_table() -> None:
    cfg = build_config({"tables": {"acc.r": {"maintenance": {"allow_shared_location": ["acc.q"]}}}})
    assert cfg.policy_for("acc.r").maintenance.allow_shared_location == ("acc.q",)
    assert cfg.policy_for("acc.q").maintenance.allow_shared_location == ()


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (["acc"], "has bad table identifier 'acc'"),
        (["acc.q; DROP"], "has bad table identifier"),
        ("acc.q", "allow_shared_location"),  # a list, not a string
        (True, "allow_shared_location"),
        ([1], "allow_shared_location"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(value: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as err:
        build_config({"defaults": {"maintenance": {"allow_shared_location": value}}})
    text = str(err.value)
    assert "\n" not in text and "defaults.maintenance.allow_shared_location" in text
