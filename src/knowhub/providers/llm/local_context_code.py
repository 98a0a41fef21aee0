"""What must never become an entity in a technical chat, and what is a language, not a place.

A coding chat is full of capitalised words that name nothing in the world: literals and
keywords (``False``, ``None``), SQL and HTML (``CREATE TABLE IF NOT EXISTS``,
``DOCTYPE``), type names (``DateTime``) and identifiers (``SessionStore``,
``getUserName``, ``user_id``). And "answer in Chinese" or "from French to German" put a
language after a preposition that otherwise introduces a place. The rules here are built
from general knowledge only: the keyword lists of common programming languages, SQL and
HTML; the type names of their standard libraries; the shapes of identifiers (snake_case,
lowerCamelCase, PascalCase made of code words); the English names of the ISO 639
languages and their usual Chinese names; the names of common programming languages.

* :func:`strip_code` blanks fenced and indented code blocks, inline code, HTML tags, URLs,
  paths and calls before names are looked for;
* :func:`trim_code_words` drops code words from the ends of a run of capitalised words;
* :func:`check_entity` is the one check of a found (or model-given) entity: ``None`` for a
  code token, else its type, ``language`` for a language name.
"""

from __future__ import annotations

import re

__all__ = [
    "CODE_WORDS",
    "LANGUAGES",
    "check_entity",
    "glued_to_identifier",
    "is_code_token",
    "is_language",
    "strip_code",
    "trim_code_words",
]

# ---------------------------------------------------------------------- code blocks

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INDENTED = re.compile(r"^(?: {4,}|\t)\S")
_LIST_ITEM = re.compile(r"^(?:[-*+•]|\d+[.)])\s")
#: A line that reads as code: call or index brackets, assignment, braces, statement ends,
#: arrows, comments, a block opener's colon, or a leading keyword of a common language.
_CODE_LINE = re.compile(
    r"[(){}\[\];=]|->|=>|::|</|^\s*(?:#|//|/\*|--\s|@\w)|:\s*$|"
    r"^\s*(?:def|class|return|import|from|if|elif|else|for|while|try|except|finally|with|async|await|"
    r"const|let|var|function|public|private|protected|static|package|func|fn|impl|struct|enum|"
    r"SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|pass|raise|yield|lambda|echo|export|sudo|pip|npm|git)\b"
)
_INLINE_CODE = re.compile(r"(`+)[^`]*?\1")
_HTML_TAG = re.compile(r"<[!/?]?[A-Za-z][^<>\n]{0,300}>")
_URL = re.compile(r"\b(?:https?|ftp|file|wss?)://\S+|\bwww\.\S+")
#: Paths: a leading ``/``, ``./``, ``~/``, or two slashes or more ("src/app/main").
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[\w.\-/]+|(?<![\w/])[\w.\-]+/[\w.\-]+/[\w.\-/]+")
#: File names with a common source, config or data extension.
_FILE = re.compile(
    r"\b[\w\-.]+\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|json|ya?ml|toml|ini|cfg|conf|env|md|rst|txt|csv|sql|html?|css|"
    r"scss|go|rs|java|kt|rb|php|c|cc|cpp|h|hpp|cs|swift|sh|bash|zsh|ps1|lock|xml|proto|gradle|vue|svelte)\b"
)
#: Calls and dotted member chains: ``getUserName()``, ``Booking.query.get``.
_CALL = re.compile(r"\b[A-Za-z_][\w.]*\([^()\n]{0,80}\)|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}")
#: Command-line flags: a dash or two glued to a word after a space ("-Wall", "--no-cache").
_FLAG = re.compile(r"(?<![\w\-])--?[A-Za-z][\w\-.=:+/,]*")


def strip_code(text: str) -> str:
    """``text`` with its code blanked out (line breaks kept, so sentences stay apart).

    Fenced blocks (``` or ~~~, to the closing fence or the end), indented blocks whose
    first line reads as code, inline code, HTML/XML tags, URLs, paths, file names,
    calls and command-line flags go; prose stays.
    """
    out: list[str] = []
    fence: str | None = None
    in_block = False
    for line in text.split("\n"):
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append("")
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(1)[0] * 3
            out.append("")
            continue
        stripped = line.strip()
        if _INDENTED.match(line) and not _LIST_ITEM.match(stripped) and (in_block or _CODE_LINE.search(stripped)):
            in_block = True
            out.append("")
            continue
        in_block = in_block and not stripped  # a blank line may sit inside an indented block
        out.append(_blank_inline(line))
    return "\n".join(out)


