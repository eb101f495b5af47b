" engram: gotcha annotations inside the comments of any filetype (`# gotcha: ...`,
" `// GOTCHA(high): ...`) and engram ids (G-/S-/C-/CP-/SN-/M-/D- and eight hex digits) in comments
" and in Markdown (engram's exports). Layered over the filetype's own syntax: the engram Lua
" module sources this file on every Syntax event (editors/nvim/lua/engram/init.lua), or source
" it yourself from an autocmd. Tested by tests/e2e/test_syntax.py (highlight group under the cursor).

" The filetype syntax may define comments under any name ending in Comment (pythonComment,
" cCommentL, luaComment, ...): attach to all of them.
" `gotcha(high):` and the other severities the server reads (memory_core/gotchas/scan.py).
syntax case ignore
syntax match engramGotchaAnnotation
      \ /\<gotcha\s*\%((\%(critical\|high\|medium\|low\))\)\=\s*:\%(\%(\*\/\|-->\)\@!.\)*/
      \ contained containedin=.*Comment.* contains=engramGotchaTag,engramId
syntax match engramGotchaTag /\<gotcha\s*\%((\%(critical\|high\|medium\|low\))\)\=\s*:/
      \ contained contains=engramGotchaSeverity
syntax match engramGotchaSeverity /(\zs\%(critical\|high\|medium\|low\)\ze)/ contained
syntax case match
syntax match engramId /\%([[:alnum:]_-]\)\@<!\%(G\|S\|C\|CP\|SN\|M\|D\)-\x\{8}\%([[:alnum:]_-]\)\@!/
      \ contained containedin=.*Comment.*

if &filetype ==# 'markdown' || &filetype ==# 'markdown.engram'
  " Exports are plain Markdown: an id is worth highlighting anywhere in them, and so is an
  " agent's session id (a UUID), the only UUIDs engram writes.
  syntax match engramId /\%([[:alnum:]_-]\)\@<!\%(G\|S\|C\|CP\|SN\|M\|D\)-\x\{8}\%([[:alnum:]_-]\)\@!/
        \ containedin=ALLBUT,engramId
  syntax match engramId /\%([[:alnum:]_-]\)\@<!\x\{8}-\x\{4}-\x\{4}-\x\{4}-\x\{12}\%([[:alnum:]_-]\)\@!/
        \ containedin=ALLBUT,engramId
endif

highlight default link engramGotchaTag Todo
highlight default link engramGotchaSeverity Special
highlight default link engramGotchaAnnotation WarningMsg
highlight default link engramId Underlined
