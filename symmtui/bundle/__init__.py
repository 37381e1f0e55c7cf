"""Bug-report bundles: record a bring-up (log, events, snapshots, GPU samples, topology, verdicts, environment)
into one compressed file in the state dir, report it as Markdown, replay it in the dashboard.

``format.py`` (suffix, limits, read), ``store.py`` (names, exclusive creation, retention), ``codec.py`` (the records' JSON form), ``recorder.py`` (the Session
observer that writes it), ``wire.py`` (what the verbs call), ``report.py`` (Markdown), ``replay.py``
(the timeline that posts the Session's messages again). See docs/bundle.md.
"""

from __future__ import annotations

NO_RECORD_HELP = ("do not record a bug-report bundle (by default one is written to $XDG_STATE_HOME/symmtui/bundles/, "
                  "its path printed at the end; see symmtui report / replay)")
"""The --no-record option's help (here: the verbs' parsers import nothing heavy)."""
BUNDLE_HELP = ("write the bundle to PATH (replaced if it is there), e.g. beside the log, instead of "
               "$XDG_STATE_HOME/symmtui/bundles/")
"""The --bundle option's help."""
