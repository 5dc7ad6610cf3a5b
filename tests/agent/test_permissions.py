"""The permission policy on real config files."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.agent.permissions import (
    Evaluation,
    PermissionConfigError,
    PermissionPolicy,
    PermissionRule,
    load_permission_rules,
    remember_command,
    split_shell_segments,
)
from jupyter_codelia.notebook.frontend import FrontendClient
from jupyter_codelia.notebook.kernel_tools import kernel_tools
from jupyter_codelia.notebook.notebook_tools.cell_tools import NotebookContext, notebook_tools
from jupyter_codelia.standard_tools import standard_tools
from jupyter_codelia.standard_tools.jobs import JobRegistry
from jupyter_codelia.tools import UNDECLARED, ToolRisk, risk_of

ALLOW = Evaluation("allow")


def _declared() -> dict[str, ToolRisk]:
    """Every built-in tool's declared risk, as the permission hook hands it to the policy."""
    with tempfile.TemporaryDirectory() as home:
        tools = [
            *standard_tools(home, cache_dir=Path(home) / "cache", jobs=JobRegistry()),
            *kernel_tools(namespace={}),
            *notebook_tools(NotebookContext(None, FrontendClient())),
        ]
    return {tool.name: risk_of(tool) for tool in tools}


DECLARED = _declared()


class Policy(PermissionPolicy):
    """The policy asked about a tool by name, with that tool's own declaration (undeclared for
    a name no built-in tool has), as the permission hook asks it."""

    def evaluate(self, tool: str, args: Any, risk: ToolRisk | None = None) -> Evaluation:
        return super().evaluate(tool, args, risk or DECLARED.get(tool, UNDECLARED))

    def confirm_text(self, tool: str, args: Any, risk: ToolRisk | None = None) -> tuple[str, str]:
        return super().confirm_text(tool, args, risk or DECLARED.get(tool, UNDECLARED))

    def remember_rules(
        self, tool: str, args: Any, risk: ToolRisk | None = None
    ) -> list[PermissionRule]:
        return super().remember_rules(tool, args, risk or DECLARED.get(tool, UNDECLARED))


def shell(command: str) -> dict[str, str]:
    return {"command": command}


def rule(tool: str, **constraints: str) -> PermissionRule:
    return PermissionRule(tool=tool, **constraints)


# --- modes and the system allowlist --------------------------------------------------------

MINIMAL_TOOLS = [
    "read", "read_line", "view_image", "grep", "glob", "todo_read", "todo_new", "todo_append",
    "todo_patch", "todo_clear", "tool_output_cache", "tool_output_cache_line",
    "tool_output_cache_grep", "done", "list_variables", "inspect_variable", "notebook_read",
    "kernel_history",
]  # fmt: skip
MINIMAL_COMMANDS = [
    "pwd", "ls -la", "rg foo src", "grep -n x f", "find . -name '*.py'", "sort a", "cat a",
    "head -n 3 a", "tail a", "wc -l a", "stat a", "file a", "uname -a", "whoami", "date",
    "git status", "git diff HEAD", "git show HEAD~1", "git log --oneline", "git rev-parse HEAD",
    "git ls-files", "git grep foo",
]  # fmt: skip


@pytest.mark.parametrize("tool", MINIMAL_TOOLS)
def test_minimal_mode_allows_read_only_tools(tool: str) -> None:
    assert Policy("minimal").evaluate(tool, {}) == ALLOW


@pytest.mark.parametrize("command", MINIMAL_COMMANDS)
def test_minimal_mode_allows_read_only_commands(command: str) -> None:
    assert Policy("minimal").evaluate("shell", shell(command)) == ALLOW


@pytest.mark.parametrize(
    "tool",
    [
        *("write", "edit", "apply_patch", "webfetch", "search", "python", "my_custom_tool"),
        *("notebook_edit", "notebook_run"),
    ],
)
def test_minimal_mode_confirms_everything_else(tool: str) -> None:
    assert Policy("minimal").evaluate(tool, {}) == Evaluation("confirm")


@pytest.mark.parametrize(
    "command", ["sed -n 1p a", "awk '{print $1}' a", "rm -rf build", "git push"]
)
def test_minimal_mode_confirms_other_commands(command: str) -> None:
    result = Policy("minimal").evaluate("shell", shell(command))
    assert result.kind == "confirm"
    assert result.reason == f"segment requires confirmation ({command})"


