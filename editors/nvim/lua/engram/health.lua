-- :checkhealth engram: the engram command and its version, the workspace's store, and whether
-- an engram client is attached to the current buffer.
local M = {}

local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error
local info = health.info or health.report_info

function M.check()
  local engram = require("engram")
  start("engram: the language server command")
  -- :checkhealth shows its report in a buffer of its own: check the file buffer before it.
  local bufnr = vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].buftype ~= "" then
    local alternate = vim.fn.bufnr("#")
    if alternate > 0 and vim.bo[alternate].buftype == "" then
      bufnr = alternate
    else
      for _, candidate in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(candidate) and vim.bo[candidate].buftype == "" and vim.api.nvim_buf_get_name(candidate) ~= "" then
          bufnr = candidate
          break
        end
      end
    end
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = engram.find_root(name ~= "" and name or vim.fn.getcwd())
  local cmd = engram.command_for(root)
  if cmd == nil then
    error(tostring(engram.missing_reason))
  else
    ok("command: " .. table.concat(cmd, " "))
    local version_cmd = vim.deepcopy(cmd)
    if version_cmd[#version_cmd] == "lsp" then
      version_cmd[#version_cmd] = "--version"
    else
      version_cmd = nil
    end
    if version_cmd then
      local output = vim.fn.system(version_cmd)
      if vim.v.shell_error == 0 then
        ok("version: " .. vim.trim(output))
      else
        error("`" .. table.concat(version_cmd, " ") .. "` failed: " .. vim.trim(output))
      end
    else
      info("version: not checked (the command is not `... lsp`)")
    end
  end

  start("engram: the store")
  info("workspace root: " .. root)
  local store = root .. "/.engram"
  if vim.fn.isdirectory(store) == 1 then
    local db = store .. "/engram.db"
    if vim.fn.filereadable(db) == 1 then
      ok(string.format("store: %s (engram.db, %d KiB)", store, math.floor(vim.fn.getfsize(db) / 1024)))
    else
      warn("store folder " .. store .. " has no engram.db yet (it is created when the server starts)")
    end
  else
    warn("no store in " .. root, { "run `engram init` there, or open a file inside a git repository" })
  end

  start("engram: the client")
  local clients = engram.clients(bufnr)
  if #clients > 0 then
    local client = clients[1]
    ok(string.format("attached to this buffer, %s (client id %d, root %s)", vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":t"), client.id, tostring(client.config.root_dir)))
  elseif #engram.clients() > 0 then
    warn("an engram client runs, but not in " .. vim.api.nvim_buf_get_name(bufnr) .. " (is it a file inside the workspace?)")
  else
    warn("no engram client is running", {
      "call require('engram').setup({}) in your config, or vim.lsp.enable('engram') on Neovim 0.11+",
    })
  end
end

return M
