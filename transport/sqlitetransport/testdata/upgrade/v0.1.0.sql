-- Rows of a database made by stead v0.1.0 (the program that wrote them: three executions of a
-- definition 'upgrade' waiting on a 72h timeout, u-3 finished by a 'go' event, and a 'go' queued
-- for u-1). The upgrade test loads them into a schema at v0.1.0's migrations and migrates it to the
-- current one. Never edit this file: add one for the next release instead.
INSERT INTO transport_messages VALUES(5,'u-1','{"id":"u-1-go","kind":"go","created_at":"2026-12-05T11:01:06.141833Z"}');
INSERT INTO transport_groups VALUES('u-1',0,NULL,NULL,NULL,NULL);
INSERT INTO sqlite_sequence VALUES('transport_messages',5);
