"""The environment a handoff records: the project's detected types, version pins and git branch,
the versions the conversation mentions, and the processes working inside the project.
"""

import os
import re

_SHELLS = {"bash", "zsh", "fish", "sh", "dash", "ksh", "tcsh", "csh", "tmux", "tmux: server", "screen", "login", "sudo"}
_VERSION_WORDS = {"python", "node", "nodejs", "go", "golang", "rust", "ruby", "java", "jdk", "openjdk", "php", "perl",
                  "postgres", "postgresql", "mysql", "redis", "nginx", "gunicorn", "django", "flask", "react", "vue",
                  "ubuntu", "debian", "centos", "alpine", "gcc", "clang", "cmake", "kernel", "linux", "kafka",
                  "airflow", "dbt", "spark", "docker", "kubernetes", "k8s", "helm", "terraform", "npm", "pip",
                  "numpy", "pandas", "wireshark", "openssl", "glibc", "llvm", "cuda", "tensorflow", "pytorch", "torch"}


def versions_mentioned(texts, limit=25):
    """Version strings in *texts* (v1.2.3, jdk-17, Django 4.2.11), first seen first."""
    from ctxd.memory.context.facts import RX

    out = []
    for t in texts:
        for m in RX["version"].finditer(t):
            v = m.group(0).strip()
            inner = re.search(r"\bv\d+(?:\.\d+)+\b|\b[a-z]+-\d+(?:\.\d+)*\b", v)
            if inner and inner.start() > 0:  # "tag v1.2.3" -> "v1.2.3"
                v = inner.group(0)
            word = re.split(r"[ -]v?\d", v, maxsplit=1)[0]
            nums = re.findall(r"\d+", v[len(word):])
            if len(nums) >= 4:  # 127.0.0.1.8888: an address, not a version
                continue
            ok = (v[0] in "vV" and v[1:2].isdigit()) or word.lower() in _VERSION_WORDS \
                or (word[:1].isupper() and not word.isupper() and len(word) > 2) \
                or (any(c.isdigit() for c in word) and not word.isdigit())
            if ok and v not in out:
                out.append(v)
                if len(out) >= limit:
                    return out
    return out


def is_inside(path, root):
    try:
        path, root = os.path.realpath(path), os.path.realpath(root)
    except OSError:
        return False
    return path == root or path.startswith(root.rstrip("/") + "/")


def processes(root, limit=20):
    """[{pid, name, cwd, ports}] of processes working inside *root* (not ctxd itself,
    its parents, or bare shells), with their listening TCP/UDP ports. Processes
    the user may not inspect are skipped."""
    try:
        import psutil
    except ImportError:
        return []
    skip = {os.getpid()}
    try:
        for p in psutil.Process().parents():
            skip.add(p.pid)
    except (psutil.Error, OSError):
        pass
    out = []
    for proc in psutil.process_iter(["pid", "name", "cwd"]):
        try:
            info = proc.info
            cwd = info.get("cwd")
            if not cwd or info["pid"] in skip or not is_inside(cwd, root):
                continue
            name = info.get("name") or ""
            conns = getattr(proc, "net_connections", None) or proc.connections
            ports = sorted({c.laddr.port for c in conns(kind="inet")
                            if c.status == psutil.CONN_LISTEN and c.laddr})
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
        if name in _SHELLS and not ports:
            continue
        out.append({"pid": int(info["pid"]), "name": name, "cwd": cwd, "ports": [int(p) for p in ports]})
        if len(out) >= limit:
            break
    return sorted(out, key=lambda p: (not p["ports"], p["pid"]))


def environment(root, fact_texts=()):
    from ctxd.activation import detectors
    from ctxd.activation.contextrc import git_branch

    env = {"project_types": [], "version_pins": [], "git_branch": None, "versions_mentioned": [], "processes": []}
    if root and os.path.isdir(root):
        env["project_types"] = [name for name, _ in detectors.detect(root, {}, apply=False).types]
        env["version_pins"] = [{"tool": t, "version": v, "file": f} for t, v, f in detectors.read_pins(root)]
        env["git_branch"] = git_branch(root)[0]
        env["processes"] = processes(root)
    env["versions_mentioned"] = versions_mentioned(fact_texts)
    return env
