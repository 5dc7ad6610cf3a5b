"""The agent: run loop, events, permissions and history repair (no IPython imports)."""
