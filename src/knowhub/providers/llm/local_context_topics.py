"""A small concept lexicon for the offline extractors: words → the broader topics they belong to.

People ask about memories in general terms ("what martial arts has John done?", "what
desserts has Maria made?", "什么运动") while they told them in specific ones ("I'm doing
kickboxing", "I made peach cobbler"). An LLM extractor writes such general words into its
memories by itself; the offline rules tag each memory with the topics of this lexicon
instead, so lexical search can bridge the gap. Hand-made and deliberately small.
"""

from __future__ import annotations

import re

__all__ = ["IRREGULAR_VERBS", "KEYWORDS", "TOPICS", "base_verbs", "keywords_of", "topics_of"]

#: topic → words (lower-case; multi-word phrases allowed; a trailing ``*`` matches any ending).
TOPICS: dict[str, tuple[str, ...]] = {
    "martial arts": ("kickboxing", "taekwondo", "karate", "judo", "jiu-jitsu", "jiu jitsu", "kung fu", "mma",
                     "aikido", "muay thai", "boxing", "wrestling", "fencing", "跆拳道", "空手道", "柔道", "拳击", "功夫"),
    "sports": ("soccer", "football", "basketball", "baseball", "tennis", "golf", "volleyball", "hockey", "swim*",
               "running", "marathon", "cycling", "surf*", "ski", "skiing", "snowboard*", "climbing", "rugby",
               "cricket", "badminton", "bowling", "skateboard*", "kayak*", "rowing", "triathlon", "workout*",
               "gym", "yoga", "pilates", "hiking", "jogging", "5k", "race", "足球", "篮球", "网球", "游泳", "跑步",
               "羽毛球", "乒乓球", "健身", "瑜伽", "马拉松", "滑雪", "爬山"),
    "musical instruments": ("guitar", "piano", "violin", "drum*", "ukulele", "flute", "saxophone", "cello",
                            "trumpet", "clarinet", "bass", "harp", "keyboard", "吉他", "钢琴", "小提琴", "鼓"),
    "music": ("song*", "album*", "concert*", "band", "singer", "sing*", "music*", "playlist", "rap", "jazz",
              "rock", "pop", "classical", "orchestra", "choir", "歌", "音乐", "演唱会"),
    "desserts": ("cake*", "pie", "pies", "cobbler", "sundae", "ice cream", "cookie*", "brownie*", "cupcake*",
                 "pudding", "muffin*", "chocolate*", "pastr*", "donut*", "doughnut*", "tart*", "cheesecake",
                 "dessert*", "蛋糕", "甜点", "冰淇淋", "巧克力", "饼干"),
    "food and cooking": ("pizza*", "pasta", "sandwich*", "salad*", "soup*", "burger*", "sushi", "taco*", "curry",
                         "barbecue", "bbq", "steak", "recipe*", "cook*", "bak*", "meal*", "dinner", "lunch",
                         "breakfast", "restaurant*", "dish*", "vegan", "vegetarian", "饭", "菜", "做饭", "餐厅",
                         "火锅", "饺子", "面条"),
    "pets and animals": ("dog*", "cat", "cats", "pupp*", "kitten*", "hamster*", "rabbit*", "bunny", "bird*",
                         "parrot*", "fish", "turtle*", "horse*", "snake*", "guinea pig*", "pet*", "shelter dog*",
                         "狗", "猫", "宠物", "兔子"),
    "books and reading": ("book*", "novel*", "author*", "read", "reading", "library", "poem*", "poetry",
                          "memoir", "书", "小说", "读书", "阅读"),
    "art and crafts": ("paint*", "drawing*", "draw", "sketch*", "sculpt*", "pottery", "ceramic*", "clay",
                       "photograph*", "knit*", "craft*", "mural*", "canvas", "art", "artwork", "gallery",
                       "画", "绘画", "陶艺", "摄影", "手工"),
    "writing": ("writ*", "journal*", "blog*", "poem*", "poetry", "story", "stories", "essay*", "写作", "日记"),
    "family": ("mom", "dad", "mother", "father", "sister*", "brother*", "kid", "kids", "child", "children",
               "son", "sons", "daughter*", "husband", "wife", "grandma", "grandpa", "grandmother", "grandfather",
               "aunt*", "auntie", "uncle*", "cousin*", "parent*", "family", "妈妈", "爸爸", "父母", "孩子",
               "儿子", "女儿", "姐姐", "妹妹", "哥哥", "弟弟", "家人", "老公", "老婆"),
    "friends and social life": ("friend*", "buddy", "buddies", "party", "parties", "hang out", "hangout",
                                "meetup", "community", "neighbor*", "朋友", "聚会"),
    "travel": ("trip*", "travel*", "vacation*", "flight*", "fly", "flew", "abroad", "road trip", "tour*",
               "visit*", "hotel*", "passport", "beach*", "camping", "camp", "national park*", "旅行", "旅游",
               "出差", "度假"),
    "nature and outdoors": ("hik*", "camping", "camp", "beach*", "park", "parks", "mountain*", "lake*",
                            "forest*", "nature", "garden*", "sunset*", "sunrise*", "ocean", "river*", "trail*",
                            "爬山", "公园", "大自然", "海边"),
    "health and medical": ("doctor*", "hospital*", "injur*", "surgery", "sick", "illness", "ill", "medication*",
                           "accident*", "diagnos*", "health*", "pain", "recover*", "医院", "医生", "生病", "受伤"),
    "mental health and wellbeing": ("stress*", "anxiety", "anxious", "depress*", "therap*", "counsel*",
                                    "self-care", "mental health", "meditat*", "mindful*", "burnout", "心理", "压力"),
    "work and career": ("job*", "career*", "boss", "colleague*", "coworker*", "promot*", "office", "interview*",
                        "business*", "company", "startup", "store", "shop", "work", "working", "client*",
                        "salary", "hired", "fired", "工作", "公司", "老板", "同事", "面试", "升职"),
    "education and learning": ("school*", "class", "classes", "course*", "college", "universit*", "degree",
                               "exam*", "test", "tests", "study*", "studied", "certif*", "workshop*", "lesson*",
                               "teacher*", "student*", "graduat*", "学校", "课程", "考试", "大学", "学习"),
    "volunteering and charity": ("volunteer*", "shelter*", "charit*", "donat*", "fundrais*", "nonprofit",
                                 "non-profit", "homeless", "food bank", "志愿", "慈善", "捐"),
    "vehicles": ("car", "cars", "truck*", "bike*", "bicycle*", "motorcycle*", "windshield", "tire*", "engine",
                 "drive", "driving", "车", "汽车", "自行车"),
    "games": ("video game*", "game*", "gaming", "chess", "board game*", "tournament*", "console", "xbox",
              "playstation", "nintendo", "游戏", "比赛"),
    "movies and tv": ("movie*", "film*", "series", "tv", "netflix", "cinema", "documentar*", "show", "shows",
                      "电影", "电视剧"),
    "religion and faith": ("church*", "faith", "god", "pray*", "temple*", "mosque*", "religio*", "spiritual*",
                           "bible", "教堂", "信仰"),
    "celebrations": ("birthday*", "wedding*", "anniversar*", "graduation", "holiday*", "christmas",
                     "thanksgiving", "halloween", "new year", "festival*", "celebrat*", "生日", "婚礼", "节日", "春节"),
    "home": ("house", "home", "apartment", "moved", "moving", "rent*", "decorat*", "furniture", "家", "搬家", "房子"),
    "identity and lgbtq": ("lgbtq*", "transgender", "trans", "gay", "lesbian", "queer", "pride", "coming out",
                           "identity", "nonbinary", "non-binary"),
    "adoption and parenting": ("adopt*", "foster*", "parenting", "baby", "babies", "pregnan*", "领养", "怀孕"),
    "money and finances": ("money", "budget*", "saving*", "loan*", "debt", "invest*", "financ*", "wallet",
                           "expensive", "afford*", "钱", "理财", "贷款"),
    "childhood and growing up": ("childhood", "as a kid", "as a child", "when i was young*", "when i was little",
                                 "growing up", "grew up", "as a teen*", "童年", "小时候"),
    "damage and repairs": ("broke down", "broken", "broke", "crash*", "damag*", "dent*", "flat tire", "leak*",
                           "repair*", "windshield", "stolen", "fix", "fixed", "坏了", "修理", "损坏"),
    "military and patriotism": ("military", "army", "navy", "air force", "marine*", "soldier*", "veteran*",
                                "serve my country", "serving my country", "patriot*", "flag", "deploy*", "军队", "当兵"),
    "places in the united states (u.s. areas)": ("pacific northwest", "east coast", "west coast", "midwest",
                                                 "new england", "new york", "california", "texas", "florida",
                                                 "seattle", "chicago", "boston", "alaska", "hawaii", "colorado",
                                                 "oregon", "washington", "las vegas", "los angeles",
                                                 "san francisco", "yellowstone", "grand canyon", "美国"),
    "dance": ("danc*", "ballet", "salsa", "hip hop", "hip-hop", "tango", "choreograph*", "跳舞", "舞蹈"),
    "fashion and clothing": ("fashion*", "cloth*", "dress*", "shoe*", "sneaker*", "jacket*", "outfit*", "jewel*",
                             "necklace*", "boutique", "wardrobe", "衣服", "时尚"),
    "technology": ("phone*", "laptop*", "computer*", "app", "apps", "software", "coding", "code", "program*",
                   "gadget*", "robot*", "ai", "website*", "手机", "电脑", "编程", "软件"),
    "dating and relationships": ("dating", "date", "dates", "boyfriend", "girlfriend", "partner", "breakup",
                                 "broke up", "single", "married", "marriage", "engaged", "divorc*", "relationship*",
                                 "约会", "恋爱", "结婚", "离婚", "分手"),
    "politics and civic life": ("politic*", "campaign*", "election*", "vote*", "voting", "council", "government",
                                "military", "army", "veteran*", "serve my country", "政治", "选举", "军队"),
}


