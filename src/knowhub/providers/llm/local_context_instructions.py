"""Standing instructions and stated preferences of a person's message (issue 19 §1).

A *standing instruction* is a rule the user wants followed from now on — "always wrap
errors with %w", "never use default exports", "keep answers short", "回答用中文",
"以后所有代码都这样用 %w". It is a memory of the ``preferences`` category (seed 004:
偏好、约束、禁忌、风格倾向) with ``metadata.kind = "instruction"``, so that a coding agent
finds the user's rules as their own nodes instead of inside a multi-topic turn.

Detection is by general-language cues, English and Chinese, never by topic words:

* a frequency or scope adverb before a verb: ``always use``, ``never put``, ``every time``,
  ``from now on``, ``by default``, ``以后…都``, ``一律``, ``统一用``, ``务必``, ``每次…都``;
* an imperative that opens the sentence: ``Don't …``, ``Make sure …``, ``Please keep …``,
  ``不要…``, ``别用…``, ``请先…``;
* a rule on what the assistant writes: ``answers in Chinese``, ``comments in English``,
  ``注释请用中文``, ``错误信息都用中文``;
* an obligation over many things: ``all deployments must …``, ``所有…都必须…``.

A question ("should we always …?") or a message whose sentence only narrates ("it always
crashes") states no rule. :func:`preference_phrases` adds the preference wordings that the
like/dislike patterns miss: ``I'd rather …``, ``I want <thing>``, ``definitely no <thing>``.
"""

from __future__ import annotations

import re

from knowhub.providers.llm.local_context_text import has_cjk

__all__ = ["instruction_topic", "is_instruction", "is_listed_rule", "preference_phrases", "rules_follow"]

#: Verbs of a rule on work or writing (base forms): what "always"/"never" is followed by.
_RULE_VERBS = (
    "use|write|wrap|give|put|add|answer|reply|respond|include|keep|run|return|prefer|avoid|pin|log|check|validate|"
    "format|name|comment|explain|show|send|commit|push|test|document|mention|ask|start|end|quote|cite|split|store|"
    "handle|label|sort|round|call|make|leave|hardcode|hard-code|expose|print|catch|ignore|skip|mock|suggest|"
    "recommend|mix|touch|delete|drop|break|change|rename|translate|assume|be|do|set|type|declare|export|import|"
    "deploy|merge|rebase|squash|sign|lint|review|reply|respond|default|stick|follow|go|reach|rely|bump|upgrade"
)
_ALWAYS_VERB = re.compile(rf"\b(?:always|never|(?:do not|don't|dont) ever)\s+(?:\w+ly\s+)?(?:{_RULE_VERBS})\b", re.I)
_SCOPE_EN = re.compile(
    r"\b(?:from now on|going forward|from here on(?: out)?|in (?:the )?future|every time|each time|whenever you|"
    r"by default|as a rule|at all times|without exception|in every (?:answer|reply|response|file|message))\b", re.I)
_LEAD = r"^(?:(?:and|also|oh|ok(?:ay)?|one (?:more )?thing|btw|by the way|but|so|one rule|rule|note)\b[\s,:;—-]*)*"
_IMPERATIVE_EN = re.compile(
    _LEAD + r"(?:please\s+)?(?:always|never|don't|do not|dont|make sure|be sure|remember to|avoid|stick to|"
    r"keep (?:the |your |all |every |each )?(?:answers?|repl(?:y|ies)|responses?|explanations?|code|functions?|"
    r"files?|messages?|commits?|it|things|everything|lines?)|answer in|reply in|respond in|write (?:all |every |each )?"
    r"(?:answers?|comments?|code|docs?|commit messages?|replies|responses?) in|"
    r"please (?:use|write|keep|give|answer|reply|respond|stick|avoid|format|name|comment|put|no)|no more)\b", re.I)
_NOT_RULE_EN = re.compile(r"\b(?:don't|do not|dont) (?:worry|know|think|see|understand|mind|care|get|have|remember|"
                          r"recall|believe|need|want)\b|\bmake sure (?:i|it is|it's)\b|"
                          # a purpose or result, not a rule: "… the hosted page so we never touch card numbers"
                          r"\bso (?:that )?(?:we|they|it|he|she|you|i|customers?|users?) (?:never|always)\b", re.I)
_OBLIGATION_EN = re.compile(
    r"\b(?:all|every|each|any)\b[^.;!?]{0,40}\b(?:must|should always|should never|has to|have to|needs? to)\b|"
    r"\b(?:you|we|the code|code)\s+(?:must|should) (?:always|never|not ever)\b|\bmust (?:always|never)\b", re.I)
