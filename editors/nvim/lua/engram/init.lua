-- engram for Neovim: starts `engram lsp` with the built-in client (0.11+: vim.lsp.config and
-- vim.lsp.enable; 0.7 to 0.10: vim.lsp.start / vim.lsp.start_client), adds :Engram* user
-- commands for the main actions, and layers engram's syntax (gotcha annotations in comments,
-- engram ids) over every filetype.
--
--   require("engram").setup({})            -- defaults are fine
--   require("engram").setup({ cmd = { "/path/to/engram", "lsp" }, settings = { gotchas = { threshold = 5 } } })
--
-- docs/neovim.md has the five-minute setup; tests/e2e/test_neovim.py drives this file in
-- Neovim 0.7.2 and 0.11 headless.
local M = {}

M.name = "engram"
-- The last result of each server command, by command name (for statuslines and scripts).
M.last = {}
M.config = nil

local islist = vim.islist or vim.tbl_islist
local has_config_api = vim.fn.has("nvim-0.11") == 1 and vim.lsp.config ~= nil and vim.lsp.enable ~= nil

-- How the client is started: vim.lsp.config/enable on 0.11+, else vim.lsp.start (0.8 to 0.10)
-- or vim.lsp.start_client (0.7). `setup({ start = "buffer" })` forces the per-buffer way on
-- 0.11 too (for configs that manage vim.lsp.enable themselves).
local function use_config_api()
  return has_config_api and M.config.start ~= "buffer"
end

local defaults = {
  -- The server's command line; nil: `engram lsp` with the engram on PATH, else
  -- the .venv/bin/engram of the file's project root, else `python3 -m lsp_server`.
  cmd = nil,
  -- Filetypes to attach to; nil: every buffer backed by a file (gotchas anchor in any language).
  filetypes = nil,
  -- Server settings (the `engram` section of workspace/configuration), e.g. { gotchas = { threshold = 5 } }.
  settings = {},
  -- Define :Engram* user commands.
  commands = true,
  -- Layer syntax/engram.vim over every filetype.
  syntax = true,
  -- Refresh code lenses on enter, save and leaving insert mode.
  codelens = true,
  -- Ask before a rollback or a session delete (vim.fn.confirm); `:EngramRollback!` never asks.
  confirm = true,
  on_attach = nil,
  capabilities = nil,
  -- "auto": vim.lsp.enable on 0.11+, per buffer before; "buffer": per buffer everywhere.
  start = "auto",
}

local function notify(message, level)
  vim.notify("engram: " .. message, level or vim.log.levels.INFO)
end

local function is_executable(path)
  return path ~= nil and path ~= "" and vim.fn.executable(path) == 1
end

-- The directory that holds this file's repository (editors/nvim/lua/engram/init.lua -> repo).
local function repo_root()
  local source = debug.getinfo(1, "S").source:sub(2)
  return vim.fn.fnamemodify(source, ":p:h:h:h:h:h")
end

-- What to install, in one line short enough not to need "Press ENTER" (:checkhealth engram
-- says where engram looked).
M.install_hint = "`engram` not found: pipx install engram-lsp (:help engram-setup)"

-- The server's command line: `engram lsp` with the engram on PATH, else the project's
-- .venv/bin/engram (the project of the file, not the current directory), else
-- `python3 -m lsp_server` when that module is importable; nil (and M.missing_reason set) when
-- none of them exists.
function M.default_cmd(root)
  local on_path = vim.fn.exepath("engram")
  if on_path ~= "" then
    return { on_path, "lsp" }
  end
  for _, venv in ipairs({ ".venv", "venv" }) do
    local candidate = root and (root .. "/" .. venv .. "/bin/engram")
    if candidate and is_executable(candidate) then
      return { candidate, "lsp" }
    end
  end
  local python = is_executable("python3") and "python3" or (is_executable("python") and "python" or nil)
  if python then
    vim.fn.system({ python, "-c", "import lsp_server" })
    if vim.v.shell_error == 0 then
      return { python, "-m", "lsp_server" }
    end
  end
  M.missing_reason = "the `engram` command was not found (not on PATH, not in .venv/bin of "
    .. tostring(root)
    .. "): install it with `pipx install engram-lsp` (or `uv tool install engram-lsp`), or pass "
    .. "require('engram').setup({ cmd = { '/path/to/engram', 'lsp' } })"
  return nil
