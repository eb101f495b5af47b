-- Neovim 0.11+: `vim.lsp.enable("engram")` finds this file on 'runtimepath' and starts
-- `engram lsp` for every buffer backed by a file, with engram's :Engram* commands, without a
-- call to require("engram").setup(). Settings go through vim.lsp.config("engram", {...}).
local engram = require("engram")
local config = engram.ensure_config()
local base = engram.client_config(vim.fn.getcwd())
local cmd = base.cmd
if cmd == nil then
  -- Said now, in words, rather than Neovim's generic "exit code 1" later.
  vim.notify("engram: " .. tostring(engram.missing_reason), vim.log.levels.ERROR)
  cmd = { "engram", "lsp" }
end

return {
  cmd = cmd,
  root_dir = function(bufnr, on_dir)
    if engram.buffer_wanted(bufnr) then
      on_dir(engram.find_root(vim.api.nvim_buf_get_name(bufnr)))
    end
  end,
  settings = base.settings,
  capabilities = base.capabilities,
  handlers = base.handlers,
  on_attach = function(client, bufnr)
    if config.commands and vim.fn.exists(":EngramCheckpoint") ~= 2 then
      engram.define_commands()
    end
    base.on_attach(client, bufnr)
  end,
}
