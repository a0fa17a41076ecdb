"""The optional LLM summariser, with a fake command standing in for the model."""

import json
import os
import time

from ctxd.memory.context import summarizer
from ctxd.memory.store.db import Store
from ctxdtest import ctxd


class M:
    def __init__(self, i, text):
        self.id, self.role, self.content = i, "user", text


def test_chunks_overlap_and_cover_everything():
    msgs = [M(i, "x" * 1000) for i in range(1, 41)]
    cs = summarizer.chunks(msgs)
    assert cs[0][0] == 1 and cs[-1][1] == 40
    for (_a0, a1, _), (b0, _b1, _) in zip(cs, cs[1:]):
        assert b0 <= a1  # the next chunk starts inside the previous one: overlap
        assert a1 - b0 + 1 <= 3  # ~10 %, not more


def write_config(home, command, timeout=10):
    d = home / ".config" / "ctxd"
    d.mkdir(parents=True, exist_ok=True)
    trust = (d / "config.toml").read_text() if (d / "config.toml").exists() else ""
    (d / "config.toml").write_text(trust + f'\n[summarizer]\ncommand = {json.dumps(command)}\ntimeout = {timeout}\n')


def script(tmp_path, body):
    p = tmp_path / "fake-llm"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return str(p)


def fill(cwd, n=30):
    for i in range(n):
        assert ctxd("chat", "add", f"message {i}: budget at most {i}00 USD", cwd=cwd).returncode == 0


def test_refresh_writes_summary_used_by_context(tmp_path, isolated_paths):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "Makefile").touch()
    fill(proj, 25)
    # the fake model sees the prompt on stdin: prove it by echoing a part of it back
    write_config(isolated_paths, script(tmp_path, 'grep -c "message" | sed "s/^/LLM SUMMARY lines=/"'))
    out = ctxd("chat", "refresh", cwd=proj)
    assert "summarizer: ok" in out.stdout, out.stdout + out.stderr
    ctx = ctxd("context", "--budget", "600", "--mode", "hybrid", "--format", "text", "--explain", cwd=proj)
    assert "LLM SUMMARY lines=" in ctx.stdout
    assert "summarizer: ok" in ctx.stderr
    assert "at most 2400 USD" in ctx.stdout or "2400 USD" in ctx.stdout  # facts stay whatever the summary says
    # a second refresh with nothing new keeps the result
    assert "summary is current" in ctxd("chat", "refresh", cwd=proj).stdout


def test_failure_and_timeout_fall_back_to_extractive(tmp_path, isolated_paths):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "Makefile").touch()
    fill(proj, 25)
    write_config(isolated_paths, script(tmp_path, "echo boom >&2; exit 3"))
    assert "failed: exit 3: boom" in ctxd("chat", "refresh", cwd=proj).stdout
    ctx = ctxd("context", "--budget", "600", "--mode", "hybrid", "--format", "text", "--explain", cwd=proj)
    assert ctx.returncode == 0 and "Earlier conversation:" in ctx.stdout
    assert "summarizer failed (exit 3: boom); the extractive summary is used" in ctx.stderr
    (isolated_paths / ".config/ctxd/config.toml").write_text("")
    write_config(isolated_paths, script(tmp_path, "sleep 30"), timeout=1)
    assert "failed: timed out" in ctxd("chat", "refresh", cwd=proj).stdout


def test_older_job_never_overwrites_newer(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    for i in range(40):
        s.add("user", f"m{i}")
    os.makedirs(tmp_path / "ctx" / "cache")
    newer = {"upto": 10**6, "time": time.time(), "text": "NEWER"}
    (tmp_path / "ctx" / "cache" / "llm-summary.json").write_text(json.dumps(newer))
    cfg = {"raw": {"summarizer": {"command": "echo OLDER"}}}
    assert summarizer.refresh(s, cfg) == "summary is current"
    assert summarizer.load(str(tmp_path / "ctx"))["text"] == "NEWER"


def test_chat_add_spawns_a_detached_refresh(tmp_path, isolated_paths):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "Makefile").touch()
    fill(proj, 21)
    write_config(isolated_paths, script(tmp_path, "echo BACKGROUND SUMMARY"))
    assert ctxd("chat", "add", "one more", cwd=proj).returncode == 0  # returns without waiting
    info = json.loads(ctxd("show", "--json", cwd=proj).stdout)
    path = os.path.join(info["context_dir"], "cache", "llm-summary.json")
    for _ in range(300):  # poll for the detached job's result (not a timing assertion)
        if os.path.exists(path):
            break
        time.sleep(0.1)
    assert json.load(open(path))["text"] == "BACKGROUND SUMMARY"
