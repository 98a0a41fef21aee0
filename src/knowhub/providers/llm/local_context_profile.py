"""Profile facts for the offline extractor: who the speaker is, in English and Chinese.

:func:`profile_facts` reads one sentence and returns ``(attribute, value, multi)`` triples;
:mod:`.local_context_rules` turns them into profile candidates. Attributes:

=================  ==================================================================  ======
attribute          said as                                                            multi
=================  ==================================================================  ======
``name``           my name is X, call me X, Hi, I'm X / 我叫X, 我的名字是X                  no
``age``            I'm 32 (years old), I just turned 40 / 我今年32岁                      no
``residence``      I live in X, I moved to X, I'm based in X, I relocated to X,          no
                   since relocating to X, our new flat in X, I live with my partner / her in X,
                   … but now live in X / 我住在X, 我搬到了X, 我定居在X, 我在X生活, 自从搬到X,
                   我们刚搬到X, 我们家搬去了X, 我去年从A搬到了X, 我和老婆住在X
``work_location``  I work remotely from X, I work from home, my office is in X,         no
                   I work in X (a place) / 我在X远程办公, 我的办公室在X, 我在X工作 (a place of
                   the gazetteer)
``origin``         I'm (originally) from X, I grew up in X / 我来自X, 我是X人, 我老家是X     no
``employer``       I work at/for X, I joined X, I started a new job at X /                no
                   在X工作|上班|做…, 入职X
``occupation``     I work as a Y, I'm a Y (a job word), … at X as a Y, I work as a Y     no
                   at X (employer X) / 我是一名Y
``education``      I study X, I'm majoring in X / 我在读X                                 no
``relationship``   I'm single / married, I got married / 我单身, 我结婚了                  no
``diet``           I'm vegetarian, I don't eat meat, I eat halal, gluten-free / 我吃素      yes
``languages``      I speak X and Y, my native language is X, fluent in X / 我会说X, 母语    yes
``family``         I have two kids, my wife and I / 我有一个女儿                             yes
``pets``           I have a dog (named X) / 我养了一只猫                                      yes
``identity``       I'm an introvert / 我是…                                              yes
=================  ==================================================================  ======

The word lists are general language: job nouns, diets, the language names of
:mod:`.local_context_code`, and a small gazetteer of countries and large cities (general
geographic knowledge) that tells a place from a non-place where the wording alone does not
("I work in Lisbon" is a work location, "I work in marketing" is not). A value is cut at the
first time phrase or clause ("I moved to Berlin last month" → Berlin). A place value is no
tool or app as written ("we're living in Slack", "I live in Figma": the tool names of
:mod:`.local_context_tools`, everyday words among them only capitalized) and no name that only
qualifies an app's thing ("we live in Zoom calls"), unless the gazetteer knows it ("Phoenix");
a figurative "basically / practically live in" is never read. Heuristics, not a model: what
the rules do not see is simply not extracted.
"""

from __future__ import annotations

import functools
import re

from knowhub.providers.llm.local_context_cn import ORG_HEADS
from knowhub.providers.llm.local_context_code import is_language
from knowhub.providers.llm.local_context_tools import names_a_tool

__all__ = ["ATTRIBUTE_WORDS", "NAME_PATTERNS", "PLACES", "is_place", "profile_facts"]

# ---------------------------------------------------------------------- word lists

