-- llm logs.db as llm 0.31 leaves it (schema from llm/migrations.py and docs/logging.md).
CREATE TABLE [_llm_migrations] ([name] TEXT PRIMARY KEY, [applied_at] TEXT);
CREATE TABLE [conversations] ([id] TEXT PRIMARY KEY, [name] TEXT, [model] TEXT);
CREATE TABLE [responses] (
  [id] TEXT PRIMARY KEY,
  [model] TEXT,
  [prompt] TEXT,
  [system] TEXT,
  [prompt_json] TEXT,
  [options_json] TEXT,
  [response] TEXT,
  [response_json] TEXT,
  [conversation_id] TEXT REFERENCES [conversations]([id]),
  [duration_ms] INTEGER,
  [datetime_utc] TEXT,
  [input_tokens] INTEGER,
  [output_tokens] INTEGER,
  [token_details] TEXT,
  [schema_id] TEXT,
  [resolved_model] TEXT
);
INSERT INTO conversations VALUES ('01j9x2k4m5n6p7q8r9s0t1v2w3', 'Ten names for a pet pelican', 'gpt-4o-mini');
INSERT INTO conversations VALUES ('01j9x3a1b2c3d4e5f6g7h8j9k0', '把这句话翻译成英文', 'gpt-4o-mini');
INSERT INTO responses (id, model, prompt, system, response, conversation_id, duration_ms, datetime_utc, input_tokens, output_tokens)
  VALUES ('01j9x2k4m5n6p7q8r9s0t1v2w3', 'gpt-4o-mini', 'Ten names for a pet pelican', NULL,
          'Pelly, Scoop, Gulliver, Pouch, Captain Beak, Skipper, Splash, Marina, Flap, Admiral', '01j9x2k4m5n6p7q8r9s0t1v2w3',
          812, '2024-10-05T14:03:11.204531', 11, 30);
INSERT INTO responses (id, model, prompt, system, response, conversation_id, duration_ms, datetime_utc, input_tokens, output_tokens)
  VALUES ('01j9x2m7aaaaaaaaaaaaaaaaaa', 'gpt-4o-mini', 'Which one is the funniest?', NULL,
          'Captain Beak.', '01j9x2k4m5n6p7q8r9s0t1v2w3', 402, '2024-10-05T14:03:40.000000', 55, 4);
INSERT INTO responses (id, model, prompt, system, response, conversation_id, duration_ms, datetime_utc, input_tokens, output_tokens)
  VALUES ('01j9x3a1b2c3d4e5f6g7h8j9k0', 'gpt-4o-mini', '把这句话翻译成英文：今天天气很好', 'You are a translator.',
          'The weather is nice today.', '01j9x3a1b2c3d4e5f6g7h8j9k0', 390, '2024-10-06T08:00:00.000000', 20, 7);
-- a row with neither prompt nor response (a schema-only run): nothing to import
INSERT INTO responses (id, model, prompt, system, response, conversation_id, datetime_utc)
  VALUES ('01j9x4zzzzzzzzzzzzzzzzzzzz', 'gpt-4o-mini', NULL, NULL, NULL, '01j9x3a1b2c3d4e5f6g7h8j9k0', '2024-10-06T08:01:00');
