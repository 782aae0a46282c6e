"""The syntax of the `sh -c` scripts `pinnace.kubelet.shell` runs: lists joined by `;`,
newlines, `&&` and `||`; pipelines (`a | b`, `! a`); `while`/`until`/`for` loops and
`if`/`elif`/`else`; redirections of a simple command (`>`, `>>`, `<`, `2>`, `2>&1`); bash
array assignments (`arr=(a b c)`); words with quoting and `$` expansions (variables, array
elements, lengths, command substitution, arithmetic), kept apart until they are expanded.
Anything else (`case`, functions, subshells, background jobs) raises NotUnderstood.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PARAMETER = re.compile(r"#?[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]+\])?|[?#$]")
"""What `${...}` may hold: a name, an array element (`arr[i]`, `arr[@]`), a length (`#name`,
`#arr[@]`), or a special parameter."""
_REDIRECTION = re.compile(r"(\d)?(>>|>&|>|<)")


class NotUnderstood(Exception):
    """The script uses something this model does not have."""


# --- words and commands -------------------------------------------------------------------

# A word is a list of parts, each (kind, text, quoted): kind "lit", "var", "sub" (command
# substitution), "arith" or "array" (the text between the parentheses of `name=(...)`).
Part = tuple[str, str, bool]
Word = list[Part]


@dataclass
class Simple:
    words: list[Word]
    redirections: list[tuple[str, Word]] = field(default_factory=list)
    """(operator with its file descriptor, as `>`, `>>`, `<`, `2>`, `2>&`; the target)."""


@dataclass
class Loop:
    kind: str  # "while", "until" or "for"
    condition: list[AndOr]
    body: list[AndOr]
    name: str = ""
    items: list[Word] = field(default_factory=list)


@dataclass
class If:
    branches: list[tuple[list[AndOr], list[AndOr]]]
    """(condition, body) of the `if` and each `elif`."""
    otherwise: list[AndOr]


@dataclass
class Pipeline:
    commands: list[Command]
    negated: bool = False


Command = Simple | Loop | If | Pipeline
AndOr = list[tuple[str, Command]]
"""Commands with the operator before each ("" for the first, "&&" or "||")."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    # tokens: a Word, or an operator string (";", "&&", "||"); None at the end
    def token(self) -> Word | str | None:
        text, n = self.text, len(self.text)
        while self.i < n:
            ch = text[self.i]
            if ch in " \t":
                self.i += 1
            elif ch == "\\" and text[self.i + 1 : self.i + 2] == "\n":
                self.i += 2
            elif ch == "#":
                while self.i < n and text[self.i] != "\n":
                    self.i += 1
            else:
                break
        if self.i >= n:
            return None
        ch = text[self.i]
        if ch in ";\n":
            self.i += 1
            return ";"
        for op in ("&&", "||"):
            if text.startswith(op, self.i):
                self.i += 2
                return op
        if ch == "|":
            self.i += 1
            return "|"
        redirection = _REDIRECTION.match(text, self.i)
        if redirection is not None:
            self.i = redirection.end()
            return (redirection.group(1) or "") + redirection.group(2)
        if ch in "&()":
            raise NotUnderstood(ch)
        return self.word()

    def word(self) -> Word:
        text, n = self.text, len(self.text)
        parts: Word = []
        while self.i < n and (
            text[self.i] not in " \t\n;&|<>()"
            or (text[self.i] == "(" and len(parts) == 1 and _is_assignment_start(parts[0]))
        ):
            ch = text[self.i]
            if ch == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise NotUnderstood("unterminated quote")
                parts.append(("lit", text[self.i + 1 : end], True))
                self.i = end + 1
            elif ch == '"':
                self.i += 1
                parts.extend(self.double_quoted())
            elif ch == "\\":
                parts.append(("lit", text[self.i + 1 : self.i + 2], True))
                self.i += 2
            elif ch in "$`":
                parts.append(self.dollar(quoted=False))
            elif ch == "(" and len(parts) == 1 and _is_assignment_start(parts[0]):
                end = self.closing(self.i + 1, depth=1)
                parts.append(("array", text[self.i + 1 : end], False))
                self.i = end + 1
            else:
                start = self.i
                while self.i < n and text[self.i] not in " \t\n;&|<>()'\"\\$`":
                    self.i += 1
                parts.append(("lit", text[start : self.i], False))
        return parts

    def double_quoted(self) -> Iterator[Part]:
        text, n = self.text, len(self.text)
        literal: list[str] = []
        while True:
            if self.i >= n:
                raise NotUnderstood("unterminated quote")
            ch = text[self.i]
            if ch == '"':
                self.i += 1
                break
            if ch == "\\" and text[self.i + 1 : self.i + 2] in ("$", "`", '"', "\\", "\n"):
                literal.append(text[self.i + 1].replace("\n", ""))
                self.i += 2
            elif ch in "$`":
                yield ("lit", "".join(literal), True)
                literal = []
                yield self.dollar(quoted=True)
            else:
                literal.append(ch)
                self.i += 1
        yield ("lit", "".join(literal), True)

    def dollar(self, quoted: bool) -> Part:
        text = self.text
        if text[self.i] == "`":
            end = text.find("`", self.i + 1)
            if end < 0:
                raise NotUnderstood("unterminated backquote")
            body, self.i = text[self.i + 1 : end], end + 1
            return ("sub", body, quoted)
        rest = text[self.i + 1 :]
        if rest.startswith("(("):
            end = self.closing(self.i + 3, depth=2)
            body, self.i = text[self.i + 3 : end - 1], end + 1
            return ("arith", body, quoted)
        if rest.startswith("("):
            end = self.closing(self.i + 2, depth=1)
            body, self.i = text[self.i + 2 : end], end + 1
            return ("sub", body, quoted)
        if rest.startswith("{"):
            end = text.find("}", self.i)
            name = text[self.i + 2 : end]
            if end < 0 or not PARAMETER.fullmatch(name):
                raise NotUnderstood("${...}")
            self.i = end + 1
            return ("var", name, quoted)
        found = NAME.match(rest)
        if found:
            self.i += 1 + found.end()
            return ("var", found.group(), quoted)
        if rest[:1] and rest[0] in "?#$0123456789@*!-":
            self.i += 2
            return ("var", rest[0], quoted)
        self.i += 1
        return ("lit", "$", quoted)

    def closing(self, start: int, depth: int) -> int:
        """The index of the parenthesis that closes `depth` open ones before `start`."""
        quote = ""
        for j in range(start, len(self.text)):
            ch = self.text[j]
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return j
        raise NotUnderstood("unbalanced parentheses")

    # grammar
    def parse(self) -> list[AndOr]:
        self.pending: Word | str | None = self.token()
        body = self.list_until(())
        if self.pending is not None:
            raise NotUnderstood("unexpected token")
        return body

    def advance(self) -> Word | str | None:
        current, self.pending = self.pending, self.token()
        return current

    def keyword(self) -> str | None:
        word = self.pending
        if isinstance(word, list) and len(word) == 1 and not word[0][2] and word[0][0] == "lit":
            return word[0][1]
        return None

    def list_until(self, ends: Sequence[str]) -> list[AndOr]:
        commands: list[AndOr] = []
        while self.pending is not None:
            if self.pending == ";":
                self.advance()
                continue
            if self.keyword() in ends:
                return commands
            and_or: AndOr = [("", self.pipeline())]
            while self.pending in ("&&", "||"):
                op = self.advance()
                while self.pending == ";":
                    self.advance()
                and_or.append((str(op), self.pipeline()))
            commands.append(and_or)
        if ends:
            raise NotUnderstood(f"missing {ends[0]}")
        return commands

    def expect(self, keyword: str) -> None:
        if self.keyword() != keyword:
            raise NotUnderstood(f"expected {keyword}")
        self.advance()

    def pipeline(self) -> Command:
        negated = self.keyword() == "!"
        if negated:
            self.advance()
        commands = [self.command()]
        while self.pending == "|":
            self.advance()
            while self.pending == ";":  # a newline after the pipe
                self.advance()
            commands.append(self.command())
        if len(commands) == 1 and not negated:
            return commands[0]
        return Pipeline(commands, negated)

    def if_command(self) -> If:
        branches = []
        while True:
            self.advance()  # if or elif
            condition = self.list_until(("then",))
            self.expect("then")
            body = self.list_until(("elif", "else", "fi"))
            branches.append((condition, body))
            if self.keyword() != "elif":
                break
        otherwise: list[AndOr] = []
        if self.keyword() == "else":
            self.advance()
            otherwise = self.list_until(("fi",))
        self.expect("fi")
        return If(branches, otherwise)

    def command(self) -> Command:
        keyword = self.keyword()
        if keyword == "if":
            return self.if_command()
        if keyword in ("while", "until"):
            self.advance()
            condition = self.list_until(("do",))
            self.expect("do")
            body = self.list_until(("done",))
            self.expect("done")
            return Loop(keyword, condition, body)
        if keyword == "for":
            self.advance()
            name = self.keyword()
            if name is None or not NAME.fullmatch(name):
                raise NotUnderstood("for")
            self.advance()
            self.expect("in")
            items = []
            while isinstance(self.pending, list) and self.keyword() != "do":
                items.append(self.pending)
                self.advance()
            while self.pending == ";":
                self.advance()
            self.expect("do")
            body = self.list_until(("done",))
            self.expect("done")
            return Loop("for", [], body, name, items)
        if keyword in ("case", "function", "{", "}", "then", "do", "done", "!", "fi", "elif"):
            raise NotUnderstood(keyword)
        command = Simple([])
        while isinstance(self.pending, list) or _is_redirection(self.pending):
            if isinstance(self.pending, list):
                command.words.append(self.pending)
                self.advance()
                continue
            operator = str(self.advance())
            target = self.advance()
            if not isinstance(target, list):
                raise NotUnderstood("a redirection without a file")
            command.redirections.append((operator, target))
        if not command.words and not command.redirections:
            raise NotUnderstood("unexpected token")
        return command


def _is_redirection(token: Word | str | None) -> bool:
    return isinstance(token, str) and token[-1:] in "<>&" and token not in ("&&",)


def _is_assignment_start(part: Part) -> bool:
    """`name=` as a word's first part, unquoted: an array's parentheses may follow."""
    kind, text, quoted = part
    return kind == "lit" and not quoted and text.endswith("=") and bool(NAME.fullmatch(text[:-1]))


# The pods of a template run one script: each text is parsed once (the shell only reads
# the commands).
@functools.lru_cache(maxsize=1024)
def parse(text: str) -> list[AndOr]:
    """The commands of a script, to be read only. Raises NotUnderstood."""
    return _Parser(text).parse()