#: "no X please", "please no X", "definitely no X", "absolutely no X".
_NO_THING_EN = re.compile(r"(?:^|[,;:]\s*)(?:please\s+|(?:definitely|absolutely|strictly)\s+)no\s+\S+|"
                          r"^(?:and |also |but )?no\s+[^.;!?]{2,60}?\bplease\b", re.I)

_QUESTION_CN = re.compile(r"(?:吗|么|呢)\s*[？?]?$|[？?]\s*$")
_SCOPE_CN = re.compile(
    r"(?:^|[，,：:；\s])(?:以后|今后|往后|之后)(?:都|所有|每|一律|请|要|也|统一|就|全|不要|别)|从现在(?:起|开始)|从今(?:以后|往后)|"
    r"(?:^|[，,：:；\s])(?:以后|今后|往后)(?:你|您|我们)[^。；！？]{0,40}?(?:都要|都得|都必须|一律|必须)|"
    r"^(?:[一二两三四五六七八九几]|\d+)\s*(?:条|个|项|点)新?(?:规矩|规则|要求|原则)[：:，,]|新规矩[：:]|"
    r"一律|务必|始终|每次[^，。]{0,8}都(?!是)|总是要|永远不要|都必须|必须都|统一(?:用|使用|成|为|写|改成)|全部(?:用|使用)|"
    r"不准|禁止|不许|千万(?:别|不要)")
_IMPERATIVE_CN = re.compile(
    r"^(?:另外|还有|对了|补充一点|顺便说一下|顺便|最后)?[，,：:\s]*(?:请(?:你)?)?(?:不要|别(?:用|再|加|写|给|把|引入|上)|"
    r"不能|一定要|记得|记住)|[，,；;](?:必须|不要|千万|不能(?:用|写|再|直接|随便|把|提交|引入|硬编码|写死|省略|跳过))|"
    r"请(?:你)?(?:都|一律|统一|务必|始终|总是|不要|别|先|保持|尽量|按照?|以)")
#: A rule on what the assistant writes: "回答用中文", "注释请用中文", "SQL 关键字都用小写".
_STYLE_CN = re.compile(
    r"(?:回答|回复|答复|注释(?!掉)|代码|变量名|函数名|命名|提交信息|commit|错误信息|报错|日志|文档|说明|关键字|缩进|接口)"
    r"[^，。；！？]{0,8}?(?:请|都|要|必须|一律|统一|全)*(?:用|使用|写成|保持|采用)")
_OBLIGATION_CN = re.compile(r"(?:所有|每个|每一个|每次|任何|全部)[^。；！？]{0,24}(?:都(?:要|必须|得|用|不|写|带)|必须|一定要|不能|不要|不许|不准)")


def is_instruction(sentence: str, cjk: bool) -> bool:
    """True when the sentence states a standing rule for the assistant or the project."""
    text = sentence.strip()
    if not text or len(text) > 400:
        return False
    if cjk:
        if _QUESTION_CN.search(text) or (re.search(r"(?:要不要|是否|能不能|可不可以|怎么|如何|为什么|哪)", text)
                                         and not _SCOPE_CN.search(text)):  # "讲清楚为什么" inside a rule
            return False
        return bool(_SCOPE_CN.search(text) or _IMPERATIVE_CN.search(text) or _STYLE_CN.search(text)
                    or _OBLIGATION_CN.search(text))
    if text.rstrip("\"'”’) ").endswith("?") or _NOT_RULE_EN.search(text):
        return False
    if (re.search(r"\b(?:should we|could you|can you|would you|do you|whether|if)\b", text, re.I)
            or re.match(r"(?:what|how|why|which|when|where|who)\b", text, re.I)) and not _SCOPE_EN.search(text):
        return False
    return bool(_ALWAYS_VERB.search(text) or _SCOPE_EN.search(text) or _IMPERATIVE_EN.search(text)
                or _OBLIGATION_EN.search(text) or _NO_THING_EN.search(text))


#: A sentence that announces a list of rules ("A few standing rules for this project:",
#: "先定几条规矩"): the enumerated items after it ("One: …", "Two: …", "1. …", "一，…") are rules.
_RULES_INTRO = re.compile(
    r"\b(?:standing|ground|house|some|a few|few|two|three|four|five|my|our) (?:\w+ )?"
    r"(?:rules|instructions|conventions|guidelines)\b(?! (?:of|about|in|on|engine|say|says|said)\b)|"
    # (?<!\d): a count starts where its digits start, so a long run of digits is read once, not
    # once per digit (32,000 digits took 17 s)
    r"(?:[一二两三四五六七八九几]|(?<!\d)\d+)\s*(?:条|个|项|点)新?(?:规矩|规则|要求|原则)|规矩[：:]", re.I)