#: Countries and large cities (English, general gazetteer knowledge).
_PLACES_EN = """
Afghanistan Albania Algeria Argentina Armenia Australia Austria Azerbaijan Bangladesh Belarus Belgium Bolivia
Brazil Bulgaria Cambodia Cameroon Canada Chile China Colombia Croatia Cuba Cyprus Czechia Denmark Ecuador Egypt
England Estonia Ethiopia Finland France Georgia Germany Ghana Greece Hungary Iceland India Indonesia Iran Iraq
Ireland Israel Italy Jamaica Japan Jordan Kazakhstan Kenya Korea Kuwait Laos Latvia Lebanon Lithuania Luxembourg
Malaysia Malta Mexico Moldova Mongolia Morocco Myanmar Nepal Netherlands Holland Nigeria Norway Pakistan Panama
Peru Philippines Poland Portugal Qatar Romania Russia Rwanda Scotland Senegal Serbia Singapore Slovakia Slovenia
Spain Sweden Switzerland Syria Taiwan Tanzania Thailand Tunisia Turkey Uganda Ukraine Uruguay Uzbekistan
Venezuela Vietnam Wales Zambia Zimbabwe America USA UK Britain
Amsterdam Athens Atlanta Auckland Austin Baltimore Bangalore Bangkok Barcelona Beijing Belgrade Berlin Bern Bilbao
Birmingham Bogota Bologna Bordeaux Boston Bratislava Brisbane Bristol Brussels Bucharest Budapest Cairo Calgary
Canberra Cape_Town Chengdu Chicago Copenhagen Dallas Delhi Denver Detroit Dhaka Dubai Dublin Edinburgh Florence
Frankfurt Geneva Glasgow Gothenburg Guangzhou Hamburg Hangzhou Hanoi Helsinki Ho_Chi_Minh_City Hong_Kong Houston
Istanbul Jakarta Johannesburg Karachi Kiev Kyiv Krakow Kuala_Lumpur Kyoto Lagos Lahore Las_Vegas Leeds Lima Lisbon
Liverpool Ljubljana London Los_Angeles Lyon Madrid Malmo Manchester Manila Marseille Melbourne Miami Milan Minneapolis
Montreal Moscow Mumbai Munich Nairobi Nanjing Naples Nashville New_Delhi New_York Nice Osaka Oslo Ottawa Oxford
Cambridge Palo_Alto Paris Perth Philadelphia Phoenix Pittsburgh Porto Portland Prague Pune Quebec Reykjavik Riga
Rio_de_Janeiro Rome Rotterdam San_Diego San_Francisco San_Jose Santiago Sao_Paulo Seattle Seoul Seville Shanghai
Shenzhen Singapore Sofia Stockholm Stuttgart Sydney Taipei Tallinn Tel_Aviv Tokyo Toronto Turin Utrecht Valencia
Vancouver Venice Vienna Vilnius Warsaw Washington Wellington Wuhan Xi'an Zagreb Zurich Brooklyn Manhattan Oakland
Silicon_Valley Bay_Area Berkeley Mountain_View Sunnyvale Cupertino Seattle Redmond Kraków Göteborg München Köln Cologne
Düsseldorf Dusseldorf Leipzig Dresden Hanover Heidelberg Antwerp Ghent Basel Lausanne Salzburg Graz Innsbruck
"""
#: Chinese names of countries, provinces and cities.
_PLACES_CN = """
中国 美国 英国 法国 德国 日本 韩国 俄罗斯 加拿大 澳大利亚 新西兰 意大利 西班牙 葡萄牙 荷兰 比利时 瑞士 瑞典 挪威 丹麦 芬兰
冰岛 爱尔兰 奥地利 波兰 捷克 匈牙利 希腊 土耳其 以色列 埃及 印度 泰国 越南 新加坡 马来西亚 印尼 印度尼西亚 菲律宾 巴西 阿根廷
墨西哥 智利 南非 肯尼亚 台湾 香港 澳门
北京 上海 天津 重庆 广州 深圳 杭州 南京 苏州 成都 武汉 西安 长沙 郑州 青岛 大连 沈阳 哈尔滨 长春 济南 厦门 福州 宁波 无锡
合肥 昆明 贵阳 南宁 海口 三亚 兰州 西宁 银川 乌鲁木齐 拉萨 呼和浩特 太原 石家庄 南昌 珠海 东莞 佛山 温州 绍兴 嘉兴 常州
扬州 徐州 烟台 威海 洛阳 桂林 丽江 大理 台北 高雄
广东 广西 浙江 江苏 四川 湖北 湖南 河南 河北 山东 山西 陕西 福建 江西 安徽 云南 贵州 辽宁 吉林 黑龙江 甘肃 青海 海南 新疆 西藏
内蒙古 宁夏
东京 大阪 京都 首尔 纽约 伦敦 巴黎 柏林 慕尼黑 里斯本 马德里 巴塞罗那 罗马 米兰 阿姆斯特丹 维也纳 苏黎世 日内瓦 斯德哥尔摩
多伦多 温哥华 蒙特利尔 悉尼 墨尔本 旧金山 洛杉矶 西雅图 波士顿 芝加哥 硅谷 曼谷 河内 吉隆坡 迪拜 莫斯科 奥克兰
"""
#: Every place name of the gazetteer, case-folded (``_`` joins the words of one name).
PLACES = frozenset(w.replace("_", " ").casefold() for w in _PLACES_EN.split()) | frozenset(_PLACES_CN.split())

_CN_PLACE_TAIL = re.compile(r"^[\u4e00-\u9fff]{1,6}(?:省|市|区|县|镇|州)$")


def is_place(value: str) -> bool:
    """A country, province or city of the gazetteer (or a Chinese name ending in 市/省/区/县)."""
    bare = value.strip().casefold()
    if bare in PLACES or _CN_PLACE_TAIL.match(value.strip()):
        return True
    head = re.split(r"[,，]\s*", bare)[0]  # "Austin, Texas"
    if head in PLACES:
        return True
    return any(bare.startswith(p) for p in PLACES if len(p) >= 2 and re.match(r"[\u4e00-\u9fff]", p) and len(bare) <= len(p) + 4)


#: Question words of each attribute: written into the fact's memory so that a question in
#: other words finds it ("Where does the user live?" → residence, "dietary restrictions" →
#: diet). General language, English and Chinese.
ATTRIBUTE_WORDS: dict[str, str] = {
    "name": "name, called, 名字, 叫",
    "age": "age, years old, how old, 年龄, 岁",
    "residence": "lives in, home, based in, city of residence, where they live, 住在, 居住地, 所在城市",
    "work_location": "works from, work location, office, where they work, remote, 工作地点, 办公地点",
    "origin": "from, hometown, grew up, born, origin, 来自, 老家, 家乡",
    "employer": "works at, employer, company, job, 公司, 工作单位",
    "occupation": "job, occupation, profession, works as, career, role, 职业, 工作",
    "education": "studies, education, major, school, 学习, 专业",
    "relationship": "relationship status, partner, married, single, 婚姻, 感情状况",
    "diet": "diet, dietary restrictions, food, eats, meals, 饮食, 忌口, 吃",
    "languages": "languages spoken, speaks, native language, 语言, 会说, 母语",
    "family": "family, children, kids, spouse, 家人, 家庭, 孩子",
    "pets": "pets, animals, 宠物",
    "identity": "identity, who they are, 身份",
}