def test_trusted_mode_adds_file_writes_and_sed_awk() -> None:
    policy = Policy("trusted")
    for tool in ["write", "edit", "apply_patch", "notebook_edit", "read", "done"]:
        assert policy.evaluate(tool, {}) == ALLOW
    assert policy.evaluate("shell", shell("sed -n 1p a | awk '{print $1}'")) == ALLOW
    for tool in ["webfetch", "search", "python", "notebook_run"]:
        assert policy.evaluate(tool, {}).kind == "confirm"
    assert policy.evaluate("shell", shell("rm a")).kind == "confirm"


def test_the_system_allowlist_matches_whole_tool_names_only() -> None:
    policy = Policy("minimal", deny=[rule("grep")])
    for near_miss in ["Read", "read ", "read_lines", "github__read", "read__*", "", "shell_x"]:
        assert policy.evaluate(near_miss, {}).kind == "confirm", near_miss
    assert policy.evaluate("grep", {}) == Evaluation("deny", "blocked by deny rule (grep)")
    assert policy.evaluate("read", None) == ALLOW  # arguments that are no object change nothing


def test_only_shell_decisions_read_the_arguments() -> None:
    policy = Policy(
        "minimal",
        allow=[rule("webfetch"), rule("github__*")],
        deny=[rule("shell", command="rm"), rule("python")],
    )
    # The permission hook skips parsing the arguments of these: the answer must not change.
    for tool in ["read", "webfetch", "python", "write", "github__issue", "my_tool"]:
        assert not policy.reads_args(DECLARED.get(tool, UNDECLARED))
        for args in ({}, {"command": "rm -rf /", "name": "pdf"}, {"name": "other"}):
            assert policy.evaluate(tool, args) == policy.evaluate(tool, None), (tool, args)
    assert policy.reads_args(DECLARED["shell"])
    assert policy.evaluate("shell", shell("rm -rf /")).kind == "deny"


def test_the_policy_follows_each_tools_declaration() -> None:
    """A tool of any name is decided by what it declares: a command argument makes it a shell
    (the system commands apply), and its approval says in which modes it asks."""
    runner = ToolRisk(kind="run_code", command_arg="script")
    reader = ToolRisk(kind="read_only")
    editor = ToolRisk(kind="edit_notebook")
    minimal, trusted = PermissionPolicy("minimal"), PermissionPolicy("trusted")
    assert minimal.evaluate("my_sh", {"script": "git status"}, runner) == ALLOW
    assert minimal.evaluate("my_sh", {"script": "rm x"}, runner).kind == "confirm"
    assert minimal.evaluate("my_sh", {"command": "ls"}, runner).kind == "confirm"
    assert minimal.evaluate("my_reader", {}, reader) == ALLOW
    assert minimal.evaluate("my_editor", {}, editor).kind == "confirm"
    assert trusted.evaluate("my_editor", {}, editor) == ALLOW
    assert trusted.evaluate("my_tool", {}, UNDECLARED).kind == "confirm"
    assert PermissionPolicy("full-access").evaluate("my_tool", {}, UNDECLARED) == ALLOW


def test_full_access_allows_everything_but_deny_rules() -> None:
    policy = Policy(
        "full-access",
        deny=[
            rule("webfetch"),
            rule("shell", command="rm"),
            rule("shell", command_glob="*--force*"),
        ],
    )
    assert policy.evaluate("python", {"code": "1"}) == ALLOW
    assert policy.evaluate("shell", shell("make install")) == ALLOW
    assert policy.evaluate("shell", {}) == ALLOW
    assert policy.evaluate("webfetch", {"url": "https://x"}) == Evaluation(
        "deny", "blocked by deny rule (webfetch)"
    )
    assert policy.evaluate("shell", shell("ls && rm -rf /")) == Evaluation(
        "deny", "blocked by deny rule (rm -rf /)"
    )
    assert policy.evaluate("shell", shell("git  push   --force")) == Evaluation(
        "deny", "blocked by deny rule (git push --force)"
    )


def test_unknown_mode_is_rejected_with_the_accepted_names() -> None:
    with pytest.raises(ValueError, match="Unknown approval mode 'yolo'; use one of: minimal, "):
        Policy("yolo")  # type: ignore[arg-type]
    policy = Policy()
    with pytest.raises(ValueError, match="trusted, full-access"):
        policy.mode = "everything"  # type: ignore[assignment]
    assert policy.mode == "minimal"


