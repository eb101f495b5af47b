;;; scenario.el --- engram in Emacs with eglot, batch (tests/e2e/test_emacs.py)  -*- lexical-binding: t -*-
;; Open app.py, start eglot with `engram lsp' as a person would (eglot-server-programs), then:
;; the gotcha diagnostic on the expected line (flymake), its workaround in the hover, the quick
;; fixes offered on it, and one command (checkpoint, edit saved, rollback: the disk holds the
;; checkpoint again and the buffer, reverted by auto-revert, shows it unmodified).
;; Input: E2E_* environment variables. Each step's outcome goes to E2E_RESULT as JSON; exit 0
;; when every step passed, 1 at the first failure.

(load (expand-file-name "e2e.el" (file-name-directory load-file-name)) nil t)

(defvar e2e-original nil)
(defvar e2e-diag nil)
(defvar e2e-server nil)
(defvar e2e-checkpoint nil)
(defconst e2e-root (file-name-directory (getenv "E2E_FILE")))

(e2e-step "open"
  ;; The workspace as a project (it has .engram/, no VCS), and engram as python-mode's server.
  (setq project-find-functions (list (lambda (_dir) (cons 'transient e2e-root))))
  (setq eglot-server-programs
        (list (cons 'python-mode (append (json-read-from-string (getenv "E2E_CMD")) nil))))
  (setq eglot-sync-connect t)
  (find-file (getenv "E2E_FILE"))
  (python-mode)
  (setq e2e-original (e2e-text))
  (apply #'eglot (eglot--guess-contact))
  (e2e-wait "eglot to connect" (lambda () (eglot-current-server)))
  (setq e2e-server (eglot-current-server))
  (format "%s" (process-command (jsonrpc--process e2e-server))))

(e2e-step "diagnostic"
  (let ((line (string-to-number (getenv "E2E_LINE"))))
    (e2e-wait "an engram diagnostic on the gotcha's line"
              (lambda ()
                (setq e2e-diag
                      (cl-find-if (lambda (d)
                                    (= line (line-number-at-pos (flymake-diagnostic-beg d))))
                                  (flymake-diagnostics)))))
    (push (cons 'diagnostic (flymake-diagnostic-text e2e-diag)) e2e-result)
    (flymake-diagnostic-text e2e-diag)))

(e2e-step "hover"
  (goto-char (1+ (flymake-diagnostic-beg e2e-diag)))
  (let* ((hover (jsonrpc-request e2e-server :textDocument/hover (eglot--TextDocumentPositionParams)))
         (contents (plist-get hover :contents))
         (text (if (stringp contents) contents (plist-get contents :value))))
    (push (cons 'hover text) e2e-result)
    (unless (and text (string-match-p (regexp-quote (getenv "E2E_WORKAROUND")) text))
      (error "the hover does not show the workaround: %S" text))
    text))

(e2e-step "code-actions"
  (let* ((actions (eglot-code-actions (flymake-diagnostic-beg e2e-diag) (flymake-diagnostic-end e2e-diag)))
         (titles (mapcar (lambda (a) (plist-get a :title)) actions)))
    (push (cons 'code_actions (vconcat titles)) e2e-result)
    (unless (cl-some (lambda (title) (string-prefix-p "Resolve gotcha" title)) titles)
      (error "no quick fix on the gotcha: %S" titles))
    titles))

(e2e-step "checkpoint"
  (let ((made (eglot-execute-command e2e-server "engram.checkpoint.create" (vector '(:name "emacs-before-edit")))))
    (setq e2e-checkpoint (plist-get made :id))
    (unless (stringp e2e-checkpoint) (error "no checkpoint id in %S" made))
    e2e-checkpoint))

(e2e-step "edit"
  (erase-buffer)
  (insert "print('the agent rewrote this file')\n")
  (save-buffer)
  (when (string= (e2e-disk) e2e-original) (error "the edit did not reach the disk")))

(e2e-step "rollback"
  ;; What an Emacs user turns on for files that change under them (see docs/emacs.md). Batch
  ;; Emacs does not read file-notification events, so it polls (the modification time).
  (setq auto-revert-use-notify nil)
  (global-auto-revert-mode 1)
  (let ((rolled (eglot-execute-command e2e-server "engram.checkpoint.rollback"
                                       (vector (list :id e2e-checkpoint :confirm t)))))
    (unless (eq (plist-get rolled :done) t) (error "rollback not done: %S" rolled))
    (unless (string= (e2e-disk) e2e-original)
      (error "the disk does not hold the checkpoint: %S" (e2e-disk)))
    (e2e-wait "the buffer to be reverted from disk"
              (lambda () (auto-revert-buffers) (string= (e2e-text) e2e-original)) 8)
    (when (buffer-modified-p) (error "the buffer is marked modified after the rollback"))
    (push (cons 'restored (e2e-text)) e2e-result)
    "disk and buffer hold the checkpoint"))

(e2e-finish t)
;;; scenario.el ends here