_JOBS = (
    "engineer|developer|programmer|teacher|professor|lecturer|student|nurse|doctor|physician|surgeon|dentist|"
    "physio|physiotherapist|physical therapist|midwife|optician|pediatrician|paediatrician|"
    "pharmacist|artist|designer|manager|writer|author|journalist|editor|musician|dancer|singer|actor|actress|"
    "counselor|therapist|psychologist|lawyer|attorney|accountant|chef|cook|baker|scientist|researcher|consultant|"
    "analyst|architect|painter|photographer|entrepreneur|founder|owner|translator|interpreter|librarian|"
    "pilot|driver|mechanic|electrician|plumber|carpenter|farmer|firefighter|officer|soldier|veteran|"
    "paramedic|vet|veterinarian|cashier|salesperson|marketer|recruiter|administrator|sysadmin|devops|"
    "freelancer|intern|tutor|coach|trainer|barista|waiter|waitress|clerk|secretary|assistant|technician|"
    "economist|statistician|mathematician|physicist|chemist|biologist|student|postdoc|retiree|housewife|"
    "homemaker|mom|mother|dad|father|parent"
)
_JOBS_CN = (
    "工程师|开发|程序员|老师|教师|教授|讲师|学生|研究生|博士生|本科生|医生|护士|药剂师|设计师|经理|总监|作家|编辑|记者|"
    "律师|会计|厨师|研究员|科学家|顾问|分析师|架构师|画家|摄影师|创业者|翻译|司机|警察|公务员|销售|运营|产品经理|"
    "数据分析师|产品|测试|主播|自由职业者|全职妈妈|全职爸爸|妈妈|爸爸|实习生"
)
_DIETS = (
    "vegetarian|vegan|pescatarian|pescetarian|lacto-vegetarian|ovo-vegetarian|flexitarian|gluten-free|"
    "dairy-free|lactose intolerant|lactose-intolerant|celiac|coeliac|keto|paleo|halal|kosher|teetotal|teetotaler|"
    "sober|on a diet"
)
_MEATS = "meat|pork|beef|fish|seafood|shellfish|chicken|eggs|dairy|gluten|alcohol|red meat|lamb"

#: End of a value: a time phrase, a clause, or a following preposition phrase.
_VALUE_STOP = re.compile(
    r"\s+(?:last|this|next|since|in (?:19|20)\d\d|(?:in|during|back in) (?:early |late |mid-?)?(?:january|february|march|april|may|june|"
    r"july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b|(?:in|during|over) the (?:spring|summer|autumn|fall|winter)|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
    r"a few|several|\d+) (?:days?|weeks?|months?|years?)|ago|recently|now|today|yesterday|for|with|because|"
    r"but|and then|where|which|who|when|after|before|to be|so|as|and I|and we|though|although|while|"
    r"(?:at|over|on) the weekend|at weekends|at the moment|these days|right now|permanently|temporarily|full[- ]time|part[- ]time|every|each|daily|"
    r"and an?|and my|and two|and three)\b.*$",
    re.I,
)
_CLAUSE = re.compile(r"[,;:!?，。；：！？()\[\]“”\"]| - |(?<!\bSt)(?<!\bDr)(?<!\bMt)\.(?!\w)")
_CN_STOP = re.compile(r"(?:已经|了|啦|呢|吧|啊|的时候|之后|以后|以前|上个月|下个月|去年|今年|明年|最近|现在|目前|工作|上班|生活|住|定居|"
                      r"远程|办公|做|当|，|。|、|；|！|？|,|\.).*$")


def _cut(value: str, limit: int = 6) -> str:
    """The value up to the first clause break or time phrase, at most ``limit`` words."""
    value = _CLAUSE.split(value, maxsplit=1)[0]
    value = _VALUE_STOP.sub("", value).strip()
    words = value.split()
    return " ".join(words[:limit]).strip(" '\"“”’")


def _cut_cn(value: str, limit: int = 16) -> str:
    value = _CN_STOP.sub("", value.strip())
    return value[:limit].strip()


#: Lower-case words inside a place name ("Rio de Janeiro", "Frankfurt am Main", "Stratford upon Avon").
_PLACE_LINKS = frozenset("de da do dos das del della di du la le les am an upon on sur en y of".split())  # noqa: SIM905


def _name_words(value: str) -> str:
    """The leading run of capitalized words of a value (and the lower-case links between them):
    a move said in passing runs on without a comma ("Porto and the internet is flaky" → Porto)."""
    words = value.split()
    kept = 0
    for n, word in enumerate(words):
        if word.split("'")[0].split("’")[0] == "I":  # "Austin I've been …": the speaker, no more name
            break
        if word[:1].isupper() or (word in _PLACE_LINKS and n + 1 < len(words) and words[n + 1][:1].isupper()):
            kept = n + 1
        else:
            break
    return " ".join(words[:kept])


#: Things of an app or a document a name can qualify ("we live in Zoom calls", "in Excel
#: sheets", "in Teams meetings"): after one, the name is no place, the sentence no residence.
_APP_THINGS = re.compile(
    r"\s+(?:app|apps|calls?|channels?|threads?|tickets?|issues?|boards?|docs?|documents?|sheets?|spreadsheets?|"
    r"tabs?|windows?|meetings?|notifications?|workspaces?|dms?|chats?|inbox(?:es)?|files?|emails?|pages?|"
    r"notebooks?|terminals?|dashboards?|tasks?|messages?)\b", re.I)