def _compile() -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for topic, words in TOPICS.items():
        latin = [w for w in words if w.isascii()]
        cjk = [w for w in words if not w.isascii()]
        parts = []
        for word in latin:
            stem = re.escape(word.rstrip("*"))
            parts.append(stem + (r"[a-z\-]*" if word.endswith("*") else "") )
        pattern = r"\b(?:" + "|".join(parts) + r")\b" if parts else ""
        if cjk:
            pattern = "|".join(p for p in (pattern, "|".join(re.escape(w) for w in cjk)) if p)
        out.append((topic, re.compile(pattern, re.I)))
    return out


_COMPILED = _compile()


def topics_of(text: str) -> list[str]:
    """Topics whose words occur in ``text``, in lexicon order."""
    return [topic for topic, pattern in _COMPILED if pattern.search(text)]


#: keywords → the words that imply them. Where :data:`TOPICS` names broad categories, these
#: are the short words questions use for a fact stated in other words ("what is her
#: relationship status?" for "after my breakup", "how does he destress?" for "running clears
#: my head"): synonyms and attribute names, English and Chinese.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "identity": ("transgender", "trans", "transition*", "gay", "lesbian", "queer", "nonbinary", "non-binary",
                 "bisexual", "coming out", "came out", "lgbt*", "true self", "跨性别", "同性恋", "出柜", "身份"),
    "lgbtq": ("transgender", "trans", "transition*", "gay", "lesbian", "queer", "nonbinary", "non-binary",
              "bisexual", "pride", "跨性别", "同性恋", "骄傲"),
    "relationship status single": ("breakup", "break-up", "broke up", "single parent", "single mom", "single dad",
                                   "divorc*", "ex-husband", "ex-wife", "ex", "widow*", "单身", "分手", "离婚"),
    "relationship status married": ("my husband", "my wife", "married", "marriage", "engaged", "fianc*",
                                    "wedding", "spouse", "老公", "老婆", "丈夫", "妻子", "结婚", "订婚"),
    "career job work": ("job*", "career*", "profession*", "employ*", "hired", "fired", "laid off", "business*",
                        "startup", "entrepreneur*", "internship*", "counsel*", "banker", "工作", "职业", "事业",
                        "创业", "辞职", "失业", "面试"),
    "education study": ("school*", "edu", "education", "degree", "college", "universit*", "studies", "studying",
                        "course*", "classes", "major*", "graduat*", "scholarship*", "学校", "大学", "学位", "专业",
                        "读书", "上学", "毕业"),
    "kids children": ("kid", "kids", "child", "children", "son", "sons", "daughter*", "孩子", "儿子", "女儿"),
    "family": ("kid", "kids", "children", "son", "sons", "daughter*", "husband", "wife", "mom", "dad", "mother",
               "father", "parent*", "sister*", "brother*", "grandma", "grandpa", "家人", "家庭", "孩子", "父母"),
    "destress relax": ("de-stress*", "destress*", "stress relief", "relax*", "unwind*", "calm*", "therapy",
                       "therapeutic", "headspace", "escape", "recharge", "clear my mind", "clear my head",
                       "self-care", "放松", "减压", "解压", "散心"),
    "exercise fitness": ("running", "run", "ran", "jog*", "gym", "workout*", "yoga", "hik*", "swim*", "cycling",
                         "marathon", "exercis*", "跑步", "健身", "锻炼", "运动"),
    "art hobby creative": ("paint*", "drawing", "draw", "sketch*", "pottery", "ceramic*", "clay", "sculpt*",
                           "photograph*", "craft*", "knit*", "画画", "绘画", "陶艺", "摄影"),
    "home country origin": ("home country", "hometown", "moved from", "grew up", "originally from", "immigra*",
                            "roots", "heritage", "native", "家乡", "老家", "故乡", "祖国"),
    "moved relocated": ("moved", "moving", "relocat*", "move to", "搬家", "搬到"),
    "pets": ("dog*", "cat", "cats", "pupp*", "kitten*", "pet", "pets", "guinea pig*", "宠物", "狗", "猫"),
    "politics rights": ("conservative*", "liberal*", "progressive", "rights", "equality", "activis*", "protest*",
                        "discriminat*", "justice", "vote", "voting", "election*", "政治", "权利", "平等", "选举"),
    "support help": ("support*", "mentor*", "encourag*", "volunteer*", "支持", "帮助", "志愿"),
    "adoption": ("adopt*", "foster*", "领养", "收养"),
    "recipe cooking food": ("cake*", "tart*", "pie", "pies", "ice cream", "cookie*", "brownie*", "bak*", "cook*",
                            "dish*", "dessert*", "treat*", "soup*", "smoothie*", "pasta", "curry", "stew",
                            "蛋糕", "甜点", "做饭", "烤", "菜谱"),
    "book reading": ("novel*", "book*", "author*", "reading", "read", "fantasy", "memoir", "library",
                     "bookshelf", "chapter*", "书", "小说", "读"),
    "movie film": ("movie*", "film*", "cinema", "watched", "trailer*", "netflix", "电影", "看了"),
    "writing": ("screenplay*", "script*", "draft*", "manuscript", "publish*", "poem*", "poetry", "essay*",
                "blog*", "journal*", "写作", "剧本", "出版"),
    "promote marketing": ("promot*", "advertis*", "marketing", "market", "flyer*", "social media", "customers",
                          "offers", "discount*", "launch*", "fair", "expo", "推广", "营销", "广告"),
    "allergy diet": ("allerg*", "dairy-free", "gluten-free", "lactose", "intoleran*", "can't have", "can't eat",
                     "过敏", "忌口"),
    "injury health": ("injur*", "hurt", "sprain*", "fracture*", "surgery", "broken arm", "broken leg", "ankle",
                      "knee", "concussion", "rehab", "physical therapy", "受伤", "扭伤", "骨折", "手术"),
    "collection collect": ("collect*", "memorabilia", "autograph*", "signed ball", "signed jersey", "jersey*", "figurine*", "vinyl",
                           "souvenir*", "收藏", "纪念品"),
    "travel trip visit": ("trip", "trips", "travel*", "visited", "vacation*", "tour", "toured", "flew", "abroad",
                          "roadtrip", "road trip", "旅行", "旅游", "出差", "度假"),
    "recommend recommendation": ("recommend*", "must-see", "must-read", "must-watch", "suggest*", "check it out",
                                 "you should try", "you should read", "you should watch", "推荐", "建议"),
    "volunteer charity cause": ("volunteer*", "shelter*", "charit*", "donat*", "fundrais*", "food bank",
                                "homeless", "nonprofit", "non-profit", "志愿", "慈善", "捐"),
    "activity hobby": ("camping", "hik*", "pottery", "painting", "swimming", "fishing", "gardening", "knitting",
                       "surfing", "skiing", "kayak*", "biking", "climbing", "baking", "dancing", "yoga",
                       "露营", "爬山", "钓鱼", "游泳", "园艺"),
}


def _compile_words(words: tuple[str, ...]) -> re.Pattern[str]:
    latin = [re.escape(w.rstrip("*")) + (r"[a-z\-]*" if w.endswith("*") else "") for w in words if w.isascii()]
    cjk = [re.escape(w) for w in words if not w.isascii()]
    parts = ([r"\b(?:" + "|".join(latin) + r")\b"] if latin else []) + cjk
    return re.compile("|".join(parts), re.I)


_KEYWORDS_COMPILED = [(key.split(), _compile_words(words)) for key, words in KEYWORDS.items()]


def keywords_of(text: str) -> list[str]:
    """Keywords implied by ``text`` that it does not already contain, in lexicon order."""
    present = set(_WORD_ANY.findall(text.lower()))
    out: dict[str, None] = {}
    for keys, pattern in _KEYWORDS_COMPILED:
        if pattern.search(text):
            out.update((k, None) for k in keys if k not in present)
    return list(out)


_WORD_ANY = re.compile(r"[a-z]+")


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
