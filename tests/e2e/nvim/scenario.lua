-- The Neovim end-to-end scenario, run headless by tests/e2e/test_neovim.py in Neovim 0.7.2 and
-- 0.11 with the engram Lua module from editors/nvim:
--   open a workspace file; the gotcha diagnostic appears on the expected line; hover shows its
--   workaround; :EngramCheckpoint makes a checkpoint; the file is changed and saved;
--   :EngramRollback! restores the buffer; every user command exists.
-- Input comes from environment variables (E2E_*); every step's outcome goes to E2E_RESULT as
-- JSON. Exit: `qall!` when every step passed, `cquit` at the first failure.
local env = vim.env
local result = { steps = {}, nvim = tostring(vim.version().major .. "." .. vim.version().minor .. "." .. vim.version().patch) }
local timeout = tonumber(env.E2E_TIMEOUT_MS or "20000")

local function finish(ok)
  local file = io.open(env.E2E_RESULT, "w")
  file:write(vim.fn.json_encode(result))
  file:close()
  if ok then
    vim.cmd("qall!")
  else
    vim.cmd("cquit 1")
  end
end

local function step(name, fn)
  local started = vim.loop.hrtime()
  local ok, detail = pcall(fn)
  table.insert(result.steps, {
    name = name,
    ok = ok,
    detail = detail ~= nil and tostring(detail) or vim.NIL,
    ms = math.floor((vim.loop.hrtime() - started) / 1e6),
  })
  if not ok then
    result.failed = name
    finish(false)
  end
end

local function wait(what, predicate, ms)
  if not vim.wait(ms or timeout, predicate, 50) then
    error("timed out waiting for " .. what)
  end
end

local function lines(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
end

local engram
local bufnr
local gotcha_diagnostic
local original
local checkpoint_id

step("setup", function()
  -- What a user's init.lua has on (-u NONE turns them off).
  vim.cmd("filetype plugin indent on")
  vim.cmd("syntax on")
  vim.opt.runtimepath:prepend(env.E2E_REPO .. "/editors/nvim")
  engram = require("engram")
  engram.setup({ cmd = vim.fn.json_decode(env.E2E_CMD), confirm = true, start = env.E2E_START or "auto" })
end)

step("open", function()
  vim.cmd("edit " .. vim.fn.fnameescape(env.E2E_FILE))
  bufnr = vim.api.nvim_get_current_buf()
  original = lines(bufnr)
  wait("the engram client to attach", function()
    return #engram.clients(bufnr) > 0
  end)
  return "attached"
end)

step("user-commands", function()
  local missing = {}
  for _, name in ipairs({
    "EngramCheckpoint", "EngramCheckpoints", "EngramRollback", "EngramSummary", "EngramSaveSession",
    "EngramRestoreSession", "EngramSessions", "EngramDeleteSession", "EngramAddGotcha", "EngramGotchas",
    "EngramResolveGotcha", "EngramTrackError", "EngramSnapshot", "EngramRestoreSnapshot", "EngramHistory",
    "EngramMetrics", "EngramRemember", "EngramSearch", "EngramTimeline", "EngramDrift", "EngramStatus",
    "EngramRestart",
  }) do
    if vim.fn.exists(":" .. name) ~= 2 then
      table.insert(missing, name)
    end
  end
  if #missing > 0 then
    error("missing user commands: " .. table.concat(missing, ", "))
  end
end)

step("diagnostic", function()
  local expected_line = tonumber(env.E2E_LINE) - 1
  wait("an engram gotcha diagnostic on line " .. env.E2E_LINE, function()
    for _, diagnostic in ipairs(vim.diagnostic.get(bufnr)) do
      local code = diagnostic.code or (diagnostic.user_data and diagnostic.user_data.lsp and diagnostic.user_data.lsp.code)
      if diagnostic.source == "engram" and diagnostic.lnum == expected_line and type(code) == "string" and code:match("^G%-") then
        gotcha_diagnostic = diagnostic
        return true
      end
    end
    return false
  end)
  result.diagnostic = { line = gotcha_diagnostic.lnum + 1, col = gotcha_diagnostic.col, message = gotcha_diagnostic.message }
  return gotcha_diagnostic.message
end)

step("hover", function()
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = gotcha_diagnostic.lnum, character = gotcha_diagnostic.col + 1 },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 10000) or {}
  local text = {}
  for _, response in pairs(responses) do
    local contents = response.result and response.result.contents
    if type(contents) == "table" then
      table.insert(text, contents.value or vim.fn.json_encode(contents))
    elseif type(contents) == "string" then
      table.insert(text, contents)
    end
  end
  local hover = table.concat(text, "\n")
  result.hover = hover
  if not hover:find(env.E2E_WORKAROUND, 1, true) then
    error("hover does not show the workaround " .. vim.inspect(env.E2E_WORKAROUND) .. ": " .. vim.inspect(hover))
  end
