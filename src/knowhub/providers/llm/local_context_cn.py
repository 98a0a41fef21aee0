"""Chinese named things for the offline extractors, from a real word segmenter.

Why a segmenter: Chinese has no spaces, so a regular expression cannot tell where a name
ends ("同事李娜负责支付模块" is 李娜 + 负责, not 李娜负). :mod:`jieba`'s part-of-speech
tagger (``nr`` person, ``ns`` place, ``nt`` organization; dictionary shipped in the
package, no download) finds the boundaries; the rules here only add what a tagger cannot
know: whose relative or colleague a person is, and that a described employer ("杭州一家电
商公司") is an organization, not a place.

The tagger is loaded on first use (about a second) and only for text that holds Chinese.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

__all__ = ["RELATIONS_CN", "cn_entities", "cn_tokens"]

#: Kinship and social relation words (general Chinese vocabulary).
RELATIONS_CN = ("妹妹", "姐姐", "哥哥", "弟弟", "妈妈", "母亲", "爸爸", "父亲", "儿子", "女儿", "老婆", "老公",
                "妻子", "丈夫", "朋友", "好友", "同事", "同学", "室友", "老板", "领导", "上司", "经理", "男朋友",
                "女朋友", "孩子", "邻居", "老师", "导师", "客户", "狗", "猫")
#: Words that end the name of an organization (general Chinese vocabulary).
ORG_HEADS = ("公司", "集团", "企业", "工作室", "银行", "医院", "大学", "学院", "学校", "中学", "小学", "研究所",
             "研究院", "事务所", "工厂", "报社", "电视台", "出版社", "协会", "基金会", "实验室")
#: "在X工作", "工作在X", "入职X": X is an employer, a tagger need not know its name (字节跳动).
_EMPLOYER_RE = re.compile(r"(?:^|[我，,])(?:现在|目前)?在([^，。,.!！？?；;在的]{2,12}?)(?:工作|上班|任职|实习)|"
                          r"(?:工作|上班)(?:在|于)([\u4e00-\u9fffA-Za-z]{2,12}?)(?=[，。,.!！？?；;]|$)|"
                          r"入职(?:了)?([\u4e00-\u9fffA-Za-z]{2,12}?)(?=[，。,.!！？?；;]|$)")
_ORG_RE = re.compile(r"(?:在|去了?|到了?|进了?|加入了?|入职了?|跳槽到)((?:[\u4e00-\u9fffA-Za-z0-9]{1,12}?)(?:" + "|".join(ORG_HEADS) + r"))")
#: Place suffixes that make a place name even when the tagger does not know it.
_PLACE_RE = re.compile(r"(?:在|去|到|来自|住在|回|飞)([\u4e00-\u9fff]{2,6}?(?:市|省|县|区|镇|村|国|州|岛|山|湖|公园|博物馆|机场|车站))")

#: Common Chinese surnames (the most frequent family names of the national household
#: register, general knowledge) and the familiar prefixes 小/老/阿 ("小王", "老李"): a tagged
#: name must start with one, which drops the tagger's guesses on ordinary words (索引).
SURNAMES = frozenset(["王", "李", "张", "刘", "陈", "杨", "黄", "赵", "吴", "周", "徐", "孙", "马", "朱", "胡", "郭", "何", "高", "林", "罗", "郑", "梁", "谢", "宋", "唐", "许", "韩", "冯", "邓", "曹", "彭", "曾", "肖", "田", "董", "袁", "潘", "于", "蒋", "蔡", "余", "杜", "叶", "程", "苏", "魏", "吕", "丁", "任", "沈", "姚", "卢", "姜", "崔", "钟", "谭", "陆", "汪", "范", "金", "石", "廖", "贾", "夏", "韦", "付", "傅", "方", "白", "邹", "孟", "熊", "秦", "邱", "江", "尹", "薛", "闫", "段", "雷", "侯", "龙", "史", "陶", "黎", "贺", "顾", "毛", "郝", "龚", "邵", "万", "钱", "严", "覃", "武", "戴", "莫", "孔", "向", "汤", "常", "温", "康", "施", "文", "牛", "樊", "葛", "邢", "安", "齐", "易", "乔", "伍", "庞", "颜", "倪", "庄", "聂", "章", "鲁", "岳", "翟", "殷", "詹", "申", "欧", "耿", "关", "兰", "焦", "俞", "左", "柳", "甘", "祝", "包", "宁", "尚", "符", "舒", "阮", "柯", "纪", "梅", "童", "凌", "毕", "单", "季", "裴", "霍", "涂", "成", "苗", "谷", "盛", "曲", "翁", "冉", "骆", "蓝", "路", "游", "辛", "靳", "管", "柴", "蒙", "鲍", "华", "喻", "祁", "蒲", "房", "滕", "屈", "饶", "解", "牟", "艾", "尤", "阳", "时", "穆", "农", "司", "卓", "古", "吉", "缪", "简", "车", "项", "连", "芦", "麦", "褚", "娄", "窦", "戚", "岑", "景", "党", "宫", "费", "卜", "冷", "晏", "席", "卫", "米", "柏", "宗", "瞿", "桂", "全", "佟", "应", "臧", "闵", "苟", "邬", "边", "卞", "姬", "师", "仇", "栾", "隋", "商", "刁", "沙", "荣", "巫", "寇", "桑", "郎", "甄", "丛", "仲", "虞", "敖", "巩", "明", "佘", "池", "查", "麻", "苑", "迟", "邝", "欧阳", "司马", "上官", "诸葛", "东方", "皇甫", "慕容", "令狐", "小", "老", "阿"])

_FAMILIAR = frozenset("小老阿")
#: An organization described rather than named ("杭州一家电商公司"): its place stays a place.
_DESCRIBED = re.compile(r"一家|一个|一所|某")

_lock = threading.Lock()
_posseg: Any = None


def _tagger() -> Any:
    global _posseg
    with _lock:
        if _posseg is None:
            import jieba
            import jieba.posseg

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _posseg = jieba.posseg
        return _posseg


def cn_tokens(text: str) -> list[tuple[str, str]]:
    """``(word, part-of-speech flag)`` pairs of a Chinese text."""
    return [(pair.word, pair.flag) for pair in _tagger().cut(text)]


#: Corpus count above which a dictionary word is an ordinary word, not a person's name.
COMMON_WORD_FREQ = 1000


#: Above this corpus count a word the dictionary tags as a place is an ordinary word unless
#: the gazetteer knows it (东西 "thing" 18,877; 杭州 2,806 is in the gazetteer; 西湖 567).
COMMON_PLACE_FREQ = 5000
#: Everyday adverbs, modal words and adjectives that start with a surname character, which
#: the tagger's dictionary tags as names (general Chinese vocabulary).
_COMMON_WORDS = frozenset("""宁可 宁愿 尽管 何必 何况 毕竟 甚至 万一 难怪 居然 果然 简直 麻木 麻烦 高兴 安静 明白 谢谢 方便 温柔
平安 平常 常常 时常 向来 乔迁 于是 曾经 石头 金钱 黄金 白白 程度 江湖 文明 文字 文件 华丽 包括 包容 安全 安装 安排 高级 高效
龙头 卫生 钱包 连续 连接 管理 应该 应用 成功 成本 成熟 成长 严格 严重 孔子 全部 全面 齐全 易用 苗头 路线 路径 游戏 和平""".split())  # noqa: SIM905


def _jieba_freq(word: str) -> int | None:
    import jieba

    return jieba.get_FREQ(word)


def _plausible_name(word: str) -> bool:
    """A tagged name starts with a common surname, and its first two characters are not an
    ordinary dictionary word (the tagger's dictionary calls 连接池 a name: 连接 + 池)."""
    if not 2 <= len(word) <= 4 or not (word[0] in SURNAMES or word[:2] in SURNAMES):
        return False
    if word[0] in _FAMILIAR and word[1] not in SURNAMES:  # 小王 and 老李, not 老公
        return False
    tags = _tagger().dt.word_tag_tab
    own = tags.get(word)
    head = tags.get(word[:2]) if len(word) > 2 else None
    if (own is not None and not own.startswith("nr")) or (head is not None and not head.startswith("nr")):
        return False
    # the dictionary also tags frequent ordinary words as names (明白 10875, 安静 1199,
    # 谢谢 1089 in its corpus counts); given names of people are rare words there (李娜 438)
    return (_jieba_freq(word) or 0) < COMMON_WORD_FREQ


def cn_entities(sentence: str, speaker: str) -> list[tuple[str, str, str]]:
    """``(name, type, relation)`` of the people, places and organizations of a sentence.

    A relation word said by the speaker ("我同事李娜", "我的妹妹") types the person that
    follows it, or stands for the unnamed relative itself. An organization described with
    a head word ("在杭州一家电商公司做后端") is one organization; its city stays a place.
    """
    found: list[tuple[str, str, str]] = []
    orgs = [m.group(1) for m in _ORG_RE.finditer(sentence)]
    orgs += [next(g for g in m.groups() if g) for m in _EMPLOYER_RE.finditer(sentence)]
    orgs = list(dict.fromkeys(orgs))
    for org in orgs:
        found.append((org, "organization", ""))
    tokens = cn_tokens(sentence)
    named: set[str] = set()
    for i, (word, _) in enumerate(tokens):
        if word not in RELATIONS_CN:
            continue
        before = "".join(w for w, _ in tokens[max(0, i - 2):i])
        mine = before.endswith(("我", "我的", "我们", "我们的", "我和", "我跟", "我与"))
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        relation = f"{speaker}的{word}"
        if nxt[1] == "nr" and _plausible_name(nxt[0]):  # "和老板张伟开会": the speaker's boss
            found.append((nxt[0], "person", relation))
            named.add(nxt[0])
        elif mine:
            found.append((relation, "relation", relation))
    for word, flag in tokens:
        if word in named or len(word) < 2:
            continue
        if any(org.startswith(word) and org != word and not _DESCRIBED.search(org) for org in orgs):
            continue  # 金杜 of 金杜律师事务所: part of the organization's name
        if word in _COMMON_WORDS:
            continue
        if flag == "nr":
            if _plausible_name(word):
                found.append((word, "person", ""))
        elif flag == "ns":
            # imported here: local_context_profile imports this module
            from knowhub.providers.llm.local_context_profile import is_place

            if is_place(word) or (_jieba_freq(word) or 0) < COMMON_PLACE_FREQ:
                found.append((word, "place", ""))
        elif flag == "nt":
            found.append((word, "organization", ""))
    for match in _PLACE_RE.finditer(sentence):
        if not any(match.group(1) == f[0] or match.group(1) in f[0] for f in found):
            found.append((match.group(1), "place", ""))
    out: list[tuple[str, str, str]] = []
    for item in found:
        if item[0] not in {f[0] for f in out}:
            out.append(item)
    return out
