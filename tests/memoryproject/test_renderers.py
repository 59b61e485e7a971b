from __future__ import annotations

import datetime
import uuid
from decimal import Decimal

from rest_framework.renderers import JSONRenderer

from memoryproject.renderers import FastJSONRenderer

SAMPLE = {
    "text": "数据库已排除 — ok",
    "when": datetime.datetime(2026, 11, 30, 18, 0, 1, 123456, tzinfo=datetime.UTC),
    "day": datetime.date(2026, 11, 30),
    "numbers": [1, 2.5, 0.1 + 0.2, -0.0, 10**18],
    "nested": {"none": None, "flag": True, "empty": []},
    "id": uuid.UUID(int=7),
    "amount": Decimal("1.50"),
}


def test_output_is_what_drf_renders() -> None:
    assert FastJSONRenderer().render(SAMPLE) == JSONRenderer().render(SAMPLE)


def test_huge_integers_fall_back_to_the_standard_encoder() -> None:
    data = {"big": 10**30}
    assert FastJSONRenderer().render(data) == JSONRenderer().render(data)
