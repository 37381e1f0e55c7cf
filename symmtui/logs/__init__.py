"""Reading a log: bytes to lines (decode), a file followed (follow, inotify) or a command's output (logcmd), records."""