def _blank_inline(line: str) -> str:
    for pattern in (_INLINE_CODE, _HTML_TAG, _URL, _PATH, _FILE, _CALL, _FLAG):
        line = pattern.sub(" ", line)
    return line


# ---------------------------------------------------------------------- code words

#: Literals and capitalised keywords of common languages (Python, JavaScript, Java, C#,
#: Go, Rust, Ruby, SQL), as a developer writes them in prose.
_LITERALS = """
True False None Null NULL Nil NaN Infinity Undefined Void TRUE FALSE NONE NIL NAN
"""
#: SQL keywords and column types (upper case, as SQL is written).
_SQL = """
SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE ALTER DROP TABLE TABLES INDEX VIEW IF NOT
EXISTS PRIMARY FOREIGN KEY KEYS REFERENCES UNIQUE DEFAULT CONSTRAINT CHECK JOIN INNER LEFT RIGHT OUTER
FULL CROSS ON USING GROUP BY ORDER HAVING LIMIT OFFSET AS AND OR IN IS LIKE ILIKE BETWEEN DISTINCT UNION
ALL ANY CASE WHEN THEN ELSE END BEGIN COMMIT ROLLBACK SAVEPOINT TRANSACTION GRANT REVOKE TRIGGER
PROCEDURE FUNCTION RETURNS RETURN DECLARE CASCADE RESTRICT AUTO_INCREMENT AUTOINCREMENT SERIAL
BIGSERIAL INTEGER INT BIGINT SMALLINT TINYINT DECIMAL NUMERIC FLOAT REAL DOUBLE PRECISION CHAR
VARCHAR NVARCHAR TEXT BLOB CLOB BOOLEAN BOOL DATE TIME DATETIME TIMESTAMP TIMESTAMPTZ INTERVAL UUID
JSONB BYTEA ARRAY ENUM ASC DESC EXPLAIN ANALYZE VACUUM WITH RECURSIVE RETURNING CONFLICT DO NOTHING
LOCK SHARE EXCLUSIVE MODE NOWAIT SCHEMA DATABASE COLUMN ADD RENAME TO TRUNCATE MERGE MATCHED UPSERT
REPLACE PRAGMA COPY COLLATE CHARSET ENGINE OWNER SEQUENCE NEXTVAL COUNT SUM AVG MIN MAX COALESCE CAST
"""
#: HTML element and declaration names (upper case), HTTP methods, log levels and the
#: usual constant-like words of code and build files.
_MARKUP_AND_CONSTANTS = """
DOCTYPE DIV SPAN IMG UL OL LI TR TD TH BR HR META SCRIPT STYLE TBODY THEAD IFRAME NAV HEAD BODY TITLE
GET POST PUT PATCH OPTIONS TRACE CONNECT
DEBUG INFO WARN WARNING ERROR FATAL CRITICAL TODO FIXME XXX README CHANGELOG LICENSE EOF STDIN
STDOUT STDERR ENV PATH HOME PWD UTF ASCII CWD ARGV
"""
#: Standard-library type names that are no English words (``DateTime``, ``HashMap``).
_CODE_TYPES = """
Str Int Bool Integer Boolean BigInt BigInteger BigDecimal DateTime Datetime TimeSpan TimeDelta Timedelta
LocalDate LocalDateTime ZonedDateTime ArrayList LinkedList Dict HashSet HashMap TreeMap Tuple Enum Struct
Impl Func Lambda Vec Rc Arc Uint8Array StringBuilder DataFrame NodeList IEnumerable Goroutine Mutex Deque
RegExp Regex Uuid UUID Awaitable Coroutine Callable Iterable Readonly Nullable
"""
#: Code words: a run of capitalised words made only of these is code, and they are cut
#: from the ends of a longer run ("CREATE TABLE IF NOT EXISTS", "DateTime NOT NULL").
CODE_WORDS = frozenset((_LITERALS + _SQL + _MARKUP_AND_CONSTANTS + _CODE_TYPES).split())
#: Type names that are also English words: code as a whole name ("a Date", "the Promise"),
#: but never cut from a longer name ("State Department", "Future Leaders").
_WORD_TYPES = frozenset(
    """
String Float Double Long Short Byte Char Decimal Number Date Timestamp Duration Instant Array List Set
Map Object Optional Any Union Promise Future Iterator Generator Sequence Mapping Exception Error Option
Result Trait Tensor Buffer Symbol Partial Queue Stack Props Reducer Headers Blob Matcher
""".split()  # noqa: SIM905
)

