"""engram's language server: protocol glue over memory_core (docs/design.md section 5)."""