def _place(value: str, known: bool = False) -> str:
    """A place value: ``Berlin``, ``the Bay Area``, ``广州天河区``; empty when it is no place
    (a language, a tool — "we moved to MySQL" —, a common word, a lower-case phrase); with
    ``known``, only a place of the gazetteer ("since moving to GitLab" is a tool's move)."""
    cut = _cut(value, 5)
    cut = re.sub(r"^(?:the|a|an)\s+", "", cut, flags=re.I)
    if not cut or is_language(cut) or (names_a_tool(cut) and not is_place(cut)):
        return ""
    if re.match(r"[\u4e00-\u9fff]", cut):
        return cut
    if not cut[0].isupper():
        return cut.title() if is_place(cut) else ""  # a lower-case writer: "wellington"
    whole, cut = cut, _name_words(cut)  # the name alone is checked again: "Kubernetes we have …" was no tool as a whole
    if not cut or is_language(cut) or (names_a_tool(cut) and not is_place(cut)) or re.search(r"\d", cut):
        return ""
    if _APP_THINGS.match(whole[len(cut):]) and not is_place(cut):
        return ""  # the name only qualifies a thing one spends the day in: "living in Zoom calls"
    return cut if not known or is_place(cut) else ""


def _cn_known_place(value: str) -> bool:
    """A Chinese place of the gazetteer, alone or with its district ("杭州西湖区"), not a place
    that names a thing in it ("上海机房", "成都的机房": :func:`is_place` takes any short tail)."""
    if value.casefold() in PLACES or _CN_PLACE_TAIL.match(value):
        return True
    return any(value.startswith(p) and _CN_PLACE_TAIL.match(value[len(p):]) for p in PLACES if re.match(r"[\u4e00-\u9fff]", p))


# ---------------------------------------------------------------------- patterns

_I = r"(?:^|\b)(?:I|we)(?:'ve| have)?\s*(?:just |recently |finally |also |now |currently |actually |still )*"

