/**
 * The service's /v1 API as types, generated from its OpenAPI schema by openapi-typescript.
 * Do not edit: regenerate with `npm run generate` in clients/typescript (see its README).
 * The client names paths, never operation ids, so renamed operations change nothing there.
 */

export interface paths {
    "/v1/sessions/{session_id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Replay a session's events
         * @description The events in order, a page at a time (`after`, `limit`); an erased session answers 410 `gone`.
         */
        get: operations["events_replay"];
        put?: never;
        /**
         * Record a batch of events
         * @description Append the events as one segment, all or nothing (201). A retry with the same client ids answers the original ids and writes nothing (200); the same ids with other content are a 409. Extraction into short-term memory runs in the worker a second or so after the append commits, so the answer does not carry it.
         */
        post: operations["events_append"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{session_id}/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Verify a session's hash chain
         * @description Re-hash a session's stored segments and report any broken link by segment.
         */
        get: operations["session_verify"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/recall": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Recall what to inject before the next model turn
         * @description POST a query with its user and session; get the blocks, the chosen memories and the
         *     text to inject. Layers that are down are listed under `degraded`; the answer is still 200.
         */
        post: operations["recall"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/proposals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Propose memories for short-term memory
         * @description Submit proposed facts; the tenant's policy decides each, accepted ones land in Layer 2.
         *
         *     `?dry_run=1` decides exactly the same and writes nothing.
         */
        post: operations["proposals_submit"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/stm": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a user's short-term items
         * @description A user's live short-term items, newest first, filtered and paged (`before` cursor).
         */
        get: operations["stm_items_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memories/{item_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a short-term item with its provenance
         * @description One short-term item with the transcript events it came from (redacted).
         */
        get: operations["stm_item_get"];
        put?: never;
        post?: never;
        /**
         * Delete a short-term item
         * @description Delete the item and every index entry of it at once.
         */
        delete: operations["stm_item_delete"];
        options?: never;
        head?: never;
        /**
         * Change a short-term item
         * @description Change the summary, entities, tags, importance, confidence or lifetime of a live item. The item keeps its id; its version goes up and every index follows. The change meets what a proposal meets: redaction, the write policy's refusals, the quarantine screen (202, `quarantined`: nothing changed) and trust: an untrusted key's new words for a constraint, preference or profile fact wait for a reviewer (202, `held_for_verification`: nothing changed until approved). The audit trail keeps each field before and after.
         */
        patch: operations["stm_item_update"];
        trace?: never;
    };
    "/v1/ltm/cards:import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Import long-term cards
         * @description Bulk import of knowledge cards (all or nothing); a known `id` updates its card; more
         *     than `LTM_IMPORT_MAX_CARDS` cards is a 413.
         *
         *     A card whose text reads as an instruction to the model is held for review (outcome
         *     `quarantined`, with its quarantine id and reason) and nothing of it is written.
         */
        post: operations["cards_import"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/ltm/cards": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List long-term cards
         * @description The tenant's cards, newest first: one user's, the shared ones, or all; paged.
         */
        get: operations["cards_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/ltm/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Search long-term memory
         * @description Search Layer 3 alone (lexical, vector or hybrid), with each hit's branch ranks.
         */
        post: operations["ltm_search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/ltm/cards/{memory_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a long-term card
         * @description One card of the long-term ledger in any status but deleted (erased: 404).
         */
        get: operations["card_get"];
        put?: never;
        post?: never;
        /**
         * Ask to erase a long-term card
         * @description Ask to erase the card: answers 202 with a deletion request (`pending`) and removes nothing yet. Once a reviewer approves it in the review queue, the card is erased from PostgreSQL, Elasticsearch, Milvus and the caches and the request gets its receipt; follow it at `GET /v1/deletions/{request_id}`. An open request for the same card is returned as is.
         */
        delete: operations["card_delete"];
        options?: never;
        head?: never;
        /**
         * Change a long-term card
         * @description Change a card's texts, entities, tags, importance, confidence or date. The card keeps its id; its version goes up and both indexes follow shortly (the ledger answers recall at once). Texts are redacted; a change that reads as an instruction to the model is held for review (202, `quarantined`: nothing changed). The audit trail keeps each field before and after.
         */
        patch: operations["card_update"];
        trace?: never;
    };
    "/v1/users/{user_id}/profile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a user's profile
         * @description Profile, current preferences, project roles and stable facts of one end user.
         */
        get: operations["profile_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Change a user's profile
         * @description Admin keys: change any of them in one all-or-nothing step; preferences and facts get a new version and keep the previous one. Free text is redacted. From a key that is no trusted writer, a free-text value (a sentence rather than an identifier, number or flag) waits for a reviewer (held_for_verification).
         */
        patch: operations["profile_update"];
        trace?: never;
    };
    "/v1/users/{user_id}/memories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get everything about a user
         * @description The user's profile, live short-term items (newest first) and own active cards (newest first; the tenant's shared cards are listed by `cards_list`). Page on with `items_before` and `cards_cursor`; the profile comes with every page.
         */
        get: operations["user_memories"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/promotions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List promotion proposals
         * @description The tenant's promotion proposals, newest first, by status.
         */
        get: operations["promotions_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/facts/{fact_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Ask to erase a fact or preference
         * @description Ask to delete a stable fact (`fact_<n>`) or preference (`pref_<n>`) with its history.
         */
        delete: operations["fact_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user_id}/forget": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Ask to erase an end user
         * @description Ask to erase an end user from every layer (right to erasure); a reviewer approves it.
         */
        post: operations["user_forget"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deletions/{request_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Follow a deletion request to its receipt
         * @description A deletion request's status and, once erased and verified, its receipt.
         */
        get: operations["deletion_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user_id}/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export everything held about an end user
         * @description Everything held about one end user in every layer, as one JSON document: derived text
         *     redacted, the transcripts as recorded (the end user's own copy; docs/redaction.md).
         */
        get: operations["user_export"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{session_id}/compress": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Compress a session's context to a token budget
         * @description POST a token budget; get the session's context for the next model turn: the near field
         *     verbatim, older tool results stubbed or everything older folded into a summary, and what
         *     became of every event (with its transcript id and seq) and why. Writes nothing.
         */
        post: operations["session_compress"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        AppendInputRequest: {
            user_id: string;
            /** @default  */
            task_id?: string;
            events: components["schemas"]["EventInputRequest"][];
        };
        AppendOutput: {
            session_id: string;
            created: boolean;
            event_count: number;
            head_hash: string;
            events: components["schemas"]["AppendedEventOutput"][];
        };
        AppendedEventOutput: {
            seq: number;
            id: string;
        };
        /** @description A card held for review because it reads as an instruction to the model. */
        CardHeldOutput: {
            /** @description the quarantine id a reviewer finds it by */
            id: string;
            /** @description instruction_override, prompt_disclosure, role_change or fake_marker */
            reason: string;
            /** @description where in the card it was found */
            field: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        CardImportOutput: {
            cards: components["schemas"]["CardImportedOutput"][];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        CardImportedOutput: {
            /** @description none when quarantined */
            memory_id: string | null;
            version: number | null;
            /** @description created, updated, unchanged or quarantined */
            outcome: string;
            quarantine: components["schemas"]["CardHeldOutput"] | null;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        CardInputRequest: {
            /** @default  */
            id?: string;
            /** @default  */
            user_id?: string;
            /** @default  */
            project?: string;
            memory_type: components["schemas"]["LtmMemoryTypeEnum"];
            /** @default  */
            title?: string;
            summary: string;
            /** @default  */
            content?: string;
            entities?: string[];
            tags?: string[];
            source_refs?: {
                [key: string]: string[];
            };
            /**
             * Format: double
             * @default 0.5
             */
            importance?: number;
            /**
             * Format: double
             * @default 0.8
             */
            confidence?: number;
            /**
             * Format: date-time
             * @description When what the card remembers happened (shown with the card when recalled, and matched by dates in queries).
             */
            occurred_at?: string | null;
        };
        /** @description A long-term card (`card_view`). */
        CardOutput: {
            memory_id: string;
            /** @description the id an import gave it */
            external_id: string | null;
            user_id: string | null;
            project: string | null;
            memory_type: string;
            title: string;
            summary: string;
            content: string;
            entities: string[];
            tags: string[];
            source_type: string;
            /** @description ids of what the card came from, by kind */
            source_refs: {
                [key: string]: string[];
            };
            /** Format: double */
            importance: number;
            /** Format: double */
            confidence: number;
            access_count: number;
            status: string;
            version: number;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /** Format: date-time */
            occurred_at: string | null;
        };
        /** @description A page of cards, newest first. */
        CardPageOutput: {
            cards: components["schemas"]["CardOutput"][];
            /** @description pass as `cursor` for the next page; null on the last one */
            next_cursor: string | null;
        };
        /** @description What became of an edit of a card, and the card as it is now. */
        CardUpdateOutput: {
            /**
             * @description updated (a new version, reindexed shortly), unchanged, or quarantined (held for review: it reads as an instruction to the model; nothing changed)
             *
             *     * `updated` - updated
             *     * `unchanged` - unchanged
             *     * `quarantined` - quarantined
             */
            outcome: components["schemas"]["CardUpdateOutputOutcomeEnum"];
            card: components["schemas"]["CardOutput"];
            /** @description the fields whose sensitive data was replaced */
            redacted: string[];
            quarantine: components["schemas"]["CardHeldOutput"] | null;
        };
        /**
         * @description * `updated` - updated
         *     * `unchanged` - unchanged
         *     * `quarantined` - quarantined
         * @enum {string}
         */
        CardUpdateOutputOutcomeEnum: "updated" | "unchanged" | "quarantined";
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        CompressInputRequest: {
            budget_tokens: number;
            user_id?: string;
        };
        /** @description An event in the context: verbatim, or a tool result stubbed. */
        CompressedMessageOutput: {
            seq: number;
            id: string;
            role: string;
            tool_call_id: string;
            tool: string;
            state: string;
            near_field: boolean;
            content: string | null;
            tokens: number;
        };
        /** @description A session's context for the next model turn, within the budget, and its account. */
        CompressionOutput: {
            session_id: string;
            user_id: string;
            task_id: string;
            messages: components["schemas"]["CompressedMessageOutput"][];
            summary: components["schemas"]["SummaryOutput"] | null;
            tokens: components["schemas"]["CompressionTokensOutput"];
            within_budget: boolean;
            near_field: string[];
            stubbed: components["schemas"]["StubbedOutput"][];
            folded: components["schemas"]["FoldedOutput"][];
            omitted: components["schemas"]["OmittedOutput"][];
            tool_results: components["schemas"]["ToolResultOutput"][];
            skipped: components["schemas"]["SkippedOutput"] | null;
            language: string;
            notes: string[];
            degraded: string[];
            /** @description the text for the next model turn */
            context: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        CompressionTokensOutput: {
            budget: number;
            before: number;
            after: number;
            near_field: number;
        };
        /** @description What the user may do and what holds (`ContextBlocks.constraints`). */
        ConstraintsBlockOutput: {
            /** @description the user's role per project */
            permissions: components["schemas"]["PermissionOutput"][];
            /** @description in the recalled project; '' when none */
            permission_scope: string;
            /** @description tenant, project and the user's own stable facts (the user's last) */
            facts: components["schemas"]["KeyValueOutput"][];
            /** @description the user's live rules and preferences, newest first */
            standing: components["schemas"]["StandingRuleOutput"][];
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        DeletionInputRequest: {
            /** @default  */
            reason?: string;
        };
        /** @description A deletion request: its status and, once erased and verified, its receipt. */
        DeletionOutput: {
            request_id: string;
            kind: string;
            target: string;
            status: string;
            reason: string;
            decision_reason: string;
            /** Format: date-time */
            decided_at: string | null;
            /** Format: date-time */
            completed_at: string | null;
            attempts: number;
            last_error: string;
            /** @description null until verified and done */
            receipt: components["schemas"]["ReceiptOutput"] | null;
            receipt_sha256: string | null;
            /** Format: date-time */
            created_at: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        DroppedOutput: {
            memory_id: string;
            source: string;
            reason: string;
        };
        /** @description The verification after the erasure; every count of `by_id` and `by_hash` must be 0. */
        ErasureChecksOutput: {
            ok: boolean;
            /** @description what is still found by id, per store */
            by_id: {
                [key: string]: number;
            };
            /** @description what is still found by content, per store */
            by_hash: {
                [key: string]: number;
            };
            /** @description the same content held by other users (or shared): reported, not a failure */
            same_content_elsewhere: {
                [key: string]: number;
            };
            by_vector: components["schemas"]["VectorCheckOutput"];
            transcripts: components["schemas"]["TranscriptCheckOutput"];
            /** @description how long the verification took */
            ms?: number;
        };
        /** @description Every 4xx and 5xx answer; clients branch on `code`, never on `message`. */
        Error: {
            error: {
                /**
                 * @description stable, machine-readable (`memoryproject.errors.ErrorCode`)
                 * @enum {string}
                 */
                code: "invalid" | "invalid_json" | "unauthenticated" | "permission_denied" | "not_found" | "method_not_allowed" | "not_acceptable" | "conflict" | "already_decided" | "duplicate" | "duplicate_event_id" | "user_gone" | "repeats_card" | "gone" | "payload_too_large" | "uri_too_long" | "unsupported_media_type" | "throttled" | "headers_too_large" | "store_unavailable" | "schema_mismatch" | "embedding_mismatch" | "server_error" | "error";
                /** @description for people; may change */
                message: string;
                /** @description problems by input field, e.g. `events.3.role` */
                fields: {
                    [key: string]: string[];
                };
            };
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        EventInputRequest: {
            id?: string;
            role: components["schemas"]["RoleEnum"];
            content: string;
            /** @default  */
            tool_call_id?: string;
            metadata?: {
                [key: string]: unknown;
            };
            /** Format: date-time */
            created_at?: string;
        };
        /** @description One recorded event, as stored in its segment. */
        EventOutput: {
            seq: number;
            id: string;
            role: string;
            content: string;
            tool_call_id: string;
            metadata: {
                [key: string]: unknown;
            };
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            received_at: string;
        };
        /** @description How recall decided (`explain: true`). */
        ExplainOutput: {
            query_profile: components["schemas"]["QueryProfileOutput"];
            routing: components["schemas"]["RoutingOutput"];
            /** @description candidates left out, and why */
            dropped: components["schemas"]["DroppedOutput"][];
            /** @description ids of items shown by their summary */
            shortened: string[];
            /** @description per layer and store, and `total` */
            latency_ms: {
                [key: string]: number;
            };
            notes: string[];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportAuditEventOutput: {
            seq: number;
            action: string;
            actor: string;
            object_type: string;
            object_id: string;
            reason: string;
            /** Format: date-time */
            created_at: string;
            sha256: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportHistoryOutput: {
            count: number;
            entries: components["schemas"]["HistoryEntryOutput"][];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportLayer1Output: {
            user_id: string;
            profile: components["schemas"]["ProfileFieldsOutput"];
            preferences: components["schemas"]["PreferenceOutput"][];
            roles: components["schemas"]["RoleOutput"][];
            facts: components["schemas"]["FactOutput"][];
            preference_history: components["schemas"]["ExportVersionOutput"][];
            fact_history: components["schemas"]["ExportVersionOutput"][];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportPromotionOutput: {
            request_id: string;
            path: string;
            status: string;
            proposal: components["schemas"]["ProposalOutput"];
            /** Format: date-time */
            created_at: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportQuarantinedOutput: {
            quarantine_id: string;
            /** @description the write path that held it */
            path: string;
            source_kind: string;
            /** @description instruction_override, prompt_disclosure, role_change or fake_marker */
            reason: string;
            /** @description the held text, redacted ('' once discarded) */
            text: string;
            status: string;
            /** Format: date-time */
            created_at: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportTranscriptOutput: {
            session_id: string;
            task_id: string;
            event_count: number;
            /** Format: date-time */
            created_at: string;
            events: components["schemas"]["EventOutput"][];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportVerificationOutput: {
            request_id: string;
            memory_type: string;
            /** @description the held rule, redacted */
            summary: string;
            source_kind: string;
            /** @description untrusted_constraint, untrusted_preference or untrusted_profile_fact */
            hold_reason: string;
            status: string;
            /** Format: date-time */
            created_at: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ExportVersionOutput: {
            key: string;
            value: unknown;
            version: number;
            is_current: boolean;
            source: string;
            source_ids: unknown;
            /** Format: date-time */
            created_at: string;
        };
        /** @description A current stable fact of the user (`fact_<n>`). */
        FactOutput: {
            id: string;
            key: string;
            /** @description as stored (any JSON) */
            value: unknown;
            /** @description user (the user's own facts are listed here) */
            scope: string;
            project: string | null;
            /** @description api, admin, promotion (a reviewed one) or import */
            source: string;
            version: number;
            /**
             * Format: date-time
             * @description when this version was written
             */
            updated_at: string;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        FactRequest: {
            key: string;
            value: unknown;
            project?: string;
            source_ids?: string[];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        FoldedOutput: {
            id: string;
            seq: number;
            role: string;
            reason: string;
            dependency: string | null;
        };
        /** @description One indexed transcript event (`history_entries_for`). */
        HistoryEntryOutput: {
            entry_id: string;
            event_id: string;
            session_id: string;
            role: string;
            /** @description ISO 8601 */
            occurred_at: string;
            /** @description as indexed, redacted */
            text: string;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        ImportInputRequest: {
            cards: components["schemas"]["CardInputRequest"][];
        };
        /** @description What became of an edit of a short-term item, and the item as it is now. */
        ItemUpdateOutput: {
            /**
             * @description updated (a new version), unchanged (nothing to write), quarantined (held for review: it reads as an instruction to the model), held_for_verification (an untrusted writer's new words for a rule wait for a reviewer); only `updated` changed the item
             *
             *     * `updated` - updated
             *     * `unchanged` - unchanged
             *     * `quarantined` - quarantined
             *     * `held_for_verification` - held_for_verification
             */
            outcome: components["schemas"]["ItemUpdateOutputOutcomeEnum"];
            /** @description the item after the edit (as it was unless updated) */
            item: components["schemas"]["StmItemOutput"];
            /** @description kinds of sensitive data replaced */
            redacted: string[];
            quarantine: components["schemas"]["QuarantineOutput"] | null;
            /** @description why it waits for verification; '' if not */
            hold_reason: string;
            verification_id: string | null;
        };
        /**
         * @description * `updated` - updated
         *     * `unchanged` - unchanged
         *     * `quarantined` - quarantined
         *     * `held_for_verification` - held_for_verification
         * @enum {string}
         */
        ItemUpdateOutputOutcomeEnum: "updated" | "unchanged" | "quarantined" | "held_for_verification";
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        KeyValueOutput: {
            key: string;
            /** @description as stored (any JSON) */
            value: unknown;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        LayerRouteOutput: {
            asked: boolean;
            /** @description why it was asked */
            reasons: string[];
            not_asked_because: string[];
        };
        /**
         * @description * `postgres` - postgres
         *     * `redis` - redis
         *     * `ltm` - ltm
         *     * `history` - history
         * @enum {string}
         */
        LayersEnum: "postgres" | "redis" | "ltm" | "history";
        /**
         * @description * `semantic_fact` - Semantic fact
         *     * `episodic_case` - Episodic case
         *     * `procedure` - Procedure
         *     * `preference` - Preference
         *     * `knowledge` - Knowledge
         * @enum {string}
         */
        LtmMemoryTypeEnum: "semantic_fact" | "episodic_case" | "procedure" | "preference" | "knowledge";
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        LtmSearchHitOutput: {
            memory_id: string;
            /** Format: double */
            score: number;
            lexical_rank: number | null;
            /** Format: double */
            lexical_score: number | null;
            vector_rank: number | null;
            /** Format: double */
            vector_score: number | null;
            title: string;
            summary: string;
            memory_type: string;
            user_id: string | null;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        LtmSearchOutput: {
            mode: string;
            /** @description a branch failed or was too slow */
            degraded: boolean;
            failed_branches: string[];
            hits: components["schemas"]["LtmSearchHitOutput"][];
        };
        /**
         * @description * `lexical` - lexical
         *     * `vector` - vector
         *     * `hybrid` - hybrid
         * @enum {string}
         */
        ModeEnum: "lexical" | "vector" | "hybrid";
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        OmittedOutput: {
            id: string;
            seq: number | null;
            reason: string;
        };
        /** @description The fields of a card an edit may change; at least one. */
        PatchedCardChangesRequest: {
            /** @description apply only to this version of the object (409 `conflict` otherwise) */
            expected_version?: number;
            title?: string;
            summary?: string;
            content?: string;
            entities?: string[];
            tags?: string[];
            /** Format: double */
            importance?: number;
            /** Format: double */
            confidence?: number;
            /** Format: date-time */
            occurred_at?: string | null;
        };
        /** @description The fields of an item an edit may change; at least one. */
        PatchedItemChangesRequest: {
            /** @description apply only to this version of the object (409 `conflict` otherwise) */
            expected_version?: number;
            summary?: string;
            entities?: string[];
            tags?: string[];
            /** Format: double */
            importance?: number;
            /** Format: double */
            confidence?: number;
            ttl_minutes?: number;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        PatchedProfilePatchInputRequest: {
            profile?: components["schemas"]["ProfileFieldsRequest"];
            preferences?: components["schemas"]["PreferenceRequest"][];
            roles?: components["schemas"]["RoleRequest"][];
            facts?: components["schemas"]["FactRequest"][];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        PermissionOutput: {
            project: string;
            role: string;
            /** @description the role's permission scope */
            scope: string;
        };
        /**
         * @description * `read_only` - Read only
         *     * `read_write` - Read and write
         *     * `admin` - Admin
         * @enum {string}
         */
        PermissionScopeEnum: "read_only" | "read_write" | "admin";
        /** @description A current preference (`pref_<n>`). */
        PreferenceOutput: {
            id: string;
            key: string;
            /** @description as stored (any JSON) */
            value: unknown;
            /** Format: double */
            confidence: number;
            /** @description api, admin, promotion (a reviewed one) or import */
            source: string;
            version: number;
            /**
             * Format: date-time
             * @description when this version was written
             */
            updated_at: string;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        PreferenceRequest: {
            key: string;
            value: unknown;
            /** Format: double */
            confidence?: number;
            source_ids?: string[];
        };
        /** @description Who the user is (`ContextBlocks.profile`): only the profile fields that are set. */
        ProfileBlockOutput: {
            language?: string;
            answer_style?: string;
            timezone?: string;
            display_name?: string;
            /** @description current preference values by key, as stored (any JSON); only when there are */
            preferences?: {
                [key: string]: unknown;
            };
        };
        /** @description Everything Layer 1 knows about one end user (`profile_document_for`). */
        ProfileDocumentOutput: {
            user_id: string;
            profile: components["schemas"]["ProfileFieldsOutput"];
            preferences: components["schemas"]["PreferenceOutput"][];
            roles: components["schemas"]["RoleOutput"][];
            facts: components["schemas"]["FactOutput"][];
        };
        /** @description Who the end user is; every field is '' (extras {}) for a user without a profile. */
        ProfileFieldsOutput: {
            language: string;
            answer_style: string;
            timezone: string;
            display_name: string;
            /** @description whatever else the tenant keeps about the user */
            extras: {
                [key: string]: unknown;
            };
            /** Format: date-time */
            updated_at: string | null;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        ProfileFieldsRequest: {
            language?: string;
            answer_style?: string;
            timezone?: string;
            display_name?: string;
            extras?: {
                [key: string]: unknown;
            };
        };
        /** @description The end user's Layer 1 document (`profile_document_for`). */
        ProfileOutput: {
            user_id: string;
            profile: components["schemas"]["ProfileFieldsOutput"];
            preferences: components["schemas"]["PreferenceOutput"][];
            roles: components["schemas"]["RoleOutput"][];
            facts: components["schemas"]["FactOutput"][];
        };
        /** @description The end user's Layer 1 document (`profile_document_for`). */
        ProfilePatchOutput: {
            user_id: string;
            profile: components["schemas"]["ProfileFieldsOutput"];
            preferences: components["schemas"]["PreferenceOutput"][];
            roles: components["schemas"]["RoleOutput"][];
            facts: components["schemas"]["FactOutput"][];
            /** @description values held for review because they read as an instruction to the model: each with its quarantine id, reason code and field (e.g. preferences.0.value); nothing of them was written */
            quarantined: {
                [key: string]: string;
            }[];
            /** @description free-text values from a key that is no trusted writer, waiting for a reviewer in the verification queue before they become the user's profile: each with its request id, status (pending, or rejected when a reviewer rejected the same value before), reason code and field; nothing of them was written */
            held_for_verification: {
                [key: string]: string;
            }[];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        PromotionListOutput: {
            promotions: components["schemas"]["PromotionOutput"][];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        PromotionOutput: {
            request_id: string;
            path: string;
            origin: string;
            user_id: string | null;
            memory_type: string;
            proposal: components["schemas"]["ProposalOutput"];
            /** Format: double */
            confidence: number;
            triggers: components["schemas"]["TriggersOutput"];
            status: string;
            decision_reason: string;
            /** @description what approval produced */
            result_ref: string | null;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            decided_at: string | null;
        };
        /**
         * @description What approval would write: a preference or fact (path `postgres`: key, value, target) or a
         *     card (path `ltm`: the card's fields).
         */
        ProposalOutput: {
            /** @description postgres: the Layer 1 key */
            key?: string;
            /** @description postgres: the value (any JSON) */
            value?: unknown;
            /** @description postgres: preference or fact */
            target?: string;
            /** @description ltm: the card's type */
            memory_type?: string;
            /** @description ltm */
            title?: string;
            /** @description ltm */
            summary?: string;
            /** @description ltm */
            content?: string;
            /** @description ltm */
            entities?: string[];
            /** @description ltm */
            tags?: string[];
            /**
             * Format: double
             * @description ltm
             */
            importance?: number;
            /**
             * Format: double
             * @description ltm
             */
            confidence?: number;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        ProposalRequest: {
            user_id: string;
            session_id: string;
            /** @default  */
            task_id?: string;
            memory_type: components["schemas"]["StmMemoryTypeEnum"];
            /** @default  */
            subtype?: string;
            summary: string;
            detail?: {
                [key: string]: unknown;
            };
            entities?: string[];
            tags?: string[];
            source?: components["schemas"]["SourceRequest"];
            /**
             * Format: double
             * @default 0.5
             */
            confidence?: number;
            /**
             * Format: double
             * @default 0.5
             */
            importance?: number;
            /** @default  */
            canonical_fact_key?: string;
            /** @default  */
            fact_value?: string;
            /** @default false */
            verified?: boolean;
            /** @default false */
            remember?: boolean;
            ttl_minutes?: number;
        };
        /** @description One proposal's decision and the item it landed in (none when refused or a dry run). */
        ProposalResultOutput: {
            /** @description the proposal's position in the request */
            index: number;
            /** @description inserted, merged, superseded, unchanged, refused, held_for_verification; in a dry run would_write or would_hold */
            outcome: string;
            item_id: string | null;
            version: number | null;
            superseded_id: string | null;
            /** @description kinds of sensitive data replaced */
            redacted: string[];
            /** @description proposal (an agent's), or user, assistant, tool, llm, reviewer, import */
            source_kind: string;
            /**
             * @description trusted: the user's word (a user event, a reviewer, a trusted-writer key)
             *
             *     * `trusted` - trusted
             *     * `untrusted` - untrusted
             */
            trust: components["schemas"]["TrustEnum"];
            /** @description an untrusted constraint, preference or profile fact: stored for a reviewer, never injected as a rule until approved */
            held_for_verification: boolean;
            /** @description untrusted_constraint, untrusted_preference or untrusted_profile_fact; '' when not held */
            hold_reason: string;
            /** @description the verification request holding it (none in a dry run) */
            verification_id: string | null;
            /** @description set when the proposal was held for review (outcome quarantined) */
            quarantine: components["schemas"]["QuarantineOutput"] | null;
            /** @description the write policy's verdict */
            accepted: boolean;
            /** Format: double */
            score: number;
            threshold_breakdown: {
                [key: string]: number;
            };
            write_profile: components["schemas"]["WriteProfileOutput"];
            ttl_minutes: number;
            /** @description machine-readable reason when refused, else '' */
            refusal: string;
            policy_version: number;
            repeat: boolean;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        ProposalsInputRequest: {
            proposals: components["schemas"]["ProposalRequest"][];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        ProposalsOutput: {
            dry_run: boolean;
            results: components["schemas"]["ProposalResultOutput"][];
        };
        /** @description A write held for review because it reads as an instruction to the model. */
        QuarantineOutput: {
            /** @description the quarantine id a reviewer finds it by ('' in a dry run) */
            id: string;
            /** @description instruction_override, prompt_disclosure, role_change or fake_marker */
            reason: string;
            /** @description where in the write it was found */
            field: string;
        };
        /** @description What recall read in the query, and the words that set each flag (`QueryProfile`). */
        QueryProfileOutput: {
            intent: string;
            language: string;
            has_reference: boolean;
            has_profile_request: boolean;
            has_similarity_request: boolean;
            fuzzy_history_reference: boolean;
            has_debug_terms: boolean;
            entities: string[];
            active_task_id: string;
            session_recent: boolean;
            topic_shift: boolean;
            needs_exact_metadata: boolean;
            recent_entity_overlap: number;
            profile_cache_missing: boolean;
            profile_cache_stale: boolean;
            redis_result_insufficient: boolean;
            /** @description by word-list kind, the words of the query found in it */
            matched: {
                [key: string]: string[];
            };
            content_terms: string[];
            memory_holds: boolean;
            holds_firmly: boolean;
            probe_skipped: boolean;
            /** Format: double */
            holding_share: number;
            held_terms: string[];
            user_items_matched: number;
            user_items_close: number;
            related_terms: string[];
            memory_close: boolean;
            about_user: boolean;
            /**
             * Format: double
             * @description the closest memory's cosine above the query's background
             */
            semantic_margin: number;
            /**
             * Format: double
             * @description how much the query reads as one about the user's own world rather than the world at large (above 0: closer to the former)
             */
            own_world_score: number;
            /** @description reads as a question about the world at large (own_world_score below 0): only words enough, or a memory very close in meaning, reach the user's memory */
            about_world: boolean;
            /** @description memories near a question about the user's own world, brought by that alone */
            own_world_memories: number;
            time: components["schemas"]["TimeQueryOutput"];
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        RecallInputRequest: {
            user_id: string;
            session_id: string;
            query: string;
            /** @default  */
            task_id?: string;
            project?: string;
            workspace?: string;
            budget_tokens?: number;
            /** @description at most this many memories (with `cutoff`, those that answer the query) */
            k?: number;
            /**
             * @description inject only the memories that answer the query; false: the top k
             * @default true
             */
            cutoff?: boolean;
            layers?: components["schemas"]["LayersEnum"][];
            /** @default false */
            explain?: boolean;
            /**
             * @description only the user's word: leave out what an assistant, a tool, an agent's proposal, a model or an import said
             * @default false
             */
            user_stated_only?: boolean;
        };
        /** @description A memory recall chose, from any layer, with its score's terms and provenance. */
        RecallItemOutput: {
            memory_id: string;
            /** @description redis, ltm or history */
            source: string;
            source_priority: number;
            memory_type: string;
            domain: string;
            /** @description as injected (the summary when `shortened`) */
            text: string;
            shortened: boolean;
            /** Format: double */
            score: number;
            score_parts: {
                [key: string]: number;
            };
            /** Format: double */
            weight: number;
            /** Format: double */
            relevance: number;
            /**
             * Format: double
             * @description the estimate that it answers the query, 0 to 1 (`answer_parts`: from its words, its meaning, the current task)
             */
            answers: number;
            answer_parts: {
                [key: string]: number;
            };
            canonical_fact_key: string;
            provenance: components["schemas"]["RecallProvenanceOutput"];
            /** @description whose word: user, assistant, tool, proposal (an agent's), llm, reviewer (approved or promoted by one) or import */
            source_kind: string;
            /**
             * @description untrusted memories are evidence, injected as quoted, attributed data
             *
             *     * `trusted` - trusted
             *     * `untrusted` - untrusted
             */
            trust: components["schemas"]["TrustEnum"];
        };
        /** @description Everything an agent should know before its next turn, within the token budget. */
        RecallOutput: {
            recall_id: string;
            profile_block: components["schemas"]["ProfileBlockOutput"];
            constraints_block: components["schemas"]["ConstraintsBlockOutput"];
            runtime_metadata_block: components["schemas"]["RuntimeMetadataBlockOutput"];
            items: components["schemas"]["RecallItemOutput"][];
            injection_text: string;
            token_estimate: number;
            budget_tokens: number;
            language: string;
            /** @description layers or stores skipped (down or too slow) */
            degraded: string[];
            /** @description only with `explain: true` */
            explain?: components["schemas"]["ExplainOutput"];
        };
        /** @description Where a recalled memory came from; which keys are present depends on its `source`. */
        RecallProvenanceOutput: {
            /** @description redis: the events it came from */
            message_ids?: string[];
            /** @description redis */
            tool_call_ids?: string[];
            /** @description redis */
            task_id?: string;
            /** @description redis: sessions it was seen in */
            sessions?: string[];
            /** @description redis: when the statement was said (ISO 8601), where known */
            said_at?: string;
            /** @description redis: the item of an earlier statement this one replaced */
            supersedes?: string;
            /** @description ltm: `kind:id` references */
            source_refs?: string[];
            /** @description ltm */
            lexical_rank?: number | null;
            /** @description ltm */
            vector_rank?: number | null;
            /** @description history: the event said */
            event_ids?: string[];
            /** @description history */
            session_id?: string;
            /** @description history: who said it */
            role?: string;
            /** @description history: ISO 8601 */
            occurred_at?: string;
            /** @description history: the rank in each search branch that found it */
            branch_ranks?: {
                [key: string]: number;
            };
            /** @description history: found as the record of the current task */
            task_record?: boolean;
            /** @description whether it falls in the time the query names (when it names one) */
            in_time_window?: boolean;
            /** @description events of an assistant's or a tool's turn that repeated it */
            also_said_in?: string[];
        };
        /**
         * @description What the erasure removed from each store and how it was verified (`receipt_sha256` is
         *     the SHA-256 of this object, keys sorted).
         */
        ReceiptOutput: {
            request_id: string;
            /** @description the tenant's slug */
            tenant: string;
            kind: string;
            target: string;
            /** @description the reviewer's username */
            approved_by: string | null;
            /** @description ISO 8601 */
            approved_at: string | null;
            /** @description ISO 8601 */
            started_at: string | null;
            /** @description ISO 8601 */
            completed_at: string;
            nothing_to_erase: boolean;
            /** @description per erasure step, what it removed (counts, and `ms` it took) */
            stores: {
                [key: string]: {
                    [key: string]: number;
                };
            };
            checks: components["schemas"]["ErasureChecksOutput"];
            /** @description content hashes of the erased cards */
            card_content_sha256: string[];
        };
        ReplayOutput: {
            session_id: string;
            user_id: string;
            task_id: string;
            event_count: number;
            next_after: number;
            has_more: boolean;
            events: components["schemas"]["EventOutput"][];
        };
        /**
         * @description * `user` - user
         *     * `assistant` - assistant
         *     * `tool` - tool
         *     * `system` - system
         * @enum {string}
         */
        RoleEnum: "user" | "assistant" | "tool" | "system";
        /** @description The end user's role and permission scope in one project. */
        RoleOutput: {
            project: string;
            role: string;
            /** @description read_only, read_write or admin */
            permission_scope: string;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        RoleRequest: {
            project: string;
            role: string | null;
            permission_scope?: components["schemas"]["PermissionScopeEnum"];
        };
        /** @description Each layer's decision with its reasons. */
        RoutingOutput: {
            postgres: components["schemas"]["LayerRouteOutput"];
            redis: components["schemas"]["LayerRouteOutput"];
            ltm: components["schemas"]["LayerRouteOutput"];
            history: components["schemas"]["LayerRouteOutput"];
            /** @description how long-term memory was searched */
            ltm_mode: string;
            /** @description the caller chose the layers (`layers`) */
            forced: boolean;
        };
        /** @description Where the agent runs (`ContextBlocks.runtime`): only the values that are set. */
        RuntimeMetadataBlockOutput: {
            /** @description the tenant's slug */
            tenant?: string;
            project?: string;
            project_name?: string;
            workspace?: string;
            default_env?: string;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        SearchInputRequest: {
            query: string;
            /** @default hybrid */
            mode?: components["schemas"]["ModeEnum"];
            /** @default 10 */
            k?: number;
            user_id?: string;
            project?: string;
            memory_types?: components["schemas"]["LtmMemoryTypeEnum"][];
            /**
             * @default [
             *       "active"
             *     ]
             */
            statuses?: components["schemas"]["StatusesEnum"][];
        };
        /** @description A recorded event with the session it belongs to (`events_by_ids`). */
        SessionEventOutput: {
            seq: number;
            id: string;
            role: string;
            content: string;
            tool_call_id: string;
            metadata: {
                [key: string]: unknown;
            };
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            received_at: string;
            session_id: string;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        SkippedOutput: {
            first_seq: number;
            last_seq: number;
            reason: string;
        };
        /**
         * @description An input serializer that refuses fields it does not declare, naming each one.
         *
         *     A client's typo (`top_k` for `k`) is a 400, not a silently ignored value. Nested input
         *     serializers derive from it too, so `events.0.colour` is named the same way. In a query
         *     string, DRF's own `format` parameter is allowed.
         */
        SourceRequest: {
            /** @default proposal */
            kind?: string;
            message_ids?: string[];
            tool_call_ids?: string[];
        };
        /** @description A live constraint or preference of the user's own word, not among the chosen items. */
        StandingRuleOutput: {
            memory_id: string;
            memory_type: string;
            text: string;
            sessions: string[];
            message_ids: string[];
        };
        /**
         * @description * `active` - active
         *     * `archived` - archived
         * @enum {string}
         */
        StatusesEnum: "active" | "archived";
        /** @description A short-term item with the transcript events it came from. */
        StmItemDetailOutput: {
            id: string;
            user_id: string;
            session_id: string;
            task_id: string;
            memory_type: string;
            subtype: string;
            summary: string;
            detail: {
                [key: string]: unknown;
            };
            entities: string[];
            tags: string[];
            source: components["schemas"]["StmSourceOutput"];
            /** @description whose word it is: user, assistant, tool, proposal (an agent's), llm, reviewer or import; the strongest of a merged item's sources */
            source_kind: string;
            /**
             * @description only a trusted item is injected as a rule
             *
             *     * `trusted` - trusted
             *     * `untrusted` - untrusted
             */
            trust: components["schemas"]["TrustEnum"];
            /** Format: double */
            confidence: number;
            /** Format: double */
            importance: number;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /** Format: date-time */
            last_access_at: string;
            /** Format: date-time */
            expires_at: string;
            fingerprint: string;
            canonical_fact_key: string;
            fact_value: string;
            version: number;
            status: string;
            hit_count: number;
            sessions: string[];
            supersedes: string;
            superseded_by: string;
            verified: boolean;
            remember: boolean;
            /** @description the transcript events it came from, redacted like the item */
            provenance: components["schemas"]["SessionEventOutput"][];
        };
        /** @description A short-term item (`item_document`). */
        StmItemOutput: {
            id: string;
            user_id: string;
            session_id: string;
            task_id: string;
            memory_type: string;
            subtype: string;
            summary: string;
            detail: {
                [key: string]: unknown;
            };
            entities: string[];
            tags: string[];
            source: components["schemas"]["StmSourceOutput"];
            /** @description whose word it is: user, assistant, tool, proposal (an agent's), llm, reviewer or import; the strongest of a merged item's sources */
            source_kind: string;
            /**
             * @description only a trusted item is injected as a rule
             *
             *     * `trusted` - trusted
             *     * `untrusted` - untrusted
             */
            trust: components["schemas"]["TrustEnum"];
            /** Format: double */
            confidence: number;
            /** Format: double */
            importance: number;
            /** Format: date-time */
            created_at: string;
            /** Format: date-time */
            updated_at: string;
            /** Format: date-time */
            last_access_at: string;
            /** Format: date-time */
            expires_at: string;
            fingerprint: string;
            canonical_fact_key: string;
            fact_value: string;
            version: number;
            status: string;
            hit_count: number;
            sessions: string[];
            supersedes: string;
            superseded_by: string;
            verified: boolean;
            remember: boolean;
        };
        /**
         * @description * `fact` - fact
         *     * `decision` - decision
         *     * `hypothesis` - hypothesis
         *     * `observation` - observation
         *     * `constraint` - constraint
         *     * `preference` - preference
         * @enum {string}
         */
        StmMemoryTypeEnum: "fact" | "decision" | "hypothesis" | "observation" | "constraint" | "preference";
        /** @description A page of a user's live short-term items, newest first. */
        StmPageOutput: {
            items: components["schemas"]["StmItemOutput"][];
            /** @description pass as `before` for the next page; null on the last one */
            next_before: string | null;
        };
        /** @description Where an item came from. */
        StmSourceOutput: {
            /** @description the source kinds, `+`-joined for a merged item (`source_kind` is the strongest) */
            kind?: string;
            /** @description the transcript events it came from */
            message_ids: string[];
            tool_call_ids: string[];
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        StubbedOutput: {
            id: string;
            seq: number;
            tool: string;
            tool_call_id: string;
            reason: string;
            dependency: string | null;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        SummaryCoversOutput: {
            events: number;
            first_seq: number;
            last_seq: number;
        };
        /**
         * @description An answer's shape, declared for the OpenAPI schema, for the views and services that build it.
         *
         *     The values reach the renderer as they were built (a time stays a datetime, a count an
         *     int), so declaring a shape never changes an answer's bytes: only nested output serializers
         *     and lists and maps of them are walked. A key the serializer does not declare is kept, and
         *     the schema test of every response (tests/schema_check.py) fails on it.
         */
        SummaryLineOutput: {
            text: string;
            /** @description event ids it cites */
            refs: string[];
        };
        /** @description The summary the older events were folded into. */
        SummaryOutput: {
            sections: {
                [key: string]: components["schemas"]["SummaryLineOutput"][];
            };
            covers: components["schemas"]["SummaryCoversOutput"];
            dropped_lines: number;
            summariser: string;
        };
        /** @description What the query says about time; empty when recall did not read it. */
        TimeQueryOutput: {
            window?: components["schemas"]["TimeWindowOutput"] | null;
            /** @description the query asks when */
            asks_time?: boolean;
        };
        /** @description [start, end) in UTC; `phrase` is the words that set it. */
        TimeWindowOutput: {
            /** @description ISO 8601 */
            start: string;
            /** @description ISO 8601 */
            end: string;
            phrase: string;
            /** @description depends on when it was asked */
            relative: boolean;
        };
        /** @description A tool result's dependency, with the reasons and the evidence behind it. */
        ToolResultOutput: {
            id: string;
            seq: number;
            dependency: string;
            current: boolean;
            reasons: string[];
            consumers: string[];
            digested_by: string[];
        };
        /** @description The erased user's sessions: tombstoned segments, no original objects left, chains whole. */
        TranscriptCheckOutput: {
            ok: boolean;
            sessions: number;
            segments_not_tombstoned: number;
            erased_objects_left: number;
            chains_verified: number;
        };
        /** @description The triggers that fired, each with why (a reflection's proposal has only `reflection`). */
        TriggersOutput: {
            /** @description written and recalled often enough */
            hits?: string;
            /** @description seen in enough sessions */
            cross_session?: string;
            /** @description the user asked to remember it */
            remember?: string;
            /** @description fills a structured key, or a long-term preference */
            stable_profile?: string;
            /** @description related episodes that together make a pattern */
            reflection?: string;
        };
        /**
         * @description * `trusted` - trusted
         *     * `untrusted` - untrusted
         * @enum {string}
         */
        TrustEnum: "trusted" | "untrusted";
        /** @description Everything held about one end user, in every layer (`user_export`). */
        UserExportOutput: {
            format: number;
            user_id: string;
            /** Format: date-time */
            created_at: string;
            layer1: components["schemas"]["ExportLayer1Output"];
            short_term: components["schemas"]["StmItemOutput"][];
            long_term: components["schemas"]["CardOutput"][];
            transcripts: components["schemas"]["ExportTranscriptOutput"][];
            history: components["schemas"]["ExportHistoryOutput"];
            promotions: components["schemas"]["ExportPromotionOutput"][];
            verifications: components["schemas"]["ExportVerificationOutput"][];
            quarantined: components["schemas"]["ExportQuarantinedOutput"][];
            audit: components["schemas"]["ExportAuditEventOutput"][];
        };
        /**
         * @description Everything an agent may read about one end user: the profile, one page of the live
         *     short-term items and one page of the user's own cards.
         */
        UserMemoriesOutput: {
            user_id: string;
            /** @description the Layer 1 document, as profile_get */
            profile: components["schemas"]["ProfileDocumentOutput"];
            /** @description live short-term items, newest first */
            items: components["schemas"]["StmItemOutput"][];
            /** @description pass as `items_before` for the next page of items */
            next_items_before: string | null;
            /** @description the user's active cards, newest first */
            cards: components["schemas"]["CardOutput"][];
            /** @description pass as `cards_cursor` for the next page of cards */
            next_cards_cursor: string | null;
        };
        /** @description Nearest-neighbour probes with the erased cards' vectors. */
        VectorCheckOutput: {
            probes: number;
            /**
             * Format: double
             * @description the similarity a hit must reach to count
             */
            threshold: number;
            /** @description must be 0 */
            hits_of_erased: number;
            /** @description reported, not a failure */
            similar_cards_of_others: number;
        };
        VerifyOutput: {
            session_id: string;
            ok: boolean;
            segments_checked: number;
            events_checked: number;
            problems: components["schemas"]["VerifyProblemOutput"][];
        };
        /** @description A segment that failed verification, and why. */
        VerifyProblemOutput: {
            segment: number;
            path: string;
            reason: string;
        };
        /** @description What the write policy read in the proposal (`WriteProfile`). */
        WriteProfileOutput: {
            is_verified: boolean;
            is_stable_for_current_task: boolean;
            is_user_constraint: boolean;
            is_decision: boolean;
            is_preference: boolean;
            /**
             * Format: double
             * @description 1 − the highest word overlap with what is held
             */
            novelty: number;
            /** Format: double */
            confidence: number;
            estimated_ttl_minutes: number;
            duplicate: boolean;
            transient: boolean;
            raw_unstructured_blob: boolean;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    events_replay: {
        parameters: {
            query?: {
                after?: number;
                limit?: number;
            };
            header?: never;
            path: {
                session_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReplayOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `gone`: the object was erased */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    events_append: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                session_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AppendInputRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AppendOutput"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AppendOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `conflict` (or a more precise code): the request contradicts stored state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `gone`: the object was erased */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    session_verify: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                session_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VerifyOutput"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    recall: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RecallInputRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecallOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `conflict` (or a more precise code): the request contradicts stored state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    proposals_submit: {
        parameters: {
            query?: {
                /** @description decide only, write nothing */
                dry_run?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ProposalsInputRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProposalsOutput"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProposalsOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    stm_items_list: {
        parameters: {
            query: {
                before?: number;
                entity?: string;
                limit?: number;
                session_id?: string;
                task_id?: string;
                /**
                 * @description * `fact` - fact
                 *     * `decision` - decision
                 *     * `hypothesis` - hypothesis
                 *     * `observation` - observation
                 *     * `constraint` - constraint
                 *     * `preference` - preference
                 */
                type?: "fact" | "decision" | "hypothesis" | "observation" | "constraint" | "preference";
                user_id: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StmPageOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    stm_item_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                item_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StmItemDetailOutput"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    stm_item_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                item_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No response body */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    stm_item_update: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                item_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["PatchedItemChangesRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemUpdateOutput"];
                };
            };
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ItemUpdateOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `conflict` (or a more precise code): the request contradicts stored state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    cards_import: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ImportInputRequest"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CardImportOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    cards_list: {
        parameters: {
            query?: {
                cursor?: number;
                limit?: number;
                /**
                 * @description * `semantic_fact` - Semantic fact
                 *     * `episodic_case` - Episodic case
                 *     * `procedure` - Procedure
                 *     * `preference` - Preference
                 *     * `knowledge` - Knowledge
                 */
                memory_type?: "semantic_fact" | "episodic_case" | "procedure" | "preference" | "knowledge";
                /** @description only the cards of no user (the tenant's) */
                shared?: boolean;
                /**
                 * @description active (the default) or archived
                 *
                 *     * `active` - active
                 *     * `archived` - archived
                 */
                status?: "active" | "archived";
                user_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CardPageOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    ltm_search: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SearchInputRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LtmSearchOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    card_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CardOutput"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    card_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletionOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    card_update: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["PatchedCardChangesRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CardUpdateOutput"];
                };
            };
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CardUpdateOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `conflict` (or a more precise code): the request contradicts stored state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    profile_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProfileOutput"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    profile_update: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["PatchedProfilePatchInputRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProfilePatchOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    user_memories: {
        parameters: {
            query?: {
                cards_cursor?: number;
                items_before?: number;
                /** @description per part */
                limit?: number;
            };
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserMemoriesOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    promotions_list: {
        parameters: {
            query?: {
                limit?: number;
                /**
                 * @description * `pending` - Pending review
                 *     * `approved` - Approved
                 *     * `rejected` - Rejected
                 */
                status?: "pending" | "approved" | "rejected";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PromotionListOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    fact_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                fact_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletionOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    user_forget: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["DeletionInputRequest"];
            };
        };
        responses: {
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletionOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deletion_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                request_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletionOutput"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    user_export: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserExportOutput"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    session_compress: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                session_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CompressInputRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CompressionOutput"];
                };
            };
            /** @description `invalid` (see `fields`) or `invalid_json`: the request is malformed; nothing changed */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthenticated`: no key, or an unknown or revoked one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `permission_denied`: the key lacks the scope this operation needs */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `not_found`: no such object in the key's tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `conflict` (or a more precise code): the request contradicts stored state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `payload_too_large`: the body or one of its lists is over the limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: the URL (path and query string) is over `API_MAX_URL_BYTES` */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: send `Content-Type: application/json` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `throttled`: over the key's rate limit; retry after `Retry-After` seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: a header line over `API_MAX_HEADER_BYTES`, or over `API_MAX_HEADERS` header fields */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `store_unavailable`: a store did not answer; retry later */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
