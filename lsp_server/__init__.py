"""engram's language server: protocol glue over memory_core (DESIGN.md section 5)."""