end)

step("code-action", function()
  -- The diagnostic as the server sent it (0.7 keeps only some of its fields in user_data).
  local d = gotcha_diagnostic
  local range = {
    start = { line = d.lnum, character = d.col },
    ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
  }
  local lsp_diagnostic = {
    range = range,
    message = d.message,
    severity = d.severity,
    source = d.source,
    code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code),
  }
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = range,
    context = { diagnostics = { lsp_diagnostic } },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 10000) or {}
  local titles = {}
  for _, response in pairs(responses) do
    if response.error then
      error("codeAction failed: " .. vim.inspect(response.error))
    end
    for _, action in ipairs(response.result or {}) do
      table.insert(titles, action.title)
    end
  end
  result.code_actions = titles
  if #titles == 0 then
    error("no code action offered on the gotcha")
  end
  return table.concat(titles, " | ")
end)

step("code-lens", function()
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeLens", { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }, 10000) or {}
  local count = 0
  for _, response in pairs(responses) do
    if response.error then
      error("codeLens failed: " .. vim.inspect(response.error))
    end
    count = count + #(response.result or {})
  end
  result.code_lenses = count
  return count
end)

local notes = vim.fn.fnamemodify(env.E2E_FILE, ":p:h") .. "/notes.py"
local swap = vim.fn.fnamemodify(env.E2E_FILE, ":p:h") .. "/.notes.py.swp"

step("checkpoint", function()
  -- A second file, in the checkpoint: the person types in it below without saving.
  vim.fn.writefile({ "N = 1" }, notes)
  vim.cmd("EngramCheckpoint e2e-before-edit")
  wait("the checkpoint command's result", function()
    return engram.last["engram.checkpoint.create"] ~= nil
  end)
  local created = engram.last["engram.checkpoint.create"]
  if created.error then
    error("engram.checkpoint.create failed: " .. created.error)
  end
  local checkpoint = created.checkpoint or created
  checkpoint_id = checkpoint.id
  if type(checkpoint_id) ~= "string" then
    error("no checkpoint id in " .. vim.fn.json_encode(created))
  end
  return checkpoint_id
end)

step("unsaved-notes", function()
  -- Neovim's own swap file beside the file ('directory' "."), as many people set it: the
  -- person's unsaved work (the test runs with -n, so swap files are turned on here).
  vim.o.directory = "."
  vim.o.updatecount = 200
  vim.cmd("edit " .. vim.fn.fnameescape(notes))
  vim.cmd("setlocal swapfile")
  vim.api.nvim_buf_set_lines(0, -1, -1, false, { "N = 2  # typed, not saved" })
  vim.cmd("preserve")
  if vim.fn.filereadable(swap) ~= 1 then
    error("Neovim made no swap file at " .. swap)
  end
  vim.cmd("buffer " .. bufnr)
end)

step("edit", function()
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, { "print('the agent rewrote this file')" })
  vim.cmd("write")
  local on_disk = table.concat(vim.fn.readfile(env.E2E_FILE), "\n")
  if on_disk == original then
    error("the edit did not reach the disk")
  end
end)

local function disk(path)
  return table.concat(vim.fn.readfile(path), "\n")
end

step("rollback", function()
  vim.cmd("EngramRollback! " .. checkpoint_id)
  wait("the rollback command's result", function()
    return engram.last["engram.checkpoint.rollback"] ~= nil
  end)
  local rolled = engram.last["engram.checkpoint.rollback"]
  if rolled.error then
    error("engram.checkpoint.rollback failed: " .. rolled.error)
  end
  if rolled.done == false then
    error("rollback not done: " .. vim.fn.json_encode(rolled))
  end
  wait("the buffer to hold the checkpoint's content again", function()
    return lines(bufnr) == original
  end, 10000)
  -- One meaning of rollback: the disk equals the checkpoint and the buffer is not modified.
  if disk(env.E2E_FILE) ~= original then
    error("the disk still holds the edit after the rollback: " .. disk(env.E2E_FILE))
  end
  if vim.bo[bufnr].modified then
    error("the rolled-back buffer is marked modified")
  end
  -- Neovim's swap file of the buffer with unsaved text stays (the rollback reverts the
  -- buffer itself, with its text kept in the undo history: docs/neovim.md).
  if vim.fn.filereadable(swap) ~= 1 then
    error("the rollback removed Neovim's swap file " .. swap)
  end
  result.swap_kept = swap