#: ``(attribute, compiled pattern, multi, value kind)``; the value is group 1.
#: value kinds: ``place`` (checked by :func:`_place`), ``text`` (cut), ``raw`` (as matched).
_EN: list[tuple[str, re.Pattern[str], bool, str]] = [
    ("name", re.compile(r"\bmy name(?:'s| is) ([A-Z][\w'\-]+(?: [A-Z][\w'\-]+)?)", re.I), False, "raw"),
    ("name", re.compile(r"\b(?:call me|you can call me) ([A-Z][\w'\-]+)\b"), False, "raw"),
    ("name", re.compile(r"^(?i:hi|hello|hey)(?: there)?[,!]? (?:I'm|I am|this is) ([A-Z][a-z]+)\b"), False, "raw"),
    ("age", re.compile(r"\bI(?:'m| am) (\d{1,3})(?: years? old| yo)?(?=[,.;!?]|$| and )", re.I), False, "raw"),
    ("age", re.compile(r"\bI (?:just )?turned (\d{1,3})\b", re.I), False, "raw"),
    ("residence", re.compile(_I + r"(?:live|living|'m living|am living|reside|'ve been living|have been living)"
                             r"(?: with (?:(?:my|our|a|the|his|her|their) [a-z]+(?: [a-z]+)?|him|her|them))? in ([^,.;!?]+)", re.I), False, "place"),
    # a second clause of the same speaker: "I grew up in Lagos but now live in London"
    # — not when another person is the subject in between ("my parents retired and live in Florida",
    # "two sisters who … and live in Texas")
    ("residence", re.compile(r"\b(?:I|we)\b(?:(?!\b(?:who|whom|whose|which|he|she|they|you|my|his|her|their|your)\b)[^.;!?]){0,60}?"
                             r"\b(?:and|but) (?:now |currently )?live in ([^,.;!?]+)", re.I), False, "place"),
    ("residence", re.compile(_I + r"(?:moved|relocated|'ve moved|have moved) (?:over |back |out )?to ([^,.;!?]+)", re.I), False, "place"),
    ("residence", re.compile(_I + r"(?:moved|relocated|'ve moved|have moved) (?:over |back |out |here )?from [^,.;!?]+? to ([^,.;!?]+)", re.I), False, "place"),
    ("residence", re.compile(r"\b(?:I(?:'m| am)|we(?:'re| are)) (?:now |currently |finally |all )?(?:based|living|settled) (?:in|out of) ([^,.;!?]+)", re.I), False, "place"),
    ("residence", re.compile(r"\bmy (?:home|place|apartment|flat|house) is in ([^,.;!?]+)", re.I), False, "place"),
    # a move said in passing: "since relocating to Austin I ...", "our new flat in Leeds has ..."
    ("residence", re.compile(r"\b(?:ever )?since relocating (?:over |back |here )?to ([^,.;!?]+)", re.I), False, "place"),
    ("residence", re.compile(r"\b(?:ever )?since moving (?:over |back |here )?to ([^,.;!?]+)", re.I), False, "known_place"),
    ("residence", re.compile(r"\b(?:my|our) new (?:home|place|apartment|flat|house) (?:is )?in ([^,.;!?]+)", re.I), False, "place"),
    ("work_location", re.compile(r"\bI (?:work|am working|'m working)(?: remotely| fully remote| remote)? from (home)\b", re.I), False, "raw"),
    ("work_location", re.compile(r"\bI (?:work|am working|'m working) (?:remotely|remote|fully remote) (?:from|in|out of) ([^,.;!?]+)", re.I), False, "place"),
    ("work_location", re.compile(r"\bI (?:work|am working|'m working) (?:from|out of) ([^,.;!?]+)", re.I), False, "place"),
    ("work_location", re.compile(r"\bI (?:work|am working|'m working|currently work) in ([^,.;!?]+)", re.I), False, "place"),
    ("work_location", re.compile(r"\bmy (?:office|workplace|job|company office) is (?:in|at) ([^,.;!?]+)", re.I), False, "place"),
    ("work_location", re.compile(r"\bI commute (?:in)?to ([^,.;!?]+)", re.I), False, "place"),
    ("work_location", re.compile(r"\bI (?:run|own|have|manage) (?:a|an|my|our) (?:(?:small|little|tiny|new|own|family) )*"
                                 r"(?:clinic|practice|shop|store|studio|caf[eé]|restaurant|bakery|bar|salon|agency|firm|"
                                 r"business|company|office|gym|school|lab) in ([^,.;!?()]+)", re.I), False, "place"),
    ("origin", re.compile(r"\bI(?:'m| am) (?:originally )?from ([^,.;!?]+)", re.I), False, "place"),
    ("origin", re.compile(r"\bI (?:grew up|was born(?: and raised)?) in ([^,.;!?]+)", re.I), False, "place"),
    ("origin", re.compile(r"\bI (?:moved|came) (?:here |over )?from ((?:(?! to )[^,.;!?])+)", re.I), False, "place"),
    ("employer", re.compile(r"\bI (?:work|am working|'m working|intern) (?:at|for) ((?:(?! as )[^,.;!?])+)", re.I), False, "text"),
    ("employer", re.compile(r"\bI (?:just |recently )?(?:joined|started (?:a (?:new )?job|working|a position|an internship) at|got (?:a|an) (?:job|offer|position|internship) at|was hired by|got hired (?:at|by)) ((?:(?! as | today| last| this)[^,.;!?])+?)(?= as |$|[,.;!?]| today| last| this)", re.I), False, "text"),
    ("employer", re.compile(r"\bI(?:'m| am) (?:\d{1,3}(?: years old)?, )?(?:an? )?(?:[a-z\-]+ ){0,3}(?:" + _JOBS
                            + r") (?:at|for|with) ([A-Z](?:[^,;!?.]|\.(?=\w)|(?<=St)\.)*)"), False, "text"),
    # "I work as a nurse at Google": the place of work after the job
    ("employer", re.compile(r"\bI(?: work|'m working| am working| currently work) as (?:an? |the )?(?:[A-Za-z\-]+ ){1,4}?(?:at|for) "
                            r"([A-Z](?:[^,;!?.]|\.(?=\w)|(?<=St)\.)*)"), False, "text"),
    ("occupation", re.compile(r"\b(?:work|job|position|role)[^.;!?]{0,60}? as (?:an? |the )?([^,.;!?]+)", re.I), False, "text"),
    ("occupation", re.compile(r"\bmy (?:job|profession|occupation) is (?:an? )?([^,.;!?]+)", re.I), False, "text"),
    ("occupation", re.compile(r"\bI(?:'m| am) (?:currently |now |still )?(?:working as )?an? ((?:[a-z\-]+ ){0,3}(?:" + _JOBS + r"))\b(?! (?:of|to)\b)", re.I), False, "raw"),
    ("occupation", re.compile(r"\bI(?:'m| am) \d{1,3}(?: years old)?, an? ((?:[a-z\-]+ ){0,2}(?:" + _JOBS + r"))\b", re.I), False, "raw"),
    # "I'm Marek, a backend developer in ..." (a name, then the job); "I've been promoted to lead developer"
    ("occupation", re.compile(r"\bI(?:'m| am) [A-Z][a-z]+, an? ((?:[a-z\-]+ ){0,3}(?:" + _JOBS + r"))\b"), False, "raw"),
    ("occupation", re.compile(r"\b(?:I(?:'ve| have)? (?:just )?been|I was|I got|I've got|I'm being|I am being) promoted to (?:an? |the )?"
                              r"((?:[A-Za-z\-]+ ){0,3}(?:" + _JOBS + r"))\b", re.I), False, "raw"),
    ("education", re.compile(r"\bI(?:'m| am)? (?:studying|majoring in|study|doing a (?:PhD|master'?s|degree) in) ([^,.;!?]+)", re.I), False, "text"),
    ("relationship", re.compile(r"\bI(?:'m| am| got| just got) (single|married|divorced|engaged|widowed)\b", re.I), False, "raw"),
    ("diet", re.compile(r"\bI(?:'m| am|'ve been| have been) (?:a |an |strictly |fully |mostly |now |also )?(" + _DIETS + r")\b", re.I), True, "raw"),
    ("diet", re.compile(r"\bI (?:don't|do not|never|no longer|can't|cannot) (?:eat|drink) (" + _MEATS + r")\b", re.I), True, "neg"),
    ("diet", re.compile(r"\bI (?:only )?(?:eat|keep) (halal|kosher)\b", re.I), True, "raw"),
    ("diet", re.compile(r"\bI(?:'m| am) (?:on|following|doing) (?:a |the )?([a-z\-]+ diet)\b", re.I), True, "raw"),
    ("languages", re.compile(r"\bI (?:can |also |only )?speak ((?:(?:fluent|native|basic|some|a (?:bit|little) of|conversational) )?[A-Z][a-z]+(?:(?:, | and | or |/)(?:(?:fluent|native|basic|some|a bit of|a little) )?[A-Z][a-z]+)*)", re.I), True, "langs"),
    ("languages", re.compile(r"\bI(?:'m| am) (?:fluent|conversational|native) in ([A-Z][a-z]+(?:(?:, | and )[A-Z][a-z]+)*)", re.I), True, "langs"),
    ("languages", re.compile(r"\bmy (?:native language|mother tongue|first language|second language) is ([A-Z][a-z]+)", re.I), True, "langs"),
    ("languages", re.compile(r"\bI(?:'m| am) a native ([A-Z][a-z]+) speaker", re.I), True, "langs"),
    ("family", re.compile(r"\bI have ((?:a |an |one |two |three |four |five |\d+ )(?:young |little |grown |adult |teenage )?(?:kids?|children|child|sons?|daughters?|sisters?|brothers?|twins|grandchildren|grandkids)\b[^,.;!?]*)", re.I), True, "text"),
    ("family", re.compile(r"\bI(?:'m| am) an? ((?:single |stay-at-home |working )?(?:mom|mother|dad|father|parent)) (of [^,.;!?]+)", re.I), True, "pair"),
    ("family", re.compile(r"\b(?i:my) (?i:(wife|husband|partner|spouse|fiancee?|girlfriend|boyfriend))(?:,)? ([A-Z][a-z]+)\b"), True, "pair"),
    ("pets", re.compile(r"\bI have (?:[^,.;!?]*?\band )?((?:a |an |one |two |three |\d+ )(?:[a-z]+ )?(?:dogs?|cats?|puppy|puppies|kittens?|rabbits?|parrots?|hamsters?|fish|turtles?)\b(?: (?:named|called) [A-Z][a-z]+)?)", re.I), True, "text"),
    ("identity", re.compile(r"\bI(?:'m| am) an? ((?:[\w\-]+ ){0,3}(?:introvert|extrovert|night owl|early bird|morning person))\b", re.I), True, "raw"),
]

