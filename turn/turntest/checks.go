package turntest

// checks lists the rules in run order. The names are stable: they are the subtest names, and
// CheckCount counts them.
func checks() []Check {
	return []Check{
		{"blocking_interaction_conflict", checkBlockingInteractionConflict},
		{"blocking_interaction_replace", checkBlockingInteractionReplace},
		{"cross_tenant_isolation", checkCrossTenantIsolation},
		{"begin_resolution_cas", checkBeginResolutionCAS},
		{"finish_resolution_idempotent", checkFinishResolutionIdempotent},
		{"revision_invalidation_respects_independence", checkRevisionInvalidationRespectsIndependence},
		{"interaction_expiry", checkInteractionExpiry},
		{"answered_blocking_card_is_remembered", checkAnsweredBlockingCardIsRemembered},
		{"administrative_invalidation_ignores_the_revision", checkAdministrativeInvalidationIgnoresTheRevision},
		{"interactions_for_turn_whatever_their_status", checkInteractionsForTurn},
		{"journal_idempotency_replay", checkJournalIdempotencyReplay},
		{"pending_for_turn_after_partial_write", checkPendingForTurnAfterPartialWrite},
		{"awaiting_confirmation_is_never_resumed", checkAwaitingConfirmationIsNeverResumed},
		{"event_append_ordering_and_get_by_ids", checkEventAppendOrderingAndGetByIDs},
		{"event_stream_cursor_pages_exactly_once", checkEventStreamCursorPagesExactlyOnce},
		{"revision_read_truncates_inside_a_revision", checkRevisionReadTruncatesInsideARevision},
		{"event_redaction_preserves_identity_and_order", checkEventRedactionPreservesIdentityAndOrder},
		{"event_redaction_is_audited_and_idempotent", checkEventRedactionIsAuditedAndIdempotent},
		{"outbox_claim_exclusivity_and_reschedule", checkOutboxClaimExclusivityAndReschedule},
		{"refused_settlement_writes_nothing", checkRefusedSettlementWritesNothing},
		{"replay_put_get", checkReplayPutGet},
		{"conversation_turn_persistence", checkConversationTurnPersistence},
		{"conversations_listed_newest_last_per_account", checkConversationsListedNewestLastPerAccount},
		{"commit_bundle_applies_all", checkCommitBundleAppliesAll},
		{"commit_bundle_atomic_on_invalid_item", checkCommitBundleAtomicOnInvalidItem},
		{"commit_bundle_restores_modified_records", checkCommitBundleRestoresModifiedRecords},
		{"commit_bundle_rejects_foreign_account_items", checkCommitBundleRejectsForeignAccountItems},
	}
}
