"""What ctxd tells a user about Codex running its hooks (Codex 0.171: feature `hooks`, folder and hook trust)."""

from ctxd.agents import ai_cli

codex_hook_notes = ai_cli("codex").install_notes


def notes(tmp_path, config, scope="project"):
    home = tmp_path / "codex"
    home.mkdir(exist_ok=True)
    if config is not None:
        (home / "config.toml").write_text(config)
    root = tmp_path / "work" / "proj"
    root.mkdir(parents=True, exist_ok=True)
    return "\n".join(codex_hook_notes(scope, str(root), {"CODEX_HOME": str(home)})), root


def test_no_config_says_trust_folder_and_hooks(tmp_path):
    text, root = notes(tmp_path, None)
    assert "trust the folder" in text and str(root) in text and "/hooks" in text
    assert "codex_hooks" not in text and "turned off" not in text


def test_a_trusted_ancestor_folder_is_enough(tmp_path):
    work = tmp_path / "work"
    text, _ = notes(tmp_path, f'[projects."{work}"]\ntrust_level = "trusted"\n')
    assert "trust the folder" not in text and "/hooks" in text
    text, _ = notes(tmp_path, f'[projects."{work}"]\ntrust_level = "untrusted"\n')
    assert "trust the folder" in text


def test_user_scope_needs_no_folder_trust(tmp_path):
    text, _ = notes(tmp_path, "", scope="user")
    assert "trust the folder" not in text and "/hooks" in text


def test_old_flag_name_and_hooks_off(tmp_path):
    text, _ = notes(tmp_path, "[features]\ncodex_hooks = true\n")
    assert "deprecated" in text and "turned off" not in text
    text, _ = notes(tmp_path, "[features]\nhooks = false\n")
    assert "turned off" in text and "deprecated" not in text
    text, _ = notes(tmp_path, "[features]\ncodex_hooks = false\n")
    assert "turned off" in text and "deprecated" in text


def test_an_unreadable_config_is_no_error(tmp_path):
    text, _ = notes(tmp_path, "this is = = not toml")
    assert "/hooks" in text