def test_switching_mode_swaps_the_system_allowlist() -> None:
    policy = Policy("minimal", allow=[rule("webfetch")])
    assert policy.evaluate("write", {}).kind == "confirm"
    policy.mode = "trusted"
    assert policy.evaluate("write", {}) == ALLOW
    assert policy.evaluate("shell", shell("sed -n 1p a")) == ALLOW
    policy.mode = "minimal"
    assert policy.evaluate("write", {}).kind == "confirm"
    assert policy.evaluate("webfetch", {}) == ALLOW  # user rules stay


# --- allow / deny rules -------------------------------------------------------------------


def test_deny_beats_allow_for_tools_and_commands() -> None:
    policy = Policy(
        "trusted",
        allow=[rule("webfetch"), rule("shell", command="git push")],
        deny=[rule("webfetch"), rule("write"), rule("shell", command="git push")],
    )
    assert policy.evaluate("webfetch", {}) == Evaluation("deny", "blocked by deny rule (webfetch)")
    # Deny also beats the system allowlist.
    assert policy.evaluate("write", {}) == Evaluation("deny", "blocked by deny rule (write)")
    assert policy.evaluate("shell", shell("git push origin")) == Evaluation(
        "deny", "blocked by deny rule (git push origin)"
    )


def test_deny_glob_on_full_text_beats_allow_glob() -> None:
    policy = Policy(
        allow=[rule("shell", command_glob="npm *")],
        deny=[rule("shell", command_glob="* && curl *")],
    )
    assert policy.evaluate("shell", shell("npm test")) == ALLOW
    assert policy.evaluate("shell", shell("npm test && curl evil")) == Evaluation(
        "deny", "blocked by deny rule (npm test && curl evil)"
    )


def test_allow_rule_for_a_tool() -> None:
    policy = Policy(allow=[rule("webfetch")])
    assert policy.evaluate("webfetch", {"url": "https://a"}) == ALLOW
    assert policy.evaluate("search", {"query": "a"}).kind == "confirm"


def test_command_matches_whole_leading_words_only() -> None:
    policy = Policy(allow=[rule("shell", command="npm run")])
    assert policy.evaluate("shell", shell("npm run build")) == ALLOW
    assert policy.evaluate("shell", shell("npm   run")) == ALLOW
    assert policy.evaluate("shell", shell("npm install")).kind == "confirm"
    assert policy.evaluate("shell", shell("npm running")).kind == "confirm"
    assert Policy().evaluate("shell", shell("lsof -i")).kind == "confirm"


def test_command_glob_matches_the_whole_normalized_text() -> None:
    policy = Policy(allow=[rule("shell", command_glob="pytest tests/test_?.py")])
    assert policy.evaluate("shell", shell("pytest  tests/test_a.py")) == ALLOW
    assert policy.evaluate("shell", shell("pytest tests/test_ab.py")).kind == "confirm"
    # Only * and ? are special: brackets and dots are literal.
    dotted = Policy(allow=[rule("shell", command_glob="make [a].x*")])
    assert dotted.evaluate("shell", shell("make [a].x -j4")) == ALLOW
    assert dotted.evaluate("shell", shell("make a.x")).kind == "confirm"
    assert dotted.evaluate("shell", shell("make [a]yx")).kind == "confirm"


def test_a_full_text_allow_glob_is_ignored_when_the_command_changes_directory(
    tmp_path: Path,
) -> None:
    policy = Policy(allow=[rule("shell", command_glob="* && make")], sandbox_root=tmp_path)
    assert policy.evaluate("shell", shell("echo hi && make")) == ALLOW
    assert policy.evaluate("shell", shell("cd / && make")) == Evaluation(
        "confirm", "cd target requires confirmation (cd /)"
    )


