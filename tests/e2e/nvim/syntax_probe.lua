-- Reports the highlight group under the cursor at each probe position, in real Neovim with the
-- engram module's syntax layering (tests/e2e/test_syntax.py). Input: E2E_PROBES (JSON list of
-- {file, line, col}), E2E_SYNTAX ("1": engram syntax on, "0": off, the control). Output:
-- E2E_RESULT, a JSON list of {group, linked} in the same order.
vim.cmd("filetype plugin indent on")
vim.cmd("syntax on")
vim.opt.runtimepath:prepend(vim.env.E2E_REPO .. "/editors/nvim")
-- No server: only the syntax is under test (filetypes = {} attaches to nothing).
require("engram").setup({ filetypes = {}, syntax = vim.env.E2E_SYNTAX == "1", commands = false })
local out = {}
for _, probe in ipairs(vim.fn.json_decode(vim.env.E2E_PROBES)) do
  vim.cmd("edit " .. vim.fn.fnameescape(probe.file))
  vim.api.nvim_win_set_cursor(0, { probe.line, probe.col - 1 })
  local line, col = vim.fn.line("."), vim.fn.col(".")
  local id = vim.fn.synID(line, col, 1)
  table.insert(out, {
    group = vim.fn.synIDattr(id, "name"),
    linked = vim.fn.synIDattr(vim.fn.synIDtrans(id), "name"),
    stack = vim.tbl_map(function(s)
      return vim.fn.synIDattr(s, "name")
    end, vim.fn.synstack(line, col)),
  })
end
local file = io.open(vim.env.E2E_RESULT, "w")
file:write(vim.fn.json_encode(out))
file:close()
vim.cmd("qall!")
