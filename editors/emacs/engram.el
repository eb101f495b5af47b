;;; engram.el --- A durable memory for AI-assisted coding, through eglot  -*- lexical-binding: t -*-

;; Author: the engram authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9") (jsonrpc "1.0.14"))
;; Keywords: tools, languages, convenience
;; URL: https://github.com/engram-lsp/engram

;;; Commentary:

;; engram's language server (`engram lsp') learns gotchas from repeated errors and shows them
;; as diagnostics, hovers and quick fixes; it also keeps checkpoints of the workspace, rolls
;; back, and records and summarises agent sessions.  This package registers the server with
;; eglot and gives every command of engram's VS Code palette and Neovim plugin as `M-x
;; engram-...': results open in the `*engram*' buffer (Markdown rendered when markdown-mode
;; is installed), questions are y-or-n, and a failure is one line in the echo area.
;;
;;   (use-package engram
;;     :vc (:url "https://github.com/engram-lsp/engram" :lisp-dir "editors/emacs")
;;     :hook ((python-mode python-ts-mode js-mode) . eglot-ensure)
;;     :config (engram-eglot-setup))
;;
;; From a checkout: (add-to-list 'load-path "/path/to/engram/editors/emacs") (require 'engram)
;; (engram-eglot-setup).  docs/emacs.md has the whole guide.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'subr-x)
(require 'url-util)

(defgroup engram nil
  "A durable memory for AI-assisted coding."
  :group 'tools
  :prefix "engram-")

(defcustom engram-server-command nil
  "The command line of engram's language server, a list of strings.
nil: `engram lsp' with the engram found on `exec-path', else the project's
.venv/bin/engram."
  :type '(choice (const :tag "Find it" nil) (repeat string)))

(defcustom engram-major-modes
  '(python-mode python-ts-mode js-mode js-ts-mode typescript-mode typescript-ts-mode
    tsx-ts-mode go-mode go-ts-mode rust-mode rust-ts-mode sh-mode bash-ts-mode
    ruby-mode ruby-ts-mode java-mode java-ts-mode c-mode c++-mode)
  "Major modes whose buffers eglot serves with engram (see `engram-eglot-setup')."
  :type '(repeat symbol))

(defcustom engram-confirm t
  "Ask before a rollback or a session delete."
  :type 'boolean)

(defconst engram-results-buffer "*engram*"
  "The buffer every engram command shows its results in.")

(defconst engram-install-hint
  "install it with `pipx install engram-lsp' (or `uv tool install engram-lsp'), or set `engram-server-command'"
  "What to tell a person whose machine has no engram.")

;;; The server

(defun engram--project-root ()
  "The folder engram keeps its store for: the nearest .engram/, else the VC root."
  (let ((start (or buffer-file-name default-directory)))
    (or (locate-dominating-file start ".engram")
        (locate-dominating-file start ".git")
        default-directory)))

(defun engram--command-line ()
  "The command line that starts engram's server.
nil when engram is not installed."
  (or engram-server-command
      (let ((on-path (executable-find "engram")))
        (cond
         (on-path (list on-path "lsp"))
         (t (cl-loop for venv in '(".venv" "venv")
                     for candidate = (expand-file-name (concat venv "/bin/engram")
                                                       (engram--project-root))
                     when (file-executable-p candidate)
                     return (list candidate "lsp")))))))

(defun engram--eglot-contact (&rest _)
  "The contact eglot starts for engram's modes (an error when engram is missing)."
  (or (engram--command-line)
      (user-error "engram: the `engram' command was not found; %s" engram-install-hint)))

;;;###autoload
(defun engram-eglot-setup ()
  "Make eglot start engram's language server in `engram-major-modes'.
eglot runs one server per major mode and project: a mode already served by
another server (pyright, gopls) is served by engram instead."
  (interactive)
  (setq eglot-server-programs
        (cons (cons engram-major-modes #'engram--eglot-contact)
              (cl-remove-if (lambda (entry) (eq (cdr-safe entry) #'engram--eglot-contact))
                            eglot-server-programs))))

(defun engram--engram-server-p (server)
  "Non-nil when SERVER, an eglot server, is engram's."
  (let ((command (ignore-errors (process-command (jsonrpc--process server)))))
    (or (cl-some (lambda (part) (and (stringp part)
                                     (string-match-p "engram\\|lsp_server" part)))
                 command)
        (equal (plist-get (ignore-errors (eglot--server-info server)) :name) "engram"))))

(defun engram--server ()
  "engram's eglot server for this buffer's project, or a clear error."
  (let ((current (ignore-errors (eglot-current-server))))
    (cond
     ((and current (engram--engram-server-p current)) current)
     (t
      (or (cl-find-if #'engram--engram-server-p
                      (ignore-errors
                        (gethash (eglot--current-project) eglot--servers-by-project)))
          (user-error (if (engram--command-line)
                          "engram: no engram server for this buffer; M-x eglot in a file of the project first"
                        (format "engram: the `engram' command was not found; %s"
                                engram-install-hint))))))))

(defun engram--object (plist)
  "PLIST as a JSON object for the server; an empty one when PLIST is nil."
  (or plist (make-hash-table)))

(defun engram-execute (command &optional args)
  "Run engram's server COMMAND with ARGS (a plist); return its result (a plist).
A failure is a `user-error' with the server's message, never a backtrace."
  (let ((server (engram--server)))
    (condition-case err
        (jsonrpc-request server :workspace/executeCommand
                         (list :command command :arguments (vector (engram--object args))))
      (jsonrpc-error
       (let* ((data (cdr err))
              (message (or (alist-get 'jsonrpc-error-message data)
                           (format "%S" data))))
         (user-error "engram: %s" message))))))

;;; Results

(defun engram--field (result key)
  "KEY of RESULT, a plist; nil for JSON null and false."
  (let ((value (plist-get result key)))
    (unless (memq value '(:json-false :null)) value)))

(defun engram--label (item)
  "A one-line name for ITEM, a plist from a list command."
  (or (cl-loop for key in '(:label :name :title :content :message)
               for value = (engram--field item key)
               when (and (stringp value) (not (string-empty-p value)))
               return (car (split-string value "\n")))
      (format "%s" (or (engram--field item :id) "?"))))

(defun engram--stamp (item)
  "When ITEM was made, as a person reads it."
  (let ((value (or (engram--field item :created_at) (engram--field item :started_at)
                   (engram--field item :ts))))
    (if (stringp value)
        (replace-regexp-in-string
         "\\(?:\\+00:00\\|Z\\)\\'" " UTC"
         (replace-regexp-in-string "\\.[0-9]+" "" (replace-regexp-in-string "T" " " value)))
      "")))

(defun engram--plural (count word)
  "COUNT WORDs, with the right ending: 1 file, 2 files."
  (format "%d %s%s" count word (if (= count 1) "" "s")))

(defun engram--markdown (title result)
  "The Markdown of RESULT, shown under TITLE.
The server's own Markdown when it sends some, else RESULT's fields laid out."
  (let ((text (or (engram--field result :markdown) (engram--field result :summary_markdown)
                  (engram--field result :text))))
    (if (and (stringp text) (not (string-empty-p text)))
        text
      (with-temp-buffer
        (insert "# " title "\n\n")
        (let (keys)
          (cl-loop for (key _) on result by #'cddr do (push key keys))
          (dolist (key (sort keys (lambda (a b) (string< (symbol-name a) (symbol-name b)))))
            (let ((value (engram--field result key))
                  (name (replace-regexp-in-string "_" " " (substring (symbol-name key) 1))))
              (cond
               ((vectorp value)
                (insert (format "## %s (%d)\n\n" name (length value)))
                (when (= (length value) 0) (insert "None.\n"))
                (seq-doseq (item value)
                  (if (and (listp item) (keywordp (car-safe item)))
                      (insert (format "- %s **%s**%s\n" (engram--stamp item) (engram--label item)
                                      (if (engram--field item :id)
                                          (format "  `%s`" (engram--field item :id))
                                        "")))
                    (insert (format "- %s\n" item))))
                (insert "\n"))
               ((and value (not (listp value)))
                (insert (format "- %s: %s\n" name value)))))))
        (buffer-string)))))

(define-derived-mode engram-results-mode special-mode "engram"
  "engram's results: read-only; `q' closes the window, `g' runs the command again."
  (setq-local truncate-lines nil))

(defvar-local engram--rerun nil
  "How to run again the command whose result this buffer shows.")

(defun engram-show (title result &optional rerun)
  "Show RESULT of a command under TITLE in `engram-results-buffer'.
RERUN, a function, is what `g' calls there.  Return the buffer."
  (let ((buffer (get-buffer-create engram-results-buffer))
        (text (if (stringp result) result (engram--markdown title result))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert text)
        (unless (string-suffix-p "\n" text) (insert "\n"))
        ;; Rendered Markdown where markdown-mode is installed; plain read-only text otherwise.
        (cond
         ((fboundp 'gfm-view-mode) (gfm-view-mode))
         ((fboundp 'markdown-view-mode) (markdown-view-mode))
         (t (engram-results-mode)))
        (setq-local header-line-format (concat "engram: " title))
        (setq engram--rerun rerun)
        (local-set-key (kbd "q") #'quit-window)
        (when rerun (local-set-key (kbd "g") (lambda () (interactive) (funcall rerun))))
        (goto-char (point-min))))
    (display-buffer buffer)
    buffer))

(defun engram--message (format-string &rest args)
  "Say FORMAT-STRING with ARGS in the echo area, prefixed with engram."
  (apply #'message (concat "engram: " format-string) args))

(defun engram--choose (list-command key prompt empty &optional filter)
  "Ask for one item of LIST-COMMAND's KEY list with PROMPT.
EMPTY is the error when there is none.
FILTER keeps the items it returns non-nil for.  Return the chosen item's id."
  (let* ((result (engram-execute list-command))
         (items (cl-remove-if-not (or filter #'identity)
                                  (append (engram--field result key) nil))))
    (unless items (user-error "engram: %s" empty))
    (let* ((choices (mapcar (lambda (item)
                              (cons (format "%s  %s  %s" (engram--field item :id)
                                            (engram--label item) (engram--stamp item))
                                    (engram--field item :id)))
                            items))
           (picked (completing-read prompt choices nil t)))
      (cdr (assoc picked choices)))))

(defun engram--relative-file ()
  "This buffer's file relative to the project root, or nil."
  (when buffer-file-name
    (file-relative-name buffer-file-name (engram--project-root))))

(defun engram--uri-file (uri)
  "The file name of a file:// URI."
  (when (and (stringp uri) (string-prefix-p "file://" uri))
    (url-unhex-string (substring uri (length "file://")))))

;;; Commands: checkpoints

;;;###autoload
(defun engram-checkpoint (&optional name)
  "Create a checkpoint of the workspace's files, named NAME when given."
  (interactive (list (let ((typed (read-string "Checkpoint name (optional): ")))
                       (unless (string-empty-p typed) typed))))
  (let* ((result (engram-execute "engram.checkpoint.create" (and name (list :name name))))
         (checkpoint (or (engram--field result :checkpoint) result)))
    (engram--message "checkpoint %s created" (engram--field checkpoint :id))
    checkpoint))

;;;###autoload
(defun engram-checkpoints ()
  "List the workspace's checkpoints."
  (interactive)
  (engram-show "Checkpoints" (engram-execute "engram.checkpoint.list") #'engram-checkpoints))

(defun engram--revert-rolled-back (uris)
  "Show the disk's text in the buffers of URIS after a rollback.
The buffers of removed files are killed.
A buffer with unsaved changes is left as it is and named in the returned list."
  (let (kept)
    (dolist (uri (append uris nil))
      (let* ((file (engram--uri-file uri))
             (buffer (and file (find-buffer-visiting file))))
        (when buffer
          (with-current-buffer buffer
            (cond
             ((buffer-modified-p) (push (buffer-name) kept))
             ((file-exists-p file) (revert-buffer t t t))
             (t (kill-buffer buffer)))))))
    (nreverse kept)))

;;;###autoload
(defun engram-rollback (id &optional no-confirm)
  "Roll the workspace back to checkpoint ID.
Asks first, listing every file restored and removed, unless NO-CONFIRM
(a prefix argument) or `engram-confirm' is nil.  The rollback is itself
undoable: the message names the checkpoint made before it."
  (interactive
   (list (engram--choose "engram.checkpoint.list" :checkpoints "Roll back to checkpoint: "
                         "no checkpoints yet (M-x engram-checkpoint)")
         current-prefix-arg))
  (let ((plan (engram-execute "engram.checkpoint.rollback" (list :id id :preview t))))
    (if (and (= 0 (length (engram--field plan :restore)))
             (= 0 (length (engram--field plan :remove))))
        (engram--message "nothing to roll back: the files already match %s"
                         (or (engram--field plan :label) id))
      (if (and engram-confirm (not no-confirm)
               (not (y-or-n-p (concat (or (engram--field plan :message)
                                          (format "Roll back to checkpoint %s?" id))
                                      " "))))
          (progn (engram--message "rollback cancelled") nil)
        (let* ((result (engram-execute "engram.checkpoint.rollback" (list :id id :confirm t)))
               (kept (engram--revert-rolled-back (engram--field result :reload)))
               (undo (engram--field result :undo_checkpoint)))
          (if (eq (plist-get result :done) :json-false)
              (engram--message "rollback not done (%s)" (engram--field result :reason))
            (engram--message "rolled back to %s: %s restored, %s removed%s%s"
                             (or (engram--field result :label) id)
                             (engram--plural (length (engram--field result :restored)) "file")
                             (engram--plural (length (engram--field result :removed)) "file")
                             (if undo (format "; undo: M-x engram-rollback RET %s" undo) "")
                             (if kept (format "; unsaved, not reverted: %s"
                                              (string-join kept ", "))
                               "")))
          result)))))

;;; Commands: sessions

;;;###autoload
(defun engram-save-session (&optional name)
  "Save the agent session, as NAME when given."
  (interactive (list (let ((typed (read-string "Session name (optional): ")))
                       (unless (string-empty-p typed) typed))))
  (let* ((result (engram-execute "engram.session.save" (and name (list :name name))))
         (session (or (engram--field result :session) result)))
    (engram--message "session saved as %s"
                     (or (engram--field session :name) (engram--field session :id)))
    session))

;;;###autoload
(defun engram-restore-session (id)
  "Restore the saved session ID: what it was doing, its open items, its files."
  (interactive (list (engram--choose "engram.session.list" :sessions "Restore session: "
                                     "no saved sessions (M-x engram-save-session)")))
  (engram-show (format "Session %s" id) (engram-execute "engram.session.restore" (list :id id))))

;;;###autoload
(defun engram-sessions ()
  "List the recorded sessions."
  (interactive)
  (engram-show "Sessions" (engram-execute "engram.session.list") #'engram-sessions))

;;;###autoload
(defun engram-delete-session (id &optional no-confirm)
  "Delete session ID (it can be undeleted for 30 days); asks unless NO-CONFIRM."
  (interactive (list (engram--choose "engram.session.list" :sessions "Delete session: "
                                     "no sessions")
                     current-prefix-arg))
  (when (or no-confirm (not engram-confirm) (y-or-n-p (format "Delete session %s? " id)))
    (engram-execute "engram.session.delete" (list :id id :confirm t))
    (engram--message "session %s deleted" id)))

;;;###autoload
(defun engram-summary (&optional id)
  "Show the summary of session ID, else of the latest session."
  (interactive)
  (engram-show "Session summary"
               (engram-execute "engram.session.summary"
                               (append (list :show :json-false) (and id (list :id id))))
               (lambda () (engram-summary id))))

;;;###autoload
(defun engram-history (&optional last)
  "Show the session's last LAST turns, all of them without LAST.
A prefix argument sets LAST."
  (interactive (list (and current-prefix-arg (prefix-numeric-value current-prefix-arg))))
  (engram-show "Session history"
               (engram-execute "engram.session.history" (and last (list :last last)))
               (lambda () (engram-history last))))

;;;###autoload
(defun engram-metrics (&optional id)
  "Show the metrics of session ID, else of the latest session."
  (interactive)
  (engram-show "Session metrics"
               (engram-execute "engram.session.metrics" (and id (list :id id)))))

;;; Commands: snapshots, gotchas, memory

;;;###autoload
(defun engram-snapshot (&optional note)
  "Capture a context snapshot (open files, where you are), with NOTE when given."
  (interactive (list (let ((typed (read-string "Note (optional): ")))
                       (unless (string-empty-p typed) typed))))
  (let* ((result (engram-execute "engram.snapshot.capture" (and note (list :note note))))
         (snapshot (or (engram--field result :snapshot) result)))
    (engram--message "context snapshot %s captured" (engram--field snapshot :id))
    snapshot))

;;;###autoload
(defun engram-restore-snapshot (id)
  "Reopen the documents of context snapshot ID."
  (interactive (list (engram--choose "engram.snapshot.list" :snapshots "Restore snapshot: "
                                     "no snapshots yet (M-x engram-snapshot)")))
  (let* ((result (engram-execute "engram.snapshot.restore" (list :id id)))
         (warnings (append (engram--field result :warnings) nil)))
    (if warnings
        (engram--message "snapshot restored; %s" (mapconcat (lambda (w) (format "%s" w)) warnings "; "))
      (engram--message "snapshot %s restored" id))
    result))

;;;###autoload
(defun engram-add-gotcha (title &optional workaround pattern)
  "Add a gotcha TITLE with WORKAROUND.
Interactively, an active one-line region becomes its code PATTERN."
  (interactive
   (list (read-string "Gotcha title: ")
         (let ((typed (read-string "Workaround (optional): ")))
           (unless (string-empty-p typed) typed))
         (when (use-region-p)
           (let ((text (string-trim (buffer-substring-no-properties (region-beginning)
                                                                    (region-end)))))
             (unless (or (string-empty-p text) (string-match-p "\n" text))
               (regexp-quote text))))))
  (when (string-empty-p (string-trim title))
    (user-error "engram: a gotcha needs a title"))
  (let* ((result (engram-execute "engram.gotcha.add"
                                 (append (list :title (string-trim title))
                                         (and workaround (list :workaround workaround))
                                         (and pattern (list :pattern pattern)))))
         (gotcha (or (engram--field result :gotcha) result)))
    (engram--message "gotcha %s added" (engram--field gotcha :id))
    gotcha))

;;;###autoload
(defun engram-gotchas ()
  "List the project's gotchas."
  (interactive)
  (engram-show "Gotchas" (engram-execute "engram.gotcha.list") #'engram-gotchas))

;;;###autoload
(defun engram-resolve-gotcha (id)
  "Mark gotcha ID resolved."
  (interactive (list (engram--choose "engram.gotcha.list" :gotchas "Resolve gotcha: "
                                     "no open gotchas"
                                     (lambda (item)
                                       (not (equal (engram--field item :status) "resolved"))))))
  (engram-execute "engram.gotcha.resolve" (list :id id))
  (engram--message "gotcha %s resolved" id))

;;;###autoload
(defun engram-track-error (message)
  "Record one occurrence of the error MESSAGE at point.
Three in a day make a candidate gotcha."
  (interactive (list (read-string "Error message: ")))
  (let* ((file (engram--relative-file))
         (result (engram-execute "engram.error.track"
                                 (append (list :message message)
                                         (and file (list :file file
                                                         :line (line-number-at-pos))))))
         (count (or (engram--field result :occurrences) 1))
         (gotcha (engram--field result :gotcha_id)))
    (if gotcha
        (engram--message "error tracked: gotcha %s (%s)" gotcha (engram--plural count "occurrence"))
      (engram--message "error tracked (%s)" (engram--plural count "occurrence")))
    result))

;;;###autoload
(defun engram-remember (text)
  "Add TEXT to the project's long-term memory."
  (interactive (list (read-string "Remember: ")))
  (let* ((result (engram-execute "engram.memory.add" (list :content text)))
         (memory (or (engram--field result :memory) result)))
    (engram--message "remembered (%s)" (engram--field memory :id))
    memory))

;;;###autoload
(defun engram-search (query)
  "Search memories, gotchas, session summaries and digests for QUERY."
  (interactive (list (read-string "Search memory: ")))
  (engram-show (format "Memory: %s" query)
               (engram-execute "engram.memory.search" (list :query query))
               (lambda () (engram-search query))))

;;; Commands: timeline, drift, status, restart

;;;###autoload
(defun engram-timeline ()
  "What happened in the workspace, who did it, how long ago."
  (interactive)
  (engram-show "Timeline" (engram-execute "engram.timeline" (list :limit 200)) #'engram-timeline))

;;;###autoload
(defun engram-drift ()
  "Conflict risks and stale notes, by file and line."
  (interactive)
  (engram-show "Drift" (engram-execute "engram.drift") #'engram-drift))

;;;###autoload
(defun engram-status ()
  "Where the store is and what it holds."
  (interactive)
  (engram-show "engram status" (engram-execute "engram.status") #'engram-status))

;;;###autoload
(defun engram-restart ()
  "Restart engram's language server."
  (interactive)
  (eglot-reconnect (engram--server))
  (engram--message "server restarted"))

(provide 'engram)
;;; engram.el ends here