def test_missing_or_empty_shell_command_needs_confirmation() -> None:
    policy = Policy()
    assert policy.evaluate("shell", None) == Evaluation("confirm", "missing command")
    assert policy.evaluate("shell", {"command": 5}) == Evaluation("confirm", "missing command")
    assert policy.evaluate("shell", shell("  \n ")) == Evaluation("confirm", "empty command")
    assert policy.evaluate("shell", shell(";;")) == Evaluation("confirm", "empty command")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"tool": "write", "skill_name": "x"}, "Extra inputs are not permitted"),
        ({"tool": " "}, "tool must be a non-empty tool name"),
        ({"tool": "shell", "command": ""}, "command must not be empty"),
    ],
)
def test_malformed_rules_are_rejected(data: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        PermissionRule.model_validate(data)


# --- shell segmentation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "segments"),
    [
        ("ls   -la", ["ls -la"]),
        ("a | b || c && d ; e |& f", ["a", "b", "c", "d", "e", "f"]),
        ("cat in.txt > out.txt", ["cat in.txt"]),
        ("cat a >> log 2> err 2>> err2 < input", ["cat a"]),
        ("make 2>&1 | tee log", ["make", "tee log"]),
        ("echo 'a | b; c' && ls", ["echo 'a | b; c'", "ls"]),
        ('grep "x && y" f', ['grep "x && y" f']),
        ("echo a\\;b \\| c", ["echo a\\;b \\| c"]),
        ('echo "it\'s" ; ls', ['echo "it\'s"', "ls"]),
        ("ls & rm -rf x", ["ls", "rm -rf x"]),
        ("ls\nrm x", ["ls", "rm x"]),
        ("ls $(rm x)/sub", ["ls", "rm x"]),
        ("ls `rm x`", ["ls", "rm x"]),
        ("(cd sub; make)", ["cd sub", "make"]),
        ("line \\\n continued", ["line \\ continued"]),
        ("", []),
    ],
)
def test_split_shell_segments(command: str, segments: list[str]) -> None:
    assert split_shell_segments(command) == segments


def test_redirect_target_is_not_a_command() -> None:
    # "rm" here is an argument file name of the redirect, never run.
    policy = Policy("trusted", sandbox_root=Path("/work/sb"))
    assert policy.evaluate("shell", shell("ls > rm")) == ALLOW
    assert policy.evaluate("shell", shell("cat < rm")) == ALLOW


def test_output_redirect_to_a_file_needs_confirmation_in_minimal_mode(tmp_path: Path) -> None:
    policy = Policy(sandbox_root=tmp_path)
    assert policy.evaluate("shell", shell("ls > out.txt")) == Evaluation(
        "confirm", "output redirect requires confirmation (> out.txt)"
    )
    assert policy.evaluate("shell", shell("ls 2>/dev/null >&2")) == ALLOW


def test_output_redirect_in_trusted_mode_must_stay_in_the_sandbox(tmp_path: Path) -> None:
    policy = Policy("trusted", sandbox_root=tmp_path)
    assert policy.evaluate("shell", shell("ls > out/list.txt")) == ALLOW
    assert policy.evaluate("shell", shell("ls >> ../list.txt")) == Evaluation(
        "confirm", "output redirect requires confirmation (> ../list.txt)"
    )
    assert policy.evaluate("shell", shell("ls > ~/.bashrc")).kind == "confirm"
    assert Policy("trusted").evaluate("shell", shell("ls > a")).kind == "confirm"


def test_substitution_inside_double_quotes_needs_confirmation() -> None:
    policy = Policy()
    expected = Evaluation("confirm", "command substitution inside quotes requires confirmation")
    assert policy.evaluate("shell", shell('cat "$(rm -rf x)"')) == expected
    assert policy.evaluate("shell", shell('cat "`rm x`"')) == expected
    assert policy.evaluate("shell", shell("cat '$(literal)'")) == ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "find . -exec rm {} ;",
        "find . -delete",
        "rg --pre ./evil x",
        "sort -o out a",
        "sort -no out a",
        "sort --output=out a",
        "git diff --output=x",
        "date -s 2020-01-01",
    ],
)
def test_system_allowlisted_commands_lose_it_with_flags_that_run_or_write(command: str) -> None:
    assert Policy().evaluate("shell", shell(command)).kind == "confirm"
    # An explicit user rule is the user's choice and still applies.
    program = command.split(" ", 1)[0]
    assert Policy(allow=[rule("shell", command=program)]).evaluate("shell", shell(command)) == ALLOW


# --- cd inside the sandbox ----------------------------------------------------------------


def test_cd_inside_the_sandbox_is_allowed_and_tracked(tmp_path: Path) -> None:
    policy = Policy(sandbox_root=tmp_path)
    assert policy.evaluate("shell", shell("cd src && ls")) == ALLOW
    assert policy.evaluate("shell", shell(f"cd {tmp_path}/a/b && cd .. && cd .. && ls")) == ALLOW
    # The third "cd .." leaves the sandbox: the cwd is tracked across segments.
    assert policy.evaluate("shell", shell("cd a/b; cd ..; cd ..; cd ..; ls")) == Evaluation(
        "confirm", "cd target requires confirmation (cd ..)"
    )


