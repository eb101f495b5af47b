"""The `engram` command: a thin front end over memory_core (DESIGN.md section 4)."""
