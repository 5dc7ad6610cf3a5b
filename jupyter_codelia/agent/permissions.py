"""The permission policy: which tool calls run at once, which are refused, which ask the user.

Approval modes with a system allowlist, allow and deny rules (deny beats allow), shell commands
checked segment by segment with ``cd`` tracked inside the sandbox, the confirm prompt texts and the
rules remembered after "don't ask again".

Remembered rules live in a JSON file (``config_path``) of the form
``{"permissions": {"allow": [rule, ...], "deny": [rule, ...]}}``; other top-level keys are kept.
Loading it is explicit (the constructor, :func:`load_permission_rules`) and raises
:class:`PermissionConfigError` naming the file and the problem. Persisting in :meth:`remember`
is best effort: failures are logged and the rules stay in memory; a malformed file is never
overwritten, so nothing the user wrote is lost.

Beyond the reference, the shell checks close holes a plain prefix match leaves open: a lone
``&``, newlines, sub-shells and command substitutions start new commands; output redirected to
a file needs confirmation unless the mode is ``trusted`` and the file is inside the sandbox; and
system-allowlisted read-only commands lose that status when given a flag that runs programs or
writes files (``find -exec``, ``rg --pre``, ``sort -o``, ``git --output``, ``date -s``).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from .._approval import APPROVAL_MODES, ApprovalMode
from .._private import make_private_dirs
from .._text import split_lines, utf8_len
from ..errors import CodeliaError
from ._shell_words import (
    ShellSplit,
    analyse_shell,
    glob_matches,
    is_cd_segment,
    is_harmless_output_target,
    normalize_command,
    resolve_cd,
    resolve_inside,
    shell_words,
    split_shell_segments,
    words_start_with,
)

logger = logging.getLogger("jupyter_codelia.agent.permissions")


SHELL_TOOLS = frozenset({"shell", "bash"})  # "bash" is the legacy name; its rules still apply
SKILL_TOOL = "skill_load"
REMEMBER_PREVIEW_LIMIT = 5

_MINIMAL_TOOLS = (
    "read",
    "read_line",
    "view_image",
    "grep",
    "glob",
    "todo_read",
    "todo_new",
    "todo_append",
    "todo_patch",
    "todo_clear",
    "tool_output_cache",
    "tool_output_cache_line",
    "tool_output_cache_grep",
    "done",
    "list_variables",
    "inspect_variable",
    # Watching and stopping the jobs the agent itself started (their start was approved).
    "job_list",
    "job_output",
    "job_wait",
    "job_stop",
    "notebook_read",
    "kernel_history",
)
_TRUSTED_EXTRA_TOOLS = ("write", "edit", "apply_patch", "notebook_edit")
_MINIMAL_COMMANDS = (
    *("pwd", "ls", "rg", "grep", "find", "sort", "cat", "head", "tail", "wc", "stat", "file"),
    *("uname", "whoami", "date"),
    *(f"git {sub}" for sub in ("status", "diff", "show", "log", "rev-parse", "ls-files", "grep")),
)
_TRUSTED_EXTRA_COMMANDS = ("sed", "awk")

# Flags that turn a system-allowlisted read-only command into one that runs programs or writes
# files: words equal to these (before any "="), and short-option bundles holding the letter.
_RISKY_WORDS: dict[str, frozenset[str]] = {
    "find": frozenset(
        {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
    ),
    "rg": frozenset({"--pre"}),
    "sort": frozenset({"--output"}),
    "git": frozenset({"--output", "--ext-diff"}),
    "date": frozenset({"--set"}),
}
_RISKY_SHORT_OPTIONS = {"sort": "o", "date": "s"}

_ENV_ASSIGNMENT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_WRAPPERS = frozenset(
    {"env", "command", "builtin", "nohup", "time", "sudo", "nice", "ionice", "chrt", "timeout",
     "stdbuf", "xargs", "exec", "doas"}
)  # fmt: skip
_WITH_SUBCOMMAND = frozenset(
    {"git", "jj", "bun", "bunx", "npx", "npm", "pnpm", "yarn", "cargo", "go", "docker", "kubectl",
     "gh"}
)  # fmt: skip
# Runners whose third word names the program they run: "npx" and "bunx" always, the others
# only after the listed subcommand ("npm exec eslint", "pnpm dlx create-vite").
_THIRD_WORD_AFTER: dict[str, frozenset[str] | None] = {
    "npx": None,
    "bunx": None,
    "bun": frozenset({"x"}),
    "npm": frozenset({"exec"}),
    "pnpm": frozenset({"dlx", "exec"}),
    "yarn": frozenset({"dlx"}),
}


class PermissionConfigError(CodeliaError, ValueError):
    """The permission config file cannot be used; the message names the file and the problem."""


class PermissionRule(BaseModel):
    """One allow or deny rule; a rule with no constraint matches every call of its tool.

    ``command`` matches a shell segment's first words exactly; ``command_glob`` matches the whole
    normalized text with ``*`` and ``?``. Both are for shell rules only; ``skill_name`` only for
    ``skill_load``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    command: str | None = None
    command_glob: str | None = None
    skill_name: str | None = None

    @field_validator("tool")
    @classmethod
    def _tool_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("tool must be a non-empty tool name")
        return value

    @model_validator(mode="after")
    def _constraints_fit_tool(self) -> PermissionRule:
        if (self.command is not None or self.command_glob is not None) and (
            self.tool not in SHELL_TOOLS
        ):
            raise ValueError(
                f"command/command_glob are only valid for shell rules, not for tool {self.tool!r}"
            )
        if self.skill_name is not None and self.tool != SKILL_TOOL:
            raise ValueError(f"skill_name is only valid for skill_load rules, not {self.tool!r}")
        for name in ("command", "command_glob", "skill_name"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                raise ValueError(f"{name} must not be empty (omit it to match every call)")
        return self

    def preview(self) -> str:
        """How the rule is shown in a confirm prompt (``shell: git push``)."""
        if self.tool in SHELL_TOOLS and (self.command or self.command_glob):
            return f"shell: {self.command or self.command_glob}"
        if self.tool == SKILL_TOOL and self.skill_name:
            return f"{SKILL_TOOL}: {self.skill_name}"
        return self.tool


class _RuleLists(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[PermissionRule] = []
    deny: list[PermissionRule] = []


@dataclass(frozen=True)
class Evaluation:
    kind: Literal["allow", "deny", "confirm"]
    reason: str | None = None


_ALLOW = Evaluation("allow")


def _system_rules(mode: ApprovalMode) -> list[PermissionRule]:
    tools = _MINIMAL_TOOLS + (_TRUSTED_EXTRA_TOOLS if mode == "trusted" else ())
    commands = _MINIMAL_COMMANDS + (_TRUSTED_EXTRA_COMMANDS if mode == "trusted" else ())
    return [PermissionRule(tool=t) for t in tools] + [
        PermissionRule(tool="shell", command=c) for c in commands
    ]


def _read_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PermissionConfigError(f"Cannot read permission config {path}: {exc}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise PermissionConfigError(
            f"Permission config {path} is not valid JSON: {exc}. Fix or delete the file."
        ) from None
    if not isinstance(data, dict):
        raise PermissionConfigError(
            f"Permission config {path} must hold a JSON object, got {type(data).__name__}."
        )
    return data


def load_permission_rules(path: Path) -> tuple[list[PermissionRule], list[PermissionRule]]:
    """(allow, deny) rules from a config file; raises PermissionConfigError if it is malformed."""
    rules = _parse_rules(_read_config(path), path)
    return rules.allow, rules.deny


def _parse_rules(data: dict[str, Any], path: Path) -> _RuleLists:
    section = data.get("permissions", {})
    try:
        rules = _RuleLists.model_validate(section)
    except ValidationError as exc:
        problems = "; ".join(
            f"permissions.{'.'.join(str(p) for p in err['loc']) or '(section)'}: "
            f"{err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors(include_url=False)
        )
        raise PermissionConfigError(
            f"Invalid permission rules in {path}: {problems}. Each rule is an object like "
            '{"tool": "shell", "command": "npm test"}.'
        ) from None
    return rules


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    make_private_dirs(path.parent)
    # mkstemp creates the temp file 0600, so the renamed file is private too.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=2)
            handle.write("\n")
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _string_arg(args: dict[str, Any] | None, key: str) -> str | None:
    value = args.get(key) if isinstance(args, dict) else None
    return value if isinstance(value, str) else None


def _skill_name(args: dict[str, Any] | None) -> str | None:
    name = _string_arg(args, "name")
    if name and name.strip():
        return name.strip().lower()
    path = _string_arg(args, "path")
    if path and path.strip():
        parts = [p for p in path.strip().replace("\\", "/").split("/") if p]
        if len(parts) > 1 and parts[-1].lower() == "skill.md":
            return parts[-2].lower()
        return parts[-1].lower() if parts else None
    return None


def _command_for_display(command: str) -> str:
    """Each line normalized, line breaks kept: "ls\nrm x" must not read as "ls rm x"."""
    lines = (normalize_command(line) for line in command.splitlines())
    return "\n".join(line for line in lines if line)


def _has_risky_flag(segment: str) -> bool:
    words = shell_words(segment)
    if not words:
        return True
    program = PurePosixPath(words[0]).name
    risky = _RISKY_WORDS.get(program, frozenset())
    short = _RISKY_SHORT_OPTIONS.get(program)
    for word in words[1:]:
        if word.split("=", 1)[0] in risky:
            return True
        if short and word.startswith("-") and not word.startswith("--") and short in word[1:]:
            return True
    return False


def remember_command(segment: str) -> str | None:
    """The command prefix remembered for one shell segment, or None when nothing safe fits."""
    words = shell_words(segment)
    if not words:
        return None
    first = words[0]
    if "=" in first and first[0] in _ENV_ASSIGNMENT:
        return None  # "FOO=1 make": remembering "FOO=1" or "make" would both be wrong
    primary = PurePosixPath(first).name
    if primary in ("", ".", "..") or primary in _WRAPPERS:
        return None
    if not all(c.isalnum() or c in "._+@:-" for c in primary):
        return None
    if primary not in _WITH_SUBCOMMAND or len(words) < 2 or not _is_subcommand(words[1]):
        return primary
    secondary = words[1]
    if primary in _THIRD_WORD_AFTER and len(words) > 2 and _is_subcommand(words[2]):
        after = _THIRD_WORD_AFTER[primary]
        if after is None or secondary in after:
            return f"{primary} {secondary} {words[2]}"
    return f"{primary} {secondary}"


def _is_subcommand(word: str) -> bool:
    # An option ("git --no-pager log") is not a subcommand: remembering it would allow too much.
    return bool(word) and word[0] != "-" and all(c.isalnum() or c in ":_-" for c in word)


def _server_rule_matches(rule_tool: str, tool_name: str) -> bool:
    """``github__*`` covers every tool of the MCP server ``github`` (named ``github__<tool>``)."""
    return rule_tool.endswith("__*") and tool_name.startswith(rule_tool[:-1])


class PermissionPolicy:
    """Decides allow / deny / confirm for each tool call."""

    def __init__(
        self,
        mode: ApprovalMode = "minimal",
        *,
        allow: Sequence[PermissionRule] = (),
        deny: Sequence[PermissionRule] = (),
        sandbox_root: Path | None = None,
        config_path: Path | None = None,
    ) -> None:
        self.mode = mode
        self.sandbox_root = (
            PurePosixPath(os.path.abspath(sandbox_root)) if sandbox_root is not None else None
        )
        self.config_path = config_path
        self._allow: list[PermissionRule] = list(allow)
        self._deny: list[PermissionRule] = list(deny)
        if config_path is not None and config_path.exists():
            saved_allow, saved_deny = load_permission_rules(config_path)
            self._allow.extend(r for r in saved_allow if r not in self._allow)
            self._deny.extend(r for r in saved_deny if r not in self._deny)

    @property
    def mode(self) -> ApprovalMode:
        return self._mode

    @mode.setter
    def mode(self, mode: ApprovalMode) -> None:
        """Switching modes (e.g. from the notebook's settings) swaps the system allowlist."""
        if mode not in APPROVAL_MODES:
            raise ValueError(
                f"Unknown approval mode {mode!r}; use one of: {', '.join(APPROVAL_MODES)}."
            )
        self._mode: ApprovalMode = mode
        self._system_allow = _system_rules(mode)
        # The system rules for tools other than the shell name whole tools (no constraint, no
        # server pattern), so one set lookup per call answers what scanning all rules did.
        self._system_allow_tools = frozenset(
            r.tool for r in self._system_allow if r.tool not in SHELL_TOOLS
        )

    @property
    def allow_rules(self) -> list[PermissionRule]:
        """Allow rules from arguments, the config file and remember() (not the system list)."""
        return list(self._allow)

    @property
    def deny_rules(self) -> list[PermissionRule]:
        return list(self._deny)

    # --- decision ------------------------------------------------------------------------

    @staticmethod
    def reads_args(tool_name: str) -> bool:
        """Whether ``evaluate`` looks at the arguments of a call of ``tool_name``: only shell
        commands and skill names decide by them (a rule's constraints are valid for those tools
        alone), so other calls need not parse their arguments to be decided."""
        return tool_name in SHELL_TOOLS or tool_name == SKILL_TOOL

    def evaluate(self, tool_name: str, args: dict[str, Any] | None) -> Evaluation:
        """allow, deny (with the reason the model sees) or confirm (with why) for one call."""
        if tool_name in SHELL_TOOLS:
            return self._evaluate_shell(_string_arg(args, "command"))
        if any(self._tool_rule_matches(r, tool_name, args) for r in self._deny):
            return Evaluation("deny", f"blocked by deny rule ({tool_name})")
        if self.mode == "full-access":
            return _ALLOW
        if tool_name in self._system_allow_tools or any(
            self._tool_rule_matches(r, tool_name, args) for r in self._allow
        ):
            return _ALLOW
        return Evaluation("confirm")

    @staticmethod
    def _tool_rule_matches(
        rule: PermissionRule, tool_name: str, args: dict[str, Any] | None
    ) -> bool:
        if rule.command is not None or rule.command_glob is not None:
            return False
        if rule.tool != tool_name and not _server_rule_matches(rule.tool, tool_name):
            return False
        if rule.skill_name is None:
            return True
        return _skill_name(args) == rule.skill_name.strip().lower()

    @staticmethod
    def _segment_rule_matches(rule: PermissionRule, segment: str) -> bool:
        if rule.tool not in SHELL_TOOLS or rule.skill_name is not None:
            return False
        if rule.command is not None and not words_start_with(segment, rule.command):
            return False
        return rule.command_glob is None or glob_matches(rule.command_glob, segment)

    @staticmethod
    def _full_text_rule_matches(rule: PermissionRule, command: str) -> bool:
        return (
            rule.tool in SHELL_TOOLS
            and rule.command_glob is not None
            and PermissionPolicy._segment_rule_matches(rule, command)
        )

    def _segment_allowed(self, segment: str) -> bool:
        if any(self._segment_rule_matches(r, segment) for r in self._allow):
            return True
        return not _has_risky_flag(segment) and any(
            self._segment_rule_matches(r, segment) for r in self._system_allow
        )

    def _evaluate_shell(self, command: str | None) -> Evaluation:
        full_access = self.mode == "full-access"
        if any(r.tool in SHELL_TOOLS and r.command is None and r.command_glob is None
               for r in self._deny):  # fmt: skip
            return Evaluation("deny", "blocked by deny rule (shell)")
        if command is None:
            return _ALLOW if full_access else Evaluation("confirm", "missing command")
        normalized = normalize_command(command)
        if not normalized:
            return _ALLOW if full_access else Evaluation("confirm", "empty command")
        if any(self._full_text_rule_matches(r, normalized) for r in self._deny):
            return Evaluation("deny", f"blocked by deny rule ({normalized})")
        split = analyse_shell(command)
        for segment in split.commands:
            if any(self._segment_rule_matches(r, segment) for r in self._deny):
                return Evaluation("deny", f"blocked by deny rule ({segment})")
        if full_access:
            return _ALLOW
        if not any(is_cd_segment(s) for s in split.commands) and any(
            self._full_text_rule_matches(r, normalized) for r in self._allow
        ):
            return _ALLOW
        if not split.commands:
            return Evaluation("confirm", "empty command")
        return self._check_segments(split)

    def _check_segments(self, split: ShellSplit) -> Evaluation:
        if split.hidden_substitution:
            return Evaluation("confirm", "command substitution inside quotes requires confirmation")
        root = self.sandbox_root
        cwd = root
        for kind, text in split.items:
            if kind == "output":
                if is_harmless_output_target(text):
                    continue
                inside = cwd is not None and root is not None and resolve_inside(text, cwd, root)
                if self.mode == "trusted" and inside:
                    continue
                return Evaluation("confirm", f"output redirect requires confirmation (> {text})")
            if is_cd_segment(text):
                if root is None or cwd is None:
                    return Evaluation("confirm", f"cd requires confirmation ({text})")
                new_cwd = resolve_cd(text, cwd, root)
                if new_cwd is None:
                    return Evaluation("confirm", f"cd target requires confirmation ({text})")
                cwd = new_cwd
                continue
            if not self._segment_allowed(text):
                return Evaluation("confirm", f"segment requires confirmation ({text})")
        return _ALLOW

    # --- confirm prompt and remembering ---------------------------------------------------

    def confirm_text(self, tool_name: str, args: dict[str, Any] | None) -> tuple[str, str]:
        """(title, message) for the approval prompt, with the rules "Remember" would add."""
        title = "Run tool?"
        if tool_name in SHELL_TOOLS:
            title = "Run command?"
            message = _command_for_display(_string_arg(args, "command") or "") or "(no command)"
        elif tool_name == SKILL_TOOL:
            title = "Load skill?"
            path = (_string_arg(args, "path") or "").strip()
            message = _skill_name(args) or path or SKILL_TOOL
        elif tool_name == "write":
            content = _string_arg(args, "content") or ""
            message = f"write {self._path_of(args)} ({utf8_len(content)} bytes)"
        elif tool_name == "edit":
            mode = _string_arg(args, "match_mode") or "auto"
            message = f"edit {self._path_of(args)} (match={mode})"
        elif tool_name == "apply_patch":
            count = len(split_lines(_string_arg(args, "patch") or ""))
            message = f"apply_patch ({count} {'line' if count == 1 else 'lines'})"
        elif tool_name == "view_image":
            message = f"view_image {self._path_of(args)}"
        elif tool_name == "webfetch":
            url = (_string_arg(args, "url") or "").strip() or "(unknown url)"
            message = f"webfetch {url} ({_string_arg(args, 'output_format') or 'markdown'})"
        else:
            message = tool_name
        return title, message + self._remember_preview(tool_name, args)

    @staticmethod
    def _path_of(args: dict[str, Any] | None) -> str:
        return (_string_arg(args, "file_path") or "").strip() or "(unknown path)"

    def _remember_preview(self, tool_name: str, args: dict[str, Any] | None) -> str:
        rules = self.remember_rules(tool_name, args)
        if not rules:
            return ""
        lines = [f"- {rule.preview()}" for rule in rules[:REMEMBER_PREVIEW_LIMIT]]
        if len(rules) > REMEMBER_PREVIEW_LIMIT:
            lines.append(f"- ...and {len(rules) - REMEMBER_PREVIEW_LIMIT} more")
        return "\n\nRemember (don't ask again):\n" + "\n".join(lines)

    def remember_rules(self, tool_name: str, args: dict[str, Any] | None) -> list[PermissionRule]:
        """The allow rules "don't ask again" would add for this call, minus ones already allowed."""
        return [r for r in self._derive_rules(tool_name, args) if not self._already_allowed(r)]

    def _derive_rules(self, tool_name: str, args: dict[str, Any] | None) -> list[PermissionRule]:
        if tool_name == SKILL_TOOL:
            name = _skill_name(args)
            return [PermissionRule(tool=SKILL_TOOL, skill_name=name)] if name else []
        if tool_name not in SHELL_TOOLS:
            return [PermissionRule(tool=tool_name)]
        rules: list[PermissionRule] = []
        for segment in split_shell_segments(_string_arg(args, "command") or ""):
            if is_cd_segment(segment):
                continue
            prefix = remember_command(segment)
            rule = PermissionRule(tool="shell", command=prefix) if prefix else None
            if rule is not None and rule not in rules:
                rules.append(rule)
        return rules

    def _already_allowed(self, rule: PermissionRule) -> bool:
        if rule in self._allow:
            return True
        if rule.tool in SHELL_TOOLS and rule.command is not None:
            return self._segment_allowed(rule.command)
        if rule.tool == SKILL_TOOL:
            return any(self._tool_rule_matches(r, SKILL_TOOL, {"name": rule.skill_name})
                       for r in [*self._system_allow, *self._allow])  # fmt: skip
        return any(r == rule for r in self._system_allow)

    def remember(self, rules: Sequence[PermissionRule]) -> None:
        """Allow ``rules`` from now on and save them to ``config_path`` (best effort, logged)."""
        added: list[PermissionRule] = []
        for rule in rules:
            if rule not in self._allow:
                self._allow.append(rule)
                added.append(rule)
        if added and self.config_path is not None:
            self._persist(added)

    def _persist(self, added: Sequence[PermissionRule]) -> None:
        path = self.config_path
        assert path is not None
        try:
            data = _read_config(path) if path.exists() else {}
            saved_allow = _parse_rules(data, path).allow  # never overwrite a malformed file
            section = dict(data.get("permissions", {}))
            merged = saved_allow + [r for r in added if r not in saved_allow]
            section["allow"] = [r.model_dump(exclude_none=True) for r in merged]
            data["permissions"] = section
            _write_atomically(path, data)
        except (PermissionConfigError, OSError) as exc:
            # Best effort: the rules stay allowed for this session; the file is left untouched.
            logger.warning("Could not save remembered permission rules: %s", exc)


__all__ = [
    "APPROVAL_MODES",
    "ApprovalMode",
    "Evaluation",
    "PermissionConfigError",
    "PermissionPolicy",
    "PermissionRule",
    "load_permission_rules",
    "remember_command",
    "split_shell_segments",
]
