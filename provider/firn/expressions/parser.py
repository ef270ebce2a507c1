"""Parsing SQL-like filter strings: ``parse("id > 5 and region = 'eu'")``.

Grammar (keywords are case-insensitive)::

    expr      := or
    or        := and ( OR and )*
    and       := not ( AND not )*
    not       := NOT not | primary
    primary   := '(' expr ')' | TRUE | FALSE | predicate
    predicate := name cmp literal | literal cmp name
               | name IS [NOT] NULL | name IS [NOT] NAN
               | name [NOT] IN '(' literal (',' literal)* ')'
               | name [NOT] LIKE string [ESCAPE string]
               | name [NOT] BETWEEN literal AND literal
    cmp       := = | == | != | <> | < | <= | > | >=
    name      := part ( '.' part )*       part: identifier | "quoted" | `quoted`
    literal   := [+|-] number | 'string' | X'hex' | TRUE | FALSE

Strings use SQL quoting (``'it''s'``); quoted identifiers double their quote character.
Numbers with a fraction or exponent are read as exact ``Decimal``\\s, so binding can compare
``price < 0.1`` against a decimal column exactly. ``LIKE`` accepts prefix patterns only
(``'abc%'``, becoming ``starts_with``) and patterns without wildcards (equality); the
escape character is a backslash unless ``ESCAPE`` names another. Temporal and UUID literals
are plain strings, converted when the filter is bound to a schema.

Errors raise :class:`firn.errors.ValidationError` naming the position and the offending
token, with a caret under the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from firn.errors import ValidationError
from firn.expressions.predicates import (
    LiteralValue,
    Operation,
    UnboundLiteralPredicate,
    UnboundSetPredicate,
    UnboundUnaryPredicate,
)
from firn.expressions.terms import Reference
from firn.expressions.tree import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or, balanced

_KEYWORDS = frozenset(
    {"and", "or", "not", "in", "is", "null", "nan", "like", "between", "true", "false", "escape"}
)
_COMPARISONS = {
    "=": Operation.EQ,
    "==": Operation.EQ,
    "!=": Operation.NOT_EQ,
    "<>": Operation.NOT_EQ,
    "<": Operation.LT,
    "<=": Operation.LT_EQ,
    ">": Operation.GT,
    ">=": Operation.GT_EQ,
}
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "ident", "qident", "keyword", "number", "string", "binary", "op", "(", ")", ",", ".", "eof"
    value: str
    pos: int

    def describe(self) -> str:
        if self.kind == "eof":
            return "end of input"
        return repr(self.value) if self.kind not in ("string", "binary") else f"string {self.value!r}"


def _error(text: str, pos: int, message: str) -> ValidationError:
    caret = " " * pos + "^"
    return ValidationError(f"cannot parse filter {text!r}: {message} at position {pos}\n  {text}\n  {caret}")


def _read_quoted(text: str, start: int, quote: str) -> tuple[str, int]:
    """The content of a quoted run starting at ``start`` (a doubled quote is one quote)."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                out.append(quote)
                i += 2
                continue
            return "".join(out), i + 1
        out.append(c)
        i += 1
    what = "string" if quote == "'" else "quoted identifier"
    raise _error(text, start, f"unterminated {what}")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "(),":
            tokens.append(_Token(c, c, i))
            i += 1
            continue
        two = text[i : i + 2]
        if two in ("==", "!=", "<>", "<=", ">="):
            tokens.append(_Token("op", two, i))
            i += 2
            continue
        if c in "=<>":
            tokens.append(_Token("op", c, i))
            i += 1
            continue
        if c in "+-":
            tokens.append(_Token("sign", c, i))
            i += 1
            continue
        if c == "'":
            value, end = _read_quoted(text, i, "'")
            tokens.append(_Token("string", value, i))
            i = end
            continue
        if c in "xX" and i + 1 < n and text[i + 1] == "'":
            value, end = _read_quoted(text, i + 1, "'")
            if not re.fullmatch(r"(?:[0-9A-Fa-f]{2})*", value):
                raise _error(text, i, f"invalid hex in binary literal X'{value}'")
            tokens.append(_Token("binary", value, i))
            i = end
            continue
        if c in '"`':
            value, end = _read_quoted(text, i, c)
            if not value:
                raise _error(text, i, "empty quoted identifier")
            tokens.append(_Token("qident", value, i))
            i = end
            continue
        prev_is_name = bool(tokens) and tokens[-1].kind in ("ident", "qident")
        if c == "." and not (not prev_is_name and i + 1 < n and text[i + 1].isdigit()):
            tokens.append(_Token(".", ".", i))
            i += 1
            continue
        if c.isdigit() or c == ".":
            m = _NUMBER.match(text, i)
            assert m is not None
            end = m.end()
            if end < n and _IDENT_CHAR.match(text[end]):
                raise _error(text, i, f"invalid number {text[i : end + 1]!r}")
            tokens.append(_Token("number", m.group(), i))
            i = end
            continue
        m = _IDENT.match(text, i)
        if m is not None:
            word = m.group()
            kind = "keyword" if word.lower() in _KEYWORDS else "ident"
            tokens.append(_Token(kind, word.lower() if kind == "keyword" else word, i))
            i = m.end()
            continue
        raise _error(text, i, f"unexpected character {c!r}")
    tokens.append(_Token("eof", "", n))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    # -- token helpers ---------------------------------------------------------------------
    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def peek(self, offset: int = 1) -> _Token:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        tok = self.tokens[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def at_keyword(self, *words: str) -> bool:
        return self.tok.kind == "keyword" and self.tok.value in words

    def accept_keyword(self, word: str) -> bool:
        if self.at_keyword(word):
            self.advance()
            return True
        return False

    def expect_keyword(self, word: str, context: str) -> None:
        if not self.accept_keyword(word):
            raise self.error(f"expected {word.upper()} {context}, found {self.tok.describe()}")

    def expect(self, kind: str, context: str) -> _Token:
        if self.tok.kind != kind:
            raise self.error(f"expected {kind!r} {context}, found {self.tok.describe()}")
        return self.advance()

    def error(self, message: str, tok: _Token | None = None) -> ValidationError:
        return _error(self.text, (tok or self.tok).pos, message)

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> BooleanExpression:
        if self.tok.kind == "eof":
            raise self.error("empty filter")
        expr = self.parse_or()
        if self.tok.kind != "eof":
            raise self.error(
                f"unexpected {self.tok.describe()} after a complete expression (missing AND / OR?)"
            )
        return expr

    def parse_or(self) -> BooleanExpression:
        terms = [self.parse_and()]
        while self.accept_keyword("or"):
            terms.append(self.parse_and())
        # Balanced, so that long generated chains stay shallow for the recursive visitors.
        return balanced(Or, terms, AlwaysFalse())

    def parse_and(self) -> BooleanExpression:
        terms = [self.parse_not()]
        while self.accept_keyword("and"):
            terms.append(self.parse_not())
        return balanced(And, terms, AlwaysTrue())

    def parse_not(self) -> BooleanExpression:
        negations = 0
        while self.accept_keyword("not"):
            negations += 1
        expr = self.parse_primary()
        return Not(expr) if negations % 2 else expr

    def parse_primary(self) -> BooleanExpression:
        tok = self.tok
        if tok.kind == "(":
            self.advance()
            expr = self.parse_or()
            if self.tok.kind != ")":
                raise self.error(
                    f"expected ')' to close '(' at position {tok.pos}, found {self.tok.describe()}"
                )
            self.advance()
            return expr
        if self.at_keyword("true", "false") and self.peek().kind != "op":
            self.advance()
            return AlwaysTrue() if tok.value == "true" else AlwaysFalse()
        if tok.kind in ("number", "string", "binary", "sign") or self.at_keyword("true", "false"):
            # `5 < x` is `x > 5`.
            value = self.parse_literal("on the left of a comparison")
            op_tok = self.tok
            if op_tok.kind != "op":
                raise self.error(f"expected a comparison operator after literal, found {op_tok.describe()}")
            self.advance()
            name = self.parse_name()
            return self.literal_predicate(_COMPARISONS[op_tok.value].flip(), name, value, op_tok)
        if tok.kind in ("ident", "qident"):
            return self.parse_predicate(self.parse_name())
        hint = ' (quote column names that are keywords: "name")' if tok.kind == "keyword" else ""
        raise self.error(f"expected a column name, literal, NOT or '(', found {tok.describe()}{hint}")

    def parse_name(self) -> Reference:
        tok = self.tok
        if tok.kind not in ("ident", "qident"):
            hint = ' (quote column names that are keywords: "name")' if tok.kind == "keyword" else ""
            raise self.error(f"expected a column name, found {tok.describe()}{hint}")
        parts = [self.advance().value]
        while self.tok.kind == ".":
            self.advance()
            if self.tok.kind not in ("ident", "qident", "keyword"):
                raise self.error(f"expected a field name after '.', found {self.tok.describe()}")
            # After a dot any word is a field name, keywords included (`a.year`, `t.in`).
            parts.append(self.advance().value if self.tok.kind != "keyword" else self._raw_word())
        return Reference(".".join(parts))

    def _raw_word(self) -> str:
        tok = self.advance()
        return self.text[tok.pos : tok.pos + len(tok.value)]

    def parse_predicate(self, ref: Reference) -> BooleanExpression:
        tok = self.tok
        if tok.kind == "op":
            self.advance()
            if self.at_keyword("null"):
                raise self.error(
                    f"comparison with NULL is never true; use '{ref.name} IS NULL' or 'IS NOT NULL'"
                )
            if self.at_keyword("nan"):
                raise self.error(
                    f"comparison with NaN is never true; use '{ref.name} IS NAN' or 'IS NOT NAN'"
                )
            value = self.parse_literal(f"after {tok.value!r}")
            return self.literal_predicate(_COMPARISONS[tok.value], ref, value, tok)
        if self.accept_keyword("is"):
            negated = self.accept_keyword("not")
            if self.accept_keyword("null"):
                return UnboundUnaryPredicate(Operation.NOT_NULL if negated else Operation.IS_NULL, ref)
            if self.accept_keyword("nan"):
                return UnboundUnaryPredicate(Operation.NOT_NAN if negated else Operation.IS_NAN, ref)
            raise self.error(
                f"expected NULL or NAN after IS{' NOT' if negated else ''}, found {self.tok.describe()}"
            )
        negated = self.accept_keyword("not")
        if self.accept_keyword("in"):
            return self.parse_in(ref, negated)
        if self.accept_keyword("like"):
            return self.parse_like(ref, negated)
        if self.accept_keyword("between"):
            low = self.parse_literal("after BETWEEN")
            self.expect_keyword("and", "between the BETWEEN bounds")
            high = self.parse_literal("after BETWEEN ... AND")
            between = And(
                UnboundLiteralPredicate(Operation.GT_EQ, ref, low),
                UnboundLiteralPredicate(Operation.LT_EQ, ref, high),
            )
            return Not(between) if negated else between
        expected = (
            "IN, LIKE or BETWEEN after NOT" if negated else "an operator (=, <, IN, IS NULL, LIKE, ...)"
        )
        raise self.error(f"expected {expected} after column {ref.name!r}, found {self.tok.describe()}")

    def parse_in(self, ref: Reference, negated: bool) -> BooleanExpression:
        self.expect("(", "after IN")
        values: list[LiteralValue] = [self.parse_literal("in the IN list")]
        while self.tok.kind == ",":
            self.advance()
            values.append(self.parse_literal("in the IN list"))
        if self.tok.kind != ")":
            raise self.error(f"expected ',' or ')' in the IN list, found {self.tok.describe()}")
        self.advance()
        return UnboundSetPredicate(Operation.NOT_IN if negated else Operation.IN, ref, values)

    def parse_like(self, ref: Reference, negated: bool) -> BooleanExpression:
        pattern_tok = self.tok
        if pattern_tok.kind != "string":
            raise self.error(f"expected a quoted pattern after LIKE, found {pattern_tok.describe()}")
        self.advance()
        escape = "\\"
        if self.accept_keyword("escape"):
            esc_tok = self.tok
            if esc_tok.kind != "string" or len(esc_tok.value) != 1:
                raise self.error("expected a one-character string after ESCAPE")
            escape = self.advance().value
        prefix, is_prefix = self.like_prefix(pattern_tok, escape)
        if is_prefix:
            op = Operation.NOT_STARTS_WITH if negated else Operation.STARTS_WITH
        else:
            op = Operation.NOT_EQ if negated else Operation.EQ
        return UnboundLiteralPredicate(op, ref, prefix)

    def like_prefix(self, tok: _Token, escape: str) -> tuple[str, bool]:
        """The literal prefix of a LIKE pattern and whether it ends in '%' (else: no wildcards)."""
        pattern = tok.value
        out: list[str] = []
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == escape:
                if i + 1 >= len(pattern):
                    raise self.error(f"LIKE pattern {pattern!r} ends with the escape character", tok)
                out.append(pattern[i + 1])
                i += 2
                continue
            if c == "%":
                if pattern[i:].strip("%") == "":
                    return "".join(out), True
                break
            if c == "_":
                break
            out.append(c)
            i += 1
        else:
            return "".join(out), False
        raise self.error(
            f"unsupported LIKE pattern {pattern!r}: only prefix patterns like 'abc%' (and patterns "
            f"without wildcards) can be pushed down; escape a literal % or _ with {escape!r}",
            tok,
        )

    def parse_literal(self, context: str) -> LiteralValue:
        tok = self.tok
        if tok.kind == "sign":
            self.advance()
            num = self.tok
            if num.kind != "number":
                raise self.error(f"expected a number after {tok.value!r}, found {num.describe()}")
            self.advance()
            value = _number(num.value)
            return -value if tok.value == "-" else value
        if tok.kind == "number":
            self.advance()
            return _number(tok.value)
        if tok.kind == "string":
            self.advance()
            return tok.value
        if tok.kind == "binary":
            self.advance()
            return bytes.fromhex(tok.value)
        if self.at_keyword("true", "false"):
            self.advance()
            return tok.value == "true"
        if self.at_keyword("null"):
            raise self.error("NULL is not a value; use IS NULL / IS NOT NULL")
        raise self.error(f"expected a literal {context}, found {tok.describe()}")

    def literal_predicate(
        self, op: Operation, ref: Reference, value: LiteralValue, op_tok: _Token
    ) -> BooleanExpression:
        try:
            return UnboundLiteralPredicate(op, ref, value)
        except ValidationError as e:
            raise self.error(str(e), op_tok) from e


def _number(text: str) -> int | Decimal:
    if any(c in text for c in ".eE"):
        return Decimal(text)
    return int(text)


def parse(text: str) -> BooleanExpression:
    """Parse a SQL-like filter string into an unbound expression (see the module docstring)."""
    if not isinstance(text, str):
        raise ValidationError(f"filter must be a string, got {type(text).__name__}")
    try:
        return _Parser(text).parse()
    except RecursionError:
        raise ValidationError(
            f"cannot parse filter: parentheses are nested too deeply in {text[:200]!r}"
        ) from None


__all__ = ["parse"]
