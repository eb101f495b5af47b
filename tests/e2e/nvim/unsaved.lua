-- Unsaved text through a rollback and its undo, headless (tests/e2e/test_neovim.py): the
-- person types in app.py without saving; :EngramRollback! restores the file and reloads the
-- buffer; :EngramRollback! of the rollback's own undo checkpoint gives the typed text back,
-- unsaved. Input: E2E_* variables; result in E2E_RESULT; exit `qall!` or `cquit 1`.
local env = vim.env
local result = { steps = {} }
local timeout = tonumber(env.E2E_TIMEOUT_MS or "20000")

local function finish(ok)
  local file = io.open(env.E2E_RESULT, "w")
  file:write(vim.fn.json_encode(result))
  file:close()
  vim.cmd(ok and "qall!" or "cquit 1")
end

local function step(name, fn)
  local ok, detail = pcall(fn)
  table.insert(result.steps, { name = name, ok = ok, detail = detail ~= nil and tostring(detail) or vim.NIL })
  if not ok then
    result.failed = name
    finish(false)
  end
end

local function wait(what, predicate)
  if not vim.wait(timeout, predicate, 50) then
    error("timed out waiting for " .. what)
  end
end

local function text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
end

local engram, bufnr, original, checkpoint
local typed = "print('typed, not saved')"

local function rollback(id)
  engram.last["engram.checkpoint.rollback"] = nil
  vim.cmd("EngramRollback! " .. id)
  wait("the rollback's result", function()
    return engram.last["engram.checkpoint.rollback"] ~= nil
  end)
  local rolled = engram.last["engram.checkpoint.rollback"]
  if rolled.error or rolled.done == false then
    error("rollback failed: " .. vim.fn.json_encode(rolled))
  end
  return rolled
end

step("open", function()
  vim.cmd("filetype plugin indent on")
  vim.opt.runtimepath:prepend(env.E2E_REPO .. "/editors/nvim")
  engram = require("engram")
  engram.setup({ cmd = vim.fn.json_decode(env.E2E_CMD), confirm = true })
  vim.cmd("edit " .. vim.fn.fnameescape(env.E2E_FILE))
  bufnr = vim.api.nvim_get_current_buf()
  wait("the engram client", function()
    return #engram.clients(bufnr) > 0
  end)
  original = text(bufnr)
  vim.cmd("EngramCheckpoint before-typing")
  wait("the checkpoint", function()
    return engram.last["engram.checkpoint.create"] ~= nil
  end)
  local created = engram.last["engram.checkpoint.create"]
  checkpoint = (created.checkpoint or created).id
end)

step("type-without-saving", function()
  vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { typed })
  -- The server has the buffer's text (didChange) before the rollback asks for it.
  vim.wait(300)
end)

step("rollback", function()
  local rolled = rollback(checkpoint)
  result.undo = rolled.undo_checkpoint
  wait("the buffer to show the checkpoint", function()
    return text(bufnr) == original and not vim.bo[bufnr].modified
  end)
end)

step("undo", function()
  local undone = rollback(result.undo)
  result.given_back = undone.unsaved_given_back
  wait("the typed text back in the buffer", function()
    return text(bufnr):find(typed, 1, true) ~= nil
  end)
  if not vim.bo[bufnr].modified then
    error("the given-back text is not unsaved")
  end
  local on_disk = table.concat(vim.fn.readfile(env.E2E_FILE), "\n")
  if on_disk:find(typed, 1, true) then
    error("the typed text was written to disk, not given back to the buffer")
  end
  result.buffer = text(bufnr)
end)

-- Automatic checkpoints (Neovim reports saves, not other writes, on Linux): engram's store
-- written from a terminal and another editor's swap and backup files make none; ten files
-- saved in Neovim within seconds make one (tests/e2e/test_neovim.py counts them in the store).
step("no-burst-from-store-and-editor-files", function()
  local root = vim.fn.fnamemodify(env.E2E_FILE, ":p:h")
  for i = 1, 12 do
    vim.fn.writefile({ "view " .. i }, root .. "/.engram/exports/from-the-cli-" .. i .. ".md")
  end
  for _, name in ipairs({ ".other.py.swp", "#other.py#", "other.py~" }) do
    vim.fn.writefile({ "another editor's unsaved work" }, root .. "/" .. name)
  end
  vim.wait(2000)
  result.work_starts = os.time()
end)

step("burst-of-saves", function()
  local root = vim.fn.fnamemodify(env.E2E_FILE, ":p:h")
  for i = 1, 10 do
    vim.cmd("edit " .. vim.fn.fnameescape(root .. "/saved_" .. i .. ".py"))
    wait("the engram client on a new buffer", function()
      return #engram.clients(0) > 0
    end)
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { "N = " .. i })
    vim.cmd("write")
  end
  vim.wait(3000)
end)

finish(true)
