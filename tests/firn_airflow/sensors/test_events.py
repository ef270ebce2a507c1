"""How a sensor reads its trigger's event: the result, or the trigger's error as one task error."""

from __future__ import annotations

import pytest

from firn.errors import FirnError, NoSuchTable, ValidationError
from firn_airflow.sensors.events import event_result, is_template

pytestmark = pytest.mark.airflow


def test_success_returns_the_result() -> None:
    assert event_result({"status": "success", "health": {"data_files": 3}}, "health", task="t") == {
        "data_files": 3
    }


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ("NoSuchTable", NoSuchTable),
        ("ValidationError", ValidationError),
        ("KeyError", FirnError),
        (None, FirnError),
    ],
)
def test_errors_keep_their_firn_kind(error: str | None, kind: type[Exception]) -> None:
    event = {"status": "error", "table": "db.t", "error": error, "message": "table 'db.t' does not exist"}
    with pytest.raises(kind, match=r"table 'db\.t' does not exist") as info:
        event_result(event, "health", task="t")
    assert type(info.value) is kind


def test_no_payload_or_no_result_is_an_error() -> None:
    with pytest.raises(FirnError, match="t: the trigger sent no event payload"):
        event_result(None, "health", task="t")
    with pytest.raises(FirnError, match="without a message"):
        event_result({"status": "success"}, "health", task="t")


def test_templates_are_recognised() -> None:
    assert is_template("{{ params.table }}")
    assert is_template("{% if x %}a{% endif %}")
    assert not is_template("db.events")
    assert not is_template(None)


def test_the_error_mapping_covers_every_firn_error_and_builds_each_from_a_message() -> None:
    import firn.errors

    defined = {
        name: value
        for name, value in vars(firn.errors).items()
        if isinstance(value, type) and issubclass(value, FirnError)
    }
    assert firn.errors.error_names() == set(defined) and len(defined) > 10
    for name, cls in defined.items():
        assert firn.errors.error_class(name) is cls
        with pytest.raises(cls, match="boom") as info:
            event_result({"status": "error", "error": name, "message": "boom"}, "health", task="t")
        assert type(info.value) is cls


def test_a_name_that_is_not_a_firn_error_is_not_looked_up() -> None:
    # "Exception" lives in firn.errors' namespace (builtins) but is no Firn error.
    with pytest.raises(FirnError) as info:
        event_result({"status": "error", "error": "Exception", "message": "x"}, "health", task="t")
    assert type(info.value) is FirnError
