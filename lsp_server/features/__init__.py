"""One module per feature; each exposes `register(server)` and is wired in `lsp_server.setup`."""
