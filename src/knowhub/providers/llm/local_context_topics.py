"""General-language semantic fields for the offline extractors: specific words → the general
words people ask with.

People ask about memories in general terms ("what sports does she play?", "what is his
relationship status?", "什么运动") while they told them in specific ones ("I joined a
volleyball team", "we got engaged"). An LLM extractor writes such general words into its
memories by itself; the offline rules tag each event memory with the *fields* its words
belong to (``- topics:``) and the general words of those fields (``- keywords:``), so that
lexical search can bridge the gap.

Provenance. The fields are the ordinary semantic fields of everyday conversation (the kind
of top-level classes a thesaurus such as Roget's or a Chinese 同义词词林 uses: sport, music,
food, family, work, health, ...). Every field lists

* ``general`` — the hypernyms and attribute names of the field (the words a question uses);
* ``members`` — common English and Chinese hyponyms and collocations of the field,

written from general English and Chinese vocabulary by the knowhub engineers. No entry was
taken from benchmark text; the earlier lexicon, which had entries lifted from the LoCoMo dev
conversations, was replaced by this one. Whether tagging helps is validated
leave-one-conversation-out (``benchmarks/context_bench.py --loo``, switch ``lexicon_tags``).
``*`` at the end of an English member matches any ending (``paint*``: paints, painting).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["FIELDS", "IRREGULAR_VERBS", "Field", "base_verbs", "keywords_of", "topics_of"]


class Field(NamedTuple):
    """One semantic field: the general words a question uses and the specific members."""

    general: tuple[str, ...]
    members: tuple[str, ...]


FIELDS: dict[str, Field] = {
    "sports": Field(
        ("sport", "sports", "exercise", "fitness", "activity", "运动"),
        ("soccer", "football", "basketball", "baseball", "softball", "tennis", "golf", "volleyball", "hockey",
         "rugby", "cricket", "badminton", "table tennis", "ping pong", "squash", "bowling", "swim*", "running",
         "jog*", "marathon*", "cycling", "surf*", "ski", "skiing", "snowboard*", "skat*", "climbing", "rowing",
         "kayak*", "canoe*", "sailing", "triathlon*", "gym", "workout*", "yoga", "pilates", "track and field",
         "athlete*", "team", "match", "tournament*", "coach*", "足球", "篮球", "排球", "网球", "羽毛球", "乒乓球",
         "游泳", "跑步", "健身", "瑜伽", "马拉松", "滑雪", "攀岩", "骑行")),
    "martial arts": Field(
        ("martial arts", "combat sport", "self-defense", "武术"),
        ("karate", "judo", "taekwondo", "kung fu", "jiu-jitsu", "jiu jitsu", "aikido", "kickboxing", "boxing",
         "muay thai", "wrestling", "fencing", "mma", "tai chi", "capoeira", "空手道", "柔道", "跆拳道", "拳击",
         "功夫", "太极", "摔跤", "击剑")),
    "musical instruments": Field(
        ("instrument", "instruments", "music", "乐器"),
        ("guitar*", "piano*", "violin*", "viola", "cello*", "double bass", "drum*", "flute*", "clarinet*",
         "saxophone*", "trumpet*", "trombone*", "harp", "ukulele*", "banjo*", "keyboard*", "harmonica", "吉他",
         "钢琴", "小提琴", "大提琴", "鼓", "长笛", "萨克斯", "古筝", "二胡", "琵琶")),
    "music": Field(
        ("music", "musical", "音乐"),
        ("song*", "album*", "concert*", "band", "bands", "singer*", "sing*", "musician*", "playlist*", "lyrics",
         "melod*", "jazz", "rock", "hip hop", "rap", "classical", "orchestra*", "choir*", "opera", "gig*",
         "歌", "唱歌", "歌手", "演唱会", "乐队", "专辑")),
    "food and cooking": Field(
        ("food", "cooking", "recipe", "dish", "meal", "美食", "做饭"),
        ("cook*", "bak*", "recipe*", "dish*", "meal*", "dinner", "lunch", "breakfast", "brunch", "restaurant*",
         "kitchen", "soup*", "salad*", "pasta", "noodle*", "rice", "bread", "pizza*", "sandwich*", "burger*",
         "steak", "curry", "stew", "sushi", "taco*", "barbecue", "grill*", "roast*", "vegan", "vegetarian",
         "做饭", "烹饪", "菜谱", "菜", "饭", "餐厅", "厨房", "火锅", "饺子", "面条", "烤")),
    "desserts and sweets": Field(
        ("dessert", "desserts", "sweets", "treat", "甜点"),
        ("cake*", "cupcake*", "cookie*", "biscuit*", "brownie*", "pie", "pies", "tart*", "pastr*", "muffin*",
         "pudding*", "ice cream", "gelato", "chocolate*", "candy", "candies", "donut*", "doughnut*",
         "cheesecake*", "蛋糕", "饼干", "冰淇淋", "巧克力", "甜品", "糖果")),
    "drinks": Field(
        ("drink", "drinks", "beverage", "饮料"),
        ("coffee", "tea", "latte*", "espresso", "juice*", "wine", "beer*", "cocktail*", "soda", "milk",
         "咖啡", "茶", "果汁", "啤酒", "红酒", "奶茶")),
    "pets and animals": Field(
        ("pet", "pets", "animal", "animals", "宠物", "动物"),
        ("dog*", "pupp*", "cat", "cats", "kitten*", "hamster*", "rabbit*", "bunn*", "guinea pig*", "parrot*",
         "bird*", "fish", "goldfish", "turtle*", "tortoise*", "lizard*", "snake*", "horse*", "pony", "vet",
         "veterinar*", "狗", "小狗", "猫", "小猫", "兔子", "仓鼠", "鹦鹉", "乌龟", "马", "兽医")),
    "books and reading": Field(
        ("book", "books", "reading", "read", "阅读", "书"),
        ("novel*", "author*", "writer*", "chapter*", "library", "libraries", "bookstore*", "memoir*",
         "biograph*", "fiction", "fantasy", "mystery", "thriller*", "poem*", "poetry", "comic*", "manga",
         "书", "小说", "读书", "作者", "图书馆", "书店", "诗")),
    "art and crafts": Field(
        ("art", "arts", "craft", "crafts", "hobby", "creative", "艺术", "爱好"),
        ("paint*", "draw*", "sketch*", "sculpt*", "pottery", "ceramic*", "clay", "knit*", "crochet*", "sew*",
         "quilt*", "embroider*", "origami", "calligraph*", "photograph*", "canvas", "watercolor*", "mural*",
         "gallery", "galleries", "museum*", "exhibit*", "画画", "绘画", "素描", "陶艺", "雕塑", "摄影", "书法",
         "手工", "编织", "画展", "美术馆", "博物馆")),
    "writing": Field(
        ("writing", "write", "写作"),
        ("writ*", "wrote", "journal*", "diary", "diaries", "blog*", "essay*", "story", "stories", "poem*",
         "poetry", "screenplay*", "script*", "novel*", "publish*", "manuscript*", "写", "日记", "博客", "文章",
         "剧本", "出版")),
    "family": Field(
        ("family", "relatives", "家人", "家庭"),
        ("mom", "mum", "mother*", "dad", "father*", "parent*", "sister*", "brother*", "sibling*", "son", "sons",
         "daughter*", "kid", "kids", "child", "children", "husband*", "wife", "wives", "grandma*", "grandpa*",
         "grandmother*", "grandfather*", "grandchild*", "grandson*", "granddaughter*", "aunt*", "uncle*",
         "cousin*", "niece*", "nephew*", "in-law*", "妈妈", "母亲", "爸爸", "父亲", "父母", "姐姐", "妹妹",
         "哥哥", "弟弟", "儿子", "女儿", "孩子", "老公", "老婆", "丈夫", "妻子", "爷爷", "奶奶", "外公", "外婆",
         "叔叔", "阿姨", "表哥", "表姐")),
    "children and parenting": Field(
        ("kids", "children", "parenting", "孩子", "育儿"),
        ("kid", "kids", "child", "children", "son", "sons", "daughter*", "baby", "babies", "toddler*",
         "pregnan*", "newborn*", "adopt*", "foster*", "daycare", "kindergarten", "babysit*", "孩子", "儿子",
         "女儿", "宝宝", "婴儿", "怀孕", "领养", "收养", "幼儿园")),
    "friends and social life": Field(
        ("friends", "friendship", "social", "朋友"),
        ("friend*", "buddy", "buddies", "pal", "pals", "party", "parties", "hang out", "hanging out", "get-together",
         "gathering*", "neighbor*", "neighbour*", "community", "communities", "club*", "朋友", "好友", "聚会",
         "邻居", "社区")),
    "romantic relationships": Field(
        ("relationship", "relationship status", "romance", "love life", "感情", "恋爱"),
        ("dating", "date", "dates", "boyfriend*", "girlfriend*", "partner*", "fianc*", "engaged", "engagement",
         "married", "marriage", "wedding*", "husband*", "wife", "spouse*", "single", "breakup*", "break-up*",
         "broke up", "divorc*", "ex", "crush", "honeymoon", "约会", "男朋友", "女朋友", "对象", "订婚", "结婚",
         "婚礼", "单身", "分手", "离婚")),
    "travel": Field(
        ("travel", "trip", "vacation", "visit", "旅行", "旅游"),
        ("trip*", "travel*", "vacation*", "holiday*", "journey*", "tour*", "flight*", "flew", "fly", "airport*",
         "abroad", "overseas", "hotel*", "hostel*", "passport*", "sightseeing", "road trip*", "cruise*",
         "backpack*", "visited", "visiting", "旅行", "旅游", "出差", "度假", "出国", "机票", "酒店", "航班", "自驾")),
    "nature and outdoors": Field(
        ("nature", "outdoors", "outdoor", "大自然", "户外"),
        ("hik*", "camp*", "beach*", "mountain*", "lake*", "river*", "forest*", "wood", "woods", "park", "parks",
         "national park*", "garden*", "trail*", "ocean*", "sea", "island*", "waterfall*", "sunset*", "sunrise*",
         "picnic*", "fishing", "star*", "爬山", "徒步", "露营", "海边", "沙滩", "公园", "湖", "森林", "花园", "钓鱼")),
    "health and medicine": Field(
        ("health", "medical", "illness", "injury", "健康", "身体"),
        ("doctor*", "hospital*", "clinic*", "nurse*", "sick", "ill", "illness*", "disease*", "injur*", "hurt",
         "pain", "surgery", "surgeries", "operation", "medicine*", "medication*", "diagnos*", "symptom*",
         "recover*", "fever", "flu", "cold", "allerg*", "broken arm", "broken leg", "sprain*", "fractur*",
         "physical therapy", "rehab*", "checkup*", "医院", "医生", "生病", "感冒", "发烧", "受伤", "手术", "吃药",
         "过敏", "骨折", "扭伤", "体检")),
    "diet and allergies": Field(
        ("diet", "allergy", "allergies", "饮食", "过敏"),
        ("allerg*", "intoleran*", "gluten-free", "dairy-free", "lactose", "vegan", "vegetarian", "keto",
         "calorie*", "can't eat", "cannot eat", "can't have", "过敏", "忌口", "素食", "减肥", "节食")),
    "mental health and stress relief": Field(
        ("mental health", "stress", "wellbeing", "relax", "destress", "心理健康", "放松", "减压"),
        ("stress*", "anxi*", "depress*", "therap*", "counsel*", "mental health", "burnout", "overwhelm*",
         "meditat*", "mindful*", "relax*", "de-stress*", "destress*", "unwind*", "calm*", "self-care",
         "breathing exercise*", "peace of mind", "压力", "焦虑", "抑郁", "心理", "放松", "减压", "解压", "冥想",
         "散心")),
    "work and career": Field(
        ("work", "job", "career", "profession", "occupation", "工作", "职业"),
        ("job*", "career*", "work", "working", "worked", "office", "boss*", "manager*", "colleague*",
         "coworker*", "co-worker*", "employ*", "hired", "fired", "laid off", "resign*", "quit my job",
         "promot*", "salary", "interview*", "intern*", "shift*", "client*", "customer*", "business*",
         "company", "companies", "startup*", "entrepreneur*", "freelanc*", "工作", "上班", "公司", "老板",
         "同事", "面试", "升职", "加薪", "辞职", "失业", "实习", "创业", "客户", "加班")),
    "education and learning": Field(
        ("education", "school", "study", "studies", "learning", "教育", "学习"),
        ("school*", "class", "classes", "course*", "college*", "universit*", "degree*", "major*", "exam*",
         "test", "tests", "homework", "lecture*", "semester*", "study", "studied", "studying", "student*",
         "teacher*", "professor*", "graduat*", "scholarship*", "diploma*", "certificat*", "workshop*",
         "lesson*", "tutor*", "学校", "课程", "上课", "考试", "大学", "学位", "专业", "毕业", "老师", "学生",
         "作业", "论文", "奖学金")),
    "volunteering and charity": Field(
        ("volunteering", "volunteer", "charity", "cause", "志愿", "公益", "慈善"),
        ("volunteer*", "charit*", "donat*", "fundrais*", "nonprofit*", "non-profit*", "shelter*", "food bank*",
         "soup kitchen*", "homeless", "community service", "志愿者", "义工", "慈善", "捐款", "捐赠", "公益")),
    "vehicles and transport": Field(
        ("vehicle", "car", "transport", "交通", "车"),
        ("car", "cars", "truck*", "van", "suv", "motorcycle*", "motorbike*", "bike", "bikes", "bicycle*",
         "scooter*", "bus", "train*", "subway", "drive", "driving", "drove", "license", "tire*", "engine*",
         "mechanic*", "parking", "汽车", "开车", "自行车", "摩托车", "地铁", "公交", "火车", "驾照")),
    "damage and repairs": Field(
        ("damage", "repair", "accident", "损坏", "维修"),
        ("broke", "broken", "break down", "broke down", "crash*", "damag*", "dent*", "leak*", "flat tire",
         "repair*", "fix", "fixed", "fixing", "stolen", "accident*", "flood*", "fire", "坏了", "修理", "维修",
         "损坏", "事故", "被偷")),
    "games": Field(
        ("game", "games", "gaming", "游戏"),
        ("video game*", "game*", "gaming", "gamer*", "console*", "chess", "board game*", "card game*",
         "puzzle*", "poker", "esports", "游戏", "电子游戏", "下棋", "象棋", "围棋", "桌游")),
    "film and television": Field(
        ("movie", "film", "tv", "show", "电影", "电视"),
        ("movie*", "film*", "cinema*", "theater", "theatre", "documentar*", "series", "tv", "television",
         "episode*", "season*", "sitcom*", "actor*", "actress*", "director*", "trailer*", "streaming",
         "电影", "电视剧", "纪录片", "综艺", "演员", "导演", "电影院")),
    "dance and performance": Field(
        ("dance", "dancing", "performance", "舞蹈", "表演"),
        ("danc*", "ballet", "salsa", "tango", "hip-hop", "choreograph*", "stage", "perform*", "recital*",
         "theater", "theatre", "musical*", "跳舞", "舞蹈", "芭蕾", "表演", "演出", "话剧")),
    "religion and faith": Field(
        ("religion", "faith", "spirituality", "宗教", "信仰"),
        ("church*", "temple*", "mosque*", "synagogue*", "pray*", "prayer*", "god", "bible", "quran",
         "spiritual*", "religio*", "worship*", "faith", "教堂", "寺庙", "祈祷", "信仰", "佛教", "基督")),
    "celebrations and holidays": Field(
        ("celebration", "holiday", "festival", "节日", "庆祝"),
        ("birthday*", "anniversar*", "wedding*", "graduation*", "holiday*", "christmas", "thanksgiving",
         "halloween", "easter", "new year*", "festival*", "celebrat*", "party", "parties", "生日", "纪念日",
         "婚礼", "毕业典礼", "节日", "春节", "中秋", "圣诞", "庆祝", "派对")),
    "home and housing": Field(
        ("home", "house", "housing", "住房", "家"),
        ("house*", "home", "apartment*", "flat", "condo*", "rent*", "landlord*", "mortgage*", "moved",
         "moving", "move", "relocat*", "furniture", "decorat*", "renovat*", "garden*", "backyard*", "roommate*",
         "房子", "公寓", "租房", "房租", "搬家", "装修", "家具")),
    "origin and roots": Field(
        ("origin", "hometown", "roots", "background", "老家", "家乡"),
        ("hometown", "home country", "homeland", "grew up", "growing up", "born in", "native", "immigra*",
         "emigra*", "heritage", "ancestr*", "culture", "家乡", "老家", "故乡", "出生", "移民")),
    "childhood": Field(
        ("childhood", "growing up", "童年"),
        ("childhood", "as a kid", "as a child", "when i was young", "when i was little", "grew up",
         "growing up", "teenager", "teen years", "high school", "童年", "小时候", "上小学", "中学")),
    "identity and gender": Field(
        ("identity", "gender", "sexuality", "lgbtq", "身份", "性别"),
        ("lgbt*", "gay", "lesbian", "bisexual", "queer", "transgender", "trans", "transition*", "nonbinary",
         "non-binary", "coming out", "came out", "pride", "gender", "sexual orientation", "同性恋", "跨性别",
         "出柜", "性别")),
    "money and finances": Field(
        ("money", "finances", "finance", "budget", "钱", "理财"),
        ("money", "budget*", "sav*", "loan*", "debt*", "invest*", "stock*", "bank*", "financ*", "rent",
         "mortgage*", "tax", "taxes", "expensive", "cheap", "afford*", "paid", "pay", "bill*", "钱", "存钱",
         "理财", "贷款", "投资", "股票", "工资", "房贷", "账单")),
    "shopping": Field(
        ("shopping", "purchase", "购物"),
        ("shop*", "bought", "buy*", "store*", "mall*", "purchas*", "order*", "online shopping", "sale", "deal*",
         "购物", "买了", "逛街", "网购", "下单")),
    "clothing and fashion": Field(
        ("clothing", "clothes", "fashion", "衣服", "时尚"),
        ("cloth*", "dress*", "shirt*", "jeans", "jacket*", "coat*", "shoe*", "sneaker*", "boot*", "hat*",
         "outfit*", "jewel*", "necklace*", "ring", "earring*", "fashion*", "style", "衣服", "裙子", "鞋", "外套",
         "首饰", "时尚")),
    "technology": Field(
        ("technology", "tech", "computer", "科技", "技术"),
        ("phone*", "smartphone*", "laptop*", "computer*", "tablet*", "app", "apps", "software", "program*",
         "coding", "code", "developer*", "website*", "internet", "online", "robot*", "gadget*", "ai",
         "手机", "电脑", "软件", "编程", "程序", "网站", "网络")),
    "military and service": Field(
        ("military", "armed forces", "service", "军队", "服役"),
        ("military", "army", "navy", "air force", "marine*", "soldier*", "veteran*", "deploy*", "enlist*",
         "troop*", "base", "军队", "当兵", "参军", "退伍", "士兵")),
    "politics and civic life": Field(
        ("politics", "political", "civic", "rights", "政治", "权利"),
        ("politic*", "election*", "vote*", "voting", "campaign*", "government*", "council*", "senat*",
         "congress*", "protest*", "activis*", "rights", "equality", "justice", "policy", "policies", "law*",
         "discriminat*", "政治", "选举", "投票", "政府", "抗议", "平等", "权利")),
    "weather and seasons": Field(
        ("weather", "season", "天气", "季节"),
        ("rain*", "snow*", "storm*", "sunny", "hot", "cold", "heat", "winter", "summer", "spring", "autumn",
         "fall", "下雨", "下雪", "天气", "冬天", "夏天", "春天", "秋天")),
    "recommendations": Field(
        ("recommendation", "recommend", "suggestion", "推荐", "建议"),
        ("recommend*", "suggest*", "must-see", "must-read", "must-watch", "you should try", "you should read",
         "you should watch", "check it out", "worth it", "推荐", "建议", "值得一看", "你应该试试")),
    "collections": Field(
        ("collection", "collect", "收藏"),
        ("collect*", "collector*", "stamp*", "coin*", "vinyl", "record*", "souvenir*", "antique*", "figure*",
         "autograph*", "memorabilia", "收藏", "集邮", "纪念品", "手办")),
}


def _compile_words(words: tuple[str, ...]) -> re.Pattern[str]:
    latin = [re.escape(w.rstrip("*")) + (r"[a-z\-]*" if w.endswith("*") else "") for w in words if w.isascii()]
    cjk = [re.escape(w) for w in words if not w.isascii()]
    parts = ([r"\b(?:" + "|".join(latin) + r")\b"] if latin else []) + cjk
    return re.compile("|".join(parts), re.I)


_COMPILED = [(name, field.general, _compile_words(field.members)) for name, field in FIELDS.items()]
_WORD_ANY = re.compile(r"[a-z]+")


def topics_of(text: str) -> list[str]:
    """Fields whose members occur in ``text``, in lexicon order."""
    return [name for name, _, pattern in _COMPILED if pattern.search(text)]


def keywords_of(text: str) -> list[str]:
    """General words of the fields ``text`` belongs to that it does not already contain."""
    present = set(_WORD_ANY.findall(text.lower()))
    out: dict[str, None] = {}
    for _, general, pattern in _COMPILED:
        if not pattern.search(text):
            continue
        for phrase in general:
            if phrase.isascii():
                out.update((w, None) for w in phrase.split() if w not in present)
            elif phrase not in text:
                out[phrase] = None
    return list(out)


#: Irregular English past forms → base form. Questions ask "when did X go / buy / meet",
#: people tell "I went / bought / met"; a suffix stemmer cannot join them.
IRREGULAR_VERBS: dict[str, str] = {
    "went": "go", "gone": "go", "ran": "run", "took": "take", "taken": "take", "made": "make", "saw": "see",
    "seen": "see", "got": "get", "gotten": "get", "had": "have", "bought": "buy", "gave": "give", "given": "give",
    "met": "meet", "wrote": "write", "written": "write", "found": "find", "felt": "feel", "thought": "think",
    "told": "tell", "began": "begin", "begun": "begin", "became": "become", "brought": "bring", "built": "build",
    "caught": "catch", "chose": "choose", "chosen": "choose", "drew": "draw", "drawn": "draw", "drove": "drive",
    "driven": "drive", "ate": "eat", "eaten": "eat", "fell": "fall", "fallen": "fall", "flew": "fly", "flown": "fly",
    "forgot": "forget", "grew": "grow", "grown": "grow", "heard": "hear", "held": "hold", "kept": "keep",
    "knew": "know", "known": "know", "led": "lead", "left": "leave", "lost": "lose", "paid": "pay", "rode": "ride",
    "sang": "sing", "sung": "sing", "sat": "sit", "slept": "sleep", "spent": "spend", "spoke": "speak",
    "spoken": "speak", "stood": "stand", "swam": "swim", "taught": "teach", "threw": "throw", "thrown": "throw",
    "understood": "understand", "woke": "wake", "won": "win", "wore": "wear", "worn": "wear", "sold": "sell",
    "sent": "send", "shot": "shoot", "sought": "seek", "struck": "strike", "broke": "break", "broken": "break",
    "did": "do", "done": "do", "said": "say", "fought": "fight", "hid": "hide", "hung": "hang", "lit": "light",
    "meant": "mean", "overcame": "overcome", "quit": "quit", "rang": "ring", "rose": "rise", "shook": "shake",
    "shut": "shut", "stole": "steal", "stuck": "stick", "swore": "swear", "tore": "tear", "wept": "weep",
    "wound": "wind", "dug": "dig", "fed": "feed", "froze": "freeze", "bent": "bend", "lent": "lend",
}
_WORD = re.compile(r"[a-z]+")


def base_verbs(text: str) -> list[str]:
    """Base forms of the irregular past verbs in ``text`` (``"I went and ran"`` → ``["go", "run"]``)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        base = IRREGULAR_VERBS.get(word)
        if base and base not in ("do", "have", "say", "get"):
            seen[base] = None
    return list(seen)
