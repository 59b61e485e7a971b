"""Sync and async clients of the agent memory service: one method per API operation.

    from agent_memory_client import MemoryClient
    with MemoryClient("http://127.0.0.1:8000", api_key="...") as memory:
        memory.append_events("s-1", user_id="u-1", events=[{"role": "user", "content": "Hi"}])
        print(memory.recall(user_id="u-1", session_id="s-1", query="hi")["injection_text"])

The base URL and key default to $MEMORY_API_URL and $MEMORY_API_KEY.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import httpx
from typing_extensions import Unpack

from agent_memory_client import operations as ops
from agent_memory_client._core import (
    Config,
    Operation,
    RetryPolicy,
    answer,
    retry_after_seconds,
    should_retry,
)
from agent_memory_client.errors import TransportError
from agent_memory_client.models import (
    AppendResponse,
    Card,
    CardImportResponse,
    CardIn,
    CardPage,
    CardsQuery,
    CardUpdate,
    CardUpdateResponse,
    CompressResponse,
    Deletion,
    EventIn,
    EventOut,
    LtmSearchRequest,
    LtmSearchResponse,
    MemoryUpdate,
    MemoryUpdateResponse,
    ProfilePatch,
    ProfilePatchResponse,
    ProfileResponse,
    PromotionsQuery,
    PromotionsResponse,
    Proposal,
    ProposalsResponse,
    RecallRequest,
    RecallResponse,
    ReplayQuery,
    ReplayResponse,
    StmItem,
    StmItemWithProvenance,
    StmPage,
    StmQuery,
    UserExport,
    UserMemories,
    UserMemoriesQuery,
    VerifyResponse,
)

DEFAULT_TIMEOUT = 30.0


def _transport_error(exc: httpx.TransportError) -> TransportError:
    return TransportError(f"No answer from the service: {type(exc).__name__}: {exc}")


class MemoryClient:
    """Blocking client; thread-safe (one connection pool). Close it, or use it in `with`."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        event_id: Callable[[], str] | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = Config.build(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            headers=headers,
            event_id=event_id,
        )
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self.config.base_url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, operation: Operation) -> Any:
        policy = self.config.retry
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    operation.method, operation.path, json=operation.json, params=operation.params
                )
            except httpx.TransportError as exc:
                if not operation.repeatable or attempt >= policy.retries:
                    raise _transport_error(exc) from exc
                self._sleep(policy.delay(attempt, None))
                attempt += 1
                continue
            if should_retry(response, policy, attempt):
                self._sleep(
                    policy.delay(attempt, retry_after_seconds(response.headers.get("Retry-After")))
                )
                attempt += 1
                continue
            return answer(response, operation)

    # --- transcripts (Layer 0) --------------------------------------------------------------

    def append_events(
        self, session_id: str, *, user_id: str, events: Sequence[EventIn], task_id: str = ""
    ) -> AppendResponse:
        """Append a batch as one segment (all or nothing). Events without an `id` get one, so
        a retry (after a timeout, a 429 or a 503) is answered with the original ids."""
        body: dict[str, Any] = {"user_id": user_id, "events": list(events)}
        if task_id:
            body["task_id"] = task_id
        return cast(
            AppendResponse,
            self._call(ops.append_events(session_id, body, self.config.event_id)),
        )

    def replay_events(self, session_id: str, **query: Unpack[ReplayQuery]) -> ReplayResponse:
        """One page of the session's events in order (`after` a seq, at most `limit`)."""
        return cast(ReplayResponse, self._call(ops.replay_events(session_id, dict(query))))

    def iter_events(self, session_id: str, *, page_size: int = 500) -> Iterator[EventOut]:
        """Every event of the session, in order, page by page."""
        after = 0
        while True:
            page = self.replay_events(session_id, after=after, limit=page_size)
            yield from page["events"]
            if not page["has_more"]:
                return
            after = page["next_after"]

    def verify_session(self, session_id: str) -> VerifyResponse:
        return cast(VerifyResponse, self._call(ops.verify_session(session_id)))

    # --- profiles (Layer 1) -----------------------------------------------------------------

    def get_profile(self, user_id: str) -> ProfileResponse:
        return cast(ProfileResponse, self._call(ops.get_profile(user_id)))

    def update_profile(self, user_id: str, **patch: Unpack[ProfilePatch]) -> ProfilePatchResponse:
        """Change profile fields, preferences, roles and facts in one step (admin key)."""
        return cast(ProfilePatchResponse, self._call(ops.update_profile(user_id, dict(patch))))

    # --- short-term memory (Layer 2) --------------------------------------------------------

    def propose_memories(
        self, proposals: Sequence[Proposal], *, dry_run: bool = False
    ) -> ProposalsResponse:
        """Propose facts; the tenant's write policy decides each (`dry_run`: write nothing)."""
        return cast(ProposalsResponse, self._call(ops.propose_memories(proposals, dry_run)))

    def list_stm(self, **query: Unpack[StmQuery]) -> StmPage:
        return cast(StmPage, self._call(ops.list_stm(dict(query))))

    def get_memory(self, item_id: str) -> StmItemWithProvenance:
        return cast(StmItemWithProvenance, self._call(ops.get_memory(item_id)))

    def update_memory(self, item_id: str, **changes: Unpack[MemoryUpdate]) -> MemoryUpdateResponse:
        """Change some fields of a live item in place, guarded as a new write is: see
        `outcome` (an edit held for review or verification changed nothing yet)."""
        return cast(MemoryUpdateResponse, self._call(ops.update_memory(item_id, dict(changes))))

    def delete_memory(self, item_id: str) -> None:
        self._call(ops.delete_memory(item_id))

    # --- long-term memory (Layer 3) ---------------------------------------------------------

    def import_cards(self, cards: Sequence[CardIn]) -> CardImportResponse:
        """Bulk import (admin key; all or nothing); a known `id` updates its card."""
        return cast(CardImportResponse, self._call(ops.import_cards(cards)))

    def list_cards(self, **query: Unpack[CardsQuery]) -> CardPage:
        """Cards newest first: one user's, the shared ones, or all; page on with `cursor`."""
        return cast(CardPage, self._call(ops.list_cards(dict(query))))

    def get_card(self, memory_id: str) -> Card:
        return cast(Card, self._call(ops.get_card(memory_id)))

    def update_card(self, memory_id: str, **changes: Unpack[CardUpdate]) -> CardUpdateResponse:
        """Change a card in place as a new version (admin key)."""
        return cast(CardUpdateResponse, self._call(ops.update_card(memory_id, dict(changes))))

    def delete_card(self, memory_id: str, *, reason: str = "") -> Deletion:
        """Ask for the card's erasure (admin key): a deletion request a reviewer approves."""
        return cast(Deletion, self._call(ops.delete_card(memory_id, reason)))

    def search_ltm(self, **request: Unpack[LtmSearchRequest]) -> LtmSearchResponse:
        return cast(LtmSearchResponse, self._call(ops.search_ltm(dict(request))))

    # --- recall and compression -------------------------------------------------------------

    def recall(self, **request: Unpack[RecallRequest]) -> RecallResponse:
        """What to inject before the next model turn: blocks, items and `injection_text`."""
        return cast(RecallResponse, self._call(ops.recall(dict(request))))

    def compress_session(
        self, session_id: str, *, budget_tokens: int, user_id: str = ""
    ) -> CompressResponse:
        """The session's context for the next turn within `budget_tokens` (writes nothing)."""
        body: dict[str, Any] = {"budget_tokens": budget_tokens}
        if user_id:
            body["user_id"] = user_id
        return cast(CompressResponse, self._call(ops.compress_session(session_id, body)))

    # --- review: deletions, promotions, export ----------------------------------------------

    def forget_user(self, user_id: str, *, reason: str = "") -> Deletion:
        """Ask to erase an end user from every layer (admin key); a reviewer approves it."""
        return cast(Deletion, self._call(ops.forget_user(user_id, reason)))

    def delete_fact(self, fact_id: str, *, reason: str = "") -> Deletion:
        """Ask to erase a stable fact (`fact_<n>`) or preference (`pref_<n>`) (admin key)."""
        return cast(Deletion, self._call(ops.delete_fact(fact_id, reason)))

    def get_deletion(self, request_id: str) -> Deletion:
        return cast(Deletion, self._call(ops.get_deletion(request_id)))

    def list_promotions(self, **query: Unpack[PromotionsQuery]) -> PromotionsResponse:
        return cast(PromotionsResponse, self._call(ops.list_promotions(dict(query))))

    def export_user(self, user_id: str) -> UserExport:
        """Everything held about one end user, as one document (admin key)."""
        return cast(UserExport, self._call(ops.export_user(user_id)))

    def get_user_memories(self, user_id: str, **query: Unpack[UserMemoriesQuery]) -> UserMemories:
        """The user's profile, live short-term items and own cards, each part paged."""
        return cast(UserMemories, self._call(ops.get_user_memories(user_id, dict(query))))

    def iter_user_memories(self, user_id: str, *, page_size: int = 100) -> Iterator[StmItem | Card]:
        """Every live item, then every own card, of the user, page by page."""
        page = self.get_user_memories(user_id, limit=page_size)
        items_before, cards_cursor = page["next_items_before"], page["next_cards_cursor"]
        yield from page["items"]
        while items_before is not None:
            more = self.get_user_memories(
                user_id, limit=page_size, items_before=float(items_before)
            )
            yield from more["items"]
            items_before = more["next_items_before"]
        yield from page["cards"]
        while cards_cursor is not None:
            more = self.get_user_memories(user_id, limit=page_size, cards_cursor=int(cards_cursor))
            yield from more["cards"]
            cards_cursor = more["next_cards_cursor"]


