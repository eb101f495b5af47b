"""The `engram` command: a thin front end over memory_core (docs/design.md section 4)."""
