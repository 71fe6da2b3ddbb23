"""A pygments lexer for KIP, shipped for the shell's highlighting and for documentation.

Registered as the pygments entry point ``kip`` (pyproject.toml), so once the package is
installed ``pygmentize -l kip file.kip`` and Sphinx/MkDocs ```` ```kip ```` blocks use it.
The keyword and function words are read from the token rules of ``grammar/kip.peg`` (a new
command's keywords need no edit here), and the shell's completer offers the same words.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

from ..resources import grammar_text

__all__ = ["KipLexer", "KEYWORDS", "FUNCTIONS", "CONSTANTS"]


def _token_words() -> dict[str, tuple[str, ...]]:
    """The upper-case words each regex token rule of the grammar accepts (``FIND = ~r"FIND(?!\\w)" _``).

    Read from the text, not the compiled grammar: highlighting a file must not build the parser."""
    rules = re.findall(r'^([A-Z_]+)\s*=\s*~r"(.*?)"', grammar_text(), re.M)
    return {name: tuple(re.findall(r"[A-Z][A-Z_]+", pattern)) for name, pattern in rules}


_WORDS = _token_words()
#: The tokens of words followed by ``(``: aggregates, FILTER functions, UPDATE value functions.
_FUNCTION_TOKENS = ("AGGREGATE", "FUNCTION", "UPDATE_FUNCTION")
#: Statement and clause keywords (the other upper-case token rules of the grammar).
KEYWORDS = tuple(sorted({word for name, found in _WORDS.items() if name not in _FUNCTION_TOKENS for word in found}))
FUNCTIONS = tuple(word for name in _FUNCTION_TOKENS for word in _WORDS[name])
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
