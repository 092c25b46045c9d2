-- Rows of a database made by stead v0.1.0 (the program that wrote them: three executions of a
-- definition 'upgrade' waiting on a 72h timeout, u-3 finished by a 'go' event, and a 'go' queued
-- for u-1). The upgrade test loads them into a schema at v0.1.0's migrations and migrates it to the
-- current one. Never edit this file: add one for the next release instead.
INSERT INTO {schema}transport_group_anchors VALUES ('u-1', NULL);
INSERT INTO {schema}transport_groups VALUES ('u-1', 0, NULL, NULL, NULL, NULL, NULL);
INSERT INTO {schema}transport_messages OVERRIDING SYSTEM VALUE VALUES (5, 'u-1', '{"id":"u-1-go","kind":"go","created_at":"2026-12-05T11:01:05.842167Z"}');
SELECT pg_catalog.setval('{schema}transport_flow_wait', 1, false);
SELECT pg_catalog.setval('{schema}transport_messages_seq_seq', 5, true);
