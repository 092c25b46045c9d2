-- ListConversations reads an account's newest conversations: this index hands them over in
-- creation order, so the read costs the page, not the account's whole history.
CREATE INDEX IF NOT EXISTS turn_conversations_by_created
    ON {schema}turn_conversations (account_id, created_at, conversation_id);
