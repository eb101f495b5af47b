-- Neovim's own habits, headless (tests/e2e/test_neovim_native.py): `vim.lsp.enable("engram")`
-- with nothing else on 0.11 (lsp/engram.lua), `:checkhealth engram`, `:help engram`, and the
-- message when the engram command cannot be found (E2E_MODE=missing).
local env = vim.env
local result = { steps = {} }

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

local messages = {}
vim.notify = function(message, level)
  table.insert(messages, { message = message, level = level })
end

-- On by default in Neovim; -u NONE turns them off.
vim.cmd("filetype plugin indent on")
vim.cmd("syntax on")
vim.opt.runtimepath:prepend(env.E2E_REPO .. "/editors/nvim")
local engram

-- Without engram (E2E_MODE=missing), or with one that exits at start (E2E_MODE=broken): one
-- warning in words, however many files are opened, and no error (an error inside the
-- autocommand that opens a file comes with "Error detected while processing" and "Press ENTER").
local expected = { missing = "`engram` not found: pipx install engram-lsp", broken = "the server stopped at start (exit code 1)" }
if expected[env.E2E_MODE] then
  step("setup-without-engram", function()
    engram = require("engram")
    engram.setup({})
    vim.cmd("edit " .. vim.fn.fnameescape(env.E2E_FILE))
    vim.wait(5000, function()
      return #messages > 0
    end)
    vim.cmd("edit " .. vim.fn.fnameescape(env.E2E_SECOND_FILE))
    vim.wait(1500)
    result.messages = vim.tbl_map(function(m)
      return m.message
    end, messages)
    local said = table.concat(result.messages, "\n")
    if not said:find(expected[env.E2E_MODE], 1, true) then
      error("no clear message: " .. vim.inspect(result.messages))
    end
    local ours = vim.tbl_filter(function(m)
      return m.message:find("^engram: ") ~= nil
    end, messages)
    if #ours ~= 1 then
      error("expected engram's message once, got " .. vim.inspect(result.messages))
    end
    if ours[1].level ~= vim.log.levels.WARN then
      error("the message is not a warning: level " .. tostring(ours[1].level))
    end
  end)
  finish(true)
  return
end

step("enable", function()
  engram = require("engram")
  if vim.fn.has("nvim-0.11") == 1 then
    -- Nothing but the runtime path and this line, as in a user's init.lua.
    vim.lsp.enable("engram")
    result.how = "vim.lsp.enable"
  else
    engram.setup({})
    result.how = "setup"
  end
  vim.cmd("edit " .. vim.fn.fnameescape(env.E2E_FILE))
  if not vim.wait(15000, function()
    return #engram.clients(0) > 0
  end, 50) then
    error("no engram client attached")
  end
  if vim.fn.exists(":EngramTimeline") ~= 2 then
    error("the :Engram* commands are missing")
  end
end)

step("checkhealth", function()
  vim.cmd("checkhealth engram")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  result.health = text
  for _, wanted in ipairs({ "engram " .. env.E2E_VERSION, env.E2E_STORE, "attached to this buffer" }) do
    if not text:find(wanted, 1, true) then
      error(":checkhealth engram does not report " .. vim.inspect(wanted) .. ":\n" .. text)
    end
  end
  vim.cmd("bwipeout!")
end)

step("help", function()
  vim.cmd("helptags " .. vim.fn.fnameescape(env.E2E_REPO .. "/editors/nvim/doc"))
  vim.cmd("help engram-rollback")
  local name = vim.api.nvim_buf_get_name(0)
  result.help = name
  if not name:match("engram%.txt$") then
    error(":help engram-rollback opened " .. name)
  end
  vim.cmd("help engram")
  result.help_engram = vim.api.nvim_get_current_line()
  if not result.help_engram:find("*engram*", 1, true) then
    error(":help engram opened at " .. vim.inspect(result.help_engram))
  end
end)

finish(true)
