"""The permission policy: which tool calls run at once, which are refused, which ask the user.

Approval modes, allow and deny rules (deny beats allow), shell commands checked segment by
segment against a system allowlist with ``cd`` tracked inside the sandbox, the confirm prompt
texts and the rules remembered after "don't ask again". The policy knows no tool by name: each
call comes with its tool's declared :class:`~jupyter_codelia.tools.ToolRisk`, whose ``approval``
says in which modes it asks, whose ``command_arg`` marks a shell, and whose ``describe`` words
the prompt.

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
from ..errors import CodeliaError
from ..tools import ToolRisk
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


REMEMBER_PREVIEW_LIMIT = 5

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

# Programs that delete, overwrite, kill or run arbitrary code: "don't ask again" on one of them
# remembers that exact command, never the bare program ("rm -rf build" must not allow every rm).
_NEVER_GENERALIZED = frozenset(
    {"rm", "rmdir", "unlink", "shred", "wipe", "srm", "dd", "mv", "cp", "ln", "install", "rsync",
     "truncate", "chmod", "chown", "chgrp", "chattr", "kill", "pkill", "killall", "fdisk",
     "parted", "wipefs", "mkswap", "mkfs", "reboot", "shutdown", "halt", "poweroff", "crontab",
     "sh", "bash", "zsh", "dash", "ksh", "fish", "eval", "source"}
)  # fmt: skip
# Subcommands of the same kind: "git clean -fdx" remembers itself, not "git clean".
_NEVER_GENERALIZED_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": frozenset({"clean", "reset", "rm", "restore", "checkout", "stash"}),
    "docker": frozenset({"rm", "rmi", "kill", "prune", "system", "volume"}),
    "kubectl": frozenset({"delete", "drain"}),
}

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
    normalized text with ``*`` and ``?``. Both apply to tools that declare a ``command_arg``
    (a shell); on any other tool a rule with them matches nothing.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    command: str | None = None
    command_glob: str | None = None

    @field_validator("tool")
    @classmethod
    def _tool_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("tool must be a non-empty tool name")
        return value

    @model_validator(mode="after")
    def _constraints_not_empty(self) -> PermissionRule:
        for name, value in (("command", self.command), ("command_glob", self.command_glob)):
            if value is not None and not value.strip():
                raise ValueError(f"{name} must not be empty (omit it to match every call)")
        return self

    @property
    def constrained(self) -> bool:
        return self.command is not None or self.command_glob is not None

    def preview(self) -> str:
        """How the rule is shown in a confirm prompt (``shell: git push``)."""
        if self.command or self.command_glob:
            return f"{self.tool}: {self.command or self.command_glob}"
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


def _system_commands(mode: ApprovalMode) -> tuple[str, ...]:
    """The commands a shell runs without asking in ``mode`` (unless given a risky flag)."""
    return _MINIMAL_COMMANDS + (_TRUSTED_EXTRA_COMMANDS if mode == "trusted" else ())


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
    """The command prefix an ordinary program's segment is remembered by, or None when none fits."""
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