_ENUM_ITEM = re.compile(
    r"^\s*(?:(?:one|two|three|four|five|six|first|second|third|fourth|fifth|sixth|lastly|finally)\s*[:,.)—-]|"
    r"\d{1,2}\s*[.):、]|[-*•]\s|[一二三四五六七八九十][，,、：:.]|第[一二三四五六七八九十]\s*(?:条|点|个)?[，,、：:])", re.I)


def rules_follow(sentence: str) -> bool:
    """True when the sentence announces a list of standing rules."""
    text = sentence.strip()
    return bool(_RULES_INTRO.search(text)) and not _QUESTION_CN.search(text) and not text.endswith("?")


def is_listed_rule(sentence: str) -> bool:
    """True for an enumerated item ("Two: all customer-facing text in British English",
    "二，不要随便引入新的中间件") — a rule when the message announced a list of rules."""
    text = sentence.strip()
    return bool(_ENUM_ITEM.match(text)) and len(text) <= 400 and not text.rstrip("\"'”’) ").endswith(("?", "？"))


_CUE_WORDS = frozenset(
    """always never please don't dont do not make sure be remember avoid keep from now on going forward future every time
    each whenever default rule all must should has have need needs to no definitely absolutely strictly one more thing
    also and oh okay ok btw by way but so note ever""".split()  # noqa: SIM905
)
_CUE_CN = re.compile(r"以后|今后|往后|之后|从现在起|从现在开始|一律|务必|始终|每次|总是|永远|都|必须|统一|全部|不准|禁止|不许|"
                     r"千万|不要|别|请|一定要|记得|记住|另外|还有|对了|所有|每个|你|我们|我|的|要|也|就|用")


def instruction_topic(sentence: str, cjk: bool, stopwords: frozenset[str]) -> str:
    """A short key of what the rule is about (its first content words, cue words dropped)."""
    if cjk:
        core = re.sub(r"^(?:很好|好的|好|可以|不行|行|嗯|对|是的)[，,\s]*", "", sentence.strip())
        core = _CUE_CN.sub("", re.sub(r"[\s，,。：:；;！!、“”\"'`()（）]", " ", core))
        units = re.findall(r"[A-Za-z][\w.%-]*|\d+|[\u3400-\u9fff]", core)
        return "".join(u if has_cjk(u) else f" {u} " for u in units[:8]).strip().replace("  ", " ") or sentence.strip()[:8]
    words = [w for w in re.findall(r"[\w%'\-.]+", sentence.lower())
             if w not in stopwords and w not in _CUE_WORDS and not w.startswith("-")]
    return " ".join(w.strip(".") for w in words[:3]) or sentence.strip()[:30]


#: "I'd rather have X", "I would prefer X", "i want BIG fonts" (a thing, not "to …").
_RATHER_EN = re.compile(
    r"\b(?:I|we)\s*(?:'d|would|really|just|also|do)?\s*(rather|prefer|want)\s+(?!to\b|it\b|that\b|this\b|you\b|them\b|"
    r"some help|help|a hand|your)([^.!?;]{2,80})", re.I)
_NO_PREF_EN = re.compile(r"(?:^|[,;:]\s*)(?:definitely|absolutely|strictly|please)\s+no\s+([\w.\-`]+(?:\s+[\w.\-`]+){0,3})|"
                         r"^(?:and |also |but )?no\s+([\w.\-`]+(?:\s+[\w.\-`]+){0,3}?),?\s+please\b", re.I)


def preference_phrases(sentence: str) -> list[tuple[str, str]]:
    """``(verb, object)`` pairs of preference wordings the like/dislike patterns miss."""
    out: list[tuple[str, str]] = []
    for match in _RATHER_EN.finditer(sentence):
        verb = match.group(1).lower()
        obj = match.group(2).strip()
        if verb == "rather" and obj.lower().startswith("not "):
            out.append(("would rather not", obj[4:]))
        elif verb == "rather" and re.match(r"(?:have|use|go with|keep|do|stick with|write|run|see)\b", obj, re.I):
            out.append(("would rather", obj))
        elif verb in ("prefer", "want") and not re.match(r"(?:a |an )?(?:quick|short) (?:question|summary)\b", obj, re.I):
            out.append(("wants" if verb == "want" else "prefers", obj))
    for match in _NO_PREF_EN.finditer(sentence):
        obj = (match.group(1) or match.group(2) or "").strip()
        if obj:
            out.append(("does not want", obj))
    return out
