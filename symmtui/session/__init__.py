"""One bring-up of 1..N nodes, headless, under every front end: ``symmtui.build`` makes a Session from a
frozen spec (``spec``); a front end attaches for its mailbox (``mailbox``) and reads the messages
(``messages``) that carry the verdict view; ``printer`` is the command line's front end."""
