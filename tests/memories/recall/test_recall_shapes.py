"""The recall answer's declared shapes follow the dataclasses they are built from, so a field
added to the query profile or a layer added to routing cannot go undeclared."""

from __future__ import annotations

from dataclasses import fields

from memories.recall.query_profile import QueryProfile
from memories.recall.routing import LAYERS
from memories.recall.serializers import QueryProfileOutputSerializer, RoutingOutputSerializer


def test_the_query_profile_is_declared_field_for_field() -> None:
    declared = set(QueryProfileOutputSerializer().fields)
    assert declared == {f.name for f in fields(QueryProfile)}


def test_routing_declares_every_layer_and_the_mode() -> None:
    assert set(RoutingOutputSerializer().fields) == {*LAYERS, "ltm_mode", "forced"}