@pytest.mark.parametrize(
    "command", ["cd /etc", "cd -", "cd ~", "cd $HOME", "cd 'src'", "cd s*", "cd", "cd a b"]
)
def test_cd_to_unsafe_or_outside_targets_needs_confirmation(tmp_path: Path, command: str) -> None:
    result = Policy(sandbox_root=tmp_path).evaluate("shell", shell(f"{command} && ls"))
    assert result == Evaluation("confirm", f"cd target requires confirmation ({command})")


def test_cd_without_a_sandbox_root_needs_confirmation() -> None:
    assert Policy().evaluate("shell", shell("cd src && ls")) == Evaluation(
        "confirm", "cd requires confirmation (cd src)"
    )


def test_a_sibling_directory_with_the_root_as_prefix_is_outside(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    policy = Policy(sandbox_root=root)
    assert policy.evaluate("shell", shell(f"cd {tmp_path}/proj-other")).kind == "confirm"
    assert policy.evaluate("shell", shell(f"cd {root}")) == ALLOW


# --- remember derivation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("segment", "remembered"),
    [
        ("make -j4", "make"),
        ("/usr/bin/python3 x.py", "python3"),
        ("git push origin main", "git push"),
        ("git", "git"),
        ("git --no-pager log", "git"),
        ("cargo build --release", "cargo build"),
        ("docker compose up", "docker compose"),
        ("npx prettier --check .", "npx prettier"),
        ("npx tsc build", "npx tsc build"),
        ("npx eslint", "npx eslint"),
        ("bunx vite build", "bunx vite build"),
        ("bun x tsc", "bun x tsc"),
        ("bun run dev", "bun run"),
        ("npm exec jest -- -u", "npm exec jest"),
        ("npm install left-pad", "npm install"),
        ("pnpm dlx create-vite", "pnpm dlx create-vite"),
        ("yarn dlx tsx", "yarn dlx tsx"),
        ("yarn add react", "yarn add"),
        ("env FOO=1 make", None),
        ("sudo rm x", None),
        ("time make", None),
        ("timeout 5 make", None),
        ("nohup server &", None),
        ("FOO=1 make", None),
        ("'unterminated", None),
        ("./", None),
    ],
)
def test_remember_command(segment: str, remembered: str | None) -> None:
    assert remember_command(segment) == remembered


def test_remember_rules_per_segment_skipping_cd_wrappers_and_duplicates(tmp_path: Path) -> None:
    policy = Policy(sandbox_root=tmp_path)
    rules = policy.remember_rules(
        "shell", shell("cd sub && git push && sudo make && git push -f && ls && npm run x")
    )
    assert rules == [rule("shell", command="git push"), rule("shell", command="npm run")]


def test_remember_rules_for_other_tools() -> None:
    policy = Policy()
    assert policy.remember_rules("webfetch", {"url": "u"}) == [rule("webfetch")]
    assert policy.remember_rules("read", {}) == []  # already allowed


def test_remember_allows_from_now_on() -> None:
    policy = Policy()
    call = shell("make test && git push")
    assert policy.evaluate("shell", call).kind == "confirm"
    policy.remember(policy.remember_rules("shell", call))
    assert policy.evaluate("shell", call) == ALLOW
    assert policy.evaluate("shell", shell("git push --tags")) == ALLOW
    assert policy.remember_rules("shell", call) == []


def test_always_allow_on_a_destructive_command_remembers_that_command_not_the_program() -> None:
    policy = Policy()
    call = shell("rm -rf build && echo removed")
    rules = policy.remember_rules("shell", call)
    assert rules == [rule("shell", command_glob="rm -rf build"), rule("shell", command="echo")]
    policy.remember(rules)
    assert policy.evaluate("shell", call) == ALLOW
    for other in ("rm -rf /", "rm -rf build /home", "rm x", "rm -rf buil?"):
        assert policy.evaluate("shell", shell(other)).kind == "confirm", other
    _, message = Policy().confirm_text("shell", call)
    assert message.endswith(REMEMBER + "- shell: rm -rf build\n- shell: echo")


