"""LocalAgent rules for ``extract_knowledge`` (seed 003 "知识提取机制"), Chinese and English.

payload ``{messages: [{id, role, content}]}`` → ``{"items": [{types, task, content, tags,
message_ids}]}``. Deterministic rules standing in for a model, tuned for precision: a
memory system that invents memories is worse than one that misses some, so a sentence is
kept only when a positive cue fires and no blocking cue does.

Where the cues come from. Every word list below is a closed grammatical class or a general
lexical class written from general knowledge of English and Mandarin grammar, not from any
benchmark or labelled text:

* **question forms** — the question mark (``?``/``？``), sentence-final 吗/么, Chinese
  A-not-A forms (能不能, 是不是, ...), English auxiliary inversion (``can you``, ``do we``)
  and wh-word + auxiliary openings;
* **modal verbs of necessity, prohibition and restriction** (must, have to, need to,
  can't, cannot, can only, not allowed, may not; 必须, 不能, 只能, 不允许, 禁止, 不得, 务必)
  and **quantity limits** (at most, no more than, capped at, 不超过);
* **negative imperatives** (don't, do not, never, avoid; 不要, 别, 请勿, 千万不要), with
  the pragmatic verbs that turn them into reminders or reassurance (forget, worry, mind,
  bother, hesitate; 忘, 担心, 着急, 客气, 管) and **time/scope deictics** that make an
  instruction one-off (now, today, this time, this reply, for now; 现在, 今天, 这次,
  这一条, 先, 暂时);
* **verbs of cognition** after a negation (think, know, believe, remember, ...; 觉得,
  知道, 确定, ...): "I don't think ..." states an opinion, not a constraint;
* **first-person preference verbs** (prefer, would rather, like, love, enjoy, hate,
  dislike; 喜欢, 偏好, 倾向于, 宁愿, 讨厌) and the **deictic objects** that make them
  feedback on the reply (this, that, it; 这个, 那个);
* **habitual and frequency adverbs** (always, usually, normally, typically, often, every
  + time noun; 一般, 通常, 总是, 习惯, 经常, 每次, 每周, 平时);
* **agentive noun morphology** for occupations (English -er/-or/-ist/-ian/-ant/-ent/-eer;
  Chinese 师/员/生/家/者/长/经理) and the copula/work verbs (I am a ..., I work as/at,
  我是…, 我在…工作, 我负责);
* **evaluative adjectives and nouns** (great, good, bad, awesome, pain, mess; 很棒, 不错,
  好用) that make "X is a great Y" an opinion, not a definition; definitional verbs and
  apposition markers (is a, refers to, means, stands for, i.e., short for, also known
  as; 是指, 指的是, 即, 也就是, 简称, 全称);
* **discourse sequence markers** (first, then, next, finally; 首先, 然后, 再, 接着, 最后)
  and list numbering (``1.``, ``2)``, ``Step 3``, 第一步);
* **problem-solution markers** for lessons: :mod:`.local_knowledge_lessons` (resolution,
  cause and lesson markers with hedges that block them; the sentences of one message that
  carry them make one ``strategy`` item), and **adoption verbs + change-of-state outcomes**
  (we used / migrated / switched ... cut / reduced / from ... to; 我们用 / 迁到 / 换成 ...
  降到 / 提升 / 快了) for use cases;
* shell **command shape** (a lowercase program name followed by ``-flag``/``--flag``,
  ``$`` prompts, code fences) for tool usage.

Rules per sentence of a user message (profile) and of any message (expertise) are
documented in ``docs/knowledge.md`` ("Extraction rules"); the labelled benchmark is
``benchmarks/extraction_bench.py``.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from knowhub.providers.llm.local_knowledge_lessons import is_lesson
from knowhub.text import has_han, normalize

__all__ = ["extract_knowledge", "is_question", "profile_category", "split_sentences"]

# --------------------------------------------------------------------------- sentences

_SENTENCE = re.compile(r"[^。！？!?；;\n]+(?:[。！？!?；;]+|\n|$)")
_LATIN_STOP = re.compile(r"(?<=[a-z0-9)\"'][.!?])\s+(?=[A-Z\"'\u4e00-\u9fff])")


def split_sentences(text: str) -> list[str]:
    """Sentences with their closing punctuation (Chinese and Latin), blanks dropped.

    Latin periods end a sentence only before whitespace and a capital or Han character,
    so ``e.g.``, ``v1.2`` and ``.[dev]`` stay inside their sentence.
    """
    out = []
    for match in _SENTENCE.finditer(text):
        for sentence in _LATIN_STOP.split(match.group(0)):
            sentence = sentence.strip()
            if sentence:
                out.append(sentence)
    return out


# --------------------------------------------------------------------------- blocking cues

_QUESTION_EN = re.compile(
    r"^(?:(?:so|and|but|ok|okay|hmm|well)[, ]+)?(?:"
    r"(?:can|could|would|will|do|does|did|is|are|was|were|should|shall|may|might|have|has)"
    r"(?:n't)?\s+(?:you|i|we|it|this|that|there|they|he|she)\b|"
    r"(?:what|why|how|who|where|when|which)(?:'s|\s+(?:is|are|was|were|do|does|did|can|"
    r"could|would|should|will|shall|may|might)\b))",
    re.I,
)
_QUESTION_ZH = re.compile(
    r"(?:吗|么)\s*[。.!！…]*$|能不能|是不是|有没有|可不可以|要不要|会不会|对不对"
)
_TAG_QUESTION = re.compile(
    r"[,，]\s*(?:isn't|aren't|don't|doesn't|didn't|won't|right|no)\b[^,]*$|对吧|是吧|对不对", re.I
)


def is_question(sentence: str) -> bool:
    """Questions, rhetorical ones included: they ask, they do not state knowledge."""
    text = sentence.strip().rstrip("\"'”’)）")
    if text.endswith(("?", "？")):
        return True
    if _TAG_QUESTION.search(text):
        return True
    if has_han(text) and _QUESTION_ZH.search(text):
        return True
    return bool(_QUESTION_EN.match(text)) and not re.match(r"(?i)do\s+not\b", text)


_ONE_OFF_EN = re.compile(
    r"\b(?:right now|for now|for the moment|at the moment|just now|today|tonight|tomorrow|"
    r"yet|this (?:time|reply|answer|response|message|one|morning|afternoon|evening|week)|"
    r"next (?:week|time)|in (?:a few|\d+|ten|five|two|a couple of) (?:minutes?|hours?|days?))\b",
    re.I,
)
_ONE_OFF_ZH = re.compile(
    r"现在|今天|今晚|明天|这次|这一次|这一条|这条|这回|暂时|马上|一会儿|刚才|^先|[，,]先"
)
_COGNITION_EN = (
    r"(?:think|believe|know|remember|recall|understand|see|imagine|tell|say|figure|wait|"
    r"decide|agree|guess|find|get)"
)
_REMINDER_EN = r"(?:forget|worry|mind|bother|hesitate|panic|stress|be afraid)"
_REMINDER_ZH = r"(?:忘|担心|着急|客气|管|急|怕|在意)"
_NOT_SUBJECT = {
    "you", "it", "this", "that", "there", "he", "she", "they", "which", "who", "what",
}  # fmt: skip


def _one_off(sentence: str) -> bool:
    return bool(_ONE_OFF_ZH.search(sentence) if has_han(sentence) else _ONE_OFF_EN.search(sentence))


# --------------------------------------------------------------------------- profile cues

_ADVERBS = r"(?:\s+(?:really|generally|personally|usually|much|definitely|also|still|strongly|do|always|normally))*"
_PREFERENCE_EN = re.compile(
    rf"\bI{_ADVERBS}\s+(?:prefer|like|love|enjoy|hate|dislike|favou?r|detest|can't stand|"
    rf"cannot stand)\b(?P<object>\s+\w+)?|\bI(?:'d| would){_ADVERBS}\s+(?:rather|prefer)\b"
    r"(?P<object2>\s+\w+)?|\bmy (?:preference|personal preference) is\b|"
    r"\bI(?:'m| am)\s+(?:(?:more|much more|not much|not)\s+)?(?:of\s+)?an?\s+(?:big\s+|huge\s+)?"
    r"(?:\w+\s+){0,2}?(?:person|fan of|lover|fan)\b",
    re.I,
)
_PREFERENCE_ZH = re.compile(
    r"我(?:比较|更|很|最|非常|一直|还是|一般|个人|本人|也|都|特别|挺)*"
    r"(?:喜欢|偏好|偏爱|倾向于|偏向于?|讨厌|不喜欢|不太喜欢|更愿意|愿意|宁愿|宁可|反感)(?P<object>.?)"
)
_DEICTIC_OBJECT_EN = {"this", "that", "it", "these", "those", "your", "yours", "them"}
_HABIT_EN = re.compile(
    r"\b(?:I|we|our\s+\w+|my\s+\w+)(?:\s+(?:all|both|just|pretty much))?\s+"
    r"(?:always|usually|normally|typically|generally|often|regularly|mostly|tend to|"
    r"every time)\b|\bevery\s+(?:day|week|month|morning|evening|night|sprint|release|"
    r"quarter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b[^.;]*\b(?:I|we)\b|"
    r"\b(?:I|we)\b[^.;]*\bevery\s+(?:day|week|month|morning|evening|night|sprint|release|"
    r"quarter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|"
    r"\bmost\s+(?:days|mornings|evenings|nights|weeks|weekends)\b[^.;]*\b(?:I|we)\b|"
    r"\b(?:I|we)\b[^.;]*\bon\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b",
    re.I,
)
_HABIT_ZH = re.compile(
    r"(?:我|我们|咱们)(?:团队|组|公司|部门|这边)?[^，。,.!?！？]{0,6}?"
    r"(?:一般|通常|总是|习惯|经常|一向|每次|每天|每周|每月|每个月|每年|每隔?[一二两三四五六七八九十\d]+个?(?:天|周|星期|礼拜|月|年|小时)|平时|向来|往往|常常|都是)"
)
_MODAL_EN = re.compile(
    r"\b(?P<modal>must(?:n't| not)?|ha(?:ve|s) to|need(?:s)? to|can(?:'t|not| not)|can only|"
    r"(?:am|is|are|'re|'m)\s+(?:not|never)\s+(?:allowed|permitted)|may not|"
    r"should never|(?:is|are) (?:capped|limited) (?:at|to)|no more than|at most|"
    r"I never|we never|(?:nothing|no one|nobody|none of (?:it|them|this|our \w+))\s+(?:can|may|must)|"
    r"(?:budget|deadline)s?\b[^.;]{0,40}?\b(?:is|are)\s+(?:fixed|tight|limited|capped|hard)|"
    r"(?:tight|fixed|limited|hard)\s+(?:budget|deadline))\b(?P<after>\s+\w+)?",
    re.I,
)
_IMPERATIVE_EN = re.compile(
    r"^(?:(?:please|from now on|going forward|in (?:this|our|the) \w+|and|also)[, ]+)*"
    r"(?:don't|do not|never|avoid)(?:\s+ever)?\s+(?P<verb>\w+)",
    re.I,
)
_MODAL_ZH = re.compile(r"必须|不能|不可以|不允许|禁止|只能|只允许|不得|务必|不准|不超过|不许")
_IMPERATIVE_ZH = re.compile(
    r"^(?:以后|今后|永远|千万|请|任何时候都?|所有)*(?:不要|别|请勿|不准|禁止)"
)
_COGNITION_ZH = re.compile(r"不(?:太|大)?(?:觉得|知道|确定|认为|记得|明白|理解|清楚)")
_ROLE_EN = r"[A-Za-z]+(?:er|or|ist|ian|ant|ent|eer|ect|ee)s?\b"
_BACKGROUND_EN = [
    re.compile(
        rf"\bI(?:'m| am|'ve been| have been| was)\s+(?:a|an|the)\s+(?!(?:bit|little|lot|tad|"
        rf"kind|sort|bit of|big fan|fan)\b)(?:[\w\-]+\s+){{0,3}}?{_ROLE_EN}",
        re.I,
    ),
    re.compile(r"\bI(?:'m| am)?\s+(?:currently\s+)?work(?:ing)?\s+(?:as|at|for|in)\b", re.I),
    re.compile(r"\bmy\s+(?:role|job|title|background|position)\s+is\b", re.I),
    re.compile(
        r"\bI\s+(?:run|lead|manage|head|own)\s+(?:the|a|an|our)\s+(?:[\w\-]+\s+){0,3}?"
        r"(?:team|group|department|company|startup|lab|squad)\b",
        re.I,
    ),
    re.compile(
        r"\bI\s+(?:have|'ve got)\s+(?:about\s+|over\s+|almost\s+|nearly\s+)?(?:\d+|one|two|three|four|"
        r"five|six|seven|eight|nine|ten|a few|several|many)\+?\s+years?\s+(?:of\s+)?"
        r"(?:\w+\s+)?experience\b",
        re.I,
    ),
]
_ROLE_ZH = r"(?:工程师|经理|总监|主管|架构师|设计师|分析师|程序员|研究员|开发者|学生|研究生|博士生|本科生|老师|教师|医生|律师|会计|运维|创始人|负责人|[师员生家者长])"
_BACKGROUND_ZH = [
    re.compile(
        rf"我是(?:一名|一个|一位|个|名)?[^，。,.!?！？说]{{0,14}}?{_ROLE_ZH}(?=[，。,.!?！？\s]|$)"
    ),
    re.compile(rf"I(?:'m| am)\s+(?:a|an|the)\s+[^，。,.!?！？]{{0,10}}?{_ROLE_ZH}"),
    re.compile(rf"我是(?:一名|一个|一位|个|名)?[^，。,.!?！？说]{{0,14}}?\b{_ROLE_EN}"),
    re.compile(r"我是(?:做|搞|学|干|写)[^，。,.!?！？]{1,15}的"),
    re.compile(
        r"我在(?!这|那|想|看|做|搞|写|用|试|等|改|查)[^，。,.!?！？]{2,20}?"
        r"(?:工作|上班|任职|实习|读书|读研|读博|做|搞|负责|带)"
    ),
    re.compile(r"我(?:主要)?(?:负责|从事)[^，。,.!?！？]{2,30}"),
    re.compile(
        r"我在(?!这|那|想|看|做|搞|写|用|试|等|改|查)[^，。,.!?！？]{1,15}?"
        r"(?:部门|公司|团队|组|银行|医院|学校|大学|研究所|实验室|事务所)(?=[，。,.!?！？\s]|$)"
    ),
    re.compile(
        r"我(?:有|做了|干了|写了)(?:[\d一二三四五六七八九十两几多]+)年(?:的|多)?[^，。,.!?！？]{0,12}经验"
    ),
]


def _subject_word(before: str) -> str:
    """The word just before a modal, skipping adverbs: who the modal is about."""
    clause = re.split(r"[,;:]|\b(?:so|but|and|because|since|if)\b", before)[-1]
    words = [w for w in re.findall(r"[A-Za-z']+", clause)]
    skip = {"only", "also", "still", "really", "just", "absolutely", "simply", "definitely", "all"}
    while words and words[-1].lower() in skip:
        words.pop()
    return words[-1].lower() if words else ""


_IRREGULAR_PAST = {
    "thought", "knew", "saw", "heard", "felt", "said", "told", "got", "went", "came", "made",
    "took", "found", "been", "had", "was", "were", "did", "gave", "meant", "understood",
}  # fmt: skip


def _past_tense(verb: str) -> bool:
    """An English past form: an imperative takes the base form ("never thought" remarks)."""
    if verb in _IRREGULAR_PAST:
        return True
    # -ed, but not the base forms that end in it (need, proceed, feed; embed, shed, shred)
    return verb.endswith("ed") and len(verb) > 3 and not verb.endswith("eed") and verb not in {
        "embed", "shed", "shred", "wed", "bed", "sled"}


def _constraint(sentence: str) -> bool:
    """A lasting limit: a modal of necessity/prohibition or a marked-lasting prohibition."""
    if has_han(sentence) and not re.search(
        r"\b(?:must|can't|cannot|have to|has to|need to|not allowed)\b", sentence, re.I
    ):
        if _COGNITION_ZH.search(sentence):
            return False
        imperative = _IMPERATIVE_ZH.match(sentence)
        if imperative:
            rest = sentence[imperative.end() :]
            return not re.match(_REMINDER_ZH, rest) and not _one_off(sentence)
        return bool(_MODAL_ZH.search(sentence)) and not _one_off(sentence)
    imperative = _IMPERATIVE_EN.match(sentence)
    if imperative:
        verb = imperative.group("verb").lower()
        return (
            not re.fullmatch(_REMINDER_EN, verb)
            and verb not in {"you", "we", "i"}
            and not _past_tense(verb)
            and not _one_off(sentence)
        )
    for match in _MODAL_EN.finditer(sentence):
        after = (match.group("after") or "").strip().lower()
        if re.fullmatch(_COGNITION_EN, after):
            continue
        modal = match.group("modal").lower()
        if not modal.endswith("never") and _subject_word(sentence[: match.start()]) in _NOT_SUBJECT:
            continue
        return not _one_off(sentence)
    return False


def _preference(sentence: str) -> bool:
    """First-person preference with a real object (not "I like this" about the reply)."""
    if has_han(sentence):
        match_zh = _PREFERENCE_ZH.search(sentence)
        if match_zh is not None:
            nxt = match_zh.group("object")
            return (
                bool(nxt)
                and nxt not in "这那你它。！!，,"
                and not re.search(r"(?:这|那)(?:个|条|段)?(?:回答|答案|回复)", sentence)
            )
    match = _PREFERENCE_EN.search(sentence)
    if match is None:
        return False
    obj = (match.group("object") or match.group("object2") or "").strip().lower()
    return obj not in _DEICTIC_OBJECT_EN


def _background(sentence: str) -> bool:
    patterns = _BACKGROUND_ZH if has_han(sentence) else _BACKGROUND_EN
    return any(p.search(sentence) for p in patterns) or (
        has_han(sentence) and any(p.search(sentence) for p in _BACKGROUND_EN)
    )


def _habit(sentence: str) -> bool:
    return bool(_HABIT_EN.search(sentence) or (has_han(sentence) and _HABIT_ZH.search(sentence)))


def profile_category(sentence: str) -> str | None:
    """preference / habit / constraint / background of a user sentence, or None.

    Questions never count. Order: background, preference, constraint, habit — "I usually
    prefer X" is a preference and "we always can't" does not occur.
    """
    if is_question(sentence):
        return None
    if _background(sentence):
        return "background"
    if _preference(sentence):
        return "preference"
    if _constraint(sentence):
        return "constraint"
    if _habit(sentence) and not _one_off(sentence):
        return "habit"
    return None


# --------------------------------------------------------------------------- expertise cues

_EVALUATIVE_EN = (
    r"(?:great|good|bad|nice|cool|awesome|amazing|terrible|awful|horrible|wonderful|fantastic|"
    r"excellent|beautiful|ugly|weird|strange|stupid|silly|fun|boring|pain|mess|nightmare|joke|"
    r"disaster|lifesaver|blast|real|huge|big|total|complete|bit|little|lot|better|worse|best|"
    r"worst|pretty|really|very|so|quite|hard|easy|tough)"
)
_DEF_SUBJECT = r"(?:(?:in|for|at|on)\s+[^,]{1,40},\s+)?(?:(?:an?|the)\s+)?(?P<term>[A-Za-z][\w+#.\-]*(?:\s+[A-Za-z][\w+#.\-]*){0,3}?)"
_DEFINITION_EN = [
    re.compile(
        rf"^\s*{_DEF_SUBJECT}\s+(?:is|are)\s+(?:an?|the)\s+(?!{_EVALUATIVE_EN}\b)(?:\w+)", re.I
    ),
    re.compile(
        rf"^\s*{_DEF_SUBJECT}\s+(?:refers?\s+to|means|stands\s+for|is\s+short\s+for|is\s+defined\s+as|"
        r"is\s+an\s+abbreviation\s+(?:of|for)|denotes)\b",
        re.I,
    ),
    re.compile(
        r"\b(?P<term>[A-Za-z][\w+#.\-]*)\s*(?:,|\(|（)\s*(?:i\.e\.|that\s+is|aka|a\.k\.a\.|also\s+known\s+as|"
        r"short\s+for|which\s+stands\s+for)(?!\w)",
        re.I,
    ),
]
_DEFINITION_ZH = [
    re.compile(r"^\s*所谓(?P<term>[^，,。]{1,20}?)[，,]?\s*(?:就是|是指|指的是|是)"),
    re.compile(
        r"^\s*(?P<term>[^，,。\s][^，,。]{0,19}?)\s*(?:是指|指的是|的意思是|的全称是|"
        r"(?<![立随亦])即(?![使便可将时刻])|是(?:一种|一类|一门|一款|一个)(?!(?:很|非常|挺|特别|超|好|棒|不错|糟糕|麻烦)))"
    ),
    re.compile(r"^\s*(?P<term>[^，,。\s]{1,20}?)\s*是[^，,。]{1,40}的(?:简称|缩写)"),
    re.compile(
        r"^\s*(?P<term>[A-Za-z][\w+#.\-]{0,30}|[“「\"][^”」\"]{1,20}[”」\"])\s*[，,]\s*(?:也就是|即|就是)"
    ),
    re.compile(r"^\s*(?P<term>[A-Za-z][\w+#.\-]{0,30})\s*[（(][^）)]{2,30}[）)]\s*(?:是|指|就是)"),
]
_PRONOUN_TERMS = {
    "it", "this", "that", "there", "he", "she", "i", "we", "you", "they", "what", "which",
    "我", "你", "他", "她", "它", "这", "那", "这个", "那个", "我们", "你们", "问题", "原因",
    "结果", "答案", "办法",
}  # fmt: skip
_STEP_LINE = re.compile(
    r"^\s*(?:\d{1,2}[.)、）](?!\d)|第[一二三四五六七八九十\d]+步|步骤\s*\d+|Step\s+\d+[:.]?)\s*\S",
    re.I,
)
_INLINE_NUMBER = re.compile(
    r"(?:(?<=\s)|(?<=^)|(?<=[:：]))[(（]?(?P<n>\d{1,2})\s*[.)、）](?!\d)\s*(?=\S)"
)
_INLINE_STEP = re.compile(r"\b[Ss]tep\s+(?P<n>\d{1,2})\b|第(?P<zh>[一二三四五六七八九十])步")
_ZH_NUMERALS = "一二三四五六七八九十"
_SEQ_FIRST_EN = re.compile(r"^(?:first(?:ly)?|to start|to begin with|start by)\b", re.I)
_SEQ_NEXT_EN = re.compile(r"^(?:then|next|after that|afterwards|finally|lastly|and then)\b", re.I)
_SEQ_FIRST_ZH = re.compile(r"^(?:首先|第一|先)")
_SEQ_NEXT_ZH = re.compile(r"^(?:然后|再|接着|之后|随后|最后|其次)")
_CLAUSE = re.compile(r"[,;，；。:：]\s*")
_COMMAND = re.compile(
    r"(?:```|^\s*\$\s+\S|(?<![\w-])(?:pip3?|npm|npx|yarn|pnpm|git|docker|kubectl|helm|curl|wget|"
    r"brew|apt-get|conda|poetry|cargo|terraform|ffmpeg)\s+-{0,2}[A-Za-z][\w.\-]*|"
    r"(?<![\w-])python3?\s+(?:-m\s+)?[\w.\-/]+\.?\w*|(?<![\w-])go\s+(?:build|run|test|get|mod)\b|"
    r"(?<![\w-])node\s+[\w./\-]+\.js\b|"
    r"(?<![\w./-])[a-z][a-z0-9_.\-]{1,20}(?:\s+[a-z][\w.\-]*){0,2}\s+-{1,2}[A-Za-z][\w\-]*(?![\w-]))",
    re.M | re.ASCII,
)
_ADOPTION_EN = re.compile(
    r"\b(?:we|I)\s+(?:\w+\s+)?(?:used|moved|migrated|switched|replaced|adopted|introduced|"
    r"rolled out|built|deployed|started using)\b",
    re.I,
)
_ADOPTION_ZH = re.compile(r"(?:我们|我)[^，。]{0,8}?(?:用了?|把|迁到|迁移到|换成|改用|引入|上线了)")
_OUTCOME_EN = re.compile(
    r"\b(?:cut|reduced|dropped|improved|halved|doubled|increased|decreased|saved|sped up)\b|"
    r"\bwent from\b[^.]*\bto\b|\b\d+\s*(?:%|x|times)\s+(?:faster|slower|fewer|less|more)\b|"
    r"\bby\s+\d+\s*%",
    re.I,
)
_OUTCOME_ZH = re.compile(
    r"降到|降低|减少|提升|提高|快了|慢了|省了|从[^，。]{1,20}(?:降|升|提|变)|(?:原来|以前|之前)[^。]{2,30}现在"
)
_CODING = re.compile(
    r"(?:code|coding|python|typescript|javascript|java\b|rust|golang|indent|tabs|spaces|type[- ]?safe|"
    r"代码|编程|缩进|类型|函数|变量|注释)",
    re.I,
)


def definition_term(sentence: str) -> str | None:
    """The defined term when the sentence defines one, else None."""
    if is_question(sentence):
        return None
    patterns = _DEFINITION_ZH if has_han(sentence) else []
    for pattern in [*patterns, *_DEFINITION_EN]:
        match = pattern.search(sentence)
        if match is None:
            continue
        term = match.group("term").strip().strip('“”「」"')
        if (
            term
            and term.lower() not in _PRONOUN_TERMS
            and term.split()[0].lower() not in _PRONOUN_TERMS
        ):
            return term
    return None


def _numbered_steps(text: str) -> list[str]:
    """Steps numbered 1, 2, 3 ... on separate lines or inline; [] unless two in order."""
    lines = [line.strip() for line in text.splitlines() if _STEP_LINE.match(line)]
    if len(lines) >= 2:
        return lines
    marks: list[tuple[int, int]] = []
    for match in _INLINE_NUMBER.finditer(text):
        marks.append((int(match.group("n")), match.start()))
    for match in _INLINE_STEP.finditer(text):
        n = int(match.group("n")) if match.group("n") else _ZH_NUMERALS.index(match.group("zh")) + 1
        marks.append((n, match.start()))
    marks.sort(key=lambda m: m[1])
    run: list[int] = []
    for number, start in marks:
        if number == len(run) + 1:
            run.append(start)
    if len(run) < 2:
        return []
    bounds = [*run, len(text)]
    return [text[a:b].strip(" ,;，；") for a, b in itertools.pairwise(bounds)]


def _sequence_steps(sentence: str) -> list[str]:
    """``First …, then …, finally …`` / ``首先…然后…最后…``: clause-initial markers only."""
    clauses = [c.strip() for c in _CLAUSE.split(sentence) if c.strip()]
    first, following = (
        (_SEQ_FIRST_ZH, _SEQ_NEXT_ZH) if has_han(sentence) else (_SEQ_FIRST_EN, _SEQ_NEXT_EN)
    )
    steps: list[str] = []
    for clause in clauses:
        if not steps:
            if first.match(clause):
                steps.append(clause)
        elif following.match(clause):
            steps.append(clause)
    return steps if len(steps) >= 2 else []


# --------------------------------------------------------------------------- items


def _lang(text: str) -> str:
    return "zh" if has_han(text) else "en"


_LABELS = {
    "preference": ("用户偏好", "User preference"),
    "habit": ("用户习惯", "User habit"),
    "constraint": ("用户约束", "User constraint"),
    "background": ("用户背景", "User background"),
    "definition": ("概念定义", "Definition"),
    "usecase": ("应用案例", "Use case"),
}


def _label(kind: str, text: str) -> str:
    zh, en = _LABELS[kind]
    return zh if _lang(text) == "zh" else en


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _sep(text: str) -> str:
    return "：" if _lang(text) == "zh" else ": "


def _profile_item(sentence: str, category: str, message_id: str) -> dict[str, Any]:
    tags: dict[str, Any] = {"category": category}
    if _CODING.search(sentence):
        tags["domain"] = "coding_style"
    return {
        "types": ["user_profile"],
        "task": f"{_label(category, sentence)}{_sep(sentence)}{_short(sentence, 60)}",
        "content": sentence.strip(),
        "tags": tags,
        "message_ids": [message_id],
    }


def _context_task(question: tuple[str, str] | None, fallback: str) -> tuple[str, list[str]]:
    """Task from the user question that preceded an answer (and that message's id)."""
    if question is not None and question[1].strip():
        return _short(question[1], 100), [question[0]]
    return _short(fallback, 100), []


def extract_knowledge(payload: dict[str, Any], agent: Any) -> dict[str, Any]:
    """Rule-based extraction of typed knowledge candidates from a conversation."""
    messages = [m for m in payload.get("messages") or [] if isinstance(m, dict)]
    items: list[dict[str, Any]] = []
    last_question: tuple[str, str] | None = None
    for pos, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        message_id = str(message.get("id") or f"msg-{pos}")
        role = str(message.get("role") or "user")
        if role == "user":
            for sentence in split_sentences(content):
                category = profile_category(sentence)
                if category is not None:
                    items.append(_profile_item(sentence, category, message_id))
        if role in ("user", "assistant"):
            items.extend(_extract_expertise(content, message_id, role, last_question))
        if role == "user":
            last_question = (message_id, content)
    return {
        "items": _dedupe(items),
        "reason": f"rule-based extraction from {len(messages)} messages",
    }


def _extract_expertise(
    content: str, message_id: str, role: str, question: tuple[str, str] | None
) -> list[dict[str, Any]]:
    """Tool usage, use cases, strategies, definitions and plans found in one message."""
    found: list[dict[str, Any]] = []
    asked = question if role != "user" else None
    first_line = content.strip().splitlines()[0]
    if _COMMAND.search(content) and (role != "user" or "```" in content):
        task, extra = _context_task(asked, first_line)
        found.append(
            _item(
                ["tool"],
                task,
                content.strip()[:4000],
                {"category": "tool_usage"},
                [*extra, message_id],
            )
        )
    steps = _numbered_steps(content) or [
        step for line in content.splitlines() for step in _sequence_steps(line)
    ]
    if len(steps) >= 2 and not is_question(content.strip()):
        task, extra = _context_task(asked, first_line)
        found.append(
            _item(["plan"], task, "\n".join(steps), {"category": "steps"}, [*extra, message_id])
        )
    usecase = (_ADOPTION_EN.search(content) and _OUTCOME_EN.search(content)) or (
        has_han(content) and _ADOPTION_ZH.search(content) and _OUTCOME_ZH.search(content)
    )
    sentences = [s for s in split_sentences(content) if not is_question(s)]
    if usecase and not any(is_lesson(s) for s in sentences):
        task = f"{_label('usecase', content)}{_sep(content)}{_short(content, 60)}"
        found.append(
            _item(["usecase"], task, content.strip(), {"category": "usecase"}, [message_id])
        )
        return found
    lessons = [s for s in sentences if is_lesson(s)]
    if lessons:  # cause, fix and rule of one message are one lesson
        task, extra = _context_task(asked, lessons[0])
        text = " ".join(lessons)
        found.append(_item(["strategy"], task, text, {"category": "fix"}, [*extra, message_id]))
    for sentence in sentences:
        if sentence in lessons:
            continue
        if role == "user" and profile_category(sentence):
            continue
        if _STEP_LINE.match(sentence) or steps:
            continue
        term = definition_term(sentence)
        if term is not None:
            task = f"{_label('definition', sentence)}{_sep(sentence)}{term}"
            found.append(
                _item(
                    ["definition"],
                    task,
                    sentence,
                    {"category": "definition", "term": term},
                    [message_id],
                )
            )
    return found


def _item(
    types: list[str], task: str, content: str, tags: dict[str, Any], ids: list[str]
) -> dict[str, Any]:
    return {"types": types, "task": task, "content": content, "tags": tags, "message_ids": ids}


def _dedupe(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One item per (types, normalized content); message ids of duplicates are merged."""
    out: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
    for item in items:
        key = (tuple(item["types"]), normalize(item["content"]) or item["content"])
        if key in out:
            ids = out[key]["message_ids"]
            ids.extend(i for i in item["message_ids"] if i not in ids)
            continue
        item["message_ids"] = list(dict.fromkeys(item["message_ids"]))
        out[key] = item
    return list(out.values())