_CNV = r"([^，。,.!！？?；;、]{1,20})"
#: When a move was done (general Chinese time words of the past and present): 现在, 上个月, 前不久 …
#: (one 刚 only: 刚刚 is two, and "刚刚?" under a repeat backtracked exponentially on 我们刚刚刚…)
_CN_DONE = "现在|目前|上个月|上周|上个星期|去年|今年|最近|刚|已经|前年|年初|年底|终于|前不久|不久前|前段时间|前些天"
_CN: list[tuple[str, re.Pattern[str], bool, str]] = [
    ("name", re.compile(r"我叫([\u4e00-\u9fffA-Za-z]{1,8})"), False, "cn_name"),
    ("name", re.compile(r"我的名字(?:是|叫)([\u4e00-\u9fffA-Za-z]{1,8})"), False, "cn_name"),
    ("age", re.compile(r"(?:我|^|，|,)(?:今年|已经)?(\d{1,3})岁"), False, "raw"),
    ("residence", re.compile(r"(?:我(?:和|跟|与)[\u4e00-\u9fff]{1,4}?|我|^|，|,)(?:现在|目前|一直|已经)?(?:住在|居住在|定居在|定居|生活在|安家在)" + _CNV),
     False, "cn_place"),
    # a move done, with its time said: 我现在 / 前不久 / 去年 搬到了X (no plan: 下个月, 打算)
    ("residence", re.compile(r"我(?:" + _CN_DONE + r")?(?:刚)?(?:搬到了|搬到|搬去了|搬去|移居到?)" + _CNV), False, "cn_place"),
    ("residence", re.compile(r"(?:我|^|，|,)(?:现在|目前)?(?:人)?在([\u4e00-\u9fff]{2,6})(?:生活|定居|安家)"), False, "cn_place"),
    # said in passing, or by "we": "自从搬到杭州，…", "我们刚搬到深圳，…", "搬来西安之后…" — a place of the gazetteer only
    # "我们家上个月搬去了成都", "我去年从武汉搬到了南京" (the place left is no home any more): a place of the
    # gazetteer only, since a move from one thing to another is as often a tool's ("从 MySQL 搬到 PostgreSQL")
    ("residence", re.compile(r"(?:我们?(?:一?家)?|^|，|,)(?:自从|都|" + _CN_DONE + r")*+"
                             r"(?:从[^，。,.!！？?；;]{1,12}?)?(?:搬到了?|搬去了?|搬来了?|搬家到了?|搬回了?|移居到?)" + _CNV),
     False, "cn_known_place"),
    ("work_location", re.compile(r"(?:我|^|，|,)(?:现在|目前)?在([\u4e00-\u9fff]{2,6})(?:远程办公|远程工作|办公)"), False, "cn_place"),
    ("work_location", re.compile(r"(?:我|^|，|,)(?:现在|目前)?(?:远程)?在(家)(?:远程)?(?:办公|工作|上班)"), False, "raw"),
    ("work_location", re.compile(r"(?:我|^|，|,)(?:现在|目前|一直)?在([\u4e00-\u9fff]{2,6}?)(?:工作|上班)"), False, "cn_known_place"),
    ("work_location", re.compile(r"我的?(?:办公室|公司|工位)在" + _CNV), False, "cn_place"),
    ("origin", re.compile(r"(?:我|^|，|,)来自" + _CNV), False, "cn_place"),
    ("origin", re.compile(r"(?:我|^|，|,)(?:老家|家乡|祖籍)(?:是|在)" + _CNV), False, "cn_place"),
    ("origin", re.compile(r"我是([\u4e00-\u9fff]{2,4})人(?:[，。,.!！]|$)"), False, "cn_place"),
    ("employer", re.compile(r"(?:我|^|，|,)(?:现在|目前)?在([^，。,.!！？?；;在的]{2,16}?)(?:工作|上班|任职|实习)"), False, "cn_org"),
    ("employer", re.compile(r"(?:我的|^|，|,)(?:新)?工作(?:在|于)([^，。,.!！？?；;]{2,12})"), False, "cn_org"),
    ("employer", re.compile(r"(?:^|我|，|,)(?:现在|目前)?(?:在|入职了?|加入了?)([^，。,.!！？?；;]{1,16}?(?:"
                            + "|".join(ORG_HEADS) + r"))(?:工作|上班|任职|做|当|担任|实习)"), False, "cn_org"),
    ("employer", re.compile(r"(?:^|我|，|,)(?:现在|目前|上个月|上周|去年|今年|最近|刚|已经)*+(?:入职了?|加入了?|跳槽到了?)([^，。,.!！？?；;]{2,16})"), False, "cn_org"),
    ("employer", re.compile(r"(?:^|我|，|,)(?:现在|目前)?在\s*([A-Za-z][\w&.\- ]{1,30}?|[\u4e00-\u9fff]{2,10}?)\s*(?:做|当)([^，。,.!！？?；;]{2,10})"), False, "cn_org"),
    ("occupation", re.compile(r"(?:^|我|，|,)(?:现在|目前)?在\s*(?:[A-Za-z][\w&.\- ]{1,30}?|[\u4e00-\u9fff]{2,10}?)\s*(?:做|当)([^，。,.!！？?；;]{2,10})"), False, "cn_text"),
    ("occupation", re.compile(r"(?:我|^|，|,)(?:现在|目前)?是(?:一名|一个|一位|个|名)?([^，。,.!！？?；;]{0,16}?(?:" + _JOBS_CN + r"))"), False, "cn_text"),
    ("occupation", re.compile(r"(?:我|^|，|,)(?:的)?(?:职业|工作)是([^，。,.!！？?；;]{2,12})"), False, "cn_text"),
    ("education", re.compile(r"我(?:在)?(?:学|读|念)([^，。,.!！？?；;]{1,16})"), False, "cn_text"),
    ("relationship", re.compile(r"(?:我|^|，|,)(?:还是|现在|目前)?(单身|已婚|离异|离婚了|结婚了|订婚了)"), False, "raw"),
    ("diet", re.compile(r"(?:我|^|，|,)(?:一直|平时|现在)?(?:吃素|是素食者|是素食主义者|吃全素|是纯素食者)"), True, "cn_veg"),
    ("diet", re.compile(r"(?:我|^|，|,)(?:一直|平时|现在)?(?:不吃|不能吃|忌口)(肉|猪肉|牛肉|海鲜|鱼|鸡蛋|辣|乳制品|麸质)"), True, "cn_neg"),
    ("diet", re.compile(r"(?:我|^|，|,)(?:有)?(乳糖不耐受?|麸质过敏)"), True, "raw"),
    ("diet", re.compile(r"(?:我|^|，|,)(?:只)?吃(清真)"), True, "raw"),
    ("languages", re.compile(r"(?:我|^|，|,)(?:会说|会讲|能说|能讲|说|讲)((?:[\u4e00-\u9fff]{1,5}(?:语|话|文)(?:和|、|跟|及)?){1,4})"), True, "cn_langs"),
    ("languages", re.compile(r"(?:我的)?(?:母语|第一语言)是([\u4e00-\u9fff]{1,5}(?:语|话|文))"), True, "cn_langs"),
    ("family", re.compile(r"(?:我|^|，|,)有(一个|两个|三个|一对|俩)(儿子|女儿|孩子|小孩|双胞胎|哥哥|姐姐|弟弟|妹妹)"), True, "cn_pair"),
    ("pets", re.compile(r"(?:我|^|，|,)(?:养了|有)(一只|两只|三只|一条)(猫|狗|小猫|小狗|兔子|鹦鹉)"), True, "cn_pair"),
]

