-- ListConversations reads an account's newest conversations: this index hands them over in
-- creation order, so the read costs the page, not the account's whole history.
CREATE INDEX turn_conversations_by_created ON turn_conversations (account_id, created_at, conversation_id);
