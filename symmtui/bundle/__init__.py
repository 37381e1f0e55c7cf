"""Bug-report bundles: record a bring-up (log, events, snapshots, GPU samples, topology, verdicts, environment)
into one compressed file next to its log, report it as Markdown, replay it in the dashboard.

``format.py`` (names, limits, read), ``codec.py`` (the records' JSON form), ``recorder.py`` (the Session
observer that writes it), ``wire.py`` (what the verbs call), ``report.py`` (Markdown), ``replay.py``
(the timeline that posts the Session's messages again). See docs/bundle.md.
"""

from __future__ import annotations

NO_RECORD_HELP = ("do not record a bug-report bundle (by default one is written next to the log: "
                  "LOG.symmtui-bundle.json.gz; see symmtui report / replay)")
"""The --no-record option's help (here: the verbs' parsers import nothing heavy)."""