@pytest.mark.parametrize(
    ("command", "remembered"),
    [
        ("/bin/rm -f a.txt", [rule("shell", command_glob="/bin/rm -f a.txt")]),
        ("mv a b", [rule("shell", command_glob="mv a b")]),
        ("bash -c 'make all'", [rule("shell", command_glob="bash -c 'make all'")]),
        ("mkfs.ext4 /dev/sdb", [rule("shell", command_glob="mkfs.ext4 /dev/sdb")]),
        ("git clean -fdx", [rule("shell", command_glob="git clean -fdx")]),
        ("kubectl delete pod x", [rule("shell", command_glob="kubectl delete pod x")]),
        ("find . -name '*.pyc' -delete", []),  # a glob character: no exact rule is possible
        ("find . -type f -delete", [rule("shell", command_glob="find . -type f -delete")]),
        ("rm -rf build/*", []),
        ("git status --short && make", [rule("shell", command="make")]),
    ],
)
def test_remembered_rules_never_name_a_bare_destructive_program(
    command: str, remembered: list[PermissionRule]
) -> None:
    assert Policy().remember_rules("shell", shell(command)) == remembered


def test_a_remembered_risky_find_allows_only_itself() -> None:
    policy = Policy()
    policy.remember(policy.remember_rules("shell", shell("find . -type f -delete")))
    assert policy.evaluate("shell", shell("find . -type f -delete")) == ALLOW
    assert policy.evaluate("shell", shell("find / -delete")).kind == "confirm"


# --- confirm texts ------------------------------------------------------------------------

REMEMBER = "\n\nRemember (don't ask again):\n"


@pytest.mark.parametrize(
    ("tool", "args", "title", "message"),
    [
        ("shell", shell("  make   test "), "Run command?",
         "make test" + REMEMBER + "- shell: make"),
        ("shell", {}, "Run command?", "(no command)"),
        ("write", {"file_path": "a/é.txt", "content": "héllo"}, "Run tool?",
         "write a/é.txt (6 bytes)" + REMEMBER + "- write"),
        ("write", {"content": 3}, "Run tool?",
         "write (unknown path) (0 bytes)" + REMEMBER + "- write"),
        ("edit", {"file_path": "m.py", "old_string": "a", "new_string": "b"}, "Run tool?",
         "edit m.py (match=auto)" + REMEMBER + "- edit"),
        ("edit", {"file_path": "m.py", "match_mode": "line_trimmed"}, "Run tool?",
         "edit m.py (match=line_trimmed)" + REMEMBER + "- edit"),
        ("apply_patch", {"patch": "*** Begin Patch\n*** End Patch"}, "Run tool?",
         "apply_patch (2 lines)" + REMEMBER + "- apply_patch"),
        ("apply_patch", {"patch": "x"}, "Run tool?",
         "apply_patch (1 line)" + REMEMBER + "- apply_patch"),
        ("webfetch", {"url": "https://example.org"}, "Run tool?",
         "webfetch https://example.org (markdown)" + REMEMBER + "- webfetch"),
        ("webfetch", {"output_format": "text"}, "Run tool?",
         "webfetch (unknown url) (text)" + REMEMBER + "- webfetch"),
        ("python", {"code": "1+1"}, "Run tool?", "python" + REMEMBER + "- python"),
    ],
)  # fmt: skip
def test_confirm_text(tool: str, args: dict[str, object], title: str, message: str) -> None:
    assert Policy().confirm_text(tool, args) == (title, message)


def test_confirm_text_keeps_line_breaks_of_a_multi_line_command() -> None:
    _, message = Policy().confirm_text("shell", shell("  ls   -la\n\nrm  x "))
    assert message == "ls -la\nrm x" + REMEMBER + "- shell: rm x"


def test_a_shell_deny_rule_without_constraints_blocks_every_shell_call() -> None:
    for mode in ("minimal", "full-access"):
        policy = Policy(mode, deny=[rule("shell")])  # type: ignore[arg-type]
        for args in ({}, shell(""), shell("ls")):
            assert policy.evaluate("shell", args) == Evaluation(
                "deny", "blocked by deny rule (shell)"
            )


def test_confirm_text_view_image_in_minimal_mode_has_no_remember_lines() -> None:
    assert Policy().confirm_text("view_image", {"file_path": "p.png"}) == (
        "Run tool?",
        "view_image p.png",
    )