end

-- The command line for a project: setup()'s `cmd`, else the default for that root.
function M.command_for(root)
  local config = M.ensure_config()
  return config.cmd or M.default_cmd(root)
end

-- docs/design.md section 2: the nearest ancestor holding .engram/, else the git top level, else the
-- file's own folder.
function M.find_root(path)
  if path == nil or path == "" then
    return vim.fn.getcwd()
  end
  local dir = vim.fn.isdirectory(path) == 1 and path or vim.fn.fnamemodify(path, ":p:h")
  local store = vim.fn.finddir(".engram", dir .. ";")
  if store ~= "" then
    return vim.fn.fnamemodify(store, ":p:h:h")
  end
  local git_dir = vim.fn.finddir(".git", dir .. ";")
  if git_dir ~= "" then
    return vim.fn.fnamemodify(git_dir, ":p:h:h")
  end
  local git_file = vim.fn.findfile(".git", dir .. ";")
  if git_file ~= "" then
    return vim.fn.fnamemodify(git_file, ":p:h")
  end
  return dir
end

function M.buffer_wanted(bufnr)
  if vim.bo[bufnr].buftype ~= "" then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]*://") then
    return false
  end
  local filetypes = M.config and M.config.filetypes
  if filetypes then
    return vim.tbl_contains(filetypes, vim.bo[bufnr].filetype)
  end
  return true
end

-- Clients --------------------------------------------------------------------------------------

function M.clients(bufnr)
  local all
  if vim.lsp.get_clients then
    all = vim.lsp.get_clients({ name = M.name, bufnr = bufnr })
  else
    all = {}
    local source = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
    for _, client in pairs(source) do
      if client.name == M.name then
        table.insert(all, client)
      end
    end
  end
  return all
end

-- The client for the current buffer, else any engram client.
function M.client()
  return M.clients(vim.api.nvim_get_current_buf())[1] or M.clients()[1]
end

-- Neovim 0.10 and 0.11 pull diagnostics but do not answer `workspace/diagnostic/refresh`
-- (0.12 does), so a gotcha added from the command line or an agent would not show until the
-- next edit. Advertise the capability and answer it: pull again in every attached buffer.
local function needs_refresh_handler()
  local defaults = vim.lsp.protocol.make_client_capabilities()
  local pulls = defaults.textDocument and defaults.textDocument.diagnostic ~= nil
  local refreshes = defaults.workspace and defaults.workspace.diagnostics and defaults.workspace.diagnostics.refreshSupport
  return pulls and not refreshes
end

