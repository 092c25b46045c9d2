-- InteractionsForTurn finds the cards a turn created or answered. The creating turn is part of
-- the card's document, never rewritten, so it is indexed as an expression rather than copied into
-- a column; the answering turn has a column, set only once a card is answered.
CREATE INDEX IF NOT EXISTS turn_interactions_by_created_turn
    ON {schema}turn_interactions (account_id, (interaction->>'created_by_turn'));
CREATE INDEX IF NOT EXISTS turn_interactions_by_resolving_turn
    ON {schema}turn_interactions (account_id, resolved_by_turn) WHERE resolved_by_turn IS NOT NULL;
