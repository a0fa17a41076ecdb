"""A handoff archive as human-readable markdown (``ctxd handoff --format markdown``)."""

MASTERY_MARK = {"low": "○○", "medium": "●○", "high": "●●"}


def _line(text):
    return " ".join(str(text).split())


def _end_state(end):
    """A coding session's end state (ctxd.handoff.endstate) as a markdown section."""
    out = ["## Where the session ended", ""]
    if end.get("last_request"):
        out.append(f"- Last request: {_line(end['last_request'])}")
    for t in end.get("in_progress") or []:
        out.append(f"- In progress: {_line(t)}")
    for t in end.get("open_todos") or []:
        out.append(f"- Open todo: {_line(t)}")
    if end.get("last_report"):
        out.append(f"- Last report: {_line(end['last_report'])}")
    for c in end.get("commits") or []:
        out.append(f"- Committed: {_line(c)}")
    for c in end.get("open_errors") or []:
        out.append(f"- Still failing: {_line(c)}")
    if end.get("files"):
        out.append(f"- Files edited: {', '.join(end['files'])}")
    return out + [""] if len(out) > 2 else []


def to_markdown(a):
    t, p, s, e, fp = a["topic"], a["progress"], a["learning_style"], a["environment"], a["context_footprint"]
    title = t["title"] or a["session_id"] or "Handoff"
    out = [f"# Handoff: {_line(title)}", ""]
    meta = [f"session `{a['session_id']}`", f"created {a['created_at']}", f"schema {a['schema_version']}",
            f"language {a['language']}"]
    if a.get("id"):
        meta.insert(0, f"`{a['id']}`")
    out += [" · ".join(meta), ""]
    stage = f" (stage: {t['stage']})" if t["stage"] != "unknown" else ""
    if t["current_subtopic"] or stage:
        out += [f"**Now**: {_line(t['current_subtopic']) or '—'}{stage}", ""]
    end = a.get("end_state") if isinstance(a.get("end_state"), dict) else None
    if end:
        out += _end_state(end)

    out += ["## Progress", ""]
    if p["completed"]:
        out += ["Completed:"] + [f"- [x] {_line(x)}" for x in p["completed"]] + [""]
    out += [f"In progress: {_line(p['in_progress']) if p['in_progress'] else '—'}", ""]
    if p["next_up"]:
        out += ["Next up:"] + [f"- [ ] {_line(x)}" for x in p["next_up"]] + [""]

    if a["key_points"]:
        out += ["## Key points", "", "| concept | mastery | understanding | summary |", "|---|---|---|---|"]
        for k in a["key_points"]:
            cells = [_line(k["concept"]), f"{MASTERY_MARK.get(k['mastery_level'], '')} {k['mastery_level']}",
                     k["understanding_level"], _line(k["summary"])]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out.append("")

    if a["questions"]:
        out += ["## Questions", ""]
        for q in a["questions"]:
            box = "x" if q["status"] == "resolved" else " "
            when = f" (resolved {q['resolved_at']})" if q.get("resolved_at") else ""
            out.append(f"- [{box}] {_line(q['question'])}{when}")
        out.append("")

    out += ["## Learning style", ""]
    if s["preference"]:
        out.append(f"- preference: {_line(s['preference'])}")
    out += [f"- code examples: {'yes' if s['wants_code_examples'] else 'no'}",
            f"- visual descriptions: {'yes' if s['wants_visual_descriptions'] else 'no'}",
            f"- depth: {s['depth']}, pace: {s['pace']}", ""]

    if a.get("facts"):
        out += ["## Facts to keep", ""]
        for f in a["facts"]:
            mark = " (superseded, no longer current)" if f.get("superseded") else ""
            out.append(f"- [{f['tag']}] {_line(f['text'])}{mark}")
        out.append("")

    if a.get("summary"):
        out += ["## Summary", "", a["summary"].strip(), ""]

    env = []
    if end and end.get("cwd"):
        env.append(f"- working directory (recorded): {end['cwd']}")
    if e["project_types"]:
        env.append(f"- project types: {', '.join(e['project_types'])}")
    for pin in e["version_pins"]:
        env.append(f"- pin: {pin['tool']} {pin['version']} ({pin['file']})")
    if e["git_branch"]:
        env.append(f"- git branch: {e['git_branch']}")
    if e["versions_mentioned"]:
        env.append(f"- versions mentioned: {', '.join(e['versions_mentioned'])}")
    for proc in e["processes"]:
        ports = f" listening on {', '.join(str(x) for x in proc['ports'])}" if proc["ports"] else ""
        env.append(f"- process {proc['pid']} {proc['name']}{ports} (in {proc['cwd']})")
    if env:
        out += ["## Environment", ""] + env + [""]

    if fp["tokens_compressed_from"]:
        ratio = f"{fp['compression_ratio']}:1" if fp["compression_ratio"] else "n/a"
        out += [f"_Context footprint: {fp['tokens_compressed_from']:,} tokens of conversation → "
                f"{fp['tokens_compressed_to']:,} tokens of archive ({ratio})._", ""]
    return "\n".join(out).rstrip() + "\n"
