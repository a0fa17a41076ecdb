"""One module per command or group; each registers a click command."""
