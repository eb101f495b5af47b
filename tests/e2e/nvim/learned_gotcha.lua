-- The README's main job in real Neovim: a gotcha learned from three tracked errors (by the CLI,
-- before the editor starts) shows as a diagnostic on the line the traceback pointed at, with a
-- hover telling its story and a Confirm action. Run by tests/e2e/test_neovim_gotchas.py.
-- Input: E2E_* environment variables; output: JSON in E2E_RESULT; `cquit` on any failure.
local env = vim.env
local result = {}
local timeout = tonumber(env.E2E_TIMEOUT_MS or "20000")

local function finish(ok, why)
  result.ok = ok
  result.failed = why
  local file = io.open(env.E2E_RESULT, "w")
  file:write(vim.fn.json_encode(result))
  file:close()
  if ok then
    vim.cmd("qall!")
  else
    vim.cmd("cquit 1")
  end
end

local ok, err = pcall(function()
  vim.cmd("filetype plugin indent on") -- as a user's init.lua has it (-u NONE turns it off)
  vim.opt.runtimepath:prepend(env.E2E_REPO .. "/editors/nvim")
  local engram = require("engram")
  engram.setup({ cmd = vim.fn.json_decode(env.E2E_CMD) })
  vim.cmd("edit " .. vim.fn.fnameescape(env.E2E_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  local found
  if not vim.wait(timeout, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
      if d.source == "engram" and code == env.E2E_GOTCHA then
        found = d
        return true
      end
    end
    return false
  end, 50) then
    error("no diagnostic for " .. env.E2E_GOTCHA .. "; have: " .. vim.inspect(vim.diagnostic.get(bufnr)))
  end
  result.diagnostic = { line = found.lnum + 1, col = found.col, severity = found.severity, message = found.message }
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = found.lnum, character = found.col + 1 },
  }
  local text = {}
  for _, response in pairs(vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 10000) or {}) do
    local contents = response.result and response.result.contents
    table.insert(text, type(contents) == "table" and (contents.value or "") or tostring(contents))
  end
  result.hover = table.concat(text, "\n")
  local actions = {}
  local lsp_diagnostic = {
    range = { start = { line = found.lnum, character = found.col }, ["end"] = { line = found.end_lnum or found.lnum, character = found.end_col or found.col } },
    message = found.message, severity = found.severity, source = "engram", code = env.E2E_GOTCHA,
  }
  local action_params = { textDocument = params.textDocument, range = lsp_diagnostic.range, context = { diagnostics = { lsp_diagnostic } } }
  for _, response in pairs(vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", action_params, 10000) or {}) do
    for _, action in ipairs(response.result or {}) do
      table.insert(actions, action.title)
    end
  end
  result.code_actions = actions
end)
finish(ok, not ok and tostring(err) or nil)