class AsyncMemoryClient:
    """The same operations as MemoryClient, for asyncio. Close it, or use `async with`."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        event_id: Callable[[], str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.config = Config.build(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            headers=headers,
            event_id=event_id,
        )
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=self.config.base_url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, operation: Operation) -> Any:
        policy = self.config.retry
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    operation.method, operation.path, json=operation.json, params=operation.params
                )
            except httpx.TransportError as exc:
                if not operation.repeatable or attempt >= policy.retries:
                    raise _transport_error(exc) from exc
                await self._sleep(policy.delay(attempt, None))
                attempt += 1
                continue
            if should_retry(response, policy, attempt):
                await self._sleep(
                    policy.delay(attempt, retry_after_seconds(response.headers.get("Retry-After")))
                )
                attempt += 1
                continue
            return answer(response, operation)

    async def append_events(
        self, session_id: str, *, user_id: str, events: Sequence[EventIn], task_id: str = ""
    ) -> AppendResponse:
        body: dict[str, Any] = {"user_id": user_id, "events": list(events)}
        if task_id:
            body["task_id"] = task_id
        return cast(
            AppendResponse,
            await self._call(ops.append_events(session_id, body, self.config.event_id)),
        )

    async def replay_events(self, session_id: str, **query: Unpack[ReplayQuery]) -> ReplayResponse:
        return cast(ReplayResponse, await self._call(ops.replay_events(session_id, dict(query))))

    async def iter_events(
        self, session_id: str, *, page_size: int = 500
    ) -> AsyncIterator[EventOut]:
        after = 0
        while True:
            page = await self.replay_events(session_id, after=after, limit=page_size)
            for event in page["events"]:
                yield event
            if not page["has_more"]:
                return
            after = page["next_after"]

    async def verify_session(self, session_id: str) -> VerifyResponse:
        return cast(VerifyResponse, await self._call(ops.verify_session(session_id)))

    async def get_profile(self, user_id: str) -> ProfileResponse:
        return cast(ProfileResponse, await self._call(ops.get_profile(user_id)))

    async def update_profile(
        self, user_id: str, **patch: Unpack[ProfilePatch]
    ) -> ProfilePatchResponse:
        return cast(
            ProfilePatchResponse, await self._call(ops.update_profile(user_id, dict(patch)))
        )

    async def propose_memories(
        self, proposals: Sequence[Proposal], *, dry_run: bool = False
    ) -> ProposalsResponse:
        return cast(ProposalsResponse, await self._call(ops.propose_memories(proposals, dry_run)))

    async def list_stm(self, **query: Unpack[StmQuery]) -> StmPage:
        return cast(StmPage, await self._call(ops.list_stm(dict(query))))

    async def get_memory(self, item_id: str) -> StmItemWithProvenance:
        return cast(StmItemWithProvenance, await self._call(ops.get_memory(item_id)))

    async def update_memory(
        self, item_id: str, **changes: Unpack[MemoryUpdate]
    ) -> MemoryUpdateResponse:
        return cast(
            MemoryUpdateResponse, await self._call(ops.update_memory(item_id, dict(changes)))
        )

    async def delete_memory(self, item_id: str) -> None:
        await self._call(ops.delete_memory(item_id))

    async def import_cards(self, cards: Sequence[CardIn]) -> CardImportResponse:
        return cast(CardImportResponse, await self._call(ops.import_cards(cards)))

    async def list_cards(self, **query: Unpack[CardsQuery]) -> CardPage:
        return cast(CardPage, await self._call(ops.list_cards(dict(query))))

    async def get_card(self, memory_id: str) -> Card:
        return cast(Card, await self._call(ops.get_card(memory_id)))

    async def update_card(
        self, memory_id: str, **changes: Unpack[CardUpdate]
    ) -> CardUpdateResponse:
        return cast(CardUpdateResponse, await self._call(ops.update_card(memory_id, dict(changes))))

    async def delete_card(self, memory_id: str, *, reason: str = "") -> Deletion:
        return cast(Deletion, await self._call(ops.delete_card(memory_id, reason)))

    async def search_ltm(self, **request: Unpack[LtmSearchRequest]) -> LtmSearchResponse:
        return cast(LtmSearchResponse, await self._call(ops.search_ltm(dict(request))))

    async def recall(self, **request: Unpack[RecallRequest]) -> RecallResponse:
        return cast(RecallResponse, await self._call(ops.recall(dict(request))))

    async def compress_session(
        self, session_id: str, *, budget_tokens: int, user_id: str = ""
    ) -> CompressResponse:
        body: dict[str, Any] = {"budget_tokens": budget_tokens}
        if user_id:
            body["user_id"] = user_id
        return cast(CompressResponse, await self._call(ops.compress_session(session_id, body)))

    async def forget_user(self, user_id: str, *, reason: str = "") -> Deletion:
        return cast(Deletion, await self._call(ops.forget_user(user_id, reason)))

    async def delete_fact(self, fact_id: str, *, reason: str = "") -> Deletion:
        return cast(Deletion, await self._call(ops.delete_fact(fact_id, reason)))

    async def get_deletion(self, request_id: str) -> Deletion:
        return cast(Deletion, await self._call(ops.get_deletion(request_id)))

    async def list_promotions(self, **query: Unpack[PromotionsQuery]) -> PromotionsResponse:
        return cast(PromotionsResponse, await self._call(ops.list_promotions(dict(query))))

    async def export_user(self, user_id: str) -> UserExport:
        return cast(UserExport, await self._call(ops.export_user(user_id)))

    async def get_user_memories(
        self, user_id: str, **query: Unpack[UserMemoriesQuery]
    ) -> UserMemories:
        return cast(UserMemories, await self._call(ops.get_user_memories(user_id, dict(query))))

    async def iter_user_memories(
        self, user_id: str, *, page_size: int = 100
    ) -> AsyncIterator[StmItem | Card]:
        page = await self.get_user_memories(user_id, limit=page_size)
        items_before, cards_cursor = page["next_items_before"], page["next_cards_cursor"]
        for item in page["items"]:
            yield item
        while items_before is not None:
            more = await self.get_user_memories(
                user_id, limit=page_size, items_before=float(items_before)
            )
            for item in more["items"]:
                yield item
            items_before = more["next_items_before"]
        for card in page["cards"]:
            yield card
        while cards_cursor is not None:
            more = await self.get_user_memories(
                user_id, limit=page_size, cards_cursor=int(cards_cursor)
            )
            for card in more["cards"]:
                yield card
            cards_cursor = more["next_cards_cursor"]
