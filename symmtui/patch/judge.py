"""Judging a scanned install: state, predicted launch outcome, summary, caveats and hand-edit detail."""

from __future__ import annotations

from symmtui.patch.capability import Capability, TableKey, key_text
from symmtui.patch.layouts import Layout
from symmtui.patch.parser import LookupStyle
from symmtui.patch.report import MIN_MAJOR, CheckReport, Outcome, State, TableStatus
from symmtui.patch.scan import Scan, write_problem
from symmtui.patch.state import PatchRecord, load_record


def _outcome_for_missing(style: LookupStyle) -> Outcome:
    if style == "subscript":
        return "crash"
    if style in ("get", "guarded"):
        return "off"
    return "unknown"


def _summary(outcome: Outcome, state: State, pkg: str, key: TableKey, where: str) -> str:
    k = key_text(key)
    if state == "applied":
        return f"patched by symmtui: capability {k} is in both tables; nothing to do"
    if state == "present":
        return f"this {pkg} release already has capability {k} in both tables; nothing to do"
    if state == "not-applicable":
        return (
            f"torch symmetric memory needs compute capability {MIN_MAJOR} or newer: {pkg} turns it off on "
            f"this GPU whatever the tables say; nothing to patch"
        )
    if outcome == "crash":
        return (
            f"with --enable-torch-symm-mem this release will crash with KeyError: {k} {where}, "
            f"seconds after launch"
        )
    if outcome == "off":
        return (
            f"with --enable-torch-symm-mem this release logs 'Device capability {key} not supported' and "
            f"silently turns torch symmetric memory off"
        )
    if outcome == "fine":
        return f"capability {k} is looked up safely; a launch will not crash on these tables"
    return f"cannot tell how this release reads the tables; a launch may fail with KeyError: {k}"


def _caveats(
    state: State, outcome: Outcome, layout: Layout, cap: Capability, nvlink: bool | None
) -> tuple[str, ...]:
    out: list[str] = []
    if state in ("needed", "applied"):
        gain = "removes the crash" if outcome == "crash" or state == "applied" else "adds the capability"
        if nvlink is False:
            out.append(
                f"Not every pair of this host's GPUs is joined by NVLink (PCIe only between some or all): "
                f"multimem/multicast needs NVLink between every pair, so the patch {gain} but the torch symmetric-memory fast path will stay off ('multicast operations are "
                "not supported'); launching without --enable-torch-symm-mem is equivalent."
            )
        elif nvlink is None:
            out.append(
                f"Multimem/multicast needs NVLink: on a PCIe-only host the patch {gain} but the fast path "
                "may stay off."
            )
        out.append(
            f"The new entry copies key {key_text(layout.donor)} (sizes tuned for Blackwell datacenter parts); "
            f"it is not a measured tuning for capability {cap}."
        )
    if layout.key_kind == "str" and cap.minor is None:
        out.append(f"vLLM keys its tables by major.minor: assumed {key_text(cap.key('str'))} (pass 12.1 for GB10).")
    return tuple(out)


def _hand_edit(scan: Scan, key: TableKey) -> str:
    lines: list[str] = []
    donor = scan.layout.donor
    for spec in scan.layout.tables:
        table = scan.tables[spec.role]
        src = scan.data[scan.path(spec)]
        has = table.get(key) is not None
        lines.append(f"{scan.path(spec)}:{table.line}: {spec.name} {'has' if has else 'lacks'} key {key_text(key)}")
        entry = table.get(key) or table.get(donor)
        if entry is not None:
            text = src[entry.start : entry.end].decode("utf-8", "replace")
            label = "its entry" if has else f"its key {key_text(donor)} entry"
            lines.append(f"    {label} (line {entry.line}): " + text.replace("\n", "\n    "))
    lines.append(
        "Both tables must agree: remove the hand-added entry (then run symmtui patch apply), "
        "or add the same key to the other table by hand."
    )
    return "\n".join(lines)


def report(scan: Scan, cap: Capability, nvlink: bool | None) -> CheckReport:
    """The check report for a scanned install: state, outcome, summary, caveats, per-table status."""
    layout = scan.layout
    key = cap.key(layout.key_kind)
    sizes, multimem = scan.tables["sizes"], scan.tables["multimem"]
    has_sizes, has_multi = sizes.get(key) is not None, multimem.get(key) is not None
    record: PatchRecord | None = load_record(scan.inst.package, scan.inst.root)
    hashes = scan.hashes
    state: State
    detail = ""
    applied_at: str | None = None
    outcome: Outcome
    when = "during distributed init (before weights load)"
    ours = (
        record is not None
        and record.status == "applied"
        and all(hashes.get(f.path) == f.patched_sha256 for f in record.files)
    )
    if cap.major < MIN_MAJOR:
        state, outcome = "not-applicable", "off"
    elif has_sizes and has_multi:
        state = "applied" if ours else "present"
        applied_at = record.time if ours and record is not None else None
        outcome = "fine"
    elif not has_sizes and not has_multi:
        missing = [s.name for s in layout.tables if scan.tables[s.role].get(layout.donor) is None]
        state = "donor-missing" if missing else "needed"
        if missing:
            detail = f"{' and '.join(missing)} lack key {key_text(layout.donor)} to copy from"
        outcome = _outcome_for_missing(scan.lookups["sizes"])
    else:
        state = "mismatch"
        detail = _hand_edit(scan, key)
        if not has_sizes:
            outcome = _outcome_for_missing(scan.lookups["sizes"])
        else:
            outcome = "crash" if scan.lookups["multimem"] == "subscript" else "fine"
            when = "at the first symmetric-memory all-reduce (CUDA graph capture or the first request)"
    if record is not None and record.status == "applied" and not ours:
        stale = (
            f"symmtui patched this install on {record.time}, but the files changed since (package upgraded "
            "or edited?): revert will refuse; apply again to patch the files as they are now"
        )
        detail = f"{detail}\n{stale}".strip()
    statuses: list[TableStatus] = []
    for spec in layout.tables:
        table = scan.tables[spec.role]
        src = scan.data[scan.path(spec)]
        d, e = table.get(layout.donor), table.get(key)
        statuses.append(
            TableStatus(
                role=spec.role,
                name=spec.name,
                file=scan.path(spec),
                relpath=spec.relpath,
                line=table.line,
                keys=tuple(key_text(k) for k in table.keys),
                has_key=e is not None,
                has_donor=d is not None,
                donor_source=src[d.value_start : d.value_end].decode("utf-8", "replace") if d else None,
                entry_source=src[e.value_start : e.value_end].decode("utf-8", "replace") if e else None,
                lookup=scan.lookups[spec.role],
                real_file=real if (real := scan.real[scan.path(spec)]) != scan.path(spec) else None,
            )
        )
    return CheckReport(
        package=scan.inst.package,
        version=scan.inst.version,
        root=scan.inst.root,
        found_by=scan.inst.found_by,
        layout=layout.id,
        releases=layout.releases,
        capability=cap,
        key=key,
        donor=layout.donor,
        tables=tuple(statuses),
        state=state,
        outcome=outcome,
        summary=_summary(outcome, state, scan.inst.package, key, when),
        caveats=_caveats(state, outcome, layout, cap, nvlink),
        hashes=hashes,
        applied_at=applied_at,
        write_problem=write_problem(list(scan.data)) if state == "needed" else None,
        detail=detail,
        symlinks=scan.symlinks,
        package_link=scan.inst.link,
    )
