-- llm logs.db after llm 0.32: the legacy tables stay, conversations are logged to the
-- content-addressed message store (threads, turns, messages, parts; see simonw/llm#1562:
-- messages(hash, parent_hash, role, provider_metadata), parts(message_hash, position, type,
-- tool_name, text, payload), threads(id = conversation id, name, tip_message_hash, forked_from),
-- turns(one per model call: parent_message_hash, tip_message_hash)). Rows of the dual-write
-- releases exist in both: responses.id = turns.id.
CREATE TABLE [conversations] ([id] TEXT PRIMARY KEY, [name] TEXT, [model] TEXT);
CREATE TABLE [responses] (
  [id] TEXT PRIMARY KEY, [model] TEXT, [prompt] TEXT, [system] TEXT, [prompt_json] TEXT, [options_json] TEXT,
  [response] TEXT, [response_json] TEXT, [conversation_id] TEXT REFERENCES [conversations]([id]),
  [duration_ms] INTEGER, [datetime_utc] TEXT, [input_tokens] INTEGER, [output_tokens] INTEGER,
  [token_details] TEXT, [schema_id] TEXT, [resolved_model] TEXT
);
CREATE TABLE [messages] (
  [hash] TEXT PRIMARY KEY,
  [parent_hash] TEXT REFERENCES [messages]([hash]),
  [role] TEXT,
  [provider_metadata] TEXT
);
CREATE TABLE [parts] (
  [id] INTEGER PRIMARY KEY,
  [message_hash] TEXT REFERENCES [messages]([hash]),
  [position] INTEGER,
  [type] TEXT,
  [tool_name] TEXT,
  [text] TEXT,
  [payload] TEXT
);
CREATE TABLE [threads] (
  [id] TEXT PRIMARY KEY,
  [name] TEXT,
  [tip_message_hash] TEXT REFERENCES [messages]([hash]),
  [forked_from] TEXT
);
CREATE TABLE [turns] (
  [id] TEXT PRIMARY KEY,
  [thread_id] TEXT REFERENCES [threads]([id]),
  [model] TEXT,
  [parent_message_hash] TEXT REFERENCES [messages]([hash]),
  [tip_message_hash] TEXT REFERENCES [messages]([hash]),
  [datetime_utc] TEXT,
  [duration_ms] INTEGER,
  [input_tokens] INTEGER,
  [output_tokens] INTEGER
);

-- a conversation from before 0.32: only in responses
INSERT INTO conversations VALUES ('01h0legacy0000000000000000', 'Capital of France?', 'gpt-4o-mini');
INSERT INTO responses (id, model, prompt, response, conversation_id, datetime_utc)
  VALUES ('01h0legacy0000000000000000', 'gpt-4o-mini', 'Capital of France?', 'Paris.', '01h0legacy0000000000000000',
          '2025-01-02T03:04:05');

-- thread 1: system, user, assistant, user, assistant tool call, tool result, assistant
INSERT INTO messages VALUES ('b2:s1', NULL, 'system', NULL);
INSERT INTO messages VALUES ('b2:u1', 'b2:s1', 'user', NULL);
INSERT INTO messages VALUES ('b2:a1', 'b2:u1', 'assistant', NULL);
INSERT INTO messages VALUES ('b2:u2', 'b2:a1', 'user', NULL);
INSERT INTO messages VALUES ('b2:a2', 'b2:u2', 'assistant', '{"id": "resp_1"}');
INSERT INTO messages VALUES ('b2:r2', 'b2:a2', 'user', NULL);
INSERT INTO messages VALUES ('b2:a3', 'b2:r2', 'assistant', NULL);
INSERT INTO parts (message_hash, position, type, tool_name, text, payload) VALUES
  ('b2:s1', 0, 'text', NULL, 'You name pets.', NULL),
  ('b2:u1', 0, 'text', NULL, 'Suggest a name for a pet pelican', NULL),
  ('b2:a1', 0, 'reasoning', NULL, 'Pelicans have pouches...', NULL),
  ('b2:a1', 1, 'text', NULL, 'Captain Pouch', NULL),
  ('b2:u2', 0, 'text', NULL, '现在几点？', NULL),
  ('b2:a2', 0, 'text', NULL, 'Let me check the time.', NULL),
  ('b2:a2', 1, 'tool_call', 'llm_time', NULL, '{"tool_call_id": "call_9", "arguments": {}}'),
  ('b2:r2', 0, 'tool_result', 'llm_time', NULL, '{"tool_call_id": "call_9", "output": "{\"utc_time\": \"2026-07-30 10:00:00 UTC\"}"}'),
  ('b2:a3', 0, 'text', NULL, '现在是 UTC 时间 10:00。', NULL);
INSERT INTO threads VALUES ('01k1thread10000000000000000', 'Suggest a name for a pet pelican', 'b2:a3', NULL);
INSERT INTO turns VALUES ('01k1turn1000000000000000000', '01k1thread10000000000000000', 'gpt-5-mini', 'b2:u1', 'b2:a1',
                          '2026-07-30T09:59:00.000000', 900, 20, 4);
INSERT INTO turns VALUES ('01k1turn2000000000000000000', '01k1thread10000000000000000', 'gpt-5-mini', 'b2:u2', 'b2:a2',
                          '2026-07-30T10:00:00.000000', 700, 40, 9);
INSERT INTO turns VALUES ('01k1turn3000000000000000000', '01k1thread10000000000000000', 'gpt-5-mini', 'b2:r2', 'b2:a3',
                          '2026-07-30T10:00:01.000000', 500, 60, 12);
-- the first turn was also written to responses (dual-write): imported once
INSERT INTO conversations VALUES ('01k1thread10000000000000000', 'Suggest a name for a pet pelican', 'gpt-5-mini');
INSERT INTO responses (id, model, prompt, system, response, conversation_id, datetime_utc)
  VALUES ('01k1turn1000000000000000000', 'gpt-5-mini', 'Suggest a name for a pet pelican', 'You name pets.',
          'Captain Pouch', '01k1thread10000000000000000', '2026-07-30T09:59:00.000000');

-- thread 2, forked from thread 1 after its first answer: shares s1, u1, a1
INSERT INTO messages VALUES ('b2:u3', 'b2:a1', 'user', NULL);
INSERT INTO messages VALUES ('b2:a4', 'b2:u3', 'assistant', NULL);
INSERT INTO parts (message_hash, position, type, tool_name, text, payload) VALUES
  ('b2:u3', 0, 'text', NULL, 'A shorter one?', NULL),
  ('b2:a4', 0, 'text', NULL, 'Pouch', NULL);
INSERT INTO threads VALUES ('01k1thread20000000000000000', 'A shorter one?', 'b2:a4', '01k1thread10000000000000000');
INSERT INTO turns VALUES ('01k1turn4000000000000000000', '01k1thread20000000000000000', 'gpt-5-mini', 'b2:u3', 'b2:a4',
                          '2026-07-30T10:05:00.000000', 300, 25, 2);
