"""A pygments lexer for KIP, shipped for the shell's highlighting and for documentation.

Registered as the pygments entry point ``kip`` (pyproject.toml), so once the package is
installed ``pygmentize -l kip file.kip`` and Sphinx/MkDocs ```` ```kip ```` blocks use it.
The keyword lists mirror the token rules of ``grammar/kip.peg``; a test keeps them equal,
and the shell's completer offers the same words.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

__all__ = ["KipLexer", "KEYWORDS", "FUNCTIONS", "CONSTANTS"]

#: Statement and clause keywords (the upper-case token rules of the grammar).
KEYWORDS = (
    "ASC", "ATTRIBUTES", "BY", "CONCEPT", "CURSOR", "DELETE", "DESC", "DESCRIBE", "DETACH", "DISTINCT",
    "DOMAINS", "EXPECT", "EXPORT", "FILTER", "FIND", "FROM", "INTO", "LIMIT", "MERGE", "METADATA", "MODE",
    "NOT", "OPTIONAL", "ORDER", "PRIMER", "PROPOSITION", "PROPOSITIONS", "SEARCH", "SET", "THRESHOLD",
    "TYPE", "TYPES", "UNION", "UPDATE", "UPSERT", "VERSION", "WHERE", "WITH",
)  # fmt: skip
#: Aggregates, FILTER functions and UPDATE value functions: words followed by ``(``.
FUNCTIONS = (
    "COUNT", "SUM", "AVG", "MIN", "MAX",
    "IN", "IS_NULL", "IS_NOT_NULL", "CONTAINS", "STARTS_WITH", "ENDS_WITH", "REGEX",
    "ADD", "MUL", "CLAMP", "COALESCE",
)  # fmt: skip
CONSTANTS = ("true", "false", "null")

_STRING = r'"(?:[^"\\\n]|\\.)*"'


class KipLexer(RegexLexer):
    """KIP v1.0 (Knowledge Interaction Protocol): KQL, KML and META commands."""

    name = "KIP"
    aliases = ["kip"]
    filenames = ["*.kip"]
    mimetypes = ["text/x-kip"]
    url = "https://github.com/ldclabs/KIP"

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"/\*[\s\S]*?\*/", Comment.Multiline),
            # ``name:`` inside an object (before the generic rules claim the word)
            (r"(" + _STRING + r")(\s*)(:)(?!\w)", bygroups(Name.Attribute, Whitespace, Punctuation)),
            (r'"(?:[^"\\\n]|\\.)*"?', String.Double),  # an unterminated string stays a string while typing
            (r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![\w.])", Number),
            (r"(\?\w+)((?:\.\w+)+)", bygroups(Name.Variable, Name.Attribute)),
            (r"\?\w*", Name.Variable),
            (r":[A-Za-z_]\w*", Name.Constant),  # a placeholder bound from the request's parameters
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(FUNCTIONS, suffix=r"\b"), Name.Builtin),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (r"\$?\w+(?=\s*:(?!\w))", Name.Attribute),
            (r"==|!=|<=|>=|&&|\|\||[<>!|]", Operator),
            (r"[{}()\[\],:]", Punctuation),
            (r"\$?\w+", Name),
            (r".", Text),
        ]
    }
