"""A general-language calibration set for embedders: what "related" and "unrelated" look like.

Each pair is a question and a passage that answers it, written for this purpose (everyday
topics, English, Chinese and mixed; no benchmark text). Every other pairing of a question
with a passage is unrelated. :func:`measure` reports where an embedder puts the two
groups; :mod:`knowhub.providers.multilingual` keeps the E5 figures as constants (the
model is pinned) and a test re-measures them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PAIRS: tuple[tuple[str, str], ...] = (
 ("how do I reset my router", "Unplug the router for thirty seconds, then hold the reset button until the lights blink."),
 ("best way to cook rice", "Rinse the rice, use one and a half cups of water per cup, and simmer covered for fifteen minutes."),
 ("when does the train to Boston leave", "The northbound train to Boston departs from platform 4 at 7:15 every morning."),
 ("symptoms of the flu", "Influenza usually brings fever, chills, a sore throat and aching muscles."),
 ("how to file taxes as a freelancer", "Self-employed people report income on Schedule C and pay quarterly estimated tax."),
 ("why is the sky blue", "Sunlight scatters off air molecules, and shorter blue wavelengths scatter the most."),
 ("who won the football match yesterday", "The home team beat their rivals two goals to one in Sunday's game."),
 ("how to water a cactus", "Cacti need a deep soak only when the soil has dried out completely, about every two weeks."),
 ("python list sort descending", "Call sorted(values, reverse=True) to get a new list from largest to smallest."),
 ("my dog keeps barking at night", "Dogs often bark at night from boredom; an evening walk and a quiet crate can help."),
 ("cheap flights to Tokyo", "Budget airlines fly to Narita for under five hundred dollars if you book two months ahead."),
 ("how to learn the guitar", "Start with three open chords and practise switching between them for ten minutes a day."),
 ("what is inflation", "Inflation is the rate at which the general level of prices for goods rises over time."),
 ("fix a leaking tap", "Turn off the water supply, unscrew the handle and replace the worn rubber washer."),
 ("she adopted a kitten last month", "Anna brought home a small grey cat from the shelter in October."),
 ("he is training for a marathon", "Tom runs forty miles a week to get ready for the city race in spring."),
 ("怎么做红烧肉", "五花肉切块焯水，加冰糖炒出糖色，再放酱油和水小火炖一个小时。"),
 ("北京明天会下雨吗", "天气预报说北京明天有中到大雨，出门记得带伞。"),
 ("如何提高睡眠质量", "睡前一小时不看手机，保持卧室安静黑暗，每天固定时间起床。"),
 ("数据库查询很慢怎么办", "给经常过滤的列加索引，并用执行计划检查是否走了全表扫描。"),
 ("孩子不爱写作业", "可以和孩子一起定一个固定的学习时间，完成后给予适当的鼓励。"),
 ("去上海旅游住哪里好", "第一次去上海可以住在人民广场附近，地铁方便，离外滩也近。"),
 ("他最近在学日语", "小王每天晚上花一个小时背日语单词，准备明年去东京工作。"),
 ("公司年会在什么时候", "今年的年会定在一月十八号晚上，地点是公司附近的酒店。"),
 ("如何备份手机照片", "打开云相册的自动同步，或者定期把照片导出到电脑硬盘。"),
 ("what does the user prefer for breakfast", "用户早餐喜欢喝豆浆，吃一个鸡蛋，不喜欢甜食。"),
 ("部署服务用什么命令", "Run kubectl apply -f deployment.yaml to roll out the new version of the service."),
 ("how to renew a passport", "护照到期前可以在网上预约，带上旧护照和照片到出入境大厅办理。"),
 ("git undo last commit", "Use git reset --soft HEAD~1 to undo the last commit but keep the changes staged."),
 ("recommend a science fiction novel", "The Three-Body Problem by Liu Cixin is a popular science fiction book about first contact."),
 ("how much water should I drink", "Most adults need about two litres of fluid a day, more in hot weather or after exercise."),
 ("去健身房第一天练什么", "新手第一天可以做全身的轻重量训练，再加二十分钟慢跑热身和拉伸。"),
)


def measure(embedder: Any) -> dict[str, float]:
    """Cosine statistics of related (diagonal) and unrelated (off-diagonal) pairs.

    ``floor`` is the median unrelated cosine; ``related_cosine`` the 95th percentile of
    unrelated pairs: a text above it on meaning alone is taken as about the question, which
    lets ~5% of unrelated texts through (ranking's relative cutoff then drops the weak
    ones). The stricter ``unrelated_max`` leaves more no-answer queries empty but loses
    recall (docs/benchmarks.md has both measured). ``top1`` is the share of questions whose
    own passage scores best.
    """
    queries = [q for q, _p in PAIRS]
    passages = [p for _q, p in PAIRS]
    embed_queries = getattr(embedder, "embed_queries", embedder.embed_matrix)
    sims = np.asarray(embed_queries(queries)) @ np.asarray(embedder.embed_matrix(passages)).T
    n = len(PAIRS)
    related = np.diag(sims)
    unrelated = sims[~np.eye(n, dtype=bool)]
    return {
        "floor": float(np.median(unrelated)),
        "unrelated_p95": float(np.percentile(unrelated, 95)),
        "related_p10": float(np.percentile(related, 10)),
        "unrelated_max": float(unrelated.max()),
        "related_cosine": float(np.percentile(unrelated, 95)),
        "top1": float(np.mean(sims.argmax(axis=1) == np.arange(n))),
    }


__all__ = ["PAIRS", "measure"]