def test_confirm_text_lists_at_most_five_rules() -> None:
    command = " && ".join(f"tool{i} run" for i in range(7))
    title, message = Policy().confirm_text("shell", shell(command))
    assert title == "Run command?"
    assert message == (
        command + REMEMBER + "\n".join(f"- shell: tool{i}" for i in range(5)) + "\n- ...and 2 more"
    )


def test_confirm_text_omits_rules_already_allowed() -> None:
    policy = Policy(allow=[rule("shell", command="make")])
    assert policy.confirm_text("shell", shell("make && rm x")) == (
        "Run command?",
        "make && rm x" + REMEMBER + "- shell: rm x",
    )


# --- persistence ----------------------------------------------------------------------------


def test_remembered_rules_survive_in_a_fresh_policy(tmp_path: Path) -> None:
    config = tmp_path / "project" / "codelia.json"
    first = Policy(config_path=config)
    first.remember([rule("shell", command="git push"), rule("webfetch")])
    first.remember([rule("webfetch"), rule("webfetch")])  # duplicates are not saved twice
    saved = json.loads(config.read_text(encoding="utf-8"))
    assert saved == {
        "permissions": {"allow": [{"tool": "shell", "command": "git push"}, {"tool": "webfetch"}]}
    }
    second = Policy(config_path=config)
    assert second.evaluate("shell", shell("git push origin")) == ALLOW
    assert second.evaluate("webfetch", {"url": "u"}) == ALLOW
    assert second.allow_rules == [rule("shell", command="git push"), rule("webfetch")]
    assert first.allow_rules == second.allow_rules
    assert [p.name for p in config.parent.iterdir()] == ["codelia.json"]  # no temp files left


def test_persisting_keeps_other_settings_and_deny_rules(tmp_path: Path) -> None:
    config = tmp_path / "codelia.json"
    config.write_text(
        json.dumps({"model": "m", "permissions": {"deny": [{"tool": "shell", "command": "rm"}]}}),
        encoding="utf-8",
    )
    policy = Policy(config_path=config)
    assert policy.evaluate("shell", shell("rm x")) == Evaluation(
        "deny", "blocked by deny rule (rm x)"
    )
    policy.remember([rule("webfetch")])
    assert json.loads(config.read_text(encoding="utf-8")) == {
        "model": "m",
        "permissions": {
            "deny": [{"tool": "shell", "command": "rm"}],
            "allow": [{"tool": "webfetch"}],
        },
    }


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "is not valid JSON: Expecting property name enclosed in double quotes"),
        ("[1, 2]", "must hold a JSON object, got list"),
        ('{"permissions": {"allow": [{"tool": "shell", "command": " "}]}}',
         "permissions.allow.0: command must not be empty"),
        ('{"permissions": {"allow": [{"tol": "read"}]}}',
         "permissions.allow.0.tool: Field required"),
        ('{"permissions": {"deny": "rm"}}', "permissions.deny: Input should be a valid list"),
        ('{"permissions": {"allowed": []}}', "permissions.allowed: Extra inputs are not permitted"),
    ],
)  # fmt: skip
def test_malformed_config_raises_naming_file_and_problem(
    tmp_path: Path, content: str, problem: str
) -> None:
    config = tmp_path / "codelia.json"
    config.write_text(content, encoding="utf-8")
    with pytest.raises(PermissionConfigError) as info:
        Policy(config_path=config)
    assert str(config) in str(info.value)
    assert problem in str(info.value)
    with pytest.raises(PermissionConfigError, match=r"codelia\.json"):
        load_permission_rules(config)


def test_remember_on_a_malformed_file_logs_keeps_rules_in_memory_and_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "codelia.json"
    policy = Policy(config_path=config)
    config.write_text("{broken", encoding="utf-8")  # edited by hand after start-up
    with caplog.at_level(logging.WARNING, logger="jupyter_codelia.agent.permissions"):
        policy.remember([rule("webfetch")])
    assert policy.evaluate("webfetch", {}) == ALLOW
    assert config.read_text(encoding="utf-8") == "{broken"
    assert "Could not save remembered permission rules" in caplog.text
    assert "is not valid JSON" in caplog.text


def test_remember_into_an_unwritable_location_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    policy = Policy(config_path=blocker / "codelia.json")  # parent is a file
    with caplog.at_level(logging.WARNING, logger="jupyter_codelia.agent.permissions"):
        policy.remember([rule("webfetch")])
    assert policy.evaluate("webfetch", {}) == ALLOW
    assert "Could not save remembered permission rules" in caplog.text
