-- A database as coderun's schema version 1 made it (before tenants and
-- leases): a finished run with steps, files and a closed review item, a
-- run whose owner process is gone, and a run awaiting approval.
CREATE TABLE IF NOT EXISTS runs (
	id          TEXT PRIMARY KEY,
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT '',
	task        TEXT NOT NULL,
	model       TEXT NOT NULL,
	mode        TEXT NOT NULL,
	status      TEXT NOT NULL,
	outcome     TEXT NOT NULL DEFAULT '',
	answer      TEXT NOT NULL DEFAULT '',
	failure     TEXT NOT NULL DEFAULT '',
	pending     TEXT NOT NULL DEFAULT '',
	scorecard   TEXT NOT NULL DEFAULT '{}',
	inputs      TEXT NOT NULL DEFAULT '[]',
	config      TEXT NOT NULL DEFAULT '{}',
	state       TEXT NOT NULL DEFAULT '',
	owner       TEXT NOT NULL DEFAULT '',
	steps       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS steps (
	run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,
	at      TEXT NOT NULL,
	kind    TEXT NOT NULL,
	attempt INTEGER NOT NULL DEFAULT 0,
	summary TEXT NOT NULL DEFAULT '',
	data    TEXT NOT NULL,
	PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS files (
	run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	role        TEXT NOT NULL,
	path        TEXT NOT NULL,
	kind        TEXT NOT NULL,
	size        INTEGER NOT NULL,
	mode        INTEGER NOT NULL,
	link_target TEXT NOT NULL DEFAULT '',
	content     BLOB,
	truncated   INTEGER NOT NULL DEFAULT 0,
	step        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, role, path)
);
CREATE TABLE IF NOT EXISTS reviews (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	kind       TEXT NOT NULL,
	reason     TEXT NOT NULL,
	created_at TEXT NOT NULL,
	status     TEXT NOT NULL,
	closed_at  TEXT NOT NULL DEFAULT '',
	resolution TEXT NOT NULL DEFAULT '',
	note       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS reviews_open ON reviews(status, created_at);
INSERT INTO runs (id, created_at, updated_at, finished_at, task, model, mode, status, outcome, answer, failure, pending,
	scorecard, inputs, config, state, owner, steps) VALUES
	('a1b2c3d4e5f6', '2025-11-01T10:00:00.000000000Z', '2025-11-01T10:00:05.000000000Z', '2025-11-01T10:00:05.000000000Z',
	 'Mean of 1, 2, 3?', 'openai:gpt-4.1-mini', 'single', 'succeeded', 'answered', 'The mean is 2.', '', '',
	 '{"outcome":"answered","attempts":1,"retries":0,"model_calls":2,"input_tokens":150,"output_tokens":20,"model_ms":900,"exec_ms":40,"wall_ms":1000}',
	 '[{"path":"data.csv","size":6,"summary":"CSV with a header row and 2 data rows"}]', '{"mode":"single"}', '{"phase":"done"}', '', 3),
	('0badc0ffee00', '2025-11-02T09:00:00.000000000Z', '2025-11-02T09:00:01.000000000Z', '',
	 'Sum of the sales column', 'anthropic:claude-sonnet-4-5', 'single', 'running', '', '', '', '',
	 '{"attempts":0,"retries":0,"model_calls":1,"input_tokens":80,"output_tokens":0,"model_ms":500,"exec_ms":0,"wall_ms":500}',
	 '[]', '{"mode":"single"}', '{"phase":"generate"}', 'oldhost/4242/987654', 1),
	('feedfacecafe', '2025-11-03T08:00:00.000000000Z', '2025-11-03T08:00:02.000000000Z', '',
	 'Run echo in a child process', 'openai:gpt-4.1-mini', 'single', 'awaiting_approval', '', '', '',
	 '{"language":"python","code":"import subprocess","explanation":"starts a process","step":4,"at":"2025-11-03T08:00:02Z"}',
	 '{"attempts":0,"retries":0,"model_calls":1,"input_tokens":80,"output_tokens":10,"model_ms":500,"exec_ms":0,"wall_ms":500}',
	 '[]', '{"mode":"single"}', '{"phase":"approve"}', '', 2);
INSERT INTO steps (run_id, seq, at, kind, attempt, summary, data) VALUES
	('a1b2c3d4e5f6', 1, '2025-11-01T10:00:00.000000000Z', 'start', 0, 'started: Mean of 1, 2, 3?', '{"task":"Mean of 1, 2, 3?"}'),
	('a1b2c3d4e5f6', 2, '2025-11-01T10:00:03.000000000Z', 'execution', 1, 'exit 0 in 40ms', '{"stdout":"2.0\n","reason":"exited"}'),
	('a1b2c3d4e5f6', 3, '2025-11-01T10:00:05.000000000Z', 'answer', 0, 'answer: The mean is 2.', '{"text":"The mean is 2.","grounded":true}'),
	('0badc0ffee00', 1, '2025-11-02T09:00:00.000000000Z', 'start', 0, 'started: Sum', '{"task":"Sum of the sales column"}'),
	('feedfacecafe', 1, '2025-11-03T08:00:00.000000000Z', 'start', 0, 'started: Run echo', '{"task":"Run echo in a child process"}'),
	('feedfacecafe', 2, '2025-11-03T08:00:02.000000000Z', 'approval', 1, 'awaiting approval', '{"decision":"pending","by":"policy"}');
INSERT INTO files (run_id, role, path, kind, size, mode, link_target, content, truncated, step) VALUES
	('a1b2c3d4e5f6', 'input', 'data.csv', 'file', 6, 420, '', X'780A310A320A', 0, 0),
	('a1b2c3d4e5f6', 'output', 'plot.png', 'file', 3, 420, '', X'706E67', 0, 2);
INSERT INTO reviews (id, run_id, kind, reason, created_at, status, closed_at, resolution, note) VALUES
	(7, 'a1b2c3d4e5f6', 'unverified_answer', 'quotes 3', '2025-11-01T10:00:05.000000000Z', 'closed', '2025-11-01T11:00:00.000000000Z', 'resolved', 'fine'),
	(8, 'feedfacecafe', 'approval', 'starts a process', '2025-11-03T08:00:02.000000000Z', 'open', '', '', '');
PRAGMA user_version = 1;