local function refresh_pulled_diagnostics(_, _, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client == nil then
    return vim.NIL
  end
  for bufnr in pairs(client.attached_buffers or {}) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
      -- A nil handler uses the default one, which stores pulled diagnostics.
      if vim.fn.has("nvim-0.11") == 1 then
        client:request("textDocument/diagnostic", params, nil, bufnr)
      else
        client.request("textDocument/diagnostic", params, nil, bufnr)
      end
    end
  end
  return vim.NIL
end

-- The server opens generated views (.engram/exports/...: all gotchas, a file's history, a
-- diff) with window/showDocument; they are shown in the results window, not as files to edit.
local show_document_default = vim.lsp.handlers["window/showDocument"]

local function show_document(err, result, ctx, config)
  local uri = result and result.uri or ""
  local path = uri:match("^file://") and vim.uri_to_fname(uri) or nil
  if path and path:find("/.engram/exports/", 1, true) and vim.fn.filereadable(path) == 1 then
    M.show(vim.fn.fnamemodify(path, ":t"), vim.fn.readfile(path))
    return { success = true }
  end
  if show_document_default then
    return show_document_default(err, result, ctx, config)
  end
  return { success = false }
end

-- A server that exits before it answered `initialize` is a broken install: say so once, with
-- where to look, beside Neovim's own "quit with exit code".
local function report_early_exit(code, signal, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if code == 0 or M.reported_exit or (client and client.initialized) then
    return
  end
  M.reported_exit = true
  vim.schedule(function()
    notify(
      string.format("the server stopped at start (exit code %s): see :checkhealth engram", tostring(code ~= nil and code or signal)),
      vim.log.levels.WARN
    )
  end)
end

function M.client_config(root)
  local config = M.config
  local capabilities = config.capabilities
  local handlers = { ["window/showDocument"] = show_document }
  if needs_refresh_handler() then
    capabilities = vim.tbl_deep_extend(
      "force",
      capabilities or {},
      { workspace = { diagnostics = { refreshSupport = true } } }
    )
    handlers["workspace/diagnostic/refresh"] = refresh_pulled_diagnostics
  end
  return {
    handlers = handlers,
    name = M.name,
    cmd = M.command_for(root),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    settings = { engram = config.settings or {} },
    capabilities = capabilities,
    on_exit = report_early_exit,
    on_attach = function(client, bufnr)
      if config.codelens and client.server_capabilities.codeLensProvider then
        pcall(vim.lsp.codelens.refresh)
      end
      if config.on_attach then
        config.on_attach(client, bufnr)
      end
    end,
  }
end

-- 0.7 to 0.10: one client per root, attached to each buffer under it.
local started = {}

-- Said once per Neovim session, not once per buffer: a warning (an error inside an autocommand
-- would come with "Error detected while processing" and a "Press ENTER" prompt), scheduled so
-- it is not part of the autocommand that opened the file.
local function report_missing()
  if not M.reported_missing then
    M.reported_missing = true
    vim.schedule(function()
      notify(M.install_hint, vim.log.levels.WARN)
    end)
  end
end

local function attach_legacy(bufnr)
  if not M.buffer_wanted(bufnr) then
    return
  end
  local root = M.find_root(vim.api.nvim_buf_get_name(bufnr))
  if vim.lsp.start then
    -- 0.8+: reuses a running client with the same name and root.
    local wanted = M.client_config(root)
    if wanted.cmd == nil then
      return report_missing()
    end
    vim.lsp.start(wanted, { bufnr = bufnr })
    return
  end
  local client_id = started[root]
  if client_id == nil or vim.lsp.get_client_by_id(client_id) == nil then
    local wanted = M.client_config(root)
    if wanted.cmd == nil then
      return report_missing()
    end
    client_id = vim.lsp.start_client(wanted)
    if client_id == nil then
      notify("could not start the language server (" .. table.concat(M.client_config(root).cmd, " ") .. ")", vim.log.levels.ERROR)
      return
    end
    started[root] = client_id
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
end

-- The vim.lsp.config table (0.11+) for setup() and for lsp/engram.lua: the root comes from
-- each buffer's file, and the command from that root (its .venv), so a project's own engram
-- is found whatever the current directory. A project without engram starts no client (one
-- warning instead of a failed spawn per buffer).
function M.lsp_config()
  local base = M.client_config(vim.fn.getcwd())
  return {
    cmd = function(dispatchers, config)
      local root = config.root_dir or vim.fn.getcwd()
      return vim.lsp.rpc.start(M.command_for(root), dispatchers, { cwd = root })
    end,
    filetypes = M.config.filetypes,
    root_dir = function(bufnr, on_dir)
      if not M.buffer_wanted(bufnr) then
        return
      end
      local root = M.find_root(vim.api.nvim_buf_get_name(bufnr))
      if M.command_for(root) == nil then
        report_missing()
        return
      end
      on_dir(root)
    end,
    settings = base.settings,
    capabilities = base.capabilities,
    handlers = base.handlers,
    on_exit = base.on_exit,
    on_attach = base.on_attach,
  }
end

local function enable_client()
  if use_config_api() then
    vim.lsp.config(M.name, M.lsp_config())
    vim.lsp.enable(M.name)
    return
  end
  local group = vim.api.nvim_create_augroup("engram_lsp", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "FileType" }, {
    group = group,
    callback = function(args)
      attach_legacy(args.buf)
    end,
  })
  -- Buffers that were open before setup() ran.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      attach_legacy(bufnr)
    end
  end
end

-- Commands -------------------------------------------------------------------------------------

-- Run a server command; `callback(result)` on success. The result is also kept in M.last.
function M.execute(command, args, callback)
  local client = M.client()
  if client == nil then
    notify(M.missing_reason or "the language server is not running in this buffer (:checkhealth engram)", vim.log.levels.ERROR)
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  -- An empty Lua table is encoded as a JSON array; the server takes one JSON object.
  if args == nil or (type(args) == "table" and next(args) == nil) then
    args = vim.empty_dict()
  end
  local params = { command = command, arguments = { args } }
  local function handle(err, result)
    if err then
      M.last[command] = { error = err.message or tostring(err) }
      -- An empty state ("no session recorded in this workspace yet") is information.
      local empty = type(err.data) == "table" and err.data.empty == true
      notify((err.message or tostring(err)), empty and vim.log.levels.INFO or vim.log.levels.ERROR)
      return
    end
    M.last[command] = result or vim.empty_dict()
    if callback then
      callback(result or {})
    end
  end
  -- 0.11 made Client:request a method; 0.7 to 0.10 use the field function with a dot.
  if vim.fn.has("nvim-0.11") == 1 then
    client:request("workspace/executeCommand", params, handle, bufnr)
  else
    client.request("workspace/executeCommand", params, handle, bufnr)
  end
end

local function first_list(result, key)
  if type(result) ~= "table" then
    return {}
  end
  if type(result[key]) == "table" then
    return result[key]
  end
  for _, value in pairs(result) do
    if type(value) == "table" and islist(value) then
      return value
    end
  end
  return {}
end

local function label(item)
  for _, key in ipairs({ "label", "name", "title", "content", "message" }) do
    if type(item[key]) == "string" and item[key] ~= "" then
      return (item[key]:gsub("\n.*", ""))
    end
  end
  return tostring(item.id or "?")
end

local function stamp(item)
  local value = item.created_at or item.started_at or item.ts
  return type(value) == "string" and (value:gsub("T", " "):gsub("%.%d+", ""):gsub("%+00:00$", " UTC")) or ""
end

-- Choose an item from a list command, then call `callback(item)`.
local function choose(list_command, key, prompt, empty, callback, filter)
  M.execute(list_command, {}, function(result)
    local items = {}
    for _, item in ipairs(first_list(result, key)) do
      if not filter or filter(item) then
        table.insert(items, item)
      end
    end
    if #items == 0 then
      notify(empty)
      return
    end
    vim.ui.select(items, {
      prompt = prompt,
      format_item = function(item)
        return string.format("%s  %s  %s", tostring(item.id), label(item), stamp(item))
      end,
    }, function(item)
      if item then
        callback(item)
      end
    end)
  end)
end

-- The text of a result: the server's Markdown when it sends some, else its fields laid out.
function M.result_lines(title, result)
  local lines = {}
  local text = type(result) == "table" and (result.markdown or result.summary_markdown or result.text) or nil
  if type(text) == "string" and text ~= "" then
    return vim.split(text, "\n", { plain = true })
  end
  table.insert(lines, "# " .. title)
  table.insert(lines, "")
  local keys = vim.tbl_keys(result or {})
  table.sort(keys)
  for _, key in ipairs(keys) do
    local value = result[key]
    if type(value) == "table" and islist(value) then
      table.insert(lines, string.format("## %s (%d)", key:gsub("_", " "), #value))
      table.insert(lines, "")
      if #value == 0 then
        table.insert(lines, "None.")
      end
      for _, item in ipairs(value) do
        if type(item) == "table" then
          local id = item.id ~= nil and ("  `" .. tostring(item.id) .. "`") or ""
          table.insert(lines, string.format("- %s **%s**%s", stamp(item), label(item), id))
        else
          table.insert(lines, "- " .. tostring(item))
        end
      end
      table.insert(lines, "")
    elseif type(value) ~= "table" then
      table.insert(lines, string.format("- %s: %s", key:gsub("_", " "), tostring(value)))
    end
  end
  return lines
end

local RESULTS_NAME = "engram://results"

-- `q` in the results window: close it, or, when it is the last window, go back to the
-- buffer shown before.
function M.close_results()
  if #vim.api.nvim_tabpage_list_wins(0) > 1 then
    vim.cmd("close")
  else
    local alternate = vim.fn.bufnr("#")
    if alternate ~= -1 and alternate ~= vim.api.nvim_get_current_buf() then
      vim.api.nvim_set_current_buf(alternate)
    else
      vim.cmd("enew")
    end
  end
end

-- Show a result in engram's one scratch window: reused by every command (no pile of splits),
-- read-only, Markdown, closed with `q`.
function M.show(title, result)
  local lines = type(result) == "table" and islist(result) and result or M.result_lines(title, result)
  local bufnr = vim.fn.bufnr(RESULTS_NAME)
  if bufnr == -1 or not vim.api.nvim_buf_is_valid(bufnr) then
    bufnr = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(bufnr, RESULTS_NAME)
    vim.bo[bufnr].buftype = "nofile"
    vim.bo[bufnr].bufhidden = "hide"
    vim.bo[bufnr].swapfile = false
    vim.api.nvim_buf_set_keymap(bufnr, "n", "q", "", {
      noremap = true,
      silent = true,
      desc = "close engram's results",
      callback = M.close_results,
    })
  end
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].modified = false
  vim.bo[bufnr].filetype = "markdown"
  local winid = vim.fn.bufwinid(bufnr)
  if winid == -1 then
    -- A split at the bottom; on a screen too full for one, the current window.
    if pcall(vim.cmd, "botright split") then
      winid = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(winid, bufnr)
      pcall(vim.api.nvim_win_set_height, winid, math.max(8, math.min(#lines + 1, math.floor(vim.o.lines / 2))))
    else
      winid = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(winid, bufnr)
    end
  else
    vim.api.nvim_set_current_win(winid)
  end
  vim.wo[winid].wrap = true
  vim.api.nvim_win_set_cursor(winid, { 1, 0 })
  vim.b[bufnr].engram_title = title
  return bufnr
end

local function confirm(question, action, bang)
  if bang or not M.config.confirm then
    return true
  end
  return vim.fn.confirm(question, "&" .. action .. "\n&Cancel", 2, "Warning") == 1
end

local function relative_file()
  local name = vim.api.nvim_buf_get_name(0)
  if name == "" then
    return nil
  end
  local root = M.find_root(name)
  local full = vim.fn.fnamemodify(name, ":p")
  if full:sub(1, #root + 1) == root .. "/" then
    return full:sub(#root + 2)
  end
  return full
end

-- After a rollback the disk holds the checkpoint (the server wrote it); reload the open
-- buffers it names with :edit!, which keeps the text before the reload in the undo history
-- ('undoreload'), so `u` brings back what was there.
local function reload_buffers(uris)
  for _, uri in ipairs(uris or {}) do
    local bufnr = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local name = vim.api.nvim_buf_get_name(bufnr)
      if vim.fn.filereadable(name) == 1 then
        vim.api.nvim_buf_call(bufnr, function()
          vim.cmd("silent! edit!")
        end)
      else
        -- Created after the checkpoint, so removed: its buffer goes too.
        pcall(vim.api.nvim_buf_delete, bufnr, { force = true })
      end
    end
  end
end

local function plural(count, word)
  return string.format("%d %s%s", count, word, count == 1 and "" or "s")
end

local function rollback(id, bang)
  local function run()
    M.execute("engram.checkpoint.rollback", { id = id, confirm = true }, function(result)
      if result.done == false then
        notify("rollback not done (" .. tostring(result.reason) .. ")", vim.log.levels.WARN)
        return
      end
      reload_buffers(result.reload)
      local restored = type(result.restored) == "table" and #result.restored or 0
      local removed = type(result.removed) == "table" and #result.removed or 0
      local undo = type(result.undo_checkpoint) == "string" and ("; undo: :EngramRollback " .. result.undo_checkpoint) or ""
      local failed = type(result.failed) == "table" and #result.failed or 0
      notify(
        string.format("rolled back to %s: %s restored, %s removed%s", tostring(result.label or id), plural(restored, "file"), plural(removed, "file"), undo),
        failed > 0 and vim.log.levels.WARN or vim.log.levels.INFO
      )
    end)
  end
  if bang or not M.config.confirm then
    run()
    return
  end
  -- Ask with the list of files it restores and removes (the server's plan, nothing written).
  M.execute("engram.checkpoint.rollback", { id = id, preview = true }, function(plan)
    if (plan.restore == nil or #plan.restore == 0) and (plan.remove == nil or #plan.remove == 0) then
      notify("nothing to roll back: the files already match " .. tostring(plan.label or id))
      return
    end
    if confirm(plan.message or ("Roll back to checkpoint " .. id .. "?"), "Roll back", false) then
      run()
    else
      notify("rollback cancelled")
    end
  end)
end

local function escape_regex(text)
  return (text:gsub("[%.%*%+%?%^%$%{%}%(%)%|%[%]\\]", "\\%0"))
end

function M.define_commands()
  local command = vim.api.nvim_create_user_command

  command("EngramCheckpoint", function(opts)
    local args = opts.args ~= "" and { name = opts.args } or vim.empty_dict()
    M.execute("engram.checkpoint.create", args, function(result)
      local checkpoint = result.checkpoint or result
      notify("checkpoint " .. tostring(checkpoint.id) .. " created")
    end)
  end, { nargs = "?", desc = "engram: create a checkpoint of the workspace's files" })

  command("EngramCheckpoints", function()
    M.execute("engram.checkpoint.list", {}, function(result)
      M.show("Checkpoints", result)
    end)
  end, { desc = "engram: list checkpoints" })

  command("EngramRollback", function(opts)
    if opts.args ~= "" then
      rollback(opts.args, opts.bang)
      return
    end
    choose("engram.checkpoint.list", "checkpoints", "Roll back to checkpoint:", "no checkpoints yet (:EngramCheckpoint)", function(item)
      rollback(item.id, opts.bang)
    end)
  end, { nargs = "?", bang = true, desc = "engram: roll back to a checkpoint (! skips the question)" })

  command("EngramSaveSession", function(opts)
    M.execute("engram.session.save", opts.args ~= "" and { name = opts.args } or vim.empty_dict(), function(result)
      local session = result.session or result
      notify("session saved as " .. tostring(session.name or session.id))
    end)
  end, { nargs = "?", desc = "engram: save the session" })

  command("EngramRestoreSession", function(opts)
    local function restore(id)
      M.execute("engram.session.restore", { id = id }, function(result)
        M.show("Session " .. id, result)
      end)
    end
    if opts.args ~= "" then
      restore(opts.args)
    else
      choose("engram.session.list", "sessions", "Restore session:", "no saved sessions", function(item)
        restore(item.id)
      end)
    end
  end, { nargs = "?", desc = "engram: restore a saved session" })

  command("EngramSessions", function()
    M.execute("engram.session.list", {}, function(result)
      M.show("Sessions", result)
    end)
  end, { desc = "engram: list sessions" })

  command("EngramDeleteSession", function(opts)
    local function delete(id)
      if confirm("Delete session " .. id .. "?", "Delete", opts.bang) then
        M.execute("engram.session.delete", { id = id, confirm = true }, function()
          notify("session " .. id .. " deleted")
        end)
      end
    end
    if opts.args ~= "" then
      delete(opts.args)
    else
      choose("engram.session.list", "sessions", "Delete session:", "no sessions", function(item)
        delete(item.id)
      end)
    end
  end, { nargs = "?", bang = true, desc = "engram: delete a session (! skips the question)" })

  command("EngramSummary", function(opts)
    local args = { show = false }
    if opts.args ~= "" then
      args.id = opts.args
    end
    M.execute("engram.session.summary", args, function(result)
      M.show("Session summary", result)
    end)
  end, { nargs = "?", desc = "engram: show the session summary" })

  command("EngramHistory", function(opts)
    local last = tonumber(opts.args)
    M.execute("engram.session.history", last and { last = last } or vim.empty_dict(), function(result)
      M.show("Session history", result)
    end)
  end, { nargs = "?", desc = "engram: show the session history (optional: last N)" })

  command("EngramMetrics", function(opts)
    M.execute("engram.session.metrics", opts.args ~= "" and { id = opts.args } or vim.empty_dict(), function(result)
      M.show("Session metrics", result)
    end)
  end, { nargs = "?", desc = "engram: show session metrics" })

  command("EngramSnapshot", function(opts)
    M.execute("engram.snapshot.capture", opts.args ~= "" and { note = opts.args } or vim.empty_dict(), function(result)
      local snapshot = result.snapshot or result
      notify("context snapshot " .. tostring(snapshot.id) .. " captured")
    end)
  end, { nargs = "?", desc = "engram: capture a context snapshot (optional note)" })

  command("EngramRestoreSnapshot", function(opts)
    local function restore(id)
      M.execute("engram.snapshot.restore", { id = id }, function(result)
        local warnings = result.warnings
        if type(warnings) == "table" and #warnings > 0 then
          notify("snapshot restored; " .. table.concat(vim.tbl_map(tostring, warnings), "; "), vim.log.levels.WARN)
        else
          notify("snapshot " .. id .. " restored")
        end
      end)
    end
    if opts.args ~= "" then
      restore(opts.args)
    else
      choose("engram.snapshot.list", "snapshots", "Restore snapshot:", "no snapshots yet", function(item)
        restore(item.id)
      end)
    end
  end, { nargs = "?", desc = "engram: restore a context snapshot" })

  command("EngramAddGotcha", function(opts)
    -- With a range (:'<,'>EngramAddGotcha), a one-line selection becomes the code pattern.
    local pattern = nil
    if opts.range > 0 and opts.line1 == opts.line2 then
      local line = vim.api.nvim_buf_get_lines(0, opts.line1 - 1, opts.line1, false)[1] or ""
      local trimmed = vim.trim(line)
      if trimmed ~= "" then
        pattern = escape_regex(trimmed)
      end
    end
    local function add(title)
      if title == nil or vim.trim(title) == "" then
        return
      end
      vim.ui.input({ prompt = "Workaround (optional): " }, function(workaround)
        if workaround == nil then
          return
        end
        local args = { title = vim.trim(title) }
        if vim.trim(workaround) ~= "" then
          args.workaround = vim.trim(workaround)
        end
        args.pattern = pattern
        M.execute("engram.gotcha.add", args, function(result)
          local gotcha = result.gotcha or result
          notify("gotcha " .. tostring(gotcha.id) .. " added")
        end)
      end)
    end
    if opts.args ~= "" then
      add(opts.args)
    else
      vim.ui.input({ prompt = "Gotcha title: " }, add)
    end
  end, { nargs = "?", range = true, desc = "engram: add a gotcha (a one-line range becomes its pattern)" })

  command("EngramGotchas", function()
    M.execute("engram.gotcha.list", {}, function(result)
      M.show("Gotchas", result)
    end)
  end, { desc = "engram: list gotchas" })

  command("EngramResolveGotcha", function(opts)
    local function resolve(id)
      M.execute("engram.gotcha.resolve", { id = id }, function()
        notify("gotcha " .. id .. " resolved")
      end)
    end
    if opts.args ~= "" then
      resolve(opts.args)
    else
      choose("engram.gotcha.list", "gotchas", "Resolve gotcha:", "no open gotchas", function(item)
        resolve(item.id)
      end, function(item)
        return item.status ~= "resolved"
      end)
    end
  end, { nargs = "?", desc = "engram: mark a gotcha resolved" })

  command("EngramTrackError", function(opts)
    local args = { message = opts.args, file = relative_file(), line = vim.api.nvim_win_get_cursor(0)[1] }
    M.execute("engram.error.track", args, function(result)
      local count = plural(tonumber(result.occurrences) or 1, "occurrence")
      if result.gotcha_id ~= nil and result.gotcha_id ~= vim.NIL then
        notify(string.format("error tracked: gotcha %s (%s)", result.gotcha_id, count))
      else
        notify(string.format("error tracked (%s)", count))
      end
    end)
  end, { nargs = "+", desc = "engram: track an error message (may capture a gotcha)" })

  command("EngramRemember", function(opts)
    M.execute("engram.memory.add", { content = opts.args }, function(result)
      local memory = result.memory or result
      notify("remembered (" .. tostring(memory.id) .. ")")
    end)
  end, { nargs = "+", desc = "engram: add a memory" })

  command("EngramSearch", function(opts)
    M.execute("engram.memory.search", { query = opts.args }, function(result)
      M.show("Memory: " .. opts.args, result)
    end)
  end, { nargs = "+", desc = "engram: search memory" })

  command("EngramTimeline", function()
    M.execute("engram.timeline", { limit = 200 }, function(result)
      M.show("Timeline", result)
    end)
  end, { desc = "engram: show the timeline" })

  command("EngramDrift", function()
    M.execute("engram.drift", {}, function(result)
      M.show("Drift", result)
    end)
  end, { desc = "engram: show drift" })

  command("EngramStatus", function()
    M.execute("engram.status", {}, function(result)
      M.show("engram status", result)
    end)
  end, { desc = "engram: where the store is and what it holds" })

  command("EngramRestart", function()
    M.restart()
  end, { desc = "engram: restart the language server" })
end

function M.restart()
  local buffers = {}
  for _, client in ipairs(M.clients()) do
    for bufnr in pairs(client.attached_buffers or {}) do
      buffers[bufnr] = true
    end
    if vim.fn.has("nvim-0.11") == 1 then
      client:stop()
    else
      client.stop()
    end
  end
  started = {}
  vim.defer_fn(function()
    if use_config_api() then
      -- vim.lsp.enable re-attaches on the next FileType; trigger it for the open buffers.
      for bufnr in pairs(buffers) do
        if vim.api.nvim_buf_is_loaded(bufnr) then
          vim.api.nvim_exec_autocmds("FileType", { buffer = bufnr })
        end
      end
    else
      for bufnr in pairs(buffers) do
        if vim.api.nvim_buf_is_loaded(bufnr) then
          attach_legacy(bufnr)
        end
      end
    end
    notify("server restarted")
  end, 500)
end

-- A statusline component: "engram 2" (the engram diagnostics in this buffer), "" without any.
function M.statusline()
  local count = 0
  for _, diagnostic in ipairs(vim.diagnostic.get(0)) do
    if diagnostic.source == "engram" then
      count = count + 1
    end
  end
  return count > 0 and ("engram " .. count) or ""
end

-- Syntax ---------------------------------------------------------------------------------------

function M.syntax_file()
  local found = vim.api.nvim_get_runtime_file("syntax/engram.vim", false)[1]
  if found then
    return found
  end
  local in_repo = repo_root() .. "/syntax/engram.vim"
  return vim.fn.filereadable(in_repo) == 1 and in_repo or nil
end

local function enable_syntax()
  local file = M.syntax_file()
  if file == nil then
    return
  end
  local group = vim.api.nvim_create_augroup("engram_syntax", { clear = true })
  vim.api.nvim_create_autocmd("Syntax", {
    group = group,
    pattern = "*",
    callback = function()
      vim.cmd("source " .. vim.fn.fnameescape(file))
    end,
  })
  -- Buffers whose syntax is already set.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].syntax ~= "" then
      vim.api.nvim_buf_call(bufnr, function()
        vim.cmd("source " .. vim.fn.fnameescape(file))
      end)
    end
  end
end

local function enable_codelens()
  local group = vim.api.nvim_create_augroup("engram_codelens", { clear = true })
  vim.api.nvim_create_autocmd({ "BufEnter", "BufWritePost", "InsertLeave" }, {
    group = group,
    callback = function(args)
      if #M.clients(args.buf) > 0 then
        pcall(vim.lsp.codelens.refresh)
      end
    end,
  })
end

-- The configuration in use: setup()'s, else the defaults (lsp/engram.lua without setup()).
function M.ensure_config()
  if M.config == nil then
    M.config = vim.tbl_deep_extend("force", {}, defaults)
  end
  return M.config
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", {}, defaults, opts or {})
  if M.config.syntax then
    enable_syntax()
  end
  if M.config.commands then
    M.define_commands()
  end
  if M.config.codelens then
    enable_codelens()
  end
  enable_client()
  return M
end

return M
