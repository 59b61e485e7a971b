"""The card ledger's screen: each card names its end user, and a search finds a user's cards."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from memories.ltm.models import LtmCard
from memories.ltm.services import CardInput, cards_import
from tests.factories import EndUserFactory, MembershipFactory, TenantFactory


def test_the_card_list_shows_and_searches_the_end_user(db: None) -> None:
    mine = TenantFactory(slug="mine")
    membership = MembershipFactory(tenant=mine)
    EndUserFactory(tenant=mine, external_id="ada@example.com")
    EndUserFactory(tenant=mine, external_id="bob")
    imported = cards_import(
        tenant=mine,
        cards=[
            CardInput(memory_type=LtmCard.Type.SEMANTIC_FACT, summary=text, user_id=user)
            for text, user in (
                ("Ada deploys on Fridays.", "ada@example.com"),
                ("Bob reads the runbook first.", "bob"),
                ("The office closes at six.", ""),
            )
        ],
    )
    client = Client()
    client.force_login(membership.user)
    url = reverse("admin:memories_ltmcard_changelist")

    ada, bob, shared = (card.memory_id for card, _ in imported)

    page = client.get(url).content.decode()
    assert "column-card_user" in page
    assert '<td class="field-card_user">ada@example.com</td>' in page
    assert '<td class="field-card_user">bob</td>' in page
    assert '<td class="field-card_user">(all users)</td>' in page

    found = client.get(url, {"q": "ada@example.com"}).content.decode()
    assert ada in found and bob not in found and shared not in found
