"""The standard tools (seed §7-§8)."""