#: The last part of an identifier that names a role in a program (PascalCase names ending
#: so are classes, components or types: ``SessionStore``, ``BookingService``).
_ROLE_SUFFIXES = frozenset(
    """
Service Services Manager Handler Handlers Controller Factory Provider Providers Exception Error Errors
Component Config Configuration Client Request Response Builder Store Repository Repo Adapter Helper
Helpers Util Utils Listener Callback Middleware Serializer Parser Validator Resolver Reducer Context
Props State Schema Model Models ViewModel Dto DTO Impl Interface Type Types Id ID Ids Enum Map List
Array Set Dict Hook Queue Worker Mixin Struct Trait Iterator Generator Wrapper Loader Runner Executor
Scheduler Logger Entity Entities Params Args Options Module Plugin Router Token Tokens Session Widget
Spec Mock Stub
""".split()  # noqa: SIM905
)
#: Words identifiers are commonly made of; a PascalCase name made only of these is code.
_IDENT_PARTS = _ROLE_SUFFIXES | frozenset(
    """
Get Set Is Has Add Remove Delete Update Create Find Load Save Fetch Send Read Write Parse Build Make Init
New Old Default Abstract Base Main App User Users Account Auth Login Logout Admin Home Index Max Min
Total Sum Avg Num Number String Int Bool Float Double Long Char Byte Local Global Zoned Offset Hash Tree
Linked Sorted Big Small Http Https Json Xml Html Css Sql Db Api Io Async Sync File Files Image Text
Message Messages Booking Order Orders Product Cart Payment Price Customer Email Password Profile Post
Comment Comments Search Filter Sort Group Cache Cached Lazy Eager Null Nullable Date Time Day Month Year
Start End First Last Next Prev Current Temp Tmp Result Results Success Fail Failed Debug Log Name Names
Key Keys Value Values Count Data Info Item Items Status Page Screen Modal Dialog Button Form Field Fields
Input Output Label Panel Layout Table Row Column Handle Path Url Uri Stream Reader Writer Buffer View
Event Events Task Tasks Job Jobs Test Tests Node Nodes Record Records Object Option Ref Refs
""".split()  # noqa: SIM905
)
_HUMP = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]+|[a-z0-9]+")
_LOWER_CAMEL = re.compile(r"^[a-z][a-z0-9]+[A-Z][a-z]")


def _is_identifier(word: str) -> bool:
    """A word shaped like an identifier: snake_case, CONSTANT_CASE, lowerCamelCase, or
    PascalCase that ends in a program role or is made of identifier words only."""
    word = word.strip("'’.,:;!?\"()")
    if not word:
        return False
    if "_" in word.strip("_") or _LOWER_CAMEL.match(word):
        return True
    humps = _HUMP.findall(word)
    if len(humps) < 2 or "".join(humps) != word or not word[0].isupper():
        return False
    if word.isupper():  # an acronym ("NASA"), not PascalCase
        return False
    return humps[-1] in _ROLE_SUFFIXES or all(h in _IDENT_PARTS for h in humps)


def _bare(word: str) -> str:
    return word.strip("'’.,:;!?\"()")


def _is_code_word(word: str) -> bool:
    bare = _bare(word)
    return bare in CODE_WORDS or _is_identifier(bare)


#: Characters and marks no name holds: assignment, braces, statement ends, scope arrows.
_CODE_MARKS = re.compile(r"[{}\[\]<>=;`$\\|]|::|->|\(\)")


def is_code_token(name: str) -> bool:
    """True when ``name`` is code, not a name: every word a code word or code type, or any
    word an identifier (``DateTime``, ``CREATE TABLE IF NOT EXISTS``, ``user_id``, ``False``)."""
    words = name.split()
    if not words:
        return False
    if _CODE_MARKS.search(name) or any(_is_identifier(w) for w in words):
        return True
    return all(_is_code_word(w) or _bare(w) in _WORD_TYPES for w in words)


def trim_code_words(words: list[str]) -> list[str]:
    """``words`` without code words at either end ("Python the BookingService" → "Python
    the"; a run of code words → nothing)."""
    start, end = 0, len(words)
    while start < end and _is_code_word(words[start]):
        start += 1
    while end > start and _is_code_word(words[end - 1]):
        end -= 1
    return words[start:end]


#: Function words a typo may glue to a name ("forMax", "andLisbon"); no identifier starts so.
_GLUED_TYPO = frozenset(["a", "an", "and", "or", "but", "for", "nor", "so", "the", "of", "at", "by", "from", "with", "my", "our", "your", "his", "her", "their"])


