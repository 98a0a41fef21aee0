"""Slot claims: what a memory says the current value of something is.

A *slot* is a subject and an attribute (``user|residence``, ``user|database``,
``user|database|side project``); a *claim* says the slot holds a value from the time of the
message that states it. :mod:`.timeline` compares claims across sessions to find updates
and contradictions. Claims come from:

* profile facts (``metadata.facts``: subject, attribute, value, multi) — a multi-valued
  attribute (languages, family, diet) is never superseded;
* the statements of a person's message that pick one member of a *value class* — a
  general list of interchangeable choices (databases, web and front-end frameworks,
  programming languages, clouds, editors, operating systems, package managers, CI systems,
  message queues, ORMs, test frameworks, CSS frameworks, build tools, indentation,
  colour theme): "we use PostgreSQL", "let's go with FastAPI", "我们改用 Vue 了";
* the residence / work-location / employer / job facts of the same statements (a person's
  message only: an unnamed assistant's "I'm a …" is not the user);
* quantities — a number with a unit ("batches of 500 rows", "借期 30 天") on ``user|qty|unit``
  with the words before it as :attr:`Claim.topic`: only a statement with change wording
  replaces one, and only one whose topic overlaps (:func:`topics_overlap`);
* names of a project or product ("the app is called X", "rename the app to Y", "项目改名为 Z").

A statement that only asks, plans or hedges ("should we use MongoDB?", "maybe Redis",
"我们要不要换成 Go") claims nothing; one that names two members of a class without a change
wording ("MySQL at work and SQLite at home") claims nothing for that class. ``for my side
project`` / ``在个人项目里`` qualifies the slot, so two projects never supersede each other.
*Cues*: ``change`` (switched to, moved to, instead of, no longer, 改用, 换成, 不再) and
``correction`` (actually, sorry I meant, correction, 其实, 更正, 说错了) say that the statement
replaces an earlier value; without a cue only a later session does.

Word lists are general technical and everyday vocabulary, not benchmark text.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from knowhub.providers.llm.local_context_profile import profile_facts
from knowhub.providers.llm.local_context_text import has_cjk, split_sentences

__all__ = ["EXCLUSIVE_ATTRIBUTES", "VALUE_CLASSES", "Claim", "claims_in_text", "fact_claims", "topics_overlap", "value_key"]

#: Profile attributes with one current value (the others are lists: languages, family ...).
EXCLUSIVE_ATTRIBUTES = frozenset({"name", "age", "residence", "work_location", "employer", "occupation",
                                  "relationship", "education"})

#: class → members (``|`` separates names; the first spelling of a ``=`` group is canonical).
VALUE_CLASSES: dict[str, str] = {
    "database": "PostgreSQL=Postgres=Postgresql=PG|MySQL|MariaDB|SQLite|MongoDB=Mongo|Oracle|SQL Server=MSSQL|Cassandra|"
                "DynamoDB|CockroachDB|TiDB|ClickHouse|Supabase|Neo4j|CouchDB|Firestore|DuckDB|Snowflake|BigQuery",
    "cache": "Redis|Memcached|Valkey",
    "backend framework": "Django|Flask|FastAPI|Express=Express.js|Koa|NestJS|Rails=Ruby on Rails|Spring Boot=Spring|Laravel|"
                         "Gin|Echo|Fiber|ASP.NET|Phoenix|Actix|Axum|Rocket|Sinatra|Symfony|Starlette|Tornado|Hono",
    "frontend framework": "React|Vue=Vue.js|Angular|Svelte=SvelteKit|SolidJS|Next.js=Nextjs|Nuxt|Remix|Astro|Ember|jQuery",
    "programming language": "Python|Rust|Go=Golang|Java|Kotlin|TypeScript|JavaScript|C#|C\\+\\+|Ruby|PHP|Swift|Elixir|Scala|Zig",
    "cloud": "AWS=Amazon Web Services|GCP=Google Cloud|Azure|DigitalOcean|Heroku|Vercel|Netlify|Fly.io|Cloudflare|"
             "Alibaba Cloud=阿里云|腾讯云|华为云|Hetzner|Linode|Render|Railway",
    "editor": "VS Code=VSCode=Visual Studio Code|Vim|Neovim|Emacs|IntelliJ|PyCharm|WebStorm|Sublime Text=Sublime|Cursor|Zed|"
              "Xcode|Helix",
    "operating system": "Linux|Ubuntu|Debian|Fedora|Arch Linux|macOS=Mac OS|Windows|FreeBSD|CentOS",
    "js package manager": "npm|yarn|pnpm|bun",
    "python package manager": "pip|poetry|uv|conda|pipenv|pdm",
    "ci": "GitHub Actions|GitLab CI|Jenkins|CircleCI|Travis CI=Travis|Buildkite|Drone CI",
    "message queue": "Kafka|RabbitMQ|NATS|SQS|Pulsar|ActiveMQ|Celery",
    "orchestration": "Kubernetes=k8s|Docker Swarm|Nomad|ECS",
    "orm": "SQLAlchemy|Prisma|Django ORM|TypeORM|Sequelize|Drizzle|Hibernate|GORM|Diesel|Peewee",
    "test framework": "pytest|unittest|Jest|Vitest|Mocha|JUnit",
    "browser automation": "Cypress|Playwright|Selenium|Puppeteer",
    "css framework": "Tailwind=Tailwind CSS|Bootstrap|Bulma|Material UI=MUI|Chakra UI=Chakra",
    "state management": "Redux|MobX|Zustand|Pinia|Vuex",
    "search engine": "Elasticsearch|OpenSearch|Meilisearch|Typesense|Solr",
    "build tool": "Webpack|Vite|esbuild|Rollup|Parcel|Gradle|Maven|Bazel|CMake",
    "mobile framework": "Flutter|React Native|SwiftUI|Jetpack Compose",
    "indentation": "tabs=tab|spaces=space|2 spaces=two spaces|4 spaces=four spaces",
    "theme": "dark mode=dark theme=深色模式|light mode=light theme=浅色模式",
    "chat and alerting": "Slack|Microsoft Teams=MS Teams|PagerDuty|Opsgenie|Discord|Mattermost|Telegram|钉钉=DingTalk|"
                         "飞书=Feishu=Lark|企业微信=WeCom",
    "kubernetes packaging": "Helm|Kustomize|Jsonnet|cdk8s",
    "gitops": "Argo CD=ArgoCD|Flux=FluxCD",
    "infrastructure as code": "Terraform|Pulumi|CloudFormation|OpenTofu",
    "login method": "magic link=magic links|SMS code=SMS codes=短信验证码|passkey=passkeys|one-time password=OTP|"
                    "password=passwords|密码登录|扫码登录",
}


def value_key(value: str) -> str:
    """Comparison key of a value: case-folded letters and digits (and CJK)."""
    return re.sub(r"[\W_]+", "", value.casefold())


def _build_members() -> list[tuple[str, str, re.Pattern[str], tuple[str, ...] | None]]:
    """``(class, canonical, pattern, literals)``: ``literals`` are the case-folded names a
    match must contain (None when a name is a pattern, like ``Next.js``), a cheap test that
    skips the pattern for a sentence naming none of them."""
    out = []
    for cls, spec in VALUE_CLASSES.items():
        for group in spec.split("|"):
            names = group.split("=")
            canonical = names[0].replace("\\+", "+")
            alternation = "|".join(sorted(names, key=len, reverse=True))
            flags = 0 if cls in ("programming language",) else re.I  # "go" / "Go", "swift"
            plain = [n.replace("\\+", "+") for n in names]
            literals = None if any(re.search(r"[.\\^$*?{}\[\]()|]", n) for n in plain) else tuple(n.casefold() for n in plain)
            out.append((cls, canonical, re.compile(rf"(?<![\w.#+-])(?:{alternation})(?![\w#+-]|\.\w)", flags), literals))
    return out


_MEMBERS = _build_members()
#: Any member at all (case-insensitive, so a superset of every member pattern's matches): a
#: sentence it does not match names no value, and the ~200 member patterns are not run.
_ANY_MEMBER = re.compile(
    r"(?<![\w.#+-])(?:" + "|".join(sorted((n for spec in VALUE_CLASSES.values() for g in spec.split("|") for n in g.split("=")),
                                           key=len, reverse=True)) + r")(?![\w#+-]|\.\w)", re.I)

_ASK_EN = re.compile(
    r"\b(?:should (?:we|i)|could (?:we|i)|shall we|what about|how about|considering|consider|thinking (?:of|about)|"
    r"maybe|might|perhaps|would it|is it worth|wondering|or should|vs\.?|versus|compare|comparing|pros and cons|"
    r"if (?:we|i)|whether|recommend|suggest|not sure)\b", re.I)
_ASK_CN = re.compile(r"(?:吗|要不要|是否|考虑|可能|或者|还是|如果|假如|对比|比较|哪个好|建议|推荐|不确定|纠结)")
#: A value being refused or stopped: "don't use X", "no longer on X" (up to two words between).
_NEG_EN = re.compile(r"\b(?:don't|do not|won't|will not|never|no longer|not|stopped|stop|quit|dropped|ditched|avoid)"
                     r"\s+(?:\w+\s+){0,2}$|"
                     # a value being left: "from X", "instead of X", "replace X"
                     r"\b(?:from|instead of|rather than|away from|replace|replaced|replacing|over)\s+(?:the\s+)?$", re.I)
_NEG_CN = re.compile(r"(?:不用|不再用|不要用|别用|放弃|弃用|替换掉?|从|不是|而不是|代替)\s*$")
_CHANGE_EN = re.compile(
    r"\b(?:switch(?:ed|ing)?|migrat(?:e|ed|ing)|mov(?:e|ed|ing)|chang(?:e|ed|ing)|convert(?:ed|ing)?|port(?:ed|ing)?|"
    r"rewr(?:ite|ote|iting)|replac(?:e|ed|ing)|instead|no longer|anymore|any more|from now on|now (?:we|i) use|"
    r"went back|switched back|ditched|dropped|gave up on|changed my mind|these days|nowadays)\b", re.I)
_CHANGE_CN = re.compile(r"(?:改用|改成|换成|换用|换到|切换到|切到|迁移到|迁到|转到|搬到|不再|不用.{0,8}了|现在用|以后用|改为|弃用|替换)")
_CORRECT_EN = re.compile(r"\b(?:actually|correction|i meant|sorry,? i meant|i was wrong|to correct|my mistake|"
                         r"not \w+ but|scratch that)\b", re.I)
_CORRECT_CN = re.compile(r"(?:其实|更正|纠正|说错了|我是说|搞错了|不对，|不是.{1,12}而是)")
_PARTS = (r"side project|project|app|service|backend|frontend|front-end|back-end|website|site|api|cli|prototype|"
          r"mvp|blog|startup|analytics|tests?|scripts?|homework|mobile app|data pipeline|pipeline|"
          r"infra|infrastructure|deployment|dashboard|admin panel|bot|game|library|sdk|plugin|extension|notebooks?")
#: What a statement is about: "for my side project", "in the backend", "the frontend is ...".
_QUALIFIER_EN = re.compile(rf"\b(?:for|in|on)(?: (?:my|our|the|this|that|a))? ((?:[\w\-]+ ){{0,2}}?(?:{_PARTS}))\b|"
                           rf"\b(?:the|our|my|this) ((?:[\w\-]+ ){{0,2}}?(?:{_PARTS}))\b", re.I)
#: A choice or use of the value: "we use X", "went with X", "X is our database", "写在 X 上".
#: Most words between a choice wording and its value ("switched from MySQL to X": 3); chosen
#: on the dev half of benchmarks/data/context_updates_labelled.json (context_updates_bench.py).
CHOICE_WINDOW = 5
#: Quantity claims on (:func:`_qty_claims`); a switch so that the benchmark compares both.
QUANTITIES = True
_CHOICE_EN_TEXT = (
    r"\b(?:use[sd]?|using|run(?:s|ning)?|ran|on|with|via|through|chose|choose|chosen|pick(?:ed)?|go(?:ing)? with|went with|"
    r"decided (?:on|to use|to go with)|settled on|stick(?:ing)? with|stuck with|switch(?:ed|ing)? (?:over )?to|"
    r"migrat(?:e|ed|ing) to|mov(?:e|ed|ing) (?:over )?to|chang(?:e|ed|ing) to|port(?:ed|ing)? to|adopt(?:ed|ing)?|"
    r"built|build(?:ing)?|written in|writ(?:e|ing) (?:it |this |everything )?in|rewr(?:ite|ote|iting) (?:it |this )?in|"
    r"deploy(?:ed|ing)? (?:to|on)|host(?:ed|ing)? on|stor(?:e|ed|ing)|prefer(?:s|red)?|favou?r|is|are|'s|"
    r"instead|now|in|switch(?:ed|ing)?|migrat(?:e|ed|ing)|mov(?:e|ed|ing)|replac(?:e|ed|ing)|writ(?:e|es|ing)|wrote|"
    r"cod(?:e|es|ing) in|learn(?:ed|ing)?|develop(?:ed|ing)? (?:in|with)|work(?:s|ed|ing)? (?:in|with))\b(?:\s+[^\s.;!?]+){0,%d}\s*$")
_CHOICE_CN_TEXT = (r"(?:用|使用|采用|选|选择|选了|定了|基于|改用|换成|换用|换到|切换到|迁移到|迁到|部署在|部署到|跑在|"
                        r"写|是|为|上|偏好|喜欢用|习惯用)[^，。；！？]{0,%d}$")


@functools.lru_cache(maxsize=16)
def _choice(cjk: bool, window: int) -> re.Pattern[str]:
    """The choice wording that must come at most ``window`` words before a value."""
    return re.compile(_CHOICE_CN_TEXT % (window * 4), re.I) if cjk else re.compile(_CHOICE_EN_TEXT % window, re.I)
_QUALIFIER_CN = re.compile(r"(?:在|给|为|对)?([\u4e00-\u9fff]{1,6}(?:项目|应用|服务|后端|前端|网站|博客|脚本|课程|作业|公司))(?:里|中|上|的)")
_AT_WORK = re.compile(r"\b(?:at work|at my job|at the office|at home|personally|for fun|on the side)\b|(?:公司里|在家里|业余)", re.I)


@dataclass(frozen=True)
class Claim:
    """One statement that a slot holds a value (see the module doc)."""

    slot: str
    value: str
    exclusive: bool = True
    cue: str = ""
    text: str = ""
    #: Words of what a quantity measures ("batch", "借期"): a ``…|qty|unit`` slot is shared by
    #: every quantity of that unit, so only claims whose topics overlap are compared.
    topic: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """:func:`value_key` of the value."""
        return value_key(self.value)


def _cue(sentence: str, cjk: bool) -> str:
    if (_CORRECT_CN if cjk else _CORRECT_EN).search(sentence):
        return "correction"
    if (_CHANGE_CN if cjk else _CHANGE_EN).search(sentence):
        return "change"
    return ""


def _qualifier(sentence: str, cjk: bool) -> str:
    match = (_QUALIFIER_CN if cjk else _QUALIFIER_EN).search(sentence)
    if match:
        return value_key(next(g for g in match.groups() if g)).removesuffix("s")
    match = _AT_WORK.search(sentence)
    return value_key(match.group(0)) if match else ""


def _class_claims(sentence: str, subject: str, cjk: bool) -> list[Claim]:
    asks = sentence.rstrip("\"'”’) ").endswith(("?", "？")) or bool((_ASK_CN if cjk else _ASK_EN).search(sentence))
    if asks:
        return []
    if not _ANY_MEMBER.search(sentence):
        return []
    cue = _cue(sentence, cjk)
    qualifier = _qualifier(sentence, cjk)
    found: dict[str, list[str]] = {}
    folded = sentence.casefold()
    for cls, canonical, pattern, literals in _MEMBERS:
        if literals is not None and not any(lit in folded for lit in literals):
            continue
        for match in pattern.finditer(sentence):
            before = sentence[: match.start()]
            if (_NEG_CN if cjk else _NEG_EN).search(before[-40:]):
                continue  # the value being left or refused ("from MySQL", "instead of Flask", "不用X")
            if CHOICE_WINDOW >= 0 and not _choice(cjk, CHOICE_WINDOW).search(before[-80:]) and not re.match(
                    r"\s*(?:is|are|was|will be|it is|for)\b|\s*(?:是|作为|当|做)", sentence[match.end():], re.I):
                continue  # a mention, not a choice ("I read about MongoDB", "MongoDB's docs")
            if canonical not in found.setdefault(cls, []):
                found[cls].append(canonical)
    out = []
    for cls, values in found.items():
        if len(values) != 1:
            continue  # two values of one class and no wording that tells which is chosen
        slot = f"{subject}|{cls}" + (f"|{qualifier}" if qualifier else "")
        out.append(Claim(slot, values[0], True, cue, sentence))
    return out


# ---------------------------------------------------------------------- quantities

#: Units of a setting's value (general measurement and counting words, English and Chinese).
_UNITS_EN = {
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s",
    "seconds": "s", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "h": "h", "hr": "h", "hrs": "h",
    "hour": "h", "hours": "h", "day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month",
    "months": "month", "year": "year", "years": "year", "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "kib": "kb",
    "mib": "mb", "gib": "gb", "tib": "tb", "mi": "mb", "gi": "gb", "%": "%", "percent": "%", "rows": "row",
    "row": "row", "records": "row", "items": "item", "item": "item", "messages": "msg", "lines": "line",
    "requests": "req", "connections": "conn", "workers": "worker", "threads": "thread", "replicas": "replica",
    "retries": "retry", "attempts": "retry", "nodes": "node", "instances": "instance", "cores": "core",
    "vcpus": "core", "cpus": "core", "users": "user", "seats": "seat", "courts": "court", "books": "book",
    "characters": "char", "chars": "char", "pages": "page", "port": "port",
}
_UNITS_CN = {"毫秒": "ms", "秒": "s", "秒钟": "s", "分钟": "min", "小时": "h", "天": "day", "周": "week", "个月": "month",
             "年": "year", "条": "row", "行": "row", "台": "instance", "本": "book", "核": "core", "%": "%",
             "G": "gb", "Gi": "gb", "GB": "gb", "M": "mb", "Mi": "mb", "MB": "mb", "块场地": "court", "片场地": "court"}
_NUM = r"\d+(?:[.,]\d+)*"
_QTY_EN = re.compile(rf"(?<![\w.])({_NUM})\s*-?\s*({'|'.join(sorted(map(re.escape, _UNITS_EN), key=len, reverse=True))})\b"
                     rf"|\bport\s+({_NUM})\b", re.I)
_QTY_CN = re.compile(rf"({_NUM})\s*({'|'.join(sorted(map(re.escape, _UNITS_CN), key=len, reverse=True))})")
#: A change of a setting's value: "increase the batch to 2,000 rows", "8080 instead of 8000", "借期改成 21 天".
_QTY_CHANGE_EN = re.compile(
    r"\b(?:increas|rais|bump|reduc|lower|decreas|extend|shorten|cut|chang|switch|mov|set|mak|updat|adjust|doubl|halv|"
    r"tun|limit|cap)\w*\b[^.;!?]{0,60}?\bto\b|\binstead of\b|\bfrom\s+\S+\s+(?:\S+\s+)?to\b|→|->|\bnow\b|\bnew\b", re.I)
_QTY_CHANGE_CN = re.compile(r"改成|改为|改到|调到|调成|调整为|调整到|提高到|提升到|降到|降低到|减到|减少到|增加到|加到|扩到|扩大到|"
                            r"延长到|缩短到|放宽到|变成|变为|换成|从.{0,12}?(?:到|改|调|提|降|变|增|减|扩|缩)|→|->|现在是|以后是")
_GENERIC_CN = frozenset("个的在从到为改成提高降低调整设置是了就把让由和与或及都也再还并且可以要会能这那其一各等将按于以")


def _stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


_QTY_STOP_EN = frozenset(
    """to from the a an of at is are be it we i our my and or every each per with for in on by now new old instead
    increase raise bump reduce lower change set make move switch up down let please can you should will would than
    that this about around only just max min maximum minimum most least after before run runs use keep""".split())  # noqa: SIM905


def _qty_topic(before: str, cjk: bool) -> tuple[str, ...]:
    """Content words of the clause just before a quantity ("the writer's batch size" →
    writer, batch, size; "借期" → 借, 期)."""
    clause = re.split(r"[，,。；;：:、!?！？()（）]", before)[-1]
    if cjk:
        tail = clause[-8:]
        chars = [c for c in tail if "\u3400" <= c <= "\u9fff" and c not in _GENERIC_CN]
        pairs = [a + b for a, b in itertools.pairwise(tail) if a in chars and b in chars]
        words = [_stem(w) for w in re.findall(r"[A-Za-z][\w\-]+", clause[-30:])]
        return tuple(dict.fromkeys(chars[-4:] + pairs[-3:] + words[-2:]))
    words = [_stem(w) for w in re.findall(r"[A-Za-z][\w\-']+", clause[-60:])]
    return tuple(dict.fromkeys(w for w in words[-4:] if len(w) > 1 and w not in _QTY_STOP_EN))


def _qty_claims(sentence: str, subject: str, cjk: bool) -> list[Claim]:
    """Quantity claims: the value a sentence gives a setting ("batch of 500 rows", "借期 30 天").

    A quantity is recorded with the words before it; only a sentence with change wording
    (:data:`_QTY_CHANGE_EN`) replaces an earlier quantity of the same unit and an
    overlapping topic (see :meth:`~.timeline.Timeline.link`), and only its last quantity
    (the new value: "from 500 to 2,000 rows") claims."""
    matches = list((_QTY_CN if cjk else _QTY_EN).finditer(sentence))
    if not matches or len(sentence) > 300:
        return []
    changed = bool((_QTY_CHANGE_CN if cjk else _QTY_CHANGE_EN).search(sentence))
    units = _UNITS_CN if cjk else _UNITS_EN
    out: list[Claim] = []
    first_of_unit: dict[str, int] = {}
    for match in matches:
        if match.group(1) is None and not cjk:  # "port 8080"
            number, unit = match.group(3), "port"
        else:
            raw = match.group(2)
            number, unit = match.group(1), units.get(raw.lower(), units.get(raw, ""))
        if not unit or unit in {c.slot.rsplit("|", 1)[-1] for c in out}:
            continue  # one value per unit and sentence: the first that is not being left
        before = sentence[: match.start()]
        first_of_unit.setdefault(unit, match.start())
        if changed and re.search(r"(?:\b(?:from|instead of|rather than|not|was|were)\s*$|(?:从|不是|而不是|原来是?)\s*$)",
                                 before, re.I):
            continue  # the value being left ("from 500", "从 3 本")
        topic = _qty_topic(sentence[: first_of_unit[unit]], cjk)  # "每人最多从 3 本提高到 5 本": 每人最多
        if not topic:
            continue
        value = f"{number.replace(',', '')} {unit}"
        out.append(Claim(f"{subject}|qty|{unit}", value, True, "change" if changed else "", sentence, topic))
    return out


# ---------------------------------------------------------------------- names

_NAMED_PARTS = {"app": "app", "application": "app", "project": "project", "product": "product", "service": "service",
                "bot": "bot", "tool": "tool", "site": "site", "website": "site", "repo": "repo", "repository": "repo",
                "company": "company", "startup": "company", "brand": "product", "game": "game", "library": "library",
                "package": "library", "项目": "project", "应用": "app", "小程序": "app", "产品": "product", "服务": "service",
                "网站": "site", "公司": "company", "仓库": "repo", "游戏": "game", "品牌": "product"}
_NAME_VALUE = r"[\"'“‘`]?((?-i:[A-Z][\w.\-]{1,30})|[\u4e00-\u9fff]{2,8})[\"'”’`]?"
_PART_EN = "|".join(k for k in _NAMED_PARTS if k.isascii())
_NAME_EN = re.compile(
    rf"\b(?:the|our|my|this|new) (?:[a-z\-]+ )?({_PART_EN})(?:'s name| name)? (?:is |will be |'s |is now |gets )?(?:called |named |renamed (?:to )?)?"
    rf"(?:called|named|renamed to|renamed) {_NAME_VALUE}|"
    rf"\b(?:the|our|my|this) ({_PART_EN}) name (?:is|will be|becomes) {_NAME_VALUE}|"
    rf"\brenam\w* (?:the|our|my|this) ({_PART_EN}) (?:to|as|into) {_NAME_VALUE}|"
    rf"\bcall (?:the|our|my|this) ({_PART_EN}) {_NAME_VALUE}", re.I)
_PART_CN = "|".join(k for k in _NAMED_PARTS if not k.isascii())
_NAME_CN = re.compile(rf"({_PART_CN}|[Aa]pp)(?:的)?(?:名字|名称)?(?:改名为|改名叫|更名为|改叫|改成|就叫|叫做|叫|名为|定为|定名为)\s*"
                      rf"[“\"'「]?([A-Za-z][\w.\-]{{1,30}}|[\u4e00-\u9fff]{{2,8}}?)[”\"'」]?(?=[，。,.;；！!？?\s]|$)")


def _name_claims(sentence: str, subject: str, cjk: bool) -> list[Claim]:
    """The name a project or product is given: "the app is called Tidewater", "rename the
    app to Harbor", "项目改名为 青鸟". A rename is a change; a plain naming claims the name."""
    match = (_NAME_CN if cjk else _NAME_EN).search(sentence)
    if not match:
        return []
    groups = [g for g in match.groups() if g]
    if len(groups) < 2:
        return []
    part = _NAMED_PARTS.get(groups[0].lower(), _NAMED_PARTS.get(groups[0], ""))
    value = groups[1].strip(".")
    if not part or not value or value.casefold() in {"it", "that", "this", "something", "what"}:
        return []
    cue = "change" if re.search(r"renam|改名|更名|改叫|改成", match.group(0), re.I) else _cue(sentence, cjk)
    return [Claim(f"{subject}|name of {part}", value, True, cue, sentence)]


