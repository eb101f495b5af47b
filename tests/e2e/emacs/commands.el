;;; commands.el --- engram.el's M-x commands in Emacs, batch (tests/e2e/test_emacs.py)  -*- lexical-binding: t -*-
;; Load editors/emacs/engram.el as a person would from a checkout, let `engram-eglot-setup'
;; register the server, open app.py and start eglot, then run the commands interactively:
;; M-x engram-checkpoint, an edit saved, M-x engram-rollback (the checkpoint picked from the
;; list, the y-or-n question answered; the question must name the file), M-x engram-summary,
;; and a server error, which must be one `user-error' line, not a backtrace.
;; What the person types is answered by the stubs below (batch Emacs has no minibuffer).

(load (expand-file-name "e2e.el" (file-name-directory load-file-name)) nil t)
(add-to-list 'load-path (getenv "E2E_ENGRAM_EL"))
(require 'engram)

(defconst e2e-root (file-name-directory (getenv "E2E_FILE")))
(defvar e2e-original nil)
(defvar e2e-server nil)
(defvar e2e-checkpoint nil)
(defvar e2e-questions nil)
(defvar e2e-messages nil)

(defun e2e-answer (prompt &rest _)
  "What the person types at PROMPT."
  (push prompt e2e-questions)
  (cond
   ((string-prefix-p "Checkpoint name" prompt) "emacs-before-edit")
   (t "")))

(defun e2e-pick (prompt choices &rest _)
  "The person picks the checkpoint made by this scenario from the list PROMPT offers."
  (push prompt e2e-questions)
  (let ((choice (cl-find-if (lambda (choice)
                              (string-match-p (regexp-quote e2e-checkpoint) (car choice)))
                            choices)))
    (or (car choice) (error "the checkpoint %s is not offered: %S" e2e-checkpoint choices))))

(defun e2e-yes (prompt) (push prompt e2e-questions) t)

(advice-add 'message :before
            (lambda (format-string &rest args)
              (when format-string (push (apply #'format format-string args) e2e-messages))))

(defun e2e-last-message () (car e2e-messages))

(e2e-step "open"
  (setq project-find-functions (list (lambda (_dir) (cons 'transient e2e-root))))
  (setq engram-server-command (append (json-read-from-string (getenv "E2E_CMD")) nil))
  (setq eglot-server-programs nil)
  (engram-eglot-setup)
  (setq eglot-sync-connect t)
  (find-file (getenv "E2E_FILE"))
  (python-mode)
  (setq e2e-original (e2e-text))
  (apply #'eglot (eglot--guess-contact))
  (e2e-wait "eglot to connect" (lambda () (eglot-current-server)))
  (setq e2e-server (engram--server))
  (format "%s" (process-command (jsonrpc--process e2e-server))))

(defvar e2e-notes (expand-file-name "notes.py" e2e-root))
(defvar e2e-notes-buffer nil)
(defvar e2e-editor-files nil)

(e2e-step "checkpoint"
  ;; A second file, in the checkpoint: the person types in it below without saving.
  (with-temp-file e2e-notes (insert "N = 1\n"))
  (cl-letf (((symbol-function 'read-string) #'e2e-answer))
    (call-interactively #'engram-checkpoint))
  (unless (string-match "checkpoint \\([^ ]+\\) created" (e2e-last-message))
    (error "no checkpoint message: %S" (e2e-last-message)))
  (setq e2e-checkpoint (match-string 1 (e2e-last-message)))
  (push (cons 'checkpoint_message (e2e-last-message)) e2e-result)
  e2e-checkpoint)

(e2e-step "unsaved-notes"
  ;; Emacs itself makes its lock file (.#notes.py) at the first change and its auto-save file
  ;; (#notes.py#) when auto-save runs: the person's unsaved work.
  (setq create-lockfiles t)
  (setq e2e-notes-buffer (find-file-noselect e2e-notes))
  (with-current-buffer e2e-notes-buffer
    (auto-save-mode 1)  ; on by default in an interactive Emacs, off in batch
    (goto-char (point-max))
    (insert "N = 2  # typed, not saved\n")
    (do-auto-save t t))
  (setq e2e-editor-files
        (list (expand-file-name "#notes.py#" e2e-root) (expand-file-name ".#notes.py" e2e-root)))
  (unless (file-exists-p (car e2e-editor-files)) (error "Emacs made no auto-save file"))
  (unless (file-symlink-p (cadr e2e-editor-files)) (error "Emacs made no lock file"))
  e2e-editor-files)

(e2e-step "edit"
  (erase-buffer)
  (insert "print('the agent rewrote this file')\n")
  (save-buffer)
  (when (string= (e2e-disk) e2e-original) (error "the edit did not reach the disk")))

(e2e-step "rollback"
  ;; No auto-revert: engram-rollback itself shows the restored text in the open buffer.
  (setq e2e-questions nil)
  (cl-letf (((symbol-function 'completing-read) #'e2e-pick)
            ((symbol-function 'y-or-n-p) #'e2e-yes))
    (call-interactively #'engram-rollback))
  (let ((question (car e2e-questions)))
    (push (cons 'rollback_question question) e2e-result)
    (unless (string-match-p "app\\.py" question)
      (error "the question does not name the file it restores: %S" question)))
  (push (cons 'rollback_message (e2e-last-message)) e2e-result)
  (unless (string-match-p "rolled back to .*: 1 file restored, 0 files removed; undo: M-x engram-rollback RET C-"
                          (e2e-last-message))
    (error "unexpected rollback message: %S" (e2e-last-message)))
  (unless (string= (e2e-disk) e2e-original)
    (error "the disk does not hold the checkpoint: %S" (e2e-disk)))
  (unless (string= (e2e-text) e2e-original)
    (error "the buffer does not show the restored text: %S" (e2e-text)))
  (when (buffer-modified-p) (error "the buffer is marked modified after the rollback"))
  ;; The person's unsaved work: the auto-save and lock files stay, the buffer keeps its text.
  (dolist (file e2e-editor-files)  ; the lock is a dangling link: file-exists-p says nil
    (unless (or (file-exists-p file) (file-symlink-p file)) (error "the rollback removed %s" file)))
  (unless (with-current-buffer e2e-notes-buffer
            (and (buffer-modified-p) (string-match-p "typed, not saved" (e2e-text))))
    (error "the unsaved buffer lost its text"))
  (push (cons 'editor_files_kept (vconcat e2e-editor-files)) e2e-result)
  "disk and buffer hold the checkpoint")

(e2e-step "summary"
  (call-interactively #'engram-summary)
  (let ((shown (with-current-buffer engram-results-buffer (e2e-text))))
    (push (cons 'summary shown) e2e-result)
    (unless (string-match-p "^# " shown) (error "the summary is not Markdown: %S" shown))
    (unless (get-buffer-window engram-results-buffer) (error "the summary is not displayed"))
    (length shown)))

(e2e-step "error"
  ;; A server error is one line for the person (a `user-error', which never opens *Backtrace*).
  (let ((caught (condition-case err
                    (progn (engram-execute "engram.checkpoint.rollback" (list :id "no-such-checkpoint"))
                           nil)
                  (user-error (cadr err)))))
    (push (cons 'error_message caught) e2e-result)
    (unless (and (stringp caught) (string-prefix-p "engram: " caught)
                 (not (string-match-p "\n" caught)))
      (error "a server error is not one clear line: %S" caught))
    caught))

(defun e2e-pause (seconds)
  "Let SECONDS pass, serving the server's messages meanwhile."
  (let ((deadline (+ (float-time) seconds)))
    (while (< (float-time) deadline) (accept-process-output nil 0.1))))

(e2e-step "no-burst-from-store-and-editor-files"
  ;; engram's store written from a terminal and another editor's files: no automatic
  ;; checkpoint (tests/e2e/test_emacs.py counts them in the store afterwards).
  (dotimes (i 12)
    (write-region (format "view %d\n" i) nil
                  (expand-file-name (format ".engram/exports/from-the-cli-%d.md" i) e2e-root)))
  (dolist (name '(".other.py.swp" "#other.py#" "other.py~"))
    (write-region "another editor's unsaved work\n" nil (expand-file-name name e2e-root)))
  (e2e-pause 2)
  (push (cons 'work_starts (float-time)) e2e-result)
  t)

(e2e-step "burst-of-saves"
  ;; Ten files saved within seconds: the person's (or an agent's) work makes one.
  (dotimes (i 10)
    (with-current-buffer (find-file-noselect (expand-file-name (format "saved_%d.py" i) e2e-root))
      (python-mode)
      (e2e-wait "eglot to manage the new buffer" (lambda () (eglot-managed-p)) 10)
      (insert (format "N = %d\n" i))
      (save-buffer)))
  (e2e-pause 3)
  t)

(e2e-finish t)
;;; commands.el ends here
