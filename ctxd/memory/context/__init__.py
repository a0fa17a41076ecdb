"""The context engine: facts, summaries, modes, session state and rendering."""