def glued_to_identifier(text: str, start: int) -> bool:
    """True when the capital at ``text[start]`` continues a Latin word ("get|UserName"):
    the capitalised part of an identifier, not the start of a name. A function word glued
    to a name by a missing space ("forMax") is a typo, not an identifier."""
    if start <= 0:
        return False
    before = text[start - 1]
    if before == "_" or (before == "." and start > 1 and text[start - 2].isascii() and text[start - 2].isalnum()):
        return True  # "user_Name", "fmt.Errorf": a member of a package or object
    if not (before.isascii() and before.isalnum()):
        return False
    head = start
    while head > 0 and text[head - 1].isascii() and text[head - 1].isalnum():
        head -= 1
    return text[head:start].lower() not in _GLUED_TYPO


# ---------------------------------------------------------------------- languages

#: English names of the ISO 639 languages most often named in conversation, with common
#: variants (Mandarin, Cantonese, Farsi), and the demonym-languages people say they speak.
_LANGUAGES_EN = """
Afrikaans Albanian Amharic Arabic Armenian Azerbaijani Basque Belarusian Bengali Bosnian Breton Bulgarian
Burmese Catalan Cantonese Cebuano Chinese Corsican Croatian Czech Danish Dutch English Esperanto Estonian
Faroese Farsi Filipino Finnish Flemish French Frisian Gaelic Galician Georgian German Greek Guarani
Gujarati Haitian Hakka Hausa Hawaiian Hebrew Hindi Hmong Hokkien Hungarian Icelandic Igbo Indonesian
Irish Italian Japanese Javanese Kannada Kazakh Khmer Kinyarwanda Korean Kurdish Kyrgyz Lao Latin Latvian
Lithuanian Luxembourgish Macedonian Malagasy Malay Malayalam Maltese Mandarin Maori Marathi Mongolian
Nepali Norwegian Occitan Oriya Pashto Persian Polish Portuguese Punjabi Quechua Romanian Romansh Russian
Samoan Sanskrit Scots Serbian Sesotho Shona Sindhi Sinhala Sinhalese Slovak Slovenian Somali Spanish
Sundanese Swahili Swedish Tagalog Tajik Tamil Tatar Telugu Thai Tibetan Tigrinya Tongan Turkish Turkmen
Ukrainian Urdu Uyghur Uzbek Vietnamese Welsh Wolof Xhosa Yiddish Yoruba Zulu Shanghainese Teochew
"""
#: Names of common programming languages that are no common first names or words.
_PROGRAMMING = """
Python Java JavaScript TypeScript Kotlin Rust Perl PHP Scala Haskell Erlang Elixir Clojure Lua Fortran
COBOL Pascal Golang Groovy Objective-C OCaml Lisp Prolog MATLAB Bash PowerShell Solidity Zig Nim
CoffeeScript Elm Racket Scheme Smalltalk VBScript Verilog VHDL WebAssembly
"""
#: Usual Chinese names of languages (a word ending in 语 is a language too).
_LANGUAGES_CN = """
中文 汉语 普通话 国语 华语 粤语 广东话 闽南话 客家话 上海话 英语 英文 法语 法文 德语 德文 日语 日文 韩语 韩文 朝鲜语 俄语 俄文
西班牙语 西语 葡萄牙语 葡语 意大利语 阿拉伯语 印地语 孟加拉语 乌尔都语 土耳其语 波斯语 希伯来语 希腊语 拉丁语 荷兰语 瑞典语
挪威语 丹麦语 芬兰语 波兰语 捷克语 匈牙利语 罗马尼亚语 乌克兰语 越南语 泰语 印尼语 马来语 菲律宾语 藏语 蒙古语 维吾尔语 世界语
"""
LANGUAGES = frozenset((_LANGUAGES_EN + _PROGRAMMING + _LANGUAGES_CN).split())
_CN_LANGUAGE = re.compile(r"^[\u4e00-\u9fff]{1,5}语$")


def is_language(name: str) -> bool:
    """True for the name of a human or programming language ("Chinese", "英语", "Python")."""
    bare = name.strip()
    return bare in LANGUAGES or bare.capitalize() in LANGUAGES or bool(_CN_LANGUAGE.match(bare))


def check_entity(name: str, kind: str | None) -> str | None:
    """The type an entity ``name`` keeps, or None when it is a code token (no entity).

    A language is typed ``language``, never a place; a "place" written like an identifier
    (internal capitals: "from SQLAlchemy") is only a named entity. Persons, relations and
    other types pass unchanged.
    """
    kind = kind or ""
    if kind != "relation" and is_code_token(name):
        return None
    if kind not in ("person", "relation") and is_language(name):
        return "language"
    if kind == "place" and any(any(c.isupper() for c in w[1:]) and not w.isupper() for w in name.split()):
        return "named entity"
    return kind
