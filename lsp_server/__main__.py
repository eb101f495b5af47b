from lsp_server.main import run

run()