#: The name patterns: a speaker who names themself is no entity they mention.
NAME_PATTERNS: list[re.Pattern[str]] = [p for a, p, _, _ in (*_EN, *_CN) if a == "name"]

#: Words after "I'm" that are not names ("Hi, I'm Sorry ...", "I'm Back").
_NOT_NAMES = frozenset("""sorry back here new home fine good great okay ok glad happy sure done ready excited tired
so just also still not really very from in at on the a an""".split())  # noqa: SIM905
_CN_NOT_FACT = frozenset("说在不真觉想来去要会能把被很太挺非有没这那个从跟")
_PRONOUN = re.compile(r"(?:myself|ourselves|yourself|himself|herself|themselves|my|your|his|her|their|our|the same|here|there|it|this|that|them|him|you)\b", re.I)


def _langs(value: str) -> list[str]:
    out = []
    for part in re.split(r",\s*|\s+and\s+|\s+or\s+|/", value):
        word = part.strip().split()[-1] if part.strip() else ""
        if word and is_language(word) and word.casefold() not in {"python", "java", "rust", "go"}:
            out.append(word.capitalize())
    return out


#: "说实话" (to be honest), "说个题外话" (by the way), "说句心里话": sayings with 话 that name
#: no language; a measure word (个/句/些/点/几) before the noun marks an utterance, not a tongue.
_CN_SAYINGS = frozenset(["实话", "真话", "假话", "废话", "大话", "笑话", "题外话", "心里话", "老实话", "好话", "坏话", "闲话", "空话", "说话", "情话", "气话", "狠话", "俏皮话", "客套话", "悄悄话", "傻话", "胡话", "丑话", "官话", "套话", "反话", "怪话", "私房话", "醉话", "梦话", "白话"])


