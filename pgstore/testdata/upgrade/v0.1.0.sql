-- Rows of a database made by stead v0.1.0 (the program that wrote them: three executions of a
-- definition 'upgrade' waiting on a 72h timeout, u-3 finished by a 'go' event, and a 'go' queued
-- for u-1). The upgrade test loads them into a schema at v0.1.0's migrations and migrates it to the
-- current one. Never edit this file: add one for the next release instead.
INSERT INTO {schema}stead_executions VALUES ('u-1', 'upgrade', 'running', NULL, 'waiting', NULL, 2, 0, '2026-12-05 11:01:05.74031+00', '2026-12-05 11:01:05.779442+00', NULL, '{"id":"u-1","definition_id":"upgrade","status":"running","active_path":"waiting","context":{"n":1},"timers":{"waiting":"2026-12-08T11:01:05.779442Z"},"start_context":{"n":1},"version":2,"created_at":"2026-12-05T11:01:05.74031Z","updated_at":"2026-12-05T11:01:05.779442Z"}');
INSERT INTO {schema}stead_executions VALUES ('u-2', 'upgrade', 'running', NULL, 'waiting', NULL, 2, 0, '2026-12-05 11:01:05.774993+00', '2026-12-05 11:01:05.795387+00', NULL, '{"id":"u-2","definition_id":"upgrade","status":"running","active_path":"waiting","context":{"n":1},"timers":{"waiting":"2026-12-08T11:01:05.795387Z"},"start_context":{"n":1},"version":2,"created_at":"2026-12-05T11:01:05.774993Z","updated_at":"2026-12-05T11:01:05.795387Z"}');
INSERT INTO {schema}stead_executions VALUES ('u-3', 'upgrade', 'done', 'success', 'done', NULL, 3, 0, '2026-12-05 11:01:05.793993+00', '2026-12-05 11:01:05.830219+00', '2026-12-05 11:01:05.830219+00', '{"id":"u-3","definition_id":"upgrade","status":"done","outcome":"success","active_path":"done","context":{"n":1},"start_context":{"n":1},"version":3,"created_at":"2026-12-05T11:01:05.793993Z","updated_at":"2026-12-05T11:01:05.830219Z","finished_at":"2026-12-05T11:01:05.830219Z"}');
INSERT INTO {schema}stead_processed_events VALUES ('u-1', 'start:u-1');
INSERT INTO {schema}stead_processed_events VALUES ('u-2', 'start:u-2');
INSERT INTO {schema}stead_processed_events VALUES ('u-3', 'start:u-3');
INSERT INTO {schema}stead_processed_events VALUES ('u-3', 'u-3-go');
INSERT INTO {schema}stead_timers VALUES ('u-1', 'waiting', '2026-12-08 11:01:05.779442+00');
INSERT INTO {schema}stead_timers VALUES ('u-2', 'waiting', '2026-12-08 11:01:05.795387+00');
SELECT pg_catalog.setval('{schema}stead_outbox_seq_seq', 3, true);
SELECT pg_catalog.setval('{schema}stead_spawns_seq_seq', 1, false);
