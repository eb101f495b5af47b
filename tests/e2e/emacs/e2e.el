;;; e2e.el --- what every Emacs scenario of tests/e2e shares  -*- lexical-binding: t -*-
;; Debian's eglot, the step recorder and the waits. Each step's outcome goes to E2E_RESULT as
;; JSON; a scenario exits 0 when every step passed, 1 at the first failure.

(require 'package)
;; Debian's elpa-* packages (elpa-eglot), which -Q does not load by itself.
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'json)
(require 'eglot)
(require 'flymake)
(require 'python)
(require 'autorevert)

(defvar e2e-steps nil)
(defvar e2e-result nil)
(defvar e2e-timeout (/ (string-to-number (or (getenv "E2E_TIMEOUT_MS") "20000")) 1000.0))

(defun e2e-finish (ok)
  (with-temp-file (getenv "E2E_RESULT")
    (insert (json-encode (append `((ok . ,ok) (steps . ,(vconcat (reverse e2e-steps)))) e2e-result))))
  (kill-emacs (if ok 0 1)))

(defmacro e2e-step (name &rest body)
  `(let ((outcome (condition-case err (list t (progn ,@body)) (error (list nil (error-message-string err))))))
     (push `((name . ,,name) (ok . ,(if (car outcome) t :json-false))
             (detail . ,(format "%s" (cadr outcome))))
           e2e-steps)
     (unless (car outcome)
       (push (cons 'failed ,name) e2e-result)
       (e2e-finish nil))))

(defun e2e-wait (what predicate &optional seconds)
  (let ((deadline (+ (float-time) (or seconds e2e-timeout))))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall predicate) (error "timed out waiting for %s" what))))

(defun e2e-text () (buffer-substring-no-properties (point-min) (point-max)))
(defun e2e-disk () (with-temp-buffer (insert-file-contents (getenv "E2E_FILE")) (e2e-text)))

(provide 'e2e)
;;; e2e.el ends here