def topics_overlap(a: tuple[str, ...] | list[str], b: tuple[str, ...] | list[str]) -> bool:
    """Whether two quantity topics name the same thing: a shared word or Chinese two-character
    word ("借期"), or two shared Chinese characters — one shared character ("保留" / "保持")
    is not enough."""
    shared = set(a) & set(b)
    return any(len(w) > 1 for w in shared) or len(shared) >= 2


def claims_in_text(text: str, subject: str = "user", profile: bool = True) -> list[Claim]:
    """The claims of one message (class choices, quantities, names and, with ``profile``,
    exclusive profile facts: an unnamed assistant's "I'm a …" says nothing about the user)."""
    return list(_claims_in_text(text, subject, CHOICE_WINDOW, QUANTITIES, profile))


@functools.lru_cache(maxsize=512)
def _claims_in_text(text: str, subject: str, window: int, quantities: bool = True,
                    profile: bool = True) -> tuple[Claim, ...]:
    """Cached: a commit asks once per memory of a message (its event, its entities, its
    preference), and the claims are frozen; ``window`` is in the key because a benchmark
    changes :data:`CHOICE_WINDOW` between runs."""
    out: list[Claim] = []
    subject = subject.casefold() or "user"
    for sentence in split_sentences(text):
        cjk = has_cjk(sentence)
        out.extend(_class_claims(sentence, subject, cjk))
        if quantities:
            out.extend(_qty_claims(sentence, subject, cjk))
        out.extend(_name_claims(sentence, subject, cjk))
        cue = _cue(sentence, cjk)
        for attribute, value, multi in profile_facts(sentence, cjk) if profile else ():
            if not multi and attribute in EXCLUSIVE_ATTRIBUTES:
                out.append(Claim(f"{subject}|{attribute}", value, True, cue, sentence))
    unique: dict[tuple[str, str, tuple[str, ...]], Claim] = {}
    for claim in out:
        unique.setdefault((claim.slot, claim.key, claim.topic), claim)
    return tuple(unique.values())


def fact_claims(facts: list[dict[str, object]], cue_text: str = "") -> list[Claim]:
    """Claims of profile facts (``{subject, attribute, value, multi, text}``)."""
    out = []
    for fact in facts:
        attribute = str(fact.get("attribute") or "")
        value = str(fact.get("value") or "")
        if not attribute or not value:
            continue
        text = str(fact.get("text") or cue_text)
        cjk = has_cjk(text)
        subject = str(fact.get("subject") or "user").casefold()
        exclusive = not fact.get("multi") and attribute in EXCLUSIVE_ATTRIBUTES
        out.append(Claim(f"{subject}|{attribute}", value, exclusive, _cue(text, cjk), text))
    return out