#: Places one spends the day or is kept in, said as 住在X figuratively or for a while ("我现在住在
#: 公司了" — practically lives at the office; 住在医院 — in hospital): no home. Near one is
#: ("住在公司附近"). General Chinese words.
_CN_NO_HOME = frozenset("公司 办公室 工位 单位 实验室 机房 工地 工厂 车间 医院 图书馆 健身房 网吧 车上 群里".split())  # noqa: SIM905
#: "together" (我和他住在一起, 跟爸妈住在一块儿): who one lives with, no place.
_CN_TOGETHER = ("一起", "一块", "一处")


def _cn_langs(value: str) -> list[str]:
    return [p for p in re.split(r"和|、|跟|及", value)
            if p and p not in _CN_SAYINGS and p[0] not in "个句些点几这那一两"
            and (is_language(p) or p.endswith(("语", "话")))]


def _values(kind: str, match: re.Match[str]) -> list[str]:
    """The clean values of one match (several for a list of languages)."""
    raw = match.group(1) if match.re.groups else match.group(0)
    if kind in ("place", "known_place"):
        return [v] if (v := _place(raw, known=kind == "known_place")) else []
    if kind == "text":
        return [v] if (v := _cut(raw, 8)) else []
    if kind == "neg":
        return [f"no {raw.lower()}"]
    if kind == "langs":
        return _langs(raw)
    if kind == "pair":
        return [_cut(f"{match.group(1)} {match.group(2)}" if match.group(2) else match.group(1), 8)]
    if kind == "cn_name":
        return [re.split(r"[是，,。]", raw)[0]]
    if kind in ("cn_place", "cn_known_place"):
        value = _cut_cn(raw, 12).removesuffix("的")  # "我老家是四川的"
        if names_a_tool(value.rstrip("里上")) or value.rstrip("里上") in _CN_NO_HOME or value.startswith(_CN_TOGETHER):
            return []  # "我现在住在公司了" / "住在Slack里": where one spends the day, no home; 我和他住在一起: no place
        known = kind == "cn_place" or _cn_known_place(value)
        return [value] if value and known and not is_language(value) and value[0] not in _CN_NOT_FACT else []
    if kind == "cn_org":
        value = _cut_cn(raw, 16).strip()
        return [value] if value and value[0] not in _CN_NOT_FACT and not is_place(value) else []
    if kind == "cn_text":
        value = _cut_cn(raw, 16) if not raw.endswith(("工程师", "经理", "老师")) else raw.strip()
        return [value] if value and value[0] not in _CN_NOT_FACT else []
    if kind == "cn_veg":
        return ["vegetarian"]
    if kind == "cn_neg":
        return [f"不吃{raw}"]
    if kind == "cn_langs":
        return _cn_langs(raw)
    if kind == "cn_pair":
        return [f"{match.group(1)}{match.group(2)}"]
    return [raw.strip()]


_WISH_CN = re.compile(r"(?:如果|假如|要是|打算|考虑|可能|想要?|会不会|是否|吗)")
_WISH_EN = re.compile(r"\b(?:if|would|might|(?-i:may)|maybe|should|considering|thinking (?:of|about)|planning to|"
                      r"want to|wanna|hope to|going to|gonna|will)\b", re.I)
_PLACE_ATTRIBUTES = frozenset({"residence", "work_location", "employer"})


def profile_facts(sentence: str, cjk: bool) -> list[tuple[str, str, bool]]:
    """``(attribute, value, multi)`` facts a speaker states about themself in ``sentence``.

    The first pattern of a single-valued attribute that matches wins; a place attribute
    whose value is no place (a language, a lower-case phrase) gives nothing.
    """
    return list(_profile_facts(sentence, cjk))


@functools.lru_cache(maxsize=2048)
def _profile_facts(sentence: str, cjk: bool) -> tuple[tuple[str, str, bool], ...]:
    """Cached: a commit reads one sentence for the profile extractor and again for the
    timeline's claims."""
    out: list[tuple[str, str, bool]] = []
    seen: set[str] = set()
    wish: bool | None = None
    for attribute, pattern, multi, kind in (_CN if cjk else _EN):
        if not multi and attribute in seen:
            continue
        if attribute in _PLACE_ATTRIBUTES:
            if wish is None:
                wish = bool((_WISH_CN if cjk else _WISH_EN).search(sentence))
            if wish:
                continue  # a plan or a wish is no fact about where one lives or works
        match = pattern.search(sentence)
        if not match:
            continue
        for value in _values(kind, match):
            value = value.strip(" '\"“”’")
            if (len(value) < 2 and not re.match(r"[\u4e00-\u9fff]", value)) or _PRONOUN.match(value):
                continue
            if attribute == "name" and (value.casefold() in _NOT_NAMES or is_language(value) or is_place(value)):
                continue
            if attribute == "origin" and kind == "place" and not (is_place(value) or value[:1].isupper()):
                continue
            if attribute == "occupation" and re.match(r"to\s", value, re.I):
                continue  # "my job is to build a planner": a task, not an occupation
            if attribute == "occupation" and kind == "text":  # "a nurse at Google": the job, not its place
                value = re.sub(r"\s+(?:(?:at|for)\s|in\s+(?:the\s+)?[A-Z]).*$", "", value)
            if attribute == "work_location" and kind == "place" and not is_place(value):
                continue  # "I work from a café": too vague to be a work location
            if (attribute, value.casefold()) in {(a, v.casefold()) for a, v, _ in out}:
                continue
            out.append((attribute, value, multi))
            seen.add(attribute)
    if any(a == "occupation" for a, _, _ in out):
        out = [f for f in out if f[0] != "identity"]
    return tuple(out)