def _remembered_rule(tool_name: str, segment: str) -> PermissionRule | None:
    """The allow rule "don't ask again" adds for one shell segment, or None when none is safe.

    A command prefix (:func:`remember_command`) for ordinary programs; the exact segment for a
    destructive program or a risky flag, and nothing when that segment holds a glob character
    (an exact rule is a glob without wildcards)."""
    words = shell_words(segment)
    if not words:
        return None
    program = PurePosixPath(words[0]).name
    exact = (
        program in _NEVER_GENERALIZED
        or program.startswith("mkfs.")
        or (len(words) > 1 and words[1] in _NEVER_GENERALIZED_SUBCOMMANDS.get(program, ()))
        or _has_risky_flag(segment)
    )
    if exact:
        if "*" in segment or "?" in segment:
            return None
        return PermissionRule(tool=tool_name, command_glob=segment)
    prefix = remember_command(segment)
    return None if prefix is None else PermissionRule(tool=tool_name, command=prefix)


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
        self._system_commands = _system_commands(mode)

    @property
    def allow_rules(self) -> list[PermissionRule]:
        """Allow rules from arguments, the config file and remember() (not the system list)."""
        return list(self._allow)

    @property
    def deny_rules(self) -> list[PermissionRule]:
        return list(self._deny)

    # --- decision ------------------------------------------------------------------------

    @staticmethod
    def reads_args(risk: ToolRisk) -> bool:
        """Whether ``evaluate`` looks at a call's arguments: only a shell's commands decide by
        them (a rule's constraints are valid for shells alone), so other calls need not parse
        their arguments to be decided."""
        return risk.command_arg is not None

    def _runs_without_asking(self, risk: ToolRisk) -> bool:
        return risk.approval == "never" or (risk.approval == "untrusted" and self.mode == "trusted")

    def evaluate(self, tool_name: str, args: dict[str, Any] | None, risk: ToolRisk) -> Evaluation:
        """allow, deny (with the reason the model sees) or confirm (with why) for one call of
        ``tool_name``, a tool declaring ``risk``."""
        if risk.command_arg is not None:
            return self._evaluate_shell(tool_name, _string_arg(args, risk.command_arg))
        if any(self._tool_rule_matches(r, tool_name) for r in self._deny):
            return Evaluation("deny", f"blocked by deny rule ({tool_name})")
        if self.mode == "full-access" or self._runs_without_asking(risk):
            return _ALLOW
        if any(self._tool_rule_matches(r, tool_name) for r in self._allow):
            return _ALLOW
        return Evaluation("confirm")

    @staticmethod
    def _tool_rule_matches(rule: PermissionRule, tool_name: str) -> bool:
        if rule.constrained:
            return False
        return rule.tool == tool_name or _server_rule_matches(rule.tool, tool_name)

    @staticmethod
    def _segment_rule_matches(rule: PermissionRule, tool_name: str, segment: str) -> bool:
        if rule.tool != tool_name:
            return False
        if rule.command is not None and not words_start_with(segment, rule.command):
            return False
        return rule.command_glob is None or glob_matches(rule.command_glob, segment)

    @staticmethod
    def _full_text_rule_matches(rule: PermissionRule, tool_name: str, command: str) -> bool:
        return rule.command_glob is not None and PermissionPolicy._segment_rule_matches(
            rule, tool_name, command
        )

    def _segment_allowed(self, tool_name: str, segment: str) -> bool:
        if any(self._segment_rule_matches(r, tool_name, segment) for r in self._allow):
            return True
        return not _has_risky_flag(segment) and any(
            words_start_with(segment, command) for command in self._system_commands
        )

    def _evaluate_shell(self, tool_name: str, command: str | None) -> Evaluation:
        full_access = self.mode == "full-access"
        if any(r.tool == tool_name and not r.constrained for r in self._deny):
            return Evaluation("deny", f"blocked by deny rule ({tool_name})")
        if command is None:
            return _ALLOW if full_access else Evaluation("confirm", "missing command")
        normalized = normalize_command(command)
        if not normalized:
            return _ALLOW if full_access else Evaluation("confirm", "empty command")
        if any(self._full_text_rule_matches(r, tool_name, normalized) for r in self._deny):
            return Evaluation("deny", f"blocked by deny rule ({normalized})")
        split = analyse_shell(command)
        for segment in split.commands:
            if any(self._segment_rule_matches(r, tool_name, segment) for r in self._deny):
                return Evaluation("deny", f"blocked by deny rule ({segment})")
        if full_access:
            return _ALLOW
        if not any(is_cd_segment(s) for s in split.commands) and any(
            self._full_text_rule_matches(r, tool_name, normalized) for r in self._allow
        ):
            return _ALLOW
        if not split.commands:
            return Evaluation("confirm", "empty command")
        return self._check_segments(tool_name, split)

    def _check_segments(self, tool_name: str, split: ShellSplit) -> Evaluation:
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
            if not self._segment_allowed(tool_name, text):
                return Evaluation("confirm", f"segment requires confirmation ({text})")
        return _ALLOW

    # --- confirm prompt and remembering ---------------------------------------------------

    def confirm_text(
        self, tool_name: str, args: dict[str, Any] | None, risk: ToolRisk
    ) -> tuple[str, str]:
        """(title, message) for the approval prompt, with the rules "Remember" would add: a
        shell's command, else the tool's own description of the call, else its name."""
        title = "Run tool?"
        if risk.command_arg is not None:
            title = "Run command?"
            command = _string_arg(args, risk.command_arg) or ""
            message = _command_for_display(command) or "(no command)"
        elif risk.describe is not None:
            message = risk.describe(args or {})
        else:
            message = tool_name
        return title, message + self._remember_preview(tool_name, args, risk)

    def _remember_preview(self, tool_name: str, args: dict[str, Any] | None, risk: ToolRisk) -> str:
        rules = self.remember_rules(tool_name, args, risk)
        if not rules:
            return ""
        lines = [f"- {rule.preview()}" for rule in rules[:REMEMBER_PREVIEW_LIMIT]]
        if len(rules) > REMEMBER_PREVIEW_LIMIT:
            lines.append(f"- ...and {len(rules) - REMEMBER_PREVIEW_LIMIT} more")
        return "\n\nRemember (don't ask again):\n" + "\n".join(lines)

    def remember_rules(
        self, tool_name: str, args: dict[str, Any] | None, risk: ToolRisk
    ) -> list[PermissionRule]:
        """The allow rules "don't ask again" would add for this call, minus ones already allowed."""
        if risk.command_arg is None:
            if self._runs_without_asking(risk):
                return []
            rule = PermissionRule(tool=tool_name)
            return [] if rule in self._allow else [rule]
        rules: list[PermissionRule] = []
        for segment in split_shell_segments(_string_arg(args, risk.command_arg) or ""):
            if is_cd_segment(segment):
                continue
            remembered = _remembered_rule(tool_name, segment)
            if remembered is None or self._segment_allowed(
                tool_name, remembered.command or segment
            ):
                continue
            if remembered not in rules and remembered not in self._allow:
                rules.append(remembered)
        return rules

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