end)

step("add-gotcha", function()
  -- :[range]EngramAddGotcha: the one-line range becomes the pattern; the prompt for the
  -- workaround is answered the way a person would type it.
  vim.ui.input = function(_, on_confirm)
    on_confirm("reset_index() first, or pass drop=False")
  end
  local line = tonumber(env.E2E_LINE) + 1
  vim.cmd(line .. "EngramAddGotcha set_index drops the zip column")
  wait("the add command's result", function()
    return engram.last["engram.gotcha.add"] ~= nil
  end)
  local added = engram.last["engram.gotcha.add"]
  if added.error then
    error("engram.gotcha.add failed: " .. added.error)
  end
  local id = (added.gotcha or added).id
  wait("a diagnostic for the new gotcha on line " .. line, function()
    for _, diagnostic in ipairs(vim.diagnostic.get(bufnr)) do
      local code = diagnostic.code or (diagnostic.user_data and diagnostic.user_data.lsp and diagnostic.user_data.lsp.code)
      if code == id and diagnostic.lnum == line - 1 then
        return true
      end
    end
    return false
  end)
  return id
end)

step("track-error", function()
  vim.cmd("EngramTrackError KeyError: 'zip'")
  wait("the track command's result", function()
    return engram.last["engram.error.track"] ~= nil
  end)
  local tracked = engram.last["engram.error.track"]
  if tracked.error then
    error("engram.error.track failed: " .. tracked.error)
  end
  if tracked.occurrences ~= 1 then
    error("expected the first occurrence, got " .. vim.fn.json_encode(tracked))
  end
end)

-- Every other :Engram* command, as a person runs it: what they see is the message (vim.notify),
-- the question (vim.fn.confirm), the picker (vim.ui.select) or the results window.
local messages = {}
local questions = {}
local pickers = {}
vim.notify = function(message, level)
  table.insert(messages, { message = message, level = level })
end
vim.fn.confirm = function(question)
  table.insert(questions, question)
  return 1
end
vim.ui.select = function(items, opts, on_choice)
  local shown = {}
  for _, item in ipairs(items) do
    table.insert(shown, opts.format_item and opts.format_item(item) or tostring(item))
  end
  table.insert(pickers, { prompt = opts.prompt, items = shown })
  on_choice(items[1], 1)
end

local function run(command, server_command)
  engram.last[server_command] = nil
  local before = #messages
  vim.cmd(command)
  wait(server_command .. " after :" .. command, function()
    return engram.last[server_command] ~= nil
  end)
  local got = engram.last[server_command]
  if got.error then
    error(":" .. command .. " failed: " .. got.error)
  end
  for index = before + 1, #messages do
    if messages[index].level == vim.log.levels.ERROR then
      error(":" .. command .. " showed an error: " .. messages[index].message)
    end
  end
  return got
end

