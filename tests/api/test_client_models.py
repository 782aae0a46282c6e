"""The table of the client's models that the schema and the OpenAPI documents read."""

from __future__ import annotations

from pinnace.api import client_models, generate_client_models


def test_the_table_matches_the_installed_client() -> None:
    # Regenerate with `python -m pinnace.api.generate_client_models` when this fails.
    assert generate_client_models.fields() == client_models.FIELDS
    assert generate_client_models.required() == client_models.REQUIRED


def test_the_table_keeps_json_names_types_and_required_fields() -> None:
    assert client_models.FIELDS["V1PodSpec"]["containers"] == "list[V1Container]"
    assert client_models.FIELDS["V1ObjectMeta"]["creationTimestamp"] == "datetime"
    assert client_models.FIELDS["V1Container"]["resources"] == "V1ResourceRequirements"
    assert client_models.REQUIRED["V1PodSpec"] == ("containers",)
    assert client_models.REQUIRED["V1Container"] == ("name",)
