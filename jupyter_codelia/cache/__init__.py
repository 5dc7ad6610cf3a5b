"""The tool-output cache (seed §6)."""