local function last_message()
  wait("a message", function()
    return #messages > 0
  end, 2000)
  return messages[#messages].message
end

local function expect_message(pattern)
  local message = last_message()
  if not message:find(pattern) then
    error("expected a message matching " .. vim.inspect(pattern) .. ", got " .. vim.inspect(message))
  end
  return message
end

local function results_text()
  local results = vim.fn.bufnr("engram://results")
  if results == -1 then
    error("no results window was opened")
  end
  local windows = 0
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == results then
      windows = windows + 1
    end
  end
  if windows ~= 1 then
    error("expected the one results window, found " .. windows)
  end
  return lines(results)
end

local function expect_results(...)
  local text = results_text()
  for _, wanted in ipairs({ ... }) do
    if not text:find(wanted, 1, true) then
      error("the results window does not show " .. vim.inspect(wanted) .. ":\n" .. text)
    end
  end
  if text:find("evolution:%d") or text:find("event:%d") then
    error("the results window shows internal ids:\n" .. text)
  end
  return text
end

result.commands = {}
local function command_step(name, fn)
  step(name, function()
    -- Back to the file, as a person would before the next command (not in the results window).
    local win = vim.fn.bufwinid(bufnr)
    if win == -1 then
      local results = vim.fn.bufnr("engram://results")
      for _, candidate in ipairs(vim.api.nvim_list_wins()) do
        if vim.api.nvim_win_get_buf(candidate) ~= results then
          win = candidate
          break
        end
      end
    end
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    end
    vim.api.nvim_set_current_buf(bufnr)
    local shown = fn()
    result.commands[name] = shown
    return shown
  end)
end

command_step("EngramCheckpoints", function()
  run("EngramCheckpoints", "engram.checkpoint.list")
  return expect_results("e2e-before-edit")
end)

command_step("EngramRollback (picker)", function()
  -- Another edit saved, then the picker: it lists checkpoints, the question lists the file.
  vim.api.nvim_buf_set_lines(bufnr, 0, 1, false, { "# edited again" })
  vim.cmd("write")
  questions = {}
  pickers = {}
  run("EngramRollback", "engram.checkpoint.rollback")
  if #pickers ~= 1 or #pickers[1].items == 0 then
    error("no checkpoint picker was shown")
  end
  local question = questions[#questions] or ""
  if not question:find("app.py", 1, true) then
    error("the rollback question does not name app.py: " .. vim.inspect(question))
  end
  expect_message("rolled back to")
  wait("the buffer reloaded from disk", function()
    return not vim.bo[bufnr].modified and lines(bufnr) == disk(env.E2E_FILE)
  end, 5000)
  return { picker = pickers[1].items, question = question, message = last_message() }
end)

command_step("EngramSaveSession", function()
  run("EngramSaveSession e2e-saved", "engram.session.save")
  return expect_message("session saved as")
end)

command_step("EngramSessions", function()
  run("EngramSessions", "engram.session.list")
  return expect_results("e2e")
end)

command_step("EngramRestoreSession", function()
  run("EngramRestoreSession", "engram.session.restore")
  return results_text()
end)

command_step("EngramSummary", function()
  run("EngramSummary", "engram.session.summary")
  return expect_results("#")
end)

command_step("EngramHistory", function()
  run("EngramHistory", "engram.session.history")
  return expect_results("index it by ZIP code")
end)

command_step("EngramMetrics", function()
  run("EngramMetrics", "engram.session.metrics")
  return expect_results("| Turns | 2 |")
end)

command_step("EngramSnapshot", function()
  run("EngramSnapshot before lunch", "engram.snapshot.capture")
  return expect_message("context snapshot .* captured")
end)

command_step("EngramRestoreSnapshot", function()
  run("EngramRestoreSnapshot", "engram.snapshot.restore")
  return expect_message("snapshot")
end)

command_step("EngramGotchas", function()
  run("EngramGotchas", "engram.gotcha.list")
  return expect_results("read_csv drops the leading zeros")
end)

command_step("EngramResolveGotcha", function()
  pickers = {}
  run("EngramResolveGotcha", "engram.gotcha.resolve")
  if #pickers ~= 1 then
    error("no gotcha picker was shown")
  end
  return expect_message("resolved")
end)

command_step("EngramRemember", function()
  run("EngramRemember ZIP codes are text, never numbers", "engram.memory.add")
  return expect_message("remembered")
end)

command_step("EngramSearch", function()
  run("EngramSearch ZIP codes", "engram.memory.search")
  return expect_results("ZIP codes are text")
end)

command_step("EngramTimeline", function()
  run("EngramTimeline", "engram.timeline")
  -- Actors and files in words; a rollback's own writes credited to it; no internal ids.
  return expect_results("app.py changed by", "just now", "Rolled back to checkpoint", "by the rollback to")
end)

command_step("EngramDrift", function()
  run("EngramDrift", "engram.drift")
  return expect_results("# Drift")
end)

command_step("EngramStatus", function()
  run("EngramStatus", "engram.status")
  return expect_results(".engram")
end)

command_step("results-window-q", function()
  local results = vim.fn.bufnr("engram://results")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(results))
  vim.api.nvim_feedkeys("q", "x", false)
  if vim.fn.bufwinid(results) ~= -1 then
    error("q did not close the results window")
  end
  return "closed"
end)

command_step("EngramDeleteSession", function()
  questions = {}
  run("EngramDeleteSession e2e-saved", "engram.session.delete")
  if #questions ~= 1 then
    error("the delete was not confirmed first")
  end
  return expect_message("deleted")
end)

command_step("EngramRestart", function()
  local before = engram.clients(bufnr)[1].id
  vim.cmd("EngramRestart")
  wait("a new client attached", function()
    local now = engram.clients(bufnr)[1]
    return now ~= nil and now.id ~= before
  end, 10000)
  return expect_message("server restarted")
end)

result.ok = true
finish(true)
