-- Neovim 0.11+: `vim.lsp.enable("engram")` finds this file on 'runtimepath' and starts
-- `engram lsp` for every buffer backed by a file, with engram's :Engram* commands, without a
-- call to require("engram").setup(). Settings go through vim.lsp.config("engram", {...}).
local engram = require("engram")
local config = engram.ensure_config()
local lsp_config = engram.lsp_config()
local on_attach = lsp_config.on_attach

lsp_config.on_attach = function(client, bufnr)
  if config.commands and vim.fn.exists(":EngramCheckpoint") ~= 2 then
    engram.define_commands()
  end
  on_attach(client, bufnr)
end

return lsp_config
