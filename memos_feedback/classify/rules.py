"""Lexicons and patterns of the rule-based feedback classifier (private).

Everything here is data: which phrasings count as evidence for which shape,
and the frames the extractor anchors on. The logic that uses them lives in
the other modules of ``classify``: ``prepare``, ``score`` and ``extract``, and
the gate (``derive``, ``gate_data``, ``gate``).

Conventions every pattern follows, so that matching stays linear in the
input (see ALGORITHMS.md, "Feedback classifier"):

* no unbounded quantifier: every repeat is ``{m,n}`` with a small ``n``
  (``.{0,30}`` style gaps, ``\\s{0,3}``), so from any start position a
  pattern can look at most a fixed number of characters ahead;
* no quantified group that contains another quantifier with overlapping
  alternatives (no ``(a|ab){1,5}``-style ambiguity);
* alternations are lists of literal words.

Patterns are compiled with ``ASCII`` (``\\b`` and ``\\w`` only know ASCII
letters, so a word boundary also exists between ``不`` and ``work``) and
``IGNORECASE``, unless a rule asks to keep case.

The classifier's gate reads these sources (with the standard library's
parser) to learn which words or characters each rule needs, and skips a rule
on messages without them; a rule in syntax that parser lacks still works but
runs on every message (a test flags it).
"""

from __future__ import annotations

from typing import Final

import regex

__all__ = [
    "CLAUSE_BREAK",
    "CONTRAST_AFTER",
    "CORRECTION_FRAMES",
    "CUES",
    "FLAGS",
    "MASKS",
    "TRAD_TO_SIMP",
    "Cue",
    "Mask",
    "class_end",
    "compile_pattern",
    "pattern_source",
    "top_level_alternatives",
]

FLAGS: Final = regex.ASCII | regex.IGNORECASE | regex.V0


# Under ASCII, ``\W`` would also match Chinese characters; the rules use it to
# skip punctuation and spaces only, so it is narrowed to exclude CJK.
_NON_WORD: Final = r"[^\w\u3400-\u9fff\uf900-\ufaff]"


def pattern_source(source: str) -> str:
    """``source`` as it is compiled (``\\W`` narrowed), the text the gate is derived from."""
    return source.replace(r"\W", _NON_WORD)


def compile_pattern(source: str, *, keep_case: bool = False) -> regex.Pattern[str]:
    flags = regex.ASCII | regex.V0 if keep_case else FLAGS
    return regex.compile(pattern_source(source), flags)


class _Rule:
    """A named pattern, compiled on first use.

    Compiling all ~180 masks and cues would cost about 0.2 s at import,
    while a message runs only a handful of them (and the classifier mostly
    runs parts of cues, see ``gate._CUE_PARTS``): ``pattern`` compiles
    on first access and keeps the result.
    """

    __slots__ = ("_compiled", "flags", "name", "shape", "source", "weight")

    def __init__(self, name: str, shape: str | None, weight: float, source: str, flags: int) -> None:
        self.name = name
        self.shape = shape
        self.weight = weight
        self.source = source  # as compiled: ``\W`` already narrowed
        self.flags = flags
        self._compiled: regex.Pattern[str] | None = None

    @property
    def pattern(self) -> regex.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = regex.compile(self.source, self.flags)
        return compiled

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.shape!r}, {self.weight!r}, {self.source!r})"


class Cue(_Rule):
    """One piece of evidence: when ``pattern`` matches, ``shape`` gains ``weight``.

    Negative weights are suppressors: a frame that shows a cue of another
    family is used in a different sense (courtesy "thanks" after a request).
    """

    __slots__ = ()
    shape: str


class Mask(_Rule):
    """A phrase whose words must not be read one by one.

    The span is blanked before cues run, and (when ``shape`` is set) counts as
    evidence for that shape instead: "no problem" is approval, "what went
    wrong" is not a rejection.
    """

    __slots__ = ()


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _cue(name: str, shape: str, weight: float, source: str, *, keep_case: bool = False) -> Cue:
    return Cue(name, shape, weight, pattern_source(source), regex.ASCII | regex.V0 if keep_case else FLAGS)


def _mask(name: str, shape: str | None, weight: float, source: str) -> Mask:
    return Mask(name, shape, weight, pattern_source(source), FLAGS)


# ---------------------------------------------------------------------------
# Traditional -> simplified Chinese, one character to one character, so the
# matching copy of a message keeps the offsets of the original (extraction
# slices the original text and keeps the user's own script).
# ---------------------------------------------------------------------------
_TRAD_SIMP_PAIRS: Final = (
    "對对錯错別别換换還还這这個个們们說说話话為为麼么會会讓让應应該该沒没來来後后請请動动"
    "啟启處处資资點点時时間间裡里裏里檔档實实現现變变試试誤误當当於于從从給给幫帮過过進进"
    "開开關关運运執执據据庫库數数樣样嗎吗聽听覺觉寫写讀读刪删選选擇择統统謝谢問问題题終终"
    "與与無无經经網网頁页體体電电腦脑級级線线態态將将傳传輸输設设計计條条類类區区並并雖虽"
    "歡欢愛爱邊边長长簡简單单務务議议論论證证轉转裝装載载連连斷断錄录記记憶忆誰谁訊讯號号"
    "碼码標标準准確确認认識识觀观見见規规則则範范圍围內内際际續续繼继結结構构況况發发報报"
    "紅红綠绿黃黄藍蓝顏颜價价錢钱貴贵買买賣卖費费帳账戶户員员團团隊队領领導导師师學学習习"
    "練练測测驗验質质專专業业產产廠厂場场壓压縮缩檢检環环監监狀状參参預预優优勢势響响復复"
    "舊旧棄弃廢废穩稳亂乱爛烂壞坏難难聯联繫系係系歷历曆历週周幾几萬万億亿兩两雙双齊齐盡尽"
    "夠够總总頭头機机視视頻频聲声圖图畫画筆笔紙纸書书譯译釋释講讲謂谓語语詞词義义憂忧慮虑"
    "擔担親亲歲岁歸归寶宝滿满氣气漢汉淺浅擴扩極极輕轻較较輯辑鍵键鏈链鎖锁鐘钟針针閱阅闆板"
    "隱隐險险雜杂靜静韓韩頂顶項项順顺須须顯显風风飛飞飯饭館馆馬马驅驱髒脏鬧闹魚鱼鳥鸟麥麦"
    "龍龙擬拟擋挡擊击擺摆攔拦敗败暫暂曉晓東东槍枪樓楼樂乐權权歐欧殘残殺杀毀毁決决淚泪淨净"
    "湯汤溝沟滅灭漸渐潔洁濃浓濕湿灑洒災灾烏乌煉炼煩烦熱热燈灯燒烧營营爭争牆墙獨独獲获盜盗"
    "盤盘礎础禮礼禍祸種种稱称窮穷競竞節节築筑簽签紀纪約约純纯細细組组絕绝絡络絲丝綁绑維维"
    "緒绪緣缘編编緩缓縣县績绩織织繪绘罰罚羅罗聖圣聞闻聰聪職职膚肤臨临舉举艱艰莊庄華华葉叶"
    "蓋盖薦荐藝艺蘇苏蟲虫補补製制觸触訂订討讨訓训訪访許许評评詩诗詳详誌志課课調调談谈諾诺"
    "護护讚赞豐丰貓猫負负財财責责貨货貼贴購购賽赛贏赢趕赶趨趋跡迹軟软輔辅輪轮辦办農农遊游"
    "達达違违遞递遠远適适遲迟遺遗郵邮鄉乡醫医鈕钮銀银銷销鋼钢錶表鍋锅鏡镜門门閉闭閒闲閘闸"
    "闊阔陽阳陣阵階阶陳陈隨随隻只離离雲云靈灵頓顿額额願愿顧顾飲饮餘余饋馈鬆松鬥斗麵面擾扰"
    "擁拥攜携損损揮挥搖摇搶抢敵敌曬晒橋桥檯台櫃柜殼壳漲涨瀏浏覽览煙烟爐炉牽牵獎奖畢毕異异"
    "療疗磚砖礙碍稅税糾纠紐纽紛纷緊紧縱纵繩绳罷罢肅肃脫脱膠胶蘭兰虛虚虧亏術术衛卫衝冲襪袜"
    "訴诉詢询誇夸誠诚諸诸謊谎譜谱豬猪貝贝貢贡貿贸賀贺賴赖趙赵躍跃車车軌轨軍军軸轴輛辆辯辩"
    "邏逻鄰邻鈴铃鋒锋錦锦鍊炼鐵铁鑰钥閃闪闖闯陸陆雞鸡霧雾響响顆颗餓饿餅饼駐驻駕驾騙骗騰腾"
    "驚惊魯鲁鮮鲜鳳凤鹽盐麗丽黴霉齡龄剛刚劃划劇剧勞劳勝胜勵励協协卻却厲厉嚴严圓圆塊块夢梦"
    "夥伙奪夺奮奋媽妈孫孙寧宁審审寬宽寵宠尋寻屆届屬属島岛幣币帥帅帶带幹干廣广廳厅張张彈弹"
    "強强彙汇徑径徵征惡恶慣惯憑凭懷怀懶懒戰战戲戏拋抛掃扫掛挂採采撥拨撲扑擠挤瞭了贊赞竊窃"
    "啞哑嘗尝團团厭厌喚唤嘆叹嚇吓囉啰噁恶檔档紀纪緻致閒闲鏽锈癮瘾灣湾擇择壯壮糧粮狹狭飽饱"
    # Common in Taiwan and Hong Kong usage (著, 爲 and 衆 are variant forms).
    "著着層层積积納纳綜综遷迁蹤踪複复傷伤僅仅側侧樹树橫横滾滚濾滤藥药臺台園园腳脚儲储倉仓"
    "註注纔才揀拣爲为啓启衹只祇只蘋苹攝摄徹彻彎弯奧奥偵侦診诊諮咨滯滞韌韧籤签廁厕墊垫償偿"
    "眾众衆众佔占"
)

TRAD_TO_SIMP: Final[dict[int, str]] = {
    ord(_TRAD_SIMP_PAIRS[i]): _TRAD_SIMP_PAIRS[i + 1] for i in range(0, len(_TRAD_SIMP_PAIRS) - 1, 2)
}
# Typographic variants folded to ASCII so one pattern covers both.
TRAD_TO_SIMP.update({ord("’"): "'", ord("‘"): "'", ord("`"): "`", ord("\u3000"): " ", ord("\u00a0"): " "})

# Where a clause ends: CJK punctuation always; ASCII , . : only before a space
# or the end (so "1,482", "str.format" and "1:1s" stay whole); dashes.
CLAUSE_BREAK: Final = compile_pattern(r"[，。；;！!？?\n、…]|[,.:](?=\s|$)|\s[—–-]{1,2}\s|[—–]")

# Right after a preferred tool: the word that introduces the one to avoid
# ("用 httpx 替换 requests": use httpx to replace requests).
CONTRAST_AFTER: Final = compile_pattern(
    r"\s{0,3}[,，]?\s{0,3}(?:instead\s{1,3}of(?:\s{1,3}using)?|rather\s{1,3}than(?:\s{1,3}using)?|over|"
    r"and\s{1,3}not|"
    r"but\s{1,3}not|not(?:\s{1,3}using|\s{1,3}with)?|than(?:\s{1,3}using)?|>{1,2}|而不是(?:用)?|而非|不是|代替|替代|取代|替换(?!成|为)|"
    r"比(?!较))\s{0,3}"
)

# ---------------------------------------------------------------------------
# Masks: run first, in order; a blanked span cannot feed a later pattern.
# ---------------------------------------------------------------------------
_PROBLEM_NOUN = (
    r"(?:errors?|warnings?|failures?|crash(?:es)?|exceptions?|issues?|problems?|bugs?|timeouts?|"
    r"4\d\d(?:s|'s)?|5\d\d(?:s|'s)?|red|flakes?|complaints?|#(?:ref|value|name|num|null|spill|n/a|div/0)|"
    r"tracebacks?|stack\s{1,3}traces?|"
    r"stacktraces?|segfaults?|panics?|leaks?)"
)

MASKS: Final[tuple[Mask, ...]] = (
    # --- polite negations that mean approval ---------------------------------
    _mask(
        "small-talk-praise",
        None,
        0.0,
        r"\b(?:have\s{1,3}a\s{1,3})?(?:nice|good|great|lovely)\s{1,3}(?:weekend|day|evening|morning|night|"
        r"trip|holiday|"
        r"vacation|lunch|weather|to\s{1,3}meet)\b"
        # "这家店的咖啡不错", "这部电影挺好": a shop, film, song or book (by its measure word).
        r"|(?:这|那)(?:家|部|首|本|场)[\u4e00-\u9fff]{1,8}?(?:真|很|挺|还|也)?(?:不错|好吃|好喝|好看|好听|好|棒)|"
        r"\bthanks?\s{1,3}(?:you\s{1,3})?for\s{1,3}(?:waiting|your\s{1,3}patience|"
        r"bearing\s{1,3}with)\b|(?:天气|周末|假期|今天|心情|气氛)(?:真|很|挺|还)?(?:不错|好|棒)"
        r"|\b(?:weather|weekend|day|trip|holiday|vacation|lunch|dinner|coffee|food|view|sunset)\s{1,3}(?:is|"
        r"was|looks)\s{1,3}"
        r"(?:so\s{1,3}|really\s{1,3}|very\s{1,3})?(?:nice|good|great|lovely|beautiful|amazing|awesome)\b",
    ),
    _mask(
        "problem-gone",
        "positive",
        1.0,
        r"\b"
        + _PROBLEM_NOUN
        + r"(?:\s{1,3}(?:are|is|'s|have|has)|'s)\s{1,3}(?:all\s{1,3}|finally\s{1,3})?(?:been\s{1,3})?"
        r"(?:gone|fixed|resolved)\b",
    ),
    _mask("not-bad", "positive", 1.0, r"\bnot\s{1,3}(?:bad|too\s{1,3}shabby|half\s{1,3}bad)\b"),
    _mask(
        "no-problem",
        "positive",
        1.0,
        r"\b(?:no|zero)\s{1,3}(?:more\s{1,3}|other\s{1,3})?"
        + _PROBLEM_NOUN
        + r"\b(?:\s{1,3}(?:now|anymore))?",
    ),
    _mask("no-worries", "positive", 0.8, r"\bno\s{1,3}worries\b"),
    _mask(
        "cant-complain",
        "positive",
        1.0,
        r"\b(?:can't|cannot|can\s{1,3}not|couldn't)\s{1,3}(?:complain|fault\s{1,3}(?:it|this|that|them|"
        r"the\s{1,3}\w{1,20}))\b",
    ),
    _mask("nothing-wrong", "positive", 1.0, r"\bnothing\s{1,3}(?:wrong|to\s{1,3}(?:fix|complain))\b"),
    _mask(
        "not-single-problem",
        "positive",
        1.0,
        r"\bnot\s{1,3}(?:a\s{1,3}single|one|any)\s{1,3}" + _PROBLEM_NOUN + r"\b",
    ),
    _mask(
        "wouldnt-change",
        "positive",
        1.0,
        r"\b(?:wouldn't|would\s{1,3}not|won't)\s{1,3}change\s{1,3}(?:a\s{1,3}thing|anything)\b",
    ),
    _mask("couldnt-be-better", "positive", 1.0, r"\b(?:couldn't|could\s{1,3}not)\s{1,3}be\s{1,3}better\b"),
    _mask(
        "no-longer-fails",
        "positive",
        1.0,
        r"\bno\s{1,3}longer\s{1,3}(?:fails?|failing|crash(?:es|ing)?|breaks?|errors?|hangs?|"
        r"times\s{1,3}out)\b",
    ),
    _mask("cn-not-bad", "positive", 1.0, r"不错|不赖|不差|不坏|挺好|不用谢"),
    _mask(
        "cn-no-problem",
        "positive",
        1.0,
        r"没(?:有|啥|什么)?(?:问题|毛病)|挑不出(?:毛病|问题)|无可挑剔|没得说|(?:一点|一丁点)?(?:毛病|问题)(?:都|也)没(?:有)?"
        r"|冇(?:问题|毛病)",
    ),
    _mask(
        "cn-no-error-now",
        "positive",
        1.0,
        r"(?:不|没|没有|不再)报错了|没(?:有)?(?:报错|错误)了"
        # "报错没了", "警告都消失了".
        r"|(?:报错|错误|异常|警告|bug|error|warning)s?\s{0,2}(?:都|也)?(?:没了|没有了|消失了|不见了)",
    ),
    # "热到不行", "忙得不行": 不行 after 到/得 says "extremely", it judges nothing.
    _mask("cn-intensifier", None, 0.0, r"[到得]\s{0,2}不行"),
    _mask("cn-no-change-needed", "positive", 1.0, r"不用(?:再)?改了|不需要(?:再)?改了"),
    _mask("cn-right", "positive", 0.6, r"没错|是对的|说得对|你(?:是)?对的"),
    # "不满意" is a rejection; the bare "满意" below is approval.
    _mask("cn-not-satisfied", "negative", 1.2, r"不(?:太|是很|怎么|大)?满意|不(?:太)?理想|不(?:太)?行啊"),
    # --- the user admits their own mistake: not a rejection of the agent -----
    _mask(
        "i-was-wrong",
        "positive",
        0.4,
        r"\b(?:i\s{1,3}was|i'm|i\s{1,3}am|i\s{1,3}got\s{1,3}it)\s{1,3}wrong\b|\bmy\s{1,3}(?:bad|mistake)\b",
    ),
    _mask("cn-i-was-wrong", "positive", 0.4, r"我(?:之前|刚才|原来)?(?:想|搞|记|弄|看)?错了"),
    # --- words inside other meanings -------------------------------------------
    # "looked through it, couldn't find anything wrong": a review that found nothing, approval.
    _mask(
        "found-nothing-wrong",
        "positive",
        1.0,
        r"\b(?:couldn't|could\s{1,3}not|can't|cannot|didn't|did\s{1,3}not|don't|do\s{1,3}not)\s{1,3}(?:find|"
        r"see|spot|notice)"
        r"\s{1,3}(?:anything\s{1,3}(?:wrong|off|broken|amiss|missing)|any\s{1,3}"
        + _PROBLEM_NOUN
        + r")\b|\bfound\s{1,3}nothing\s{1,3}(?:wrong|off|broken|amiss|missing)\b",
    ),
    _mask("wrong-how", "confusion", 1.5, r"\bwrong\s{1,3}how\b|\bhow\s{1,3}(?:is\s{1,3}it|so)\s{1,3}wrong\b"),
    _mask(
        "what-went-wrong",
        None,
        0.0,
        r"\bwhat(?:'s|\s{1,3}is|\s{1,3}was|\s{1,3}went|\s{1,3}goes|\s{1,3}go)\s{1,3}wrong\b"
        r"|\b(?:anything|something)\s{1,3}(?:goes|went|is|'s)?\s{0,3}wrong\b",
    ),
    _mask(
        "wrong-place",
        None,
        0.0,
        r"\bwrong\s{1,3}(?:window|chat|tab|thread|channel|conversation|convo|room\s{1,3}chat|screen)\b"
        r"|\b(?:sorry|oops|whoops)\W{1,3}wrong\s{1,3}person\b",
    ),
    # "find out why the job failed": the question belongs to the task, not to the agent.
    _mask(
        "embedded-question",
        None,
        0.0,
        r"(?<=(?<!\b(?:don't|dont|not|can't|cannot|didn't|i)\s{1,3})"
        r"\b(?:find\s{1,3}out|figure\s{1,3}out|work\s{1,3}out|check|see|investigate|look\s{1,3}into|debug|"
        r"diagnose|"
        r"dig\s{1,3}into|research|ask\s{1,3}\w{1,20})\s{1,3})(?:why|what|how|whether|if|where|when|which)\b"
        r"[^,.;!?\n，。；！？]{0,80}",
    ),
    _mask(
        "cn-embedded-question",
        None,
        0.0,
        r"(?<=(?:查|看|排查|研究|搞清楚|弄清楚)(?:一下|下|查|看)?)(?:为什么|为啥|是不是|有没有|怎么)[^，。；！？,.;!?\n]{0,40}",
    ),
    _mask(
        "no-notes", "positive", 1.0, r"\bno\s{1,3}(?:notes|comments|feedback|changes\s{1,3}needed|edits)\b"
    ),
    _mask(
        "idiom-wrong",
        None,
        0.0,
        r"\bwrong\s{1,3}(?:turn|foot|side\s{1,3}of\s{1,3}the\s{1,3}bed|number\s{1,3}(?:again|lol))\b|"
        r"发错\s{0,2}(?:窗口|群|人|地方|chat|window|了)",
    ),
    _mask("cn-great", "positive", 1.0, r"太好了|太棒了|太赞了|太强了"),
    _mask("i-know", None, 0.0, r"\bi\s{1,3}know\b|\bno\s{1,3}idea\b(?!\s{1,3}what)"),
    # "我也不知道为什么今天这么困": the speaker's own puzzlement, not a question to the agent.
    _mask("cn-i-dont-know-why", None, 0.0, r"(?:我|俺)(?:也|都|真|还)?不知道(?:为什么|为啥|怎么)"),
    # "garbage collection" is not a verdict.
    _mask("cn-garbage-term", None, 0.0, r"垃圾(?:回收|桶|邮件|分类|清理|文件)"),
    _mask("note-to-self", None, 0.0, r"\bnote\s{1,3}to\s{1,3}self\b"),
    _mask("cn-error-noun", None, 0.0, r"错误(?:信息|日志|码|提示|处理|报告|率|类型|消息|堆栈)"),
    _mask(
        "cn-idioms", None, 0.0, r"不知不觉|对了[，,]|不对称|用户|费用|作用|应用|调用|引用|用例|信用|实用|用途"
    ),
    # --- negated approval: a rejection, not a "works" ------------------------
    _mask(
        "not-working",
        "negative",
        1.3,
        r"\b(?:doesn't|does\s{1,3}not|didn't|did\s{1,3}not|isn't|is\s{1,3}not|wasn't|won't|can't|cannot|"
        r"still\s{1,3}not|still\s{1,3}doesn't|still\s{1,3}isn't|never|not|dont|doesnt|didnt|isnt|"
        r"no\s{1,3}longer)\s{1,3}(?:really\s{1,3}|actually\s{1,3}|even\s{1,3})?"
        r"(?:work|works|working|worked|fix|fixed|fixes|help|helps|helped|helping|run|runs|running|"
        r"compile|compiles|compiling|build|builds|building|load|loads|loading|start|starts|starting|"
        r"change\s{1,3}anything|do\s{1,3}anything|solve|solved|pass|passing|answer|answers|address|addresses|"
        r"match|matches|do\s{1,3}what)\b",
    ),
    _mask(
        "not-right",
        "negative",
        1.2,
        # "isn't it 8080?" asks whether a value is right: left for the question-form correction.
        r"\b(?:not|isn't|wasn't|ain't)\s{1,3}(?:right|correct|good|great|helpful|useful|it(?!\s{1,3}[#$]?\d)|ok|okay|"
        r"(?:(?:quite|really|exactly|at\s{1,3}all)\s{1,3})?what\s{1,3}i\s{1,3}(?:asked|wanted|meant|need|"
        r"needed|said|"
        r"was\s{1,3}after|was\s{1,3}looking\s{1,3}for|had\s{1,3}in\s{1,3}mind|expected|was\s{1,3}expecting|"
        # "not quite what I pictured", "not at all what I had asked you for".
        r"(?:had\s{1,3})?(?:pictured|imagined|envisioned|envisaged|hoped)|had\s{1,3}asked|asked\s{1,3}you|"
        r"was\s{1,3}hoping|requested)|"
        # "this isn't what the ticket asks for".
        r"(?:(?:quite|really|exactly)\s{1,3})?what\s{1,3}(?:the\s{1,3}\w{1,20}|we|they|he|she|"
        r"my\s{1,3}\w{1,20})\s{1,3}(?:asked|asks|wanted|wants|"
        r"needs|needed|said|says|described|specified|requested|requires))\b",
    ),
    # "the fix only works locally", "works sometimes": not approval.
    _mask(
        "works-partly",
        "negative",
        1.2,
        r"\b(?:only|just)\s{1,3}(?:works?|worked|runs?|passes|passed)\s{1,3}(?:locally|"
        r"on\s{1,3}my\s{1,3}machine|sometimes|half\s{1,3}the\s{1,3}time|"
        r"once|the\s{1,3}first\s{1,3}time|in\s{1,3}dev|for\s{1,3}(?:some|one|the\s{1,3}first))\b"
        r"|\b(?:works?|worked|passes|passed)\s{1,3}(?:only\s{1,3})?(?:sometimes|intermittently|occasionally|"
        r"half\s{1,3}the\s{1,3}time|randomly)\b",
    ),
    # "thanks for nothing": sarcasm, not thanks.
    _mask(
        "thanks-for-nothing", "negative", 1.2, r"\bthanks?\s{1,3}(?:a\s{1,3}lot\s{1,3})?for\s{1,3}nothing\b"
    ),
    # "help me understand why you reverted it": a question about the agent's step, whatever
    # the words inside it would say on their own.
    _mask(
        "understand-why",
        "confusion",
        1.5,
        r"\b(?:(?:help\s{1,3}me\s{1,3}understand|i'd\s{1,3}like\s{1,3}to\s{1,3}understand|"
        r"i\s{1,3}want\s{1,3}to\s{1,3}understand|"
        r"(?:can|could|would)\s{1,3}you\s{1,3}(?:please\s{1,3}|kindly\s{1,3})?explain)\s{1,3}(?:why|how|what)\b"
        # "I don't get why you deleted …", "how come you skipped row 14?", "what was the thinking
        # behind the dark theme?": the agent's step questioned, not rejected.
        r"|i\s{1,3}(?:don't|dont|do\s{1,3}not|can't|cannot)\s{1,3}(?:get|understand)\s{1,3}why\s{1,3}(?:you|u)\b"
        r"|how\s{1,3}come\s{1,3}(?:you|u)\b"
        r"|what\s{1,3}(?:was|is|'s)\s{1,3}the\s{1,3}(?:thinking|reasoning|rationale|logic|idea|motivation)"
        r"\s{1,3}(?:behind|for)\b)[^,.;!?\n]{0,80}",
    ),
    # "I don't think this is correct", "can't be right", "that's not how the API works":
    # the approval word is doubted.
    _mask(
        "doubted-approval",
        "negative",
        1.2,
        r"\b(?:don't|do\s{1,3}not)\s{1,3}think\s{1,3}(?:this|that|it|these|those|"
        r"the\s{1,3}\w{1,20})\s{1,3}(?:is|are|'s|was|were)"
        r"\s{1,3}(?:right|correct|accurate|true|good|what)\b"
        r"|\b(?:can't|cannot|couldn't|doesn't|don't|does\s{1,3}not|"
        r"do\s{1,3}not)\s{1,3}(?:possibly\s{1,3})?(?:be|look|seem|sound)"
        r"\s{1,3}(?:right|correct|accurate)\b"
        # "I'm not sure that's right", "not convinced this is correct".
        r"|\b(?:not\s{1,3}(?:so\s{1,3})?(?:sure|convinced)|unsure|doubt)\s{1,3}(?:if\s{1,3}|whether\s{1,3}|that\s{1,3})?"
        r"(?:that's|that\s{1,3}is|this\s{1,3}is|it's|it\s{1,3}is|this's|thats)\s{1,3}(?:right|correct|accurate)\b"
        r"|\b(?:that's|that\s{1,3}is|this\s{1,3}is|it's|thats)\s{1,3}not\s{1,3}how\b[^.,;!?\n]{0,40}",
    ),
    _mask(
        "cn-not-working",
        "negative",
        1.3,
        r"还是\s{0,2}(?:不(?!懂|明白|理解|太懂|太明白)|没(?!懂|明白|看懂|理解)|一样|老样子|报|失败|有问题|连不上|打不开|崩|挂|超时|卡住|空白|空的|乱码|error|fail|crash|timeout|"
        r"timed\s{1,3}out|times\s{1,3}out|broken|hangs?|empty|blank)"
        # "还是这个错", "还是 404", "照样报错", "仍然失败": the same failure again.
        r"|(?:还是|仍然|依然|依旧|照样|照旧|仲系)\s{0,2}(?:这个|那个|同样的|一样的|同一个)?\s{0,2}(?:错|问题|报错|error|bug|[45]\d\d\b)"
        r"|(?:仍然|依然|依旧|照样|照旧)\s{0,2}(?:不|没|报|失败|出错|挂|崩)"
        r"|不\s{0,2}(?:work|works|working)\b|没(?:有|什么|啥)?(?:用|效果|反应|变化|区别|生效|帮助)(?!户)",
    ),
)

# ---------------------------------------------------------------------------
# Cues. Weights: 1.0 and more decides a shape alone; 0.4-0.8 needs company.
# ---------------------------------------------------------------------------
_TOOLISH = r"[A-Za-z`'\"][\w.+#/`'\"-]{0,40}"
_DEMONSTRATIVE = (
    r"(?:it|this|that|these|those|them|one|the\s{1,3}same|the\s{1,3}existing|the\s{1,3}current)\b"
)
# Named failure states.
_FAILURE_STATE = (
    r"\b(?:CrashLoopBackOff|OOMKilled|ImagePullBackOff|ErrImagePull|segfault(?:ed|s)?|deadlock(?:ed|s)?|"
    r"memory\s{1,3}leak|"
    r"stack\s{1,3}overflow)\b"
)
# A verdict on the world, with the time or place it is about.
_WORLD_VERDICT = (
    r"(?:so\s{1,3}|really\s{1,3}|absolutely\s{1,3}|pretty\s{1,3}|just\s{1,3}|truly\s{1,3})?(?:terrible|awful|"
    r"horrible|dreadful|"
    r"brilliant|amazing|fantastic|wonderful|lovely|gorgeous|beautiful|rubbish|great|incredible|insane|wild|"
    r"bad)"
)
# "the weather's awful today", "the coffee is rubbish": things out in the world, judged.
_WORLD_THING_VERDICT = (
    r"|\b(?:weather|traffic|commute|food|coffee|tea|game|match|movie|film|concert|flight|wifi|rain|"
    r"heat)(?:'s|\s{1,3}(?:is|was|are|were))\s{1,3}" + _WORLD_VERDICT + r"\b"
)
_WORLD_TIME = (
    r"(?:today|tonight|yesterday|last\s{1,3}(?:night|week|weekend|year)|this\s{1,3}(?:morning|afternoon|"
    r"evening|week|weekend)|"
    r"over\s{1,3}the\s{1,3}weekend)"
)
_WORLD_PLACE = (
    r"(?:in|at)\s{1,3}(?:this|the|my|our)\s{1,3}(?:cafe|café|office|city|town|place|building|hotel|airport|"
    r"area|country|"
    r"neighbou?rhood|station|restaurant|gym|house|flat|apartment)"
)
# Days and times (and wording) to avoid: a constraint, not a tool ("avoid Mondays", "avoid jargon").
_TIMES_TO_AVOID = (
    r"(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekends?|mornings?|"
    r"afternoons?|evenings?|"
    r"nights?|lunch\w{0,4}|holidays?|peak\s{1,3}hours|rush\s{1,3}hour|jargon|emojis?|acronyms|slang|"
    r"passive\s{1,3}voice|"
    r"repetition|duplicates?|overlaps?|conflicts?)"
)
# After "use": a limit, not a tool ("use at most 3 retries").
_LIMIT_WORDS = (
    r"(?:at\s{1,3}most|at\s{1,3}least|no\s{1,3}more|up\s{1,3}to|fewer|less|only|max(?:imum)?|min(?:imum)?)\b"
)
_CN_DEMONSTRATIVE = r"(?:这|那|此|它|本|上面|刚才|原来|之前|现在|什么|哪)"


def top_level_alternatives(source: str) -> list[str]:
    """The top-level alternatives of a pattern's source (itself when it has none).

    Shared with ``gate_data`` (cutting cues for the gate).
    """
    parts: list[str] = []
    depth = start = i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 1  # the escaped character is skipped below
        elif ch == "[":
            i = class_end(source, i)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    parts.append(source[start:])
    return parts


def class_end(source: str, start: int) -> int:
    """Offset of the ``]`` that closes the character class opened at ``start``."""
    i = start + 1
    if source.startswith("^", i):
        i += 1
    if source.startswith("]", i):  # a leading "]" is a member
        i += 1
    while i < len(source) and source[i] != "]":
        i += 2 if source[i] == "\\" else 1
    return i


def _grouped_by_first_char(group: str) -> str:
    """``(?:a|b|…)`` with its alternatives grouped by first character, order kept within a group.

    Two alternatives with different first characters cannot match at the same position, so
    the match is the same; ``regex`` then tries only the alternatives of the right letter
    (the verb list of the instruction cues has ~250).
    """
    assert group.startswith("(?:") and group.endswith(")")
    parts = top_level_alternatives(group[3:-1])
    groups: dict[str, list[str]] = {}
    for part in parts:
        groups.setdefault(part[0], []).append(part[1:])
    return "(?:" + "|".join(f"{first}(?:{'|'.join(rest)})" for first, rest in groups.items()) + ")"


_INSTRUCTION_VERBS = _grouped_by_first_char(
    r"(?:run|deploy|commit|push|check|find|look|search|schedule|plot|draw|make|create|add|write|send|show|"
    r"list|fix|update|install|build|open|delete|remove|rename|move|merge|generate|summari[sz]e|translate|"
    r"draft|book|email|see|investigate|test|refactor|compile|start|restart|set|configure|download|upload|"
    r"fetch|pull|clone|sort|count|compute|calculate|convert|export|import|archive|clean|format|lint|"
    r"review|compare|analy[sz]e|debug|profile|benchmark|document|rewrite|revert|undo|retry|go|tell|give|"
    r"get|print|read|save|load|copy|prepare|plan|organi[sz]e|post|reply|respond|call|remind|order|cancel|"
    r"invite|share|publish|release|tag|bump|rebase|checkout|stash|reset|kill|close|rerun|re-run|"
    r"collect|gather|pick|choose|resolve|notify|ask|message|ping|text|set\s{1,3}up|tidy|grab|bring|"
    r"do(?!\s{1,3}(?:you|we|i|they|it|not|n't)\b)|redo|repeat|"
    r"apply|append|insert|replace|split|join|extract|parse|scan|scrape|crawl|train|evaluate|measure|draft|cc|"
    r"dig|spin\s{1,3}up|squash|assign|provision|forward|file|submit|approve|label|pin|rotate|renew|scale|"
    r"backfill|seed|enable|disable|turn\s{1,3}(?:on|off)|kick\s{1,3}off|trigger|populate|fill\s{1,3}in|sync|"
    r"reserve|look\s{1,3}up|proofread|edit|polish|outline|sketch|implement|put|transcribe|unsubscribe|"
    r"figure\s{1,3}out|"
    r"find\s{1,3}out|work\s{1,3}out|turn\s{1,3}(?:this|it|that|these|them|those|the|my|"
    r"our)(?:\s{1,3}\w{1,20})?\s{1,3}into|"
    # Wiring and operating verbs: "now wire it into the CLI", "tail the logs for the worker pod".
    r"try|handle|cover|support|include|validate|sanitize|sanitise|escape|upgrade|downgrade|unpin|port|"
    r"reschedule|postpone|decline|accept|rsvp|snooze|mute|unmute|block|unblock|fork|star|duplicate|"
    r"scaffold|bootstrap|init|initiali[sz]e|prototype|whip\s{1,3}up|stand\s{1,3}up|knock\s{1,3}out|"
    r"wire|hook|plug|integrate|connect|expose|register|mount|stub|mock|wrap|inline|dedupe|deduplicate|"
    r"normali[sz]e|"
    r"flatten|paginate|memoi[sz]e|containeri[sz]e|dockeri[sz]e|bisect|cherry-pick|tweak|adjust|increase|"
    r"decrease|tail|grep|"
    r"watch|monitor|ssh\s{1,3}into|rollback|roll\s{1,3}back|roll\s{1,3}out|spin\s{1,3}down|tear\s{1,3}down|"
    r"shut\s{1,3}down)"
)
_CN_INSTRUCTION_VERBS = (
    r"(?:跑|运行|部署|发布|提交|推送|合并|检查|查|看|找|搜|统计|生成|写|画|做|建|创建|删除|删|修|安装|下载|"
    r"上传|发|约|订|安排|整理|总结|翻译|测试|打包|重启|启动|关闭|备份|导出|导入|更新|升级|清理|列出|计算|"
    r"分析|比较|对比|准备|起草|回复|通知|提醒|执行|开|建个|拉|切|装|添加|新建|设置|预约|预订|克隆|分配|指派|"
    r"打个|提个|翻成|翻译成|转成|改成|做成|拆成|配置|调整|移到|挪到)"
)
_NEW_TASK = (
    r"^\W{0,3}(?:new|next|another|different)\s{1,3}(?:task|thing|request|job|bug|issue|one|file|item|ticket|"
    r"step)\b"
    r"|^\W{0,3}(?:task|todo|next\s{1,3}up)\s{0,3}:"
)
# "… that's what prod runs / the other services use / we standardised on".
_WHAT_WE_RUN = (
    r"(?:we|prod|production|everyone|everybody|the\s{1,3}\w{1,20}|the\s{1,3}other\s{1,3}\w{1,20}|"
    r"our\s{1,3}\w{1,20}|"
    r"the\s{1,3}rest\s{1,3}of\s{1,3}\w{1,20}|all\s{1,3}(?:our|the)\s{1,3}\w{1,20})\s{1,3}(?:already\s{1,3}|"
    r"all\s{1,3})?"
    r"(?:use|uses|used|run|runs|ship|ships|deploy|deploys|prefer|prefers|standardi[sz]ed\s{1,3}on|"
    r"depend\s{1,3}on|depends\s{1,3}on)\b"
)
_CN_USE_BLOCK = r"(?<![没有不可能费作应调引备通专常信使试采享所我他她们在还再就好别])"
# The language or wording of an answer: "不要用英文" is a requirement, not a tool.
_CN_WORDING = (
    r"(?:英文|中文|英语|汉语|日文|日语|繁体|简体|粤语|缩写|口语|俚语|表情|emoji|"
    r"感叹号|第一人称|被动语态|术语|行话)"
)
# After 用: not a tool. "可以直接用了" approves; "要用英文" asks for a language, a requirement.
_CN_NOT_TOOL = r"(?:了|啦|吧|的|英文|中文|英语|汉语|日文|日语|繁体|简体|粤语|白话|口语|书面语|心)"

# A copula within the next three words: a cheap test before the long list of attributes.
_COPULA_SOON = (
    r"(?=(?:[\w'-]{1,20}\s{1,3}){0,2}[\w-]{1,20}(?:'s|\s{1,3}(?:is|are|was|were|starts|begins|ends|opens|"
    r"closes|expires|"
    r"falls))\s)"
)


# A named attribute and its copula ("the namespace is …", "deadline's …").
def _by_first_letter(words: str) -> str:
    """An alternation of ``words`` grouped by first letter.

    The ``regex`` module tries the alternatives of a group one by one at every
    position; grouped, a position only tries the words that start with its letter
    (about three times faster for a list of ~140 words). Same matches.
    """
    groups: dict[str, list[str]] = {}
    for word in words.split():
        groups.setdefault(word[0], []).append(word[1:])
    return "(?:" + "|".join(f"{first}(?:{'|'.join(rest)})" for first, rest in groups.items()) + ")"


_ATTRIBUTES = (
    "number name date time port address email id version total price amount code url path region zone "
    "timezone room phone extension deadline value rate limit size count tag branch key host hostname "
    "domain username title city currency year day month figure sum balance budget score length capacity "
    "default spelling filename folder directory table column field endpoint release model sku owner "
    "author recipient venue location meeting call flight appointment event interview standup demo launch "
    "party dinner lunch train class session webinar sync office hotel store shop server database bucket "
    "cluster namespace project repo repository service queue topic channel schema account org tenant "
    "environment env cutoff instance image container pod node ticket sha hash quote unit format encoding "
    "password login bill invoice order booking reservation gate terminal platform seat floor building "
    "street zip postcode fee cost charge rent salary fare tax tip deposit discount file handle author "
    "maintainer license var variable setting flag option param parameter argument arg constant function "
    "method class command script header token role label index max min maximum minimum threshold timeout ttl "
    "interval ratio percentage "
    "answer result surname lastname colour color font sprint semester term quarter contract lease trial"
)

_ATTRIBUTE_IS = (
    _by_first_letter(_ATTRIBUTES) + r"s?"
    r"(?:\s{1,3}(?:is|are|was|were|starts|begins|ends|opens|closes|expires|falls)|'s)\s{1,3}(?!not\b|wrong\b|"
    r"missing\b|all\b|"
    r"still\b|broken\b|empty\b|blank\b|gone\b|fine\b|ok\b|okay\b|correct\b|right\b|good\b|great\b|perfect\b|"
    r"off\b|too\b|"
    # "the office is freezing again": a state, not a value.
    r"(?-i:[a-z]{2,20}ing\b)|"
    # "my standup is in 5 min": when, not which.
    r"in\s{1,3}(?:\d{1,3}|a|an|a\s{1,3}few|two|five|ten)\s{1,3}(?:min|mins|minutes?|hours?|hrs?|days?|weeks?|"
    r"secs?|"
    r"seconds?)\b)"
)

CUES: Final[tuple[Cue, ...]] = (
    # ===== positive ============================================================
    _cue(
        "praise",
        "positive",
        1.0,
        r"\b(?:perfect|excellent|awesome|brilliant|fantastic|amazing|superb|wonderful|great\s{1,3}(?:job|"
        r"work)|"
        r"good\s{1,3}(?:job|work|call|catch)|nice\s{1,3}(?:job|work|one)|well\s{1,3}done|nice|neat|sweet|"
        r"lovely|beautiful|spot[\s-]{1,3}on|nailed\s{1,3}it|gr8|bingo|lgtm|looks\s{1,3}(?:good|great|right|"
        r"fine)|"
        r"love\s{1,3}(?:it|this|that)|right\s{1,3}call|exactly\s{1,3}(?:right|what)|you're\s{1,3}right|"
        r"that's\s{1,3}(?:it|right|correct|clean)|clean(?!\s{1,3}(?:up|out|it|this|that|the)\b)|elegant|"
        r"solid|works\s{1,3}(?:great|perfectly|now|fine)|"
        r"great|cool|yay|wo{2,6}hoo|sick|kudos|legend|genius|correct|flawless|lifesaver|life\s{1,3}saver|"
        r"that's\s{1,3}the\s{1,3}one|you\s{1,3}got\s{1,3}it|sounds\s{1,3}good|just\s{1,3}what\s{1,3}I|"
        r"(?:much|way|a\s{1,3}lot|so\s{1,3}much)\s{1,3}better|that\s{1,3}helps|super\s{1,3}helpful|helpful|"
        r"work(?:s|ed)?\s{1,3}like\s{1,3}a\s{1,3}charm|did\s{1,3}the\s{1,3}job|ship\s{1,3}it|"
        r"makes\s{1,3}sense\s{1,3}now|appreciated|"
        r"(?:ready|good)\s{1,3}to\s{1,3}(?:go|ship|merge)|ready\s{1,3}for\s{1,3}review|"
        r"did\s{1,3}the\s{1,3}trick|"
        r"(?:that's|this\s{1,3}is|it's)\s{1,3}(?:exactly\s{1,3}|just\s{1,3})?what\s{1,3}i\s{1,3}(?:wanted|"
        r"needed|meant|"
        r"was\s{1,3}after|was\s{1,3}looking\s{1,3}for|asked\s{1,3}for)|"
        r"all\s{1,3}good|(?:much|way|a\s{1,3}lot|so\s{1,3}much|far)\s{1,3}(?:cleaner|faster|nicer|clearer|"
        r"simpler|easier|"
        r"more\s{1,3}readable))\b"
        r"|^\W{0,3}(?:yes|yep|yup|yeah|exactly|right|correct|that's\s{1,3}it)"
        r"(?:\W{1,3}(?:yes|exactly|right|correct|perfect|that's\s{1,3}it)){0,2}\W{0,4}$",
    ),
    # More approval words, and "you were right / that was it" (the agent's guess solved it).
    # A cue of its own so that the common "praise" part stays short.
    _cue(
        "praise-more",
        "positive",
        1.0,
        r"\b(?:slick|handy|nifty|impressive|impressed|stellar|terrific|outstanding|phenomenal|"
        r"top\s{1,3}notch|"
        r"chef's\s{1,3}kiss|you\s{1,3}were\s{1,3}right|that\s{1,3}was\s{1,3}it(?!\s{0,3}\?)|"
        r"that\s{1,3}did\s{1,3}it|"
        r"just\s{1,3}right|reads\s{1,3}(?:great|well|nicely)|can't\s{1,3}argue|happy\s{1,3}with\s{1,3}(?:it|"
        r"this|that|the)|"
        r"saved\s{1,3}(?:me|us|my|our)|clever|smart|appreciate\s{1,3}(?:the|this|that|your)|"
        r"love\s{1,3}(?:how|the|that)|"
        r"you're\s{1,3}(?:a\s{1,3}star|the\s{1,3}best|a\s{1,3}legend)|you\s{1,3}rock|"
        # "heck yes", "10/10 would ask again", "much tidier than what I had".
        # "that's exactly it", "this is really good" (not "good to know", not "is this good?").
        r"(?:that's|that\s{1,3}is|thats|this\s{1,3}is|it's)\s{1,3}(?:exactly|precisely|just)\s{1,3}(?:it|"
        r"right|the\s{1,3}(?:one|fix|thing))|"
        r"(?:this|that|it)(?:'s|\s{1,3}is|\s{1,3}was|\s{1,3}looks|\s{1,3}reads|"
        r"\s{1,3}seems)\s{1,3}(?:really\s{1,3}|very\s{1,3}|so\s{1,3}|"
        r"pretty\s{1,3}|quite\s{1,3}|actually\s{1,3}|genuinely\s{1,3}|"
        r"super\s{1,3})?good(?!\s{1,3}(?:to\s{1,3}know|for|at|enough\s{1,3}for)\b)|"
        r"(?:heck|hell|oh\s{1,3}hell|fuck)\s{1,3}(?:yes|yeah|yep)|"
        # "3x faster", "twice as fast", "I like this approach", "everything is working", "checks out".
        r"\d{1,3}(?:\.\d)?\s{0,1}x\s{1,3}(?:faster|quicker|smaller|lighter|"
        r"cheaper)(?!\s{1,3}than\s{1,3}(?:that|this|it))|twice\s{1,3}as\s{1,3}fast|"
        r"i\s{1,3}(?:really\s{1,3})?(?:like|love|dig)\s{1,3}(?:this|that|it|how|the\s{1,3}(?:new|way|"
        r"approach|change|fix|design|idea|layout|result))|"
        r"(?:it|that|this|everything|all)(?:'s|\s{1,3}is|\s{1,3}are)\s{1,3}(?:now\s{1,3}|finally\s{1,3}|"
        r"all\s{1,3})?working(?!\s{1,3}on)|"
        r"checks\s{1,3}out(?!\s{1,3}(?:the|a|an|my|this|that|from)\b)|10\s{0,2}/\s{0,2}10|would\s{1,3}(?:ask|"
        r"use|recommend|hire|do\s{1,3}it)"
        r"\s{1,3}again|(?:much|way|a\s{1,3}lot|so\s{1,3}much|far)\s{1,3}(?:tidier|neater|snappier|smoother|"
        r"tighter|crisper|sharper|"
        r"leaner|saner|friendlier|more\s{1,3}(?:readable|elegant|natural|polished))|"
        # "the dashboard loads in under a second now": a speed-up reported as the result.
        r"(?:loads|runs|builds|finishes|completes|renders|starts|responds|"
        r"takes)\s{1,3}(?:in\s{1,3}(?:(?:under|less\s{1,3}than|only|just|about)\s{1,3})?|"
        r"(?:under|less\s{1,3}than|only|just|about)\s{1,3})(?:a|one|\d{1,4})\s{0,3}(?:ms|millis\w{0,8}|s|"
        r"secs?|seconds?|mins?|minutes?)\s{0,3}now|"
        # "the pod is healthy now", "the model trains fine now", "that's grand", "ta".
        r"(?:is|are|'s|looks|seems)\s{1,3}(?:all\s{1,3})?(?:healthy|stable|responsive|snappy|"
        r"up\s{1,3}and\s{1,3}running|back\s{1,3}up)\s{1,3}(?:now|again)|"
        r"[a-z]{3,15}s\s{1,3}(?:fine|cleanly|correctly|properly|perfectly|successfully|"
        r"smoothly)\s{1,3}(?:now|again)|"
        r"(?:that's|that\s{1,3}is|it's|this\s{1,3}is)\s{1,3}(?:grand|ace|brill|smashing|cracking|mint|sound)|"
        r"(?:this|that|it)(?:'s|\s{1,3}is)\s{1,3}the\s{1,3}one(?!\s{1,3}(?:that|which|with|where|i|you|"
        r"we)\b))\b",
    ),
    # "fine by me", "that's ok with me": consent, as the whole message.
    _cue(
        "fine-by-me",
        "positive",
        1.0,
        r"^\W{0,3}(?:that's\s{1,3}|that\s{1,3}is\s{1,3}|all\s{1,3})?(?:fine|ok|okay|good|alright|cool)\s{1,3}"
        r"(?:by|with)\s{1,3}me\W{0,4}$",
    ),
    _cue(
        "it-works",
        "positive",
        1.0,
        # Not "a GitHub Action that runs the linter": a verb with an object is a relative clause.
        r"\b(?:it|that|this|everything|all)\s{1,3}(?:(?:actually|finally|now|really|just)\s{1,3})?(?:works|"
        r"worked|runs|ran|"
        r"passes|passed|compiles|compiled|builds|built|loads|renders|deploys|deployed|did\s{1,3}it|"
        r"fixed\s{1,3}it|"
        r"fixd\s{1,3}it|solved\s{1,3}it)\b(?!\s{1,3}(?:the|a|an|on|every|each|all|my|our|your|when|if|for|to|"
        r"into|against)\b)"
        r"|(?<!\b(?:if|when|once|until|unless)\s{1,3}(?:the\s{1,3}|it\s{1,3}|"
        r"all\s{1,3})?(?:[\w-]{1,20}\s{1,3})?)\b(?:succeeded|"
        r"completed\s{1,3}successfully|ran\s{1,3}successfully|went\s{1,3}through\s{1,3}(?:fine|cleanly))\b"
        r"|^\W{0,3}(?:confirmed|verified)\b(?:\s{1,3}(?:working|fixed|good|ok|it\s{1,3}works|"
        r"on\s{1,3}[\w-]{1,20}|locally))?\W{0,3}(?:[,.;!]|$)"
        r"|\b(?:match|matches|add\s{1,3}up|adds\s{1,3}up|line\s{1,3}up|lines\s{1,3}up|balance|balances|tally|"
        r"tallies)\s{1,3}now\b"
        r"|\b(?:resolves|loads|renders|passes|compiles|builds|deploys|syncs|connects|starts|boots|ran|runs|"
        r"completed|finished|installed|"
        r"migrated)\s{1,3}(?:fine|cleanly|clean|"
        r"now|again|perfectly|correctly|properly|successfully)\b|\ball\s{1,3}(?:resolve|load|render|pass|"
        r"compile|build|work|"
        r"run)\s{1,3}(?:fine|now|again|cleanly)\b|\b(?:fixed|fixd|solved|sorted)\s{1,3}(?:it|that)\b"
        r"|\b(?:but|and)\s{1,3}it\s{1,3}(?:did|does|worked|works)\b|\bworks\b|\ball\s{1,3}green\b"
        r"|\bfirst\s{1,3}try\b|\b(?:tests?|build|ci|pipeline)\s{1,3}(?:pass(?:es|ed)?|is\s{1,3}green|"
        r"green)\b",
    ),
    _cue(
        "emoji-approval",
        "positive",
        1.0,
        r"👍|🙏|🎉|🙌|👌|💯|✅|❤️|😍|🥳|🚀|🔥|👏|💪|🤩|😄|😁|😊|🥰|🏆|⭐|✨|😎|🤗|✔",
    ),
    _cue(
        "cn-approval",
        "positive",
        1.0,
        r"谢谢|多谢|感谢|谢啦|谢了|辛苦(?:了|啦)|完美|太好了|太棒了|很好|真好|真棒|好棒|非常好|可以了|好了[!！。~]?$|"
        r"能用了|可以用了|成功了|搞定|解决了|好使|全绿|全过了|通过了|漂亮|厉害|牛[!！啊逼]|给力|赞|就是这样|"
        # "可以可以", "稳", "好耶", "舒服了", "收到，很清楚", "这个好", "跑得飞快".
        r"^\W{0,3}(?:可以|好的|行|对|好|稳|妥|赞|棒|好耶|好嘢|得咗|搞掂咗)(?:\W{0,2}(?:可以|好的|行|对|好|稳|妥|赞|棒)){1,2}\W{0,4}$|"
        r"^\W{0,3}(?:稳|妥|好耶|好嘢|得咗|搞掂咗)\W{0,4}$|舒服了|爽了|很清楚|很清晰|讲得清楚|"
        r"^\W{0,3}(?:这个|这样|这版|这次)(?:很|挺|真|就)?好\W{0,4}$|(?:跑|运行|加载|打开|编译|响应)得(?:飞快|很快|超快|挺快|很顺|很稳|飞起)|"
        r"完全正确|正确|就用这个|终于(?:好|可以|行|能)|(?:现在|这下|终于)(?:对|行|好)了|对了[!！。~]?$|简洁|好多了|"
        r"清晰|没问题了|行了|好用|完全没问题|跑通|跑起来了|能跑了|跑成功|跑过了|符合(?:要求|预期)|就(?:这样|这么办)(?![吗嘛吧呢]?\s{0,2}[？?])|有用|有帮助|"
        r"帮大忙|明白了|懂了|就是这个意思|正是|就是我要的|[Oo][Kk]\s{0,2}了|^\W{0,3}(?:可以|好的|行|对|对的|嗯嗯?好)\W{0,4}$"
        # Everyday and internet praise (simplified after folding: 讚 -> 赞), Cantonese 唔该 / 搞掂.
        r"|满意|得体|到位|靠谱|优雅|巧妙|精彩|专业|稳了|妥了|妥妥|绝了|好评|点赞|优秀|感恩|唔该|多谢晒|搞掂|一目了然|\b666\b|\byyds\b"
        r"|^\W{0,3}6{1,3}\W{0,3}$|好棒|超棒|棒棒|真香|(?:可以|能)(?:直接)?用了|^\W{0,3}还行|^\W{0,3}(?:好|可以|行|ok|OK)(?:喔|哦|哟|"
        r"啦|嘞)\W{0,4}$"
        r"|(?:清楚|清晰|快|顺|简洁|干净|稳定|好看|好读|易读|顺眼|舒服|流畅|整齐)(?:多了|了很多|了不少)"
        # "页面正常了", "数据对上了", "能登录了": the thing works again.
        r"|(?:正常|对上|一致|通)了|恢复正常|(?:能|可以)(?:打开|登录|登入|访问|连上|看到|显示|运行|启动|编译)了|显示出来了"
        # "太香了", "一次就过", "报错终于消失了", "数字都对得上", "这版可以", "就按这个来": slang and
        # plain approvals that name no praise word.
        r"|太(?:香|神|顶|强)了|(?:一次|一遍|一下子)就(?:过|通过|跑通|成功|好)|终于(?:消失|没了|不见)|"
        r"(?:都|全)(?:对得上|对上了)|^\W{0,3}(?:行|好|嗯)?\W{0,2}(?:这版|这个版本|这样|这稿)(?:就)?(?:可以|行)\W{0,4}$|"
        r"就按(?:这个|这样|这版)(?:来|办|走|做)(?![吗嘛吧呢]?\s{0,2}[？?])|完全没错",
    ),
    # "merge when CI passes", "push once the build is green": a condition, not a report.
    _cue(
        "condition-not-report",
        "positive",
        -1.0,
        r"\b(?:when|once|after|if|until|as\s{1,3}soon\s{1,3}as)\s{1,3}(?:the\s{1,3}|"
        r"all\s{1,3}(?:the\s{1,3})?)?(?:ci|tests?|build|pipeline|checks?|"
        r"it|everything|deploy)\s{1,3}(?:pass(?:es)?|is\s{1,3}green|goes\s{1,3}green|turns\s{1,3}green|"
        r"are\s{1,3}green|works|succeeds|finishes)\b",
    ),
    _cue(
        "courtesy-thanks",
        "positive",
        -0.9,
        r"\b(?:could|can|would|will)\s{1,3}you\s{1,3}(?:please\s{1,3}|pls\s{1,3}|kindly\s{1,3})?"
        r"(?!explain|clarify|tell\s{1,3}me\s{1,3}why)[a-z]"
        r"|\bwhen\s{1,3}you\s{1,3}(?:get|have)\s{1,3}a\s{1,3}(?:moment|minute|sec|second|chance)\b|麻烦你|帮我",
    ),
    # "good stuff", "this is gold", "I can see the data now": approval without a praise word.
    _cue(
        "approval-plain",
        "positive",
        1.0,
        r"\bgood\s{1,3}stuff\b|\b(?:this|that|it)(?:'s|\s{1,3}is)\s{1,3}(?:pure\s{1,3}|solid\s{1,3})?gold\b"
        r"|\bi\s{1,3}can\s{1,3}(?:now\s{1,3}|finally\s{1,3}|actually\s{1,3})?(?:see|log\s{1,3}in|access|open|"
        r"connect|run|build|load|read|"
        r"reach|download|install|import|deploy)\b[^.!?\n]{0,40}\bnow\b|\bi\s{1,3}can\s{1,3}(?:now|"
        r"finally)\s{1,3}(?:see|log\s{1,3}in|access|"
        r"open|connect|run|build|load|read|reach|download|install|import|deploy)\b",
    ),
    # ===== negative ============================================================
    _cue(
        "you-broke",
        "negative",
        1.3,
        r"\byou(?:'ve|\s{1,3}have)?\s{1,3}(?:just\s{1,3}|now\s{1,3})?(?:broke|broken|messed\s{1,3}up|"
        r"screwed\s{1,3}up|"
        r"deleted|wiped|overwrote|overwritten|lost(?!\s{1,3}me\b)|ruined|killed|nuked|trashed|clobbered|"
        r"reverted)\b",
    ),
    _cue(
        "still-failing",
        "negative",
        1.3,
        r"\bstill\s{1,3}(?:getting|get|gets|failing|fails|failed|broken|broke|crashing|crashes|crashed|"
        r"erroring|errors?|the\s{1,3}same|same|seeing|see|sees|showing|throws|throwing|timing\s{1,3}out|"
        r"times\s{1,3}out|"
        r"fail|crash|break|hang|error|throw|time\s{1,3}out|return|show|says|prints|displays|outputs|"
        r"points\s{1,3}to|redirects|"
        r"hangs|hanging|red|wrong|empty|blank|slow|not|no|doesn't|isn't|won't|can't|there|happening|"
        r"returns|returning|stuck|missing|down|flaky|buggy|off|broken|duplicat\w{0,6}|truncat\w{0,4}|"
        r"cut\s{1,3}off|"
        r"too\s{1,3}\w{1,12}|(?:a\s{1,3})?[45]\d\d)\b|\bstill\s{0,2}(?:一样|相同|报错|不|没|有问题|失败)"
        # "it's still sending duplicate emails": the thing keeps misbehaving.
        r"|\b(?:it|it's|they|they're|this|that|which)\s{1,3}(?:is\s{1,3}|"
        r"are\s{1,3})?still\s{1,3}[a-z]{2,15}ing\b"
        # "still one failing", "still 3 errors".
        r"|\bstill\s{1,3}(?:\d{1,4}|one|two|three|a\s{1,3}few|some|"
        r"several)\s{1,3}(?:\w{1,20}\s{1,3})?(?:failing|failed|failures|errors?|broken|red|flaky)\b",
    ),
    _cue(
        "same-result",
        "negative",
        1.3,
        r"\b(?:same|identical)\s{1,3}[a-z]{0,30}(?:error|exception)\b"
        r"|\b(?:same|identical)\s{1,3}(?:old\s{1,3})?(?:error|errors|issue|problem|result|results|output|"
        r"thing|"
        r"failure|exception|traceback|bug|behaviou?r|message|response|story|crash|404|500|stack\s{1,3}trace|"
        r"spot|place|"
        r"point|line|step|way)\b"
        r"|\b(?:nothing|no)\s{1,3}(?:has\s{1,3})?changed\b|\b(?:made|makes|make)\s{1,3}no\s{1,3}difference\b"
        # "same as before", "same thing again".
        r"|\bsame\s{1,3}(?:as\s{1,3}(?:before|last\s{1,3}time|earlier|yesterday)|thing\s{1,3}again|"
        r"again)\b(?!\s{1,3}but\b)",
    ),
    _cue(
        "flat-rejection",
        "negative",
        1.2,
        r"\b(?:wrong|incorrect|useless|nonsense|garbage|rubbish|worse|way\s{1,3}off|completely\s{1,3}off|"
        r"totally\s{1,3}off|off\s{1,3}base|off\s{1,3}topic|broken|unusable|terrible|awful|"
        r"not\s{1,3}even\s{1,3}close|missed\s{1,3}the\s{1,3}point|"
        # The answer's content is off: "got it backwards", "sounds nothing like me", "misses what I asked".
        r"backwards|back\s{1,3}to\s{1,3}front|(?:sounds|looks|reads|feels|is)\s{1,3}nothing\s{1,3}like|"
        r"miss(?:es|ed)?\s{1,3}(?:the\s{1,3}(?:(?:main|whole|key|entire|real)\s{1,3})?point|the\s{1,3}mark|"
        r"what)|off\s{1,3}the\s{1,3}mark|nowhere\s{1,3}near|"
        r"(?:doesn't|don't|does\s{1,3}not|do\s{1,3}not|dont|doesnt)\s{1,3}add\s{1,3}up|bogus|inaccurate|"
        r"gibberish|pointless|"
        r"sucks|horrible|dreadful|unreadable|a\s{1,3}mess|i\s{1,3}(?:hate|dislike|"
        r"don't\s{1,3}like)\s{1,3}(?:it|this|that))\b",
    ),
    # A message that is nothing but "no" ("no. just no.", "lol no", "nope nope").
    _cue(
        "bare-no",
        "negative",
        1.5,
        r"^\W{0,3}(?:(?:lol|lmao|haha|ugh|hmm|um|uh|oh|god|jeez|seriously|sorry)\W{1,3})?"
        r"(?:no{1,5}|nope|nah|wrong|incorrect|ugh{1,5}|meh)(?:\W{1,3}(?:just\s{1,3})?(?:no{1,5}|nope|nah|"
        # "nope not that", "no. not this one".
        r"not\s{1,3}(?:that|this|it|quite|really|even\s{1,3}close)(?:\s{1,3}one)?))?\W{0,4}$",
    ),
    _cue(
        "made-up",
        "negative",
        1.3,
        r"\bmade\s{1,3}(?:it|that|this|them|those|stuff|things)\s{1,3}up\b|\bhallucinat|\bmaking\s{1,3}(?:it|"
        r"things|stuff)"
        r"\s{1,3}up\b|\b(?:just\s{1,3})?(?:repeated|copied|parroted)\s{1,3}(?:what|back)\b|"
        r"\byou\s{1,3}invented\b",
    ),
    _cue(
        "broken-state",
        "negative",
        1.0,
        r"(?:\b(?:is|are|was|went|looks|seems|got)|'s)\s{1,3}(?:just\s{1,3}|now\s{1,3}|all\s{1,3}|"
        r"completely\s{1,3}|even\s{1,3}|"
        r"still\s{1,3}|way\s{1,3}|much\s{1,3})?"
        r"(?:blank|empty|gone|missing|dead|down|frozen|broken|worse|slower|off|outdated|incomplete|truncated|"
        r"garbled|corrupted|stale|"
        r"duplicated|doubled|reversed|flipped|inverted|shifted|upside\s{1,3}down|out\s{1,3}of\s{1,3}order|"
        r"unsorted|jumbled|scrambled|"
        r"overlapping|cropped|clipped|pixelated|blurry)\b(?!\s{1,3}(?:rows?|lines?|values?|cells?|to|for|on|"
        r"the))",
    ),
    _cue(
        "failing-now",
        "negative",
        1.0,
        r"\b(?:it|this|that|everything|now|the\s{1,3}\w{1,20}|they|tests?)\s{1,3}(?:still\s{1,3}|now\s{1,3}|"
        r"just\s{1,3})?"
        r"(?:crashes|crashed|fails|failed|errors|errored|breaks|hangs|freezes|froze|times\s{1,3}out|"
        r"timed\s{1,3}out|dies|died|"
        r"segfaults|panics|returns\s{1,3}(?:nothing|null|none|an?\s{1,3}error|empty))\b"
        r"|(?:\b(?:is|are|keeps?|kept)|'s|'re)\s{1,3}(?:still\s{1,3})?(?:failing|crashing|erroring|breaking|"
        r"hanging|timing\s{1,3}out)\b"
        # "now the tests fail", "the builds still break": a plural subject, the failure now.
        r"|\bnow\s{1,3}(?:the\s{1,3}|all\s{1,3}(?:the\s{1,3})?|both\s{1,3})?\w{1,20}\s{1,3}(?:fail|crash|"
        r"break|hang|error\s{1,3}out|time\s{1,3}out)\b"
        r"|(?<!\b(?:if|when|whenever|unless|until|case|sure|that)\s{1,3}(?:the\s{1,3})?)\b(?:tests|builds|"
        r"jobs|pipelines|requests|queries|imports|"
        r"they|both)\s{1,3}(?:still\s{1,3}|now\s{1,3}|all\s{1,3})(?:fail|crash|break|hang|error\s{1,3}out|"
        r"time\s{1,3}out)\b"
        # "it throws a KeyError now".
        r"|\b(?:it|this|that|now\s{1,3}it|the\s{1,3}\w{1,20})\s{1,3}(?:still\s{1,3}|now\s{1,3}|"
        r"just\s{1,3})?(?:throws|raises|spits\s{1,3}out)"
        r"\s{1,3}(?:an?\s{1,3})?(?:\w{1,30}(?:error|exception)|error|exception|traceback|segfault)\b"
        # "login fails for every user now" (not "retry if the upload fails").
        r"|(?<!\b(?:if|when|whenever|unless|until|case)\s{1,3}(?:the\s{1,3}|it\s{1,3}|a\s{1,3}|"
        r"an\s{1,3})?)\b[a-z]{3,20}\s{1,3}"
        r"(?:still\s{1,3}|now\s{1,3})?(?:fails|crashes|breaks|hangs|errors\s{1,3}out|times\s{1,3}out|"
        r"dies)\s{1,3}"
        r"(?:for|on|every|again|now|when|with|after|right|immediately|at)\b"
        r"|\b(?:fail\w{0,3}|crash\w{0,3}|error\w{0,3}|broke\w{0,2}|red)\s{1,3}again\b"
        # "every route 404s now", "it 500s on submit": a status code used as a verb.
        r"|\b(?:everything|every\s{1,3}\w{1,20}|each\s{1,3}\w{1,20}|"
        r"all\s{1,3}\w{1,20})\s{1,3}(?:still\s{1,3}|now\s{1,3}|just\s{1,3})?"
        r"[45]\d\d(?:s|es)\b|\b[45]\d\d(?:s|es)\s{1,3}(?:now|again|everywhere|on\s{1,3}(?:every|each|submit|"
        r"load|save|login))\b"
        r"|\bnothing\s{1,3}(?:happens|happened|loads|loaded|works|worked|shows|showed|renders|rendered|"
        r"appears|"
        r"appeared|runs|ran|compiles|compiled|builds|built|passes|passed|starts|started|opens|opened|prints|"
        r"printed|"
        r"matches|matched|comes\s{1,3}up|came\s{1,3}up|shows\s{1,3}up|showed\s{1,3}up)\b"
        r"|\b(?:i\s{1,3}(?:get|got|see|am\s{1,3}getting|keep\s{1,3}getting)|i'm\s{1,3}getting|"
        r"now\s{1,3}getting)"
        r"\s{1,3}(?:a\s{1,3}|an\s{1,3})?(?:\d{3}|error|exception|traceback|segfault|panic|timeout|blank|"
        r"nothing)",
    ),
    _cue(
        "you-ignored",
        "negative",
        1.2,
        r"\byou\s{1,3}(?:completely\s{1,3}|totally\s{1,3})?(?:ignored|misunderstood|misread|"
        r"skipped\s{1,3}(?:my|what)|"
        r"didn't\s{1,3}(?:read|listen|follow|do\s{1,3}what)|did\s{1,3}not\s{1,3}(?:read|listen|follow))\b"
        r"|\bi\s{1,3}(?:already\s{1,3})?told\s{1,3}you\b|\bi\s{1,3}already\s{1,3}said\b",
    ),
    _cue(
        "undo",
        "negative",
        1.2,
        r"^\W{0,3}(?:please\s{1,3}|just\s{1,3})?(?:undo|revert|roll\s{1,3}back)\s{1,3}(?:that|this|it|your|"
        r"the\s{1,3}"
        r"(?:change|last|edit|commit))\b|(?<!为什么|为什么要|为啥|为啥要|干嘛|怎么)(?:撤销|回滚|改回去|恢复原样)",
    ),
    _cue(
        "failure-word",
        "negative",
        0.5,
        r"\b(?:fail(?:s|ed|ing|ure)?|errors?|crash(?:es|ed|ing)?|exception)\b",
    ),
    _cue(
        "sarcasm",
        "negative",
        1.2,
        r"\banother\s{1,3}(?:merge\s{1,3}conflict|error|failure|crash|bug|exception|timeout|regression)\b"
        r"|\b(?:made|makes|making)\s{1,3}(?:it|things|this|that|"
        r"everything)\s{1,3}(?:\w{1,10}\s{1,3})?(?:worse|slower|"
        r"harder|buggier|broken|unusable|messier|uglier|longer)\b",
    ),
    # What the answer did to the work or left out: "it reverted my changes", "the summary
    # leaves out the key part", "the fix introduced a new bug", "contradicts what you said".
    _cue(
        "damage-done",
        "negative",
        1.2,
        r"\b(?:it|this|that|the|your)(?:\s{1,3}[\w-]{1,20}){0,2}\s{1,3}(?:just\s{1,3}|now\s{1,3}|"
        r"still\s{1,3})?(?:reverted|overwrote|"
        r"overwrites|removed|removes|dropped|drops|truncated|truncates|corrupted|corrupts|duplicated|"
        r"duplicates|clobbered|deleted|deletes|"
        r"erased|emptied|wiped|wipes|loses|strips|eats|ate|swallows|swallowed|mangles|doubles|"
        r"doubled)\s{1,3}(?:my|our|all|everything|half|"
        r"every|the|those|these|any|some)\b"
        r"|\b(?:leaves|left|leaving)\s{1,3}out\b|\b(?:skips|ignores|omits)\s{1,3}(?:the|my|half|most|all|"
        r"some)\b"
        r"|\b(?:introduced|caused|created|added)\s{1,3}(?:a\s{1,3})?(?:new\s{1,3})?(?:bug|regression|"
        r"memory\s{1,3}leak|leak|"
        r"crash|race\s{1,3}condition)\b|\bcontradict(?:s|ed|ing)?\b|\bopposite\s{1,3}of\s{1,3}what\b"
        r"|\b(?:you|it|this|that)\s{1,3}only\s{1,3}(?:did|fixed|changed|updated|answered|covered|handled|"
        r"translated|converted|processed|"
        r"imported|exported|returned|summari[sz]ed|sent|deleted|renamed|migrated|tested|does|handles|returns|"
        r"covers|shows|prints)\b"
        r"|\bno\s{1,3}such\s{1,3}(?:flag|option|function|method|command|file|field|column|table|module|"
        r"package|setting|"
        r"parameter|endpoint|api|thing)\b|\b(?:doesn't|does\s{1,3}not|don't|"
        r"do\s{1,3}not)\s{1,3}(?:even\s{1,3})?exist\b"
        r"|\boff\s{1,3}by\s{1,3}(?:a\s{1,3}lot|a\s{1,3}mile|a\s{1,3}factor|an\s{1,3}order|\d|one|two|ten)"
        r"|\b(?:reads|sounds|looks)\s{1,3}like\s{1,3}(?:a\s{1,3})?(?:robot|bot|machine|spam|"
        r"marketing\s{1,3}copy)\b",
    ),
    # "it's returning an empty list again", "the link you gave me 404s".
    _cue(
        "bad-output",
        "negative",
        1.0,
        r"\b(?:returning|returns|returned|gives|giving|outputs|outputting|prints|"
        r"printing)\s{1,3}(?:me\s{1,3})?(?:an?\s{1,3})?"
        r"(?:empty|blank|nothing|null|none|nan|zeros?|garbage|gibberish|undefined)\b"
        r"|\b(?:gives|gave|returns|returned|throws|threw|hits|"
        r"got)\s{1,3}(?:me\s{1,3})?(?:an?\s{1,3})?[45]\d\d\b"
        # "the settings page renders blank now".
        r"|\b(?:renders|rendering|rendered|shows|showing|loads|loading|comes\s{1,3}up|came\s{1,3}up|displays|"
        r"opens|prints)"
        r"\s{1,3}(?:up\s{1,3})?(?:completely\s{1,3}|totally\s{1,3}|all\s{1,3})?(?:blank|empty|white|"
        r"black)\b(?!\s{1,3}(?:rows?|lines?|cells?|values?))",
    ),
    # "the code have error" (non-native), "you forgot the header", "you didn't update the
    # tests", "the fix only works locally" (a mask), "the app won't even open".
    _cue(
        "defect-stated",
        "negative",
        1.0,
        r"\b(?:code|it|this|that|script|app|page|build|program|function|query|file|output|result|test|tests|"
        r"site)\s{1,3}(?:have|has|got|having)"
        r"\s{1,3}(?:an?\s{1,3}|some\s{1,3}|many\s{1,3}|lots\s{1,3}of\s{1,3})?(?:errors?|bugs?|exceptions?|"
        r"problems?|issues?)\b"
        r"|\byou(?:'ve)?\s{1,3}(?:forgot|forgotten|missed|skipped|omitted|overlooked|didn't\s{1,3}(?:update|"
        r"change|include|add|handle|fix|touch|"
        r"cover|remove|test|run|save|commit|push|rename|migrate|delete))\b"
        r"|\b(?:won't|can't|cannot|doesn't|didn't|isn't|wasn't|still\s{1,3}(?:won't|can't|"
        r"doesn't))\s{1,3}(?:even\s{1,3}|really\s{1,3})?"
        r"(?:open|opens|launch|launches|boot|boots|connect|connects|respond|responds|render|renders|save|"
        r"saves|sync|syncs|install|"
        r"installs|deploy|deploys|log\s{1,3}in|sign\s{1,3}in|show\s{1,3}up|appear|appears)\b",
    ),
    # "I asked for a summary and you gave me the whole thread": what came back is not what
    # was asked for (a rejection, not a fix of one detail).
    _cue(
        "asked-got",
        "negative",
        1.2,
        r"\bi\s{1,3}(?:asked\s{1,3}(?:you\s{1,3})?(?:for|to)|wanted|needed|"
        r"expected)\b[^.;!?\n]{1,60}?(?:\band|\bbut|,|—)\s{1,3}(?:then\s{1,3})?"
        r"(?:you|i\s{1,3}got|got)\s{1,3}(?:gave|give|sent|returned|wrote|made|did|produced|just|me|back|a|an|"
        r"the)\b",
    ),
    # "the output has duplicates", "you cut it off", "no luck", "the button does nothing",
    # "that's a made up API", "tests are red", "the layout is all messed up".
    _cue(
        "bad-result",
        "negative",
        1.0,
        r"\b(?:has|have|contains|contain|there\s{1,3}are|there's|got)\s{1,3}(?:a\s{1,3}lot\s{1,3}of\s{1,3}|"
        r"lots\s{1,3}of\s{1,3}|some\s{1,3}|"
        r"many\s{1,3}|tons\s{1,3}of\s{1,3}|a\s{1,3}bunch\s{1,3}of\s{1,3})?(?:duplicates|"
        r"duplicated\s{1,3}\w{1,20}|duplicate\s{1,3}\w{1,20}|"
        r"typos|mistakes|glitches|gaps|holes|artifacts|artefacts)\b"
        r"|\b(?:no|still\s{1,3}no)\s{1,3}(?:luck|dice|joy|improvement)\b"
        r"|\b(?:does|did|do)\s{1,3}(?:absolutely\s{1,3}|literally\s{1,3})?nothing\b(?!\s{1,3}(?:to|about|for|"
        r"but|else|wrong|new)\b)"
        r"|\b(?:is|'s|are|'re|was)\s{1,3}(?:(?:a|an|just|completely|totally|"
        r"entirely)\s{1,3}){0,2}(?:made[- ]up|fake|fabricated|nonexistent|"
        r"non-existent)\b"
        r"|\b(?:tests?|ci|build|builds|pipeline|checks?)\s{1,3}(?:is|are|went|turned|"
        r"still)\s{1,3}(?:still\s{1,3}|all\s{1,3})?red\b"
        r"|\b(?:is|are|'s|'re|got|looks|was)\s{1,3}(?:all\s{1,3}|completely\s{1,3}|totally\s{1,3}|"
        r"kinda\s{1,3}|now\s{1,3})?(?:messed\s{1,3}up|"
        r"screwed\s{1,3}up|borked|busted|wonky|misaligned|cut\s{1,3}off|chopped\s{1,3}off)\b"
        r"|\byou\s{1,3}(?:cut|chopped|truncated)\s{1,3}(?:it|that|this|them|the\s{1,3}\w{1,20}|half|"
        r"part)\s{1,3}(?:off|short)\b",
    ),
    # Failure states and symptoms: "the pod is in CrashLoopBackOff again", "the model is
    # overfitting", "accuracy dropped to 60%", "a full table scan", "#REF!", "the doc lost all
    # its formatting", "the cron job never ran", "is missing the header row", "loops forever".
    _cue(
        "failure-state",
        "negative",
        1.2,
        r"(?:\b(?:is|are|'s|'re|went|goes|keeps|still|got)\s{1,3}(?:back\s{1,3}|still\s{1,3}|"
        r"now\s{1,3})?(?:in(?:to)?\s{1,3})?(?:an?\s{1,3})?|\bgets\s{1,3})"
        + _FAILURE_STATE
        + r"|\b(?:is|are|'s|'re|keeps|still)\s{1,3}(?:still\s{1,3}|badly\s{1,3}|heavily\s{1,3}|"
        r"now\s{1,3})?(?:overfitting|underfitting|diverging|"
        r"leaking|thrashing|flapping|looping|flickering|glitching|stuttering|lagging)\b"
        r"|\b(?:tanked|plummeted|regressed|degraded)\b"
        r"|\b(?:accuracy|precision|recall|f1|auc|score|coverage|throughput|conversion|uptime|"
        r"hit\s{1,3}rate)\s{1,3}(?:has\s{1,3})?(?:dropped|fell|went\s{1,3}down|"
        r"decreased|sank)\b"
        r"|\b(?:latency|memory|cpu|ram|load|errors?|error\s{1,3}rate|runtime|build\s{1,3}time|p99|p95|"
        r"bundle(?:\s{1,3}size)?)\s{1,3}(?:has\s{1,3})?"
        r"(?:spiked|jumped|doubled|tripled|went\s{1,3}up|exploded|ballooned)\b"
        r"|\bfull\s{1,3}(?:table\s{1,3})?scans?\b|#(?:REF|VALUE|N/A|NAME|DIV/0|NUM|NULL|SPILL)\b"
        r"|\b(?:lost|loses|losing|stripped|strips|mangled|mangles)\s{1,3}(?:all\s{1,3})?(?:the|my|its|our|"
        r"their|all|every)\s{1,3}(?:[\w-]{1,20}\s{1,3})?"
        r"(?:formatting|styles?|styling|data|rows|columns|changes|comments|links|images|history|indentation|"
        r"headers?|colou?rs|fonts)\b"
        r"|\bnever\s{1,3}(?:ran|fired|started|finished|completed|arrived|showed\s{1,3}up|got\s{1,3}sent|"
        r"went\s{1,3}out|triggered|executed|"
        r"loaded|happened|synced|got\s{1,3}created)\b"
        r"|\b(?:is|are|'s|'re)\s{1,3}(?:still\s{1,3}|now\s{1,3})?missing\s{1,3}(?:the|a|an|all|some|half|my|"
        r"our|its|their|every)\b"
        r"|\b(?:loops|spins|hangs|loads|waits|redirects|keeps\s{1,3}(?:loading|spinning|"
        r"redirecting))\s{1,3}(?:forever|indefinitely|endlessly|"
        r"infinitely)\b|\binfinite\s{1,3}(?:loop|redirect|spinner|recursion)\b",
    ),
    # "the pod is in CrashLoopBackOff": the state, not a value of the pod.
    _cue(
        "failure-state-not-value",
        "correction",
        -0.6,
        r"\b(?:is|are|'s|'re|went|goes)\s{1,3}(?:back\s{1,3}|still\s{1,3}|now\s{1,3})?(?:in(?:to)?\s{1,3})?(?:an?\s{1,3})?"
        + _FAILURE_STATE,
    ),
    # Defects described: "got a permission denied error", "it says syntax error near …", "runs out
    # of memory", "which it shouldn't", "shows up behind the modal", "every row has the same
    # timestamp", "sending two emails per signup", "don't line up", "seeing NaN everywhere",
    # "way longer than I asked".
    _cue(
        "defect-described",
        "negative",
        1.0,
        r"(?<!\b(?:if|when|whenever|case|unless)\s{1,3}(?:you|it|we|they|i)\s{1,3})\b(?:got|getting|get|"
        r"seeing|see|hit|hitting|hits)\s{1,3}"
        r"(?:an?\s{1,3}|the\s{1,3}|this\s{1,3})?(?:permission\s{1,3}denied|access\s{1,3}denied|"
        r"syntax\s{1,3}error|[45]\d\d\b|nan\b|nans\b|"
        r"nulls?\b|undefined\b|mojibake|gibberish|question\s{1,3}marks|(?:[\w-]{1,20}\s{1,3})?(?:error|"
        r"exception|traceback|timeout|segfault)\b)"
        r"|\b(?:it|this|that|the\s{1,3}[\w-]{1,20})\s{1,3}(?:now\s{1,3}|still\s{1,3}|just\s{1,3})?(?:says|"
        r"said|shows|showed|prints|printed|reports|"
        r"reported)\s{1,3}(?:an?\s{1,3})?(?:[\w-]{1,20}\s{1,3})?(?:error|exception|permission\s{1,3}denied|"
        r"not\s{1,3}found|undefined|nan)\b"
        r"|\bout\s{1,3}of\s{1,3}memory\b|\bruns\s{1,3}out\s{1,3}of\s{1,3}(?:memory|disk|space|heap)\b"
        r"|\b(?:which|that)\s{1,3}it\s{1,3}(?:shouldn't|should\s{1,3}not)\b"
        r"|\b(?:shows\s{1,3}up|appears|renders|sits|pops\s{1,3}up)\s{1,3}(?:behind|underneath|off[- ]screen|"
        r"outside\s{1,3}the|on\s{1,3}top\s{1,3}of)\b"
        r"|\b(?:every|all|each)\s{1,3}(?:[\w-]{1,20}\s{1,3})?(?:has|have|is|are|shows?|gets?|"
        r"returns?)\s{1,3}the\s{1,3}same\s{1,3}\w"
        r"|\b(?:sending|sends|sent|creating|creates|created|posting|posts|inserting|inserts)\s{1,3}(?:two|2|"
        r"three|3|duplicate|multiple|double)\s{1,3}"
        r"(?:emails|messages|notifications|requests|copies|invites|rows|records|entries|charges|events)\b"
        r"|\b(?:sends?|sent|runs?|ran|fires?|fired|charges?|charged|posts?|posted|prints?|printed|inserts?|"
        r"inserted|triggers?|triggered|"
        r"creates?|created|emails?|emailed)\s{1,3}(?:[\w-]{1,20}\s{1,3}){0,2}(?:twice|two\s{1,3}times|"
        r"three\s{1,3}times)\b"
        r"|\b(?:don't|do\s{1,3}not|dont|doesn't|does\s{1,3}not|didn't)\s{1,3}(?:match|line\s{1,3}up|agree|"
        r"reconcile|tally)\b"
        r"|\b(?:longer|shorter|bigger|smaller|slower|wordier|more|less|"
        r"fewer)\s{1,3}(?:\w{1,20}\s{1,3})?than\s{1,3}(?:i|we)\s{1,3}(?:asked|wanted|"
        r"needed|expected|said|specified)",
    ),
    # "traffic was terrible today", "the coffee here is awful", "the football was brilliant
    # last night": a verdict on something out in the world (a time or a place is named), not
    # on the answer.
    _cue(
        "world-remark-negative",
        "negative",
        -1.2,
        r"\b(?:was|were)\s{1,3}" + _WORLD_VERDICT + r"\b[^.!?\n]{0,20}\b" + _WORLD_TIME + r"\b"
        r"|\b(?:here|"
        + _WORLD_PLACE
        + r")\s{1,3}(?:is|was|are|were)\s{1,3}"
        + _WORLD_VERDICT
        + r"\b"
        + _WORLD_THING_VERDICT,
    ),
    _cue(
        "world-remark-positive",
        "positive",
        -1.0,
        r"\b(?:was|were)\s{1,3}" + _WORLD_VERDICT + r"\b[^.!?\n]{0,20}\b" + _WORLD_TIME + r"\b"
        r"|\b(?:here|"
        + _WORLD_PLACE
        + r")\s{1,3}(?:is|was|are|were)\s{1,3}"
        + _WORLD_VERDICT
        + r"\b"
        + _WORLD_THING_VERDICT,
    ),
    _cue("annoyed-emoji", "negative", 0.6, r"🙄|🙃|😒|😤|😡|🤦|😩|😞|👎|😑"),
    # "thanks for force-pushing over my branch 🙃": with an annoyed emoji, sarcasm.
    _cue(
        "thanks-for-doing",
        "negative",
        0.5,
        r"\bthanks?\s{1,3}(?:a\s{1,3}lot\s{1,3})?for\s{1,3}[\w-]{2,20}ing\b",
    ),
    _cue(
        "all-zero",
        "negative",
        1.0,
        r"\ball\s{1,3}(?:zeros?|nulls?|nan|blank|empty|null)\b|(?:全|都)(?:是|为|变成)\s{0,2}(?:0|零|空|null|NaN|nan|"
        r"None|乱码|空白|问号)",
    ),
    _cue(
        "count-failing",
        "negative",
        0.6,
        r"\b[1-9]\d{0,3}\s{1,3}(?:failing|failed|failures|errors|broken|crashes)\b",
    ),
    _cue(
        "cn-rejection",
        "negative",
        1.2,
        r"不对|不行|不好使|不管用|不起作用|错了|答非所问|文不对题|牛头不对马嘴|改了个寂寞|白改了|白忙|胡说|瞎编|"
        r"编的|乱写|瞎写|乱改|瞎改|不是我(?:要|想要|说)的|唔(?:系|係)我(?:要|想要|讲)|完全不是|离谱|更(?:慢|糟|差|乱|卡)了|一模一样|"
        r"跟(?:上次|之前|刚才|原来)(?:的)?(?:一样|一模一样|相同)|一样的(?:错|问题|结果|报错|error)|越改越|越来越(?:慢|乱|差|糟)|"
        r"空白|白屏|黑屏|闪退|卡死|卡住了|结果不对|根本(?:不|没)|同样的(?:错|问题|报错|error)|"
        r"(?:写|做|改|弄|说|搞)得(?:也)?(?:太|有点|不太|过于)|一点(?:用|效果|作用|变化)?都没|都没用"
        # Internet slang, Taiwan and Cantonese rejections ("有夠爛", "唔得", "唔啱").
        r"|(?<![不没])(?:也)?太(?:慢|卡|乱|丑|难看|啰嗦|复杂|差|烂)了|一直(?:在)?\s{0,2}(?:转圈|加载|报错|失败|卡住|崩|超时|重启|loading|"
        r"spinning)"
        r"|无语|拉胯|拉垮|翻车|寄了|垃圾|辣鸡|什么鬼|啥玩意|扯淡|白搭|换汤不换药|(?:太|好|很|真|有够)烂|烂透|唔得|唔啱|唔work|冇用"
        r"|怪怪的|写的(?:啥|什么)|(?:寄|发|转|传|抄送|约|订|叫|找|给)错\s{0,2}(?:人|对象|地方|群|地址|邮箱|收件人|房间|会议室)|乱掉了|乱套了|乱七八糟|一团糟|"
        r"一塌糊涂|(?:都|全)乱了|比\s{0,2}(?:刚才|之前|原来|上次|以前|上一版|旧版|老版)(?:的)?\s{0,2}(?:还|更)\s{0,2}(?:糟|差|烂|慢|乱|卡|丑|难看|"
        r"难用|"
        r"复杂|啰嗦|ugly|bad|slow|messy|worse|buggy|laggy|confusing)|(?:不能用|没法用|用不了|不好用)(?=\s{0,2}(?:了|啊|呀|的|"
        r"[，。！？,.!?~～]|$))",
    ),
    _cue(
        "cn-failing",
        "negative",
        1.2,
        r"又\s{0,2}(?:失败|报错|挂|崩|出错|出问题|不行|错|卡|超时|坏|断|红|crash|fail|error|break|broke|timeout|panic|segfault|"
        r"oom|hang|"
        r"exception|[45]\d\d\b)"
        r"|(?:跑|连|打|装|启动|编译|运行|登|测试|检查|校验|构建|部署)不(?:起来|通|动|上|开|了|进去|过|出来|成功)|崩了|挂了|坏了|炸了|"
        # "崩溃了", "又出问题了", "数据丢了".
        r"崩溃了|宕机了|死机了|挂掉了|出(?:问题|bug|\s{0,2}bug|错)了|"
        r"(?:数据|文件|代码|配置|记录|内容|格式|图片|改动|表)(?:都|全)?(?:丢|没|不见)了|"
        r"被你(?:删|改|弄|搞|覆盖|清)|你(?:把|给).{0,12}(?:删了|搞坏|弄坏|改坏|搞砸|弄丢|覆盖了|覆盖掉|删掉了|清掉了|清空了|弄没了|搞没了)"
        r"|(?:坏|死|衰|挂|冧)咗",
    ),
    # "接口全 500 了", "画面跑版了", "方向都歪掉了", "跟我要的不一样", "bug 照样复现", "更严重了":
    # the result described as broken, off target, or unchanged.
    _cue(
        "cn-broken-result",
        "negative",
        1.2,
        r"(?:全|都|全部|全都)\s{0,2}(?:[45]\d\d|报错|挂|崩|红|失败|error|fail|crash)\s{0,2}了"
        r"|(?:跑版|歪掉|跑偏|走样|错位|变形|乱码|blank|空白|白屏)\s{0,2}了|一个字都没(?:变|改|动)|两码事|两回事|"
        r"跟我(?:要|想|说)的[^，。？！,.?!]{0,12}?不(?:一样|同)|(?:照样|依然|仍然|还是|又)\s{0,2}(?:能)?复现|"
        r"更(?:严重|频繁|多错)了|(?:还|都|一直|半天)没(?:出结果|反应|动静|跑完|返回)",
    ),
    # "把日志删掉，没用了": after a command, an evaluation is about its object.
    _cue("cn-ba-command", "negative", -0.6, r"^\W{0,3}(?:请|帮我|麻烦)?\s{0,2}把"),
    # ===== correction ==========================================================
    _cue(
        "should-be",
        "correction",
        1.2,
        r"\bshould\s{1,3}(?:be|have\s{1,3}been|say|read|equal)\b|\b(?:is|it's|its|was)\s{1,3}actually\b"
        # "it was supposed to be sorted by date".
        r"|\b(?:was|were|is|are)\s{1,3}supposed\s{1,3}to\s{1,3}(?:be|say|read|show)\b"
        # "the total should come out to 1,240", "should add up to 100%": the right figure.
        r"|\bshould\s{1,3}(?:come\s{1,3}out\s{1,3}to|add\s{1,3}up\s{1,3}to|total|sum\s{1,3}to)\s{1,3}[$€£¥]?\d"
        r"|\bcorrect\s{1,3}(?:one|value|answer|number|name|date|figure)\s{1,3}is\b"
        # "the cron should run at 02:30", "it should return 404": the right time or result.
        r"|\bshould\s{1,3}(?:run|fire|start|end|go\s{1,3}off|trigger|happen|begin|finish|expire|land|arrive|"
        r"depart|leave)"
        r"\s{1,3}(?:at|on|by)\s{1,3}(?:\d|noon|midnight|mon|tue|wed|thu|fri|sat|sun)"
        # "the invoice number should start with INV-".
        r"|\bshould\s{1,3}(?:start|begin|end)\s{1,3}with\s{1,3}\S"
        # "the formula should reference column D", "it should point to the v2 bucket".
        r"|\bshould\s{1,3}(?:reference|point\s{1,3}(?:to|at)|link\s{1,3}to|read\s{1,3}from|write\s{1,3}to|"
        r"target|import\s{1,3}from)\s{1,3}\S"
        # "the loop should stop at len(items) - 1": where it should end or start.
        r"|\bshould\s{1,3}(?:stop|end|start|begin|break|cut\s{1,3}off|wrap)\s{1,3}(?:at|after|before)\s{1,3}[\w$'\"`(-]"
        r"|\bshould\s{1,3}(?:return|output|show|print|display|total|come\s{1,3}to|add\s{1,3}up\s{1,3}to|"
        r"round\s{1,3}to)"
        r"\s{1,3}[$¥€£'\"]?\d",
    ),
    _cue(
        "starts-actually",
        "correction",
        0.8,
        r"^\W{0,3}(?:(?:no|nope|close|almost)\W{1,3})?actually\b",
    ),
    _cue(
        "value-contrast",
        "correction",
        1.2,
        r"[$¥€£]?\d[\w.,:%+-]{0,20}\s{0,3}[,，]?\s{0,3}(?:not|instead\s{1,3}of|rather\s{1,3}than|而不是|"
        r"不是)\s{0,3}[$¥€£]?\d",
    ),
    _cue(
        "copula-not",
        "correction",
        1.2,
        r"(?:\b(?:is|are|was|were)|(?<!\blet)'s)\s{1,3}[^\s,，]{1,30}(?:\s{1,3}[^\s,，]{1,20}){0,2}\s{0,3}[,，]\s{0,3}not\s{1,3}[\w/~.$'\"`@#]",
    ),
    _cue(
        "you-got-detail-wrong",
        "correction",
        0.6,
        r"\byou(?:'ve)?\s{1,3}(?:swapped|flipped|mixed\s{1,3}up|misspelled|misspelt|misread|miscounted|"
        r"miscalculated|"
        r"mistyped|typed|wrote|put|used|booked|set|forgot|double[- ]counted|counted|missed|left\s{1,3}out|"
        r"confused|switched|transposed|added|subtracted|assumed|guessed|thought|figured|rounded|got|listed|"
        r"entered|picked|gave|said|have|spelled|spelt|"
        r"tagged|edited|named|called|labeled|labelled|titled|dated|quoted|cited|scheduled|sent|linked|"
        r"pointed|copied|"
        r"referenced|updated|attached|uploaded|assigned|addressed|invited|charged|billed|translated|"
        r"converted)\b",
    ),
    # "you booked the wrong room", "wrong recipient": a defect with no right value is a rejection.
    _cue(
        "defect-without-fix",
        "correction",
        -0.6,
        r"\byou(?:'ve)?\s{1,3}[a-z]{2,15}(?:\s{1,3}(?:it|them|this|that|everyone))?(?:\s{1,3}(?:to|in|on|for|"
        r"into|from|with|at))?\s{1,3}"
        r"the\s{1,3}wrong\s{1,3}[\w-]{1,20}(?:\s{1,3}[\w-]{1,20})?\W{0,4}$|"
        r"^\W{0,3}wrong\s{1,3}[\w-]{1,20}(?:\s{1,3}[\w-]{1,20})?\W{0,4}$",
    ),
    _cue(
        "copula-value",
        "correction",
        0.6,
        r"(?:\b(?:is|are|was|were)|'s)\s{1,3}(?:in\s{1,3}|at\s{1,3}|on\s{1,3}|the\s{1,3})?(?:[$¥€£~/]?\d|[A-Z][\w.+-]{0,30}|~/|/[a-z]|`|['\"]\w)"
        r"|(?:\b(?:is|are|was|were)|'s)\s{1,3}(?:in\s{1,3}|at\s{1,3}|"
        r"on\s{1,3})?[a-z][\w]{0,20}[-_.:@/][\w.:/@-]{1,40}"
        r"|\b(?:lives|located|stored|is)\s{1,3}(?:in|at|under)\s{1,3}(?:[~./]|[\w.-]{1,30}/)",
        keep_case=True,
    ),
    # "the flight number is LH 903", "her last name is Nakamura": a named attribute stated
    # as a value (with a value-looking copula above, a correction).
    _cue(
        "attribute-is",
        "correction",
        0.6,
        r"\b(?:the|her|his|my|our|their|its|your)\s{1,3}"
        + _COPULA_SOON
        + r"(?:[\w'-]{1,20}\s{1,3}){0,2}"
        + _ATTRIBUTE_IS,
    ),
    # "it was released in 2019", "the API key goes in the header, not the query string".
    _cue(
        "stated-fact",
        "correction",
        1.0,
        r"\b(?:it|that|this|he|she|they)\s{1,3}(?:was|were)\s{1,3}(?:released|founded|born|built|published|"
        r"written|launched|"
        r"created|introduced|signed|invented|discovered|established)\s{1,3}(?:in|on)\s{1,3}\d"
        r"|\b(?:came\s{1,3}out|first\s{1,3}(?:appeared|shipped)|(?:was|were)\s{1,3}(?:released|published|"
        r"founded|launched|introduced|"
        r"written|born|signed))\s{1,3}(?:in|on)\s{1,3}\d"
        r"|\b(?:goes|go|belongs?|lives|sits|runs|starts|ends|comes|happens|points|maps|connects)\s{1,3}(?:in|"
        r"on|at|to|under|into|"
        r"from|before|after|with)\s{1,3}[^,，\n]{1,40}[,，]\s{0,3}not\s{1,3}\w"
        # "the API key goes in the X-Api-Key header": where a thing belongs.
        r"|\b(?:goes|go|belongs?)\s{1,3}(?:in|into|under)\s{1,3}the\s{1,3}[^,，\n]{1,30}?\s(?:header|field|"
        r"column|folder|section|tab|body|footer|table|file|directory|config|sheet|cell)\b"
        # "the sprint ends on Friday the 9th": when a named thing ends or starts.
        r"|\bthe\s{1,3}(?:sprint|deadline|trial|contract|lease|offer|promo|event|conference|course|semester|term|"
        r"quarter|meeting|call|workshop|webinar|survey|campaign|release|freeze|window|project|phase|beta|"
        r"subscription|license|licence|booking|registration|submission|application|enrollment|enrolment|"
        r"migration|rollout|cutover|offsite|onboarding|review|audit|exam)\s{1,3}(?:ends|starts|begins|closes|opens|"
        r"is\s{1,3}due|expires|finishes)"
        r"\s{1,3}on\s{1,3}(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|the\s{1,3}\d{1,2}(?:st|nd|rd|th)\b|\d)"
        # "it's Postgres 15 on that box, not 14": a stated figure against the one given.
        r"|^\W{0,3}(?:(?:no|nope|sorry|um|actually|well)\W{1,3})?(?:it's|it\s{1,3}is|that's|thats|"
        r"they're)\s{1,3}[^,.;!?\n]{0,30}\d[^,.;!?\n]{0,20},\s{0,3}not\s{1,3}(?:v|version\s{1,3})?\d"
        # "it returns a list, not a dict": what it gives or takes, against what was said.
        r"|\b(?:returns|takes|expects|accepts|outputs|yields|raises|throws|emits|prints|"
        r"produces)\s{1,3}[^,，\n]{1,40}[,，]\s{0,3}not\s{1,3}\w",
    ),
    # "thanks, but Jakarta is UTC+7": after an acknowledgement, a stated fact.
    _cue(
        "but-fact",
        "correction",
        0.6,
        r"\b[Bb]ut\s{1,3}(?:[A-Z][\w.+-]{0,30}|the\s{1,3}[a-z]{1,20}|it|it's|its)\s{1,3}(?:is\s{1,3}|"
        r"was\s{1,3}|are\s{1,3})?"
        r"(?:actually\s{1,3})?(?:[$¥€£~/]?\d|[A-Z])",
        keep_case=True,
    ),
    _cue(
        "wrong-detail",
        "correction",
        0.6,
        r"\bwrong\s{1,3}(?:port|number|date|day|time|name|file|path|value|year|month|amount|total|id|version|"
        r"branch|email|address|url|link|room|figure|price|count|timezone|time\s{1,3}zone|unit|column|table|"
        r"key|"
        r"sum|spelling|city|country|person|recipient|account|currency|format|directory|folder)\b",
    ),
    _cue(
        "change-notice",
        "correction",
        0.6,
        r"\b(?:we|they|it|the\s{1,3}\w{1,20}|has\s{1,3}been|have\s{1,3}been|was|were|got)\s{1,3}(?:renamed|"
        r"moved|rescheduled|"
        r"pushed\s{1,3}back|bumped|retired|relocated|rebranded)\b",
    ),
    _cue(
        "named-value",
        "correction",
        1.0,
        r"\b(?:is|are|was|'s)\s{1,3}(?:actually\s{1,3})?(?:spelled|spelt|called|named|pronounced|"
        r"located\s{1,3}in)\s"
        r"|(?<!\bam\s{1,3})(?<!\bwhat\s{1,3})\bi\s{1,3}meant\b|"
        r"\bi\s{1,3}said\s{1,3}\S{1,30}\s{0,3}[,]?\s{0,3}not\b",
    ),
    # "you mean `user_id`, there's no `uid` column": the user names what the agent meant
    # (not "what do you mean", not a question).
    _cue(
        "you-mean-value",
        "correction",
        1.2,
        r"(?<!\b(?:do|did|does|what)\s{1,3})\byou\s{1,3}(?:mean|meant)\s{1,3}(?!(?:it|that|this|what|by|to|"
        r"like|the\s{1,3}same)\b)"
        r"(?![^?\n]{0,60}\?)[\w`'\"@#$./~-]",
    ),
    # "make sure the dates are in ISO format": a copula inside a requirement states no fix.
    _cue(
        "required-state-not-value",
        "correction",
        -1.0,
        r"\b(?:make\s{1,3}sure|ensure|be\s{1,3}sure|check\s{1,3}that|"
        r"verify\s{1,3}that)\b[^.;!?\n]{0,40}?(?:\b(?:is|are|was|were)\b|'s)",
    ),
    # "the year is wrong, it's 2023": a detail rejected and its value given.
    _cue(
        "wrong-then-value",
        "correction",
        1.0,
        r"\b(?:is|are|was|were|'s)\s{1,3}(?:wrong|incorrect|off|outdated)\s{0,3}[,;:—–-]{1,2}\s{0,3}(?:it's|"
        r"it\s{1,3}is|its|it\s{1,3}was|"
        r"they're|they\s{1,3}are|should\s{1,3}be|the\s{1,3}right\s{1,3}one\s{1,3}is|"
        r"the\s{1,3}correct\s{1,3}one\s{1,3}is)\s{1,3}\S",
    ),
    # "the deadline moved to the 21st": the new value after a change.
    _cue(
        "moved-to-value",
        "correction",
        0.6,
        # Said of "the …" (the thing in the answer), not of "my standup".
        r"\bthe\s{1,3}[\w-]{1,20}(?:\s{1,3}[\w-]{1,20})?\s{1,3}(?:got\s{1,3}|was\s{1,3}|"
        r"has\s{1,3}been\s{1,3}|has\s{1,3})?"
        r"(?:moved|changed|shifted|pushed|bumped|rescheduled|renamed|switched)\s{1,3}(?:back\s{1,3}|"
        r"up\s{1,3}|over\s{1,3})?to\s{1,3}(?:the\s{1,3})?"
        r"(?:\d|mon|tue|wed|thu|fri|sat|sun|next|noon|midnight|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|"
        r"dec)",
    ),
    # "it was written by Ines Duarte": the right author, maker or owner stated.
    _cue(
        "made-by-name",
        "correction",
        0.6,
        r"\b(?:was|were|is|are)\s{1,3}(?:actually\s{1,3})?(?:written|authored|created|made|built|designed|"
        r"painted|composed|directed|"
        r"developed|maintained|published|founded|signed|owned|run|invented|"
        r"discovered)\s{1,3}by\s{1,3}(?:[Dd]r\.?\s{1,3})?[A-Z@`]",
        keep_case=True,
    ),
    _cue(
        "fix-marker",
        "correction",
        0.6,
        r"\b(?:small|tiny|quick|minor|one)\s{1,3}(?:fix|correction|nit|thing|detail)\b|\btypo\b|"
        r"\bcorrection\s{0,2}:",
    ),
    # "deadline 搞错了 it's due on Friday": the Chinese rejection, then the right value in English.
    _cue(
        "cn-wrong-then-stated",
        "correction",
        1.2,
        r"(?:搞错了|弄错了|写错了|记错了|错了|不对)\W{0,3}(?:it's|it\s{1,3}is|it\s{1,3}should\s{1,3}be|"
        r"should\s{1,3}be)\s",
    ),
    # "it's Nakamura with a u", "Katz with a z": a name's spelling fixed.
    _cue(
        "spelled-with",
        "correction",
        1.2,
        r"\b(?:[Ii]t's|[Ii]t\s{1,3}is|[Ii]ts|[Tt]hat's|[Ii]t\s{1,3}should\s{1,3}be)\s{1,3}[A-Z][\w'-]{1,30}\s{1,3}with\s{1,3}"
        r"(?:an?|one|two|double|a\s{1,3}capital)\s{1,3}[A-Za-z]\b",
        keep_case=True,
    ),
    _cue(
        "rejection-start",
        "correction",
        0.5,
        r"^\W{0,3}(?:no|nope|nah|wrong|incorrect|not\s{1,3}quite|close|almost)\b"
        r"(?!\s{1,3}(?:more|less|fewer|longer|later|earlier|bigger|larger|smaller)\b)",
    ),
    _cue(
        "cn-should-be",
        "correction",
        1.2,
        r"应该是|应是|应为|应该为|应该叫|应该在|其实是|实际上是|正确的是|正确答案是|准确地?说是|应该系|其实系",
    ),
    _cue(
        "cn-not-but",
        "correction",
        1.2,
        r"不是.{1,20}?[，,]\s{0,2}(?:而)?是|(?:不对|错了|不是这样|搞错了)[，,。\s]{1,3}[^，。？！,.?!]{0,8}?(?:应该)?(?:是|叫|在)"
        r"(?!不是)|(?:不对|错了)[，,。\s]{1,3}[^，。？！,.?!]{0,6}?姓|才对|"
        r"我(?:说|指|要)的是|(?:名字|文件名|名称|分支|表|库|函数|变量|字段|项目|仓库|目录|路径)(?:名)?(?:叫|是)\s{0,2}[A-Za-z0-9\u4e00-\u9fff]"
        # "错了，Q2 revenue 是 3.6M", "不是 Node 16，我们线上是 Node 18", "branch name 是 hotfix/x":
        # the right value stated after the rejection, or an English attribute given in Chinese.
        r"|(?:(?:不对|错了)[，,。\s]{1,3}|不是[^，。？！,?!]{1,20}?[，,])\s{0,2}[^，。？！,.?!]{0,20}?是\s{0,2}(?=[$¥€£]?\d|[A-Za-z])"
        r"|\b(?:name|branch|port|host|path|version|id|key|url|email|table|column|field|title|revenue|total|"
        r"deadline|date)\s{0,2}(?:是|叫|应该是)\s{0,2}(?=[A-Za-z0-9`./])",
    ),
    _cue(
        "cn-value-contrast",
        "correction",
        1.2,
        r"(?:是|叫|为|在|姓)\s{0,2}[^，,。不]{1,24}[，,]?\s{0,2}(?:不是|而不是|不在|不叫|不姓|not\b)",
    ),
    # "文件在 src/utils 下面": where it lives, as a path.
    _cue(
        "cn-location",
        "correction",
        0.6,
        r"(?:文件|代码|配置|脚本|目录|模块|函数|表|数据|日志|图片)(?:是|都)?在\s{0,2}[\w./~-]{2,60}\s{0,2}(?:下面|下|里面|里|中|目录)?",
    ),
    # "新建一个分支叫 feature/login": the name is part of the task, not a fix.
    _cue(
        "cn-name-in-command",
        "correction",
        -1.2,
        r"^\W{0,3}(?:请|帮我|麻烦)?\s{0,2}(?:新建|创建|建|开|起|新开|拉|加)(?:一个|个|一条|条|一张|张)?[^，。？！,.?!]{0,10}?(?:叫|名为|命名为)",
    ),
    # "端口是 9200", "截止日期是 6 月 30 日": a named attribute stated as a value.
    _cue(
        "cn-attribute-is",
        "correction",
        0.6,
        r"(?:端口|日期|时间|金额|地址|邮箱|电话|手机号|版本|密码|价格|总价|总数|总额|数量|期限|编号|房间|会议室|航班|车次|时区|域名|主机|账号|"
        r"用户名|邮编|单号|订单号|截止时间|截止日期|分支|表名|库名|文件名|目录|路径|超时|上限|下限|阈值|会议|会|办公室|"
        r"人数|个数|次数|条数|页数|行数|字数|数目|大小|长度|宽度|高度|重量|温度|比例|年份|月份)(?:号)?"
        r"\s{0,2}(?:是|为|改成|改为|改到|应为|在)\s{0,2}(?:[$¥€£~/]?\d|[A-Za-z]|周|星期|下午|上午|晚上|早上)"
        # "deadline 是 8 月 3 号", "她的 email 是 …".
        r"|\b(?:deadline|email|port|url|id|ip)\s{0,2}(?:是|为)\s{0,2}(?:[$¥€£~/]?\d|[A-Za-z]|周|星期|下午|上午|晚上|早上)",
    ),
    _cue(
        "cn-wrote-wrong",
        "correction",
        0.6,
        r"(?:写|弄|搞|记|算|打|填|订|改|拼|选|切|设|标|看|抄|输)错了?|不对[，,]|不对$|"
        r"你(?:把)?.{0,12}?(?:写|打|订|算|切|改|记|填|弄|设|拼|放|选|用|标|抄)(?:成|到|错|了两次|重复了|反了)|"
        r"你.{0,12}?(?:漏|少算|多算|看错|搞混|弄混|记混)",
    ),
    # "你写成周三了", "你打成 2023 了": the wrong value the agent wrote, with the right one beside it.
    _cue(
        "cn-wrote-as",
        "correction",
        0.6,
        r"(?:写|打|拼|记|算|填|标|说|翻译|译)成(?:了)?\s{0,2}[^，。？！,.?!\s]",
    ),
    _cue(
        "cn-copula-value",
        "correction",
        0.6,
        r"(?:是|叫|为|在|有)\s{0,2}(?:[$¥€£~/]?\d|[A-Za-z][\w.@+-]{0,40}|[~./][\w/.-]{1,60}|"
        r"[早晚上下中凌今明昨午]{1,3}[零一二三四五六七八九十两\d]|(?:周|星期|礼拜)[一二三四五六日天末])"
        # "客户叫陈思远": a name stated as the right one.
        r"|(?:叫|姓|名叫)\s{0,2}[\u4e00-\u9fff]{1,4}(?=[，,。；;\s]|$)",
    ),
    # ===== constraint ==========================================================
    _cue(
        "requirement-modal",
        "constraint",
        1.0,
        r"\bmake\s{1,3}sure\b|\bensure\b|\bmust\b|\bneeds?\s{1,3}to\b|\bhas\s{1,3}to\b|\bhave\s{1,3}to\b"
        r"|\bshould\s{1,3}(?:also|still|always|only|never|not)\b|\balso\s{1,3}(?:needs?|has|have|should|"
        r"must)\b"
        r"|\bremember\s{1,3}to\b|\bdon't\s{1,3}forget\s{1,3}to\b|\bbe\s{1,3}sure\s{1,3}to\b"
        # "it should handle null values too": what the work must also do.
        r"|\b(?:it|this|that|they|the\s{1,3}\w{1,20})\s{1,3}should\s{1,3}(?:handle|support|accept|work|"
        r"include|cover|respect|"
        r"ignore|skip|validate|log|retry|fall\s{1,3}back|be\s{1,3}able)\b",
    ),
    _cue(
        "also-add",
        "constraint",
        1.0,
        r"(?:^|[,;，；]\s{0,3}|\band\s{1,3}|\bbut\s{1,3}|\bnow\s{1,3})(?:please\s{1,3})?also\b"
        r"|\balso\s{1,3}(?:handle|add|include|make|keep|support|log|check|cover|test|validate|sort|remove|"
        r"drop|strip|"
        r"print|show|send|write|update|ignore|skip|exclude|return|accept|allow|respect|consider|cc|copy|"
        r"mention|"
        r"list|mark|highlight|round|convert|escape|retry|cache|document|translate)\b",
    ),
    _cue(
        "scope-limit",
        "constraint",
        1.0,
        r"\b(?:limit|restrict|cap|scope|narrow)\s{1,3}(?:it|this|that|them|the\s{1,3}\w{1,20}|results?|"
        r"output)?\s{0,3}to\b"
        r"|\bwithout\s{1,3}(?:touching|changing|modifying|breaking|adding|removing|deleting|affecting|"
        r"altering|"
        r"exceeding|dropping|losing|any|using|relying|needing|requiring|internet|network|root|sudo|admin|"
        r"external)\b"
        r"|\bstay\s{1,3}(?:within|under|below|inside)\b|\bas\s{1,3}long\s{1,3}as\b|\bprovided\s{1,3}that\b"
        r"|(?<![/\w])except\s{1,3}(?:for|when|if|where|on|in|the|any|weekends?)\b|\bexcluding\b|"
        r"\bbut\s{1,3}not\b"
        r"|\b(?:exclude|ignore|skip|omit|leave\s{1,3}out|filter\s{1,3}out)\s{1,3}(?:anything|everything|all|"
        r"any|"
        r"the\s{1,3}\w{1,20}\s{1,3}(?:in|from|under|that|where|with)|rows|files|entries|items|records|"
        r"lines)\b"
        r"|\bmake\s{1,3}(?:it|the\s{1,3}\w{1,20}|them|this|that)\s{1,3}(?:a\s{1,3}bit\s{1,3}|slightly\s{1,3}|"
        r"much\s{1,3}|"
        r"a\s{1,3}little\s{1,3})?(?:shorter|longer|smaller|bigger|larger|faster|simpler|clearer|more|less|"
        r"bold|"
        r"formal|casual|friendlier|politer|concise|brief|readable|configurable|optional|async|thread-safe|"
        r"idempotent|responsive|"
        r"mobile[- ]friendly|accessible|reusable|testable|generic|portable|deterministic|stateless|pure|"
        r"case-insensitive|"
        r"cross-platform|backwards?[- ]compatible|resumable|retryable|non-blocking|lazy|streaming|"
        r"paginated)\b",
    ),
    _cue(
        "keep-limit",
        "constraint",
        1.0,
        r"\bkeep\s{1,3}(?:it|them|the|everything|all|each|every|this|that|things?|my|our|its|"
        r"their)\b(?!\s{1,3}(?:using|with)\b)"
        r"|\bonly\s{1,3}(?:touch|change|modify|edit|use|include|keep|show|return|process|handle|run|update|"
        r"the|for|in|on|files?|when|if|count|list|consider|look|apply|affect)\b|^\W{0,3}only\b"
        r"|\b(?:but|and)\s{1,3}(?:just|only)\b|\bno\s{1,3}[^,.;!?\n]{1,40}?\s(?:though|please|pls|either)\b"
        r"|\bleave\s{1,3}[^,.;!?\n]{1,40}?\s(?:alone|as\s{1,3}is|untouched|unchanged|intact|in\s{1,3}place)\b"
        # "keep backward compat", "be careful not to overwrite existing files".
        r"|\bkeep\s{1,3}(?:backwards?[- ]compat\w{0,8}|compat\w{0,8}|support\s{1,3}for|parity)\b"
        r"|\b(?:be\s{1,3}careful|take\s{1,3}care)\s{1,3}(?:not\s{1,3}to|to\s{1,3}not|with|about)\b",
    ),
    _cue(
        "numeric-limit",
        "constraint",
        0.8,
        r"\b(?:under|below|at\s{1,3}most|no\s{1,3}more\s{1,3}than|less\s{1,3}than|fewer\s{1,3}than|"
        r"shorter\s{1,3}than|within|up\s{1,3}to|max(?:imum)?|limit(?:ed)?\s{1,3}to|at\s{1,3}least)"
        r"\s{1,3}(?:a\s{1,3})?(?:\d|one|two|three|five|ten|minute|second|hour|page|line|word)",
    ),
    _cue(
        "dont-touch",
        "constraint",
        1.0,
        r"\b(?:don't|do\s{1,3}not|dont|never|no\s{1,3}need\s{1,3}to)\s{1,3}(?:push|touch|change|modify|edit|"
        r"delete|remove|rename|commit|include|add(?!\s{1,3}up)|break|send|email|mention|overwrite|reformat|"
        r"exceed|go\s{1,3}over|"
        r"run|deploy|schedule|share|cc|ping|call|book|post|publish|expose|log|print|store|cache|hardcode|"
        r"hard-code|"
        r"leak|drop|truncate|force[- ]push|restart|reboot|shut\s{1,3}down|merge|upgrade|downgrade)\b"
        r"|\bavoid\s{1,3}(?:any|all|anything|every|the|slots?|times?|days?|weekends?|meetings?|mornings?|"
        r"afternoons?|evenings?|calls?|overlap|breaking|changing|touching|" + _TIMES_TO_AVOID + r")\b",
    ),
    _cue(
        "but-imperative",
        "constraint",
        0.6,
        r"\bbut\s{1,3}(?:address|add|make|keep|use|include|drop|remove|change|put|send|limit|cap|sort|skip|"
        r"exclude|format|write|split|in|with|without|leave|don't|dont|do\s{1,3}not|no|handle|respect|stay|"
        r"avoid|ignore|mark|show|hide|round|group|filter)\b",
    ),
    # "looks right, but run it on a copy first", "works for me, just don't run it at noon":
    # after a clause, a requirement in the imperative keeps the work and adds to it.
    _cue(
        "clause-but-imperative",
        "constraint",
        1.0,
        r"[,，;]\s{0,3}(?:but|just|only)\s{1,3}(?:please\s{1,3}|also\s{1,3})?(?:make\s{1,3}sure|don't|"
        r"do\s{1,3}not|dont|never|"
        r"avoid|keep|leave|add|run|include|exclude|skip|limit|cap|stick|stay|test|check|double-check|verify|"
        r"remove|drop|"
        r"strip|mask|hide|put|move|send|cc|loop\s{1,3}in|wait|ask|confirm|mention|note|flag|label|mark|round|"
        r"sort|"
        r"group|split|format|write|translate|rename|respect|handle|log|print|show|return|validate|escape|"
        r"back\s{1,3}up|"
        r"schedule|double|bump|lower|raise|shorten|trim|cut|tone\s{1,3}down|make\s{1,3}(?:it|them|this|that|"
        r"the|all|every|each)|"
        # "行，but without 新的 dependencies".
        r"without|with\s{1,3}(?:no|zero|only))\b",
    ),
    _cue(
        "ack-but",
        "constraint",
        0.6,
        r"^\W{0,3}(?:ok(?:ay)?|fine|good|great|sure|yes|yep|yeah|right\s{1,3}idea|looks\s{1,3}good|lgtm|nice|"
        r"cool|"
        r"keep\s{1,3}going|same\s{1,3}\w{1,20}|that\s{1,3}works|close\s{1,3}enough)\b.{0,30}?\b(?:but|and|"
        r"also)\b",
    ),
    _cue(
        "and-also-start",
        "constraint",
        1.0,
        r"^\W{0,3}(?:(?:ok(?:ay)?|yes|yep|yeah|sure|fine|good|great|cool|nice|perfect|looks\s{1,3}good|lgtm|"
        r"right)"
        r"\W{1,3})?(?:and|but|also|plus|oh\s{1,3}and)\s{1,3}(?:please\s{1,3})?(?!then\b|thanks?\b|"
        r"thank\b)(?![^?\n]{0,80}\?)[a-z]",
    ),
    # "no meetings before 10am": a scope, not a rejection with a value.
    _cue(
        "free-window-not-value",
        "correction",
        -1.0,
        r"^\W{0,3}(?:and\s{1,3}|but\s{1,3}|also\s{1,3})?(?:no|nothing|"
        r"none)\s{1,3}(?:[\w-]{2,20}\s{1,3})?(?:(?:before|after|during|between|past|"
        r"until|outside|later\s{1,3}than|earlier\s{1,3}than)\s{1,3}[\w$€£¥]|on\s{1,3}(?:the\s{1,3})?"
        + _TIMES_TO_AVOID
        + r"\b)",
    ),
    # "no external libs", "just the top 10": a scope stated without a verb.
    _cue(
        "bare-scope",
        "constraint",
        1.0,
        r"^\W{0,3}(?:and\s{1,3}|but\s{1,3}|also\s{1,3}|oh\s{1,3}and\s{1,3})?(?:no|zero)\s{1,3}(?:external|"
        r"extra|new|additional|third[- ]party)\s{1,3}"
        r"(?:libs?|libraries|dependencies|deps|packages|modules|tools|services|calls|requests|imports)\b"
        r"|^\W{0,3}(?:just|only)\s{1,3}(?:the\s{1,3})?(?:top|first|last|latest|bottom|newest|"
        r"oldest)\s{1,3}(?:\d{1,4}|one|two|three|five|ten|few)\b"
        # "no meetings before 10am", "nothing after 4pm": a window kept free.
        r"|^\W{0,3}(?:and\s{1,3}|but\s{1,3}|also\s{1,3})?(?:no|nothing|"
        r"none)\s{1,3}(?:[\w-]{2,20}\s{1,3})?(?:(?:before|after|during|between|past|"
        r"until|outside|later\s{1,3}than|earlier\s{1,3}than)\s{1,3}[\w$€£¥]|on\s{1,3}(?:the\s{1,3})?"
        + _TIMES_TO_AVOID
        + r"\b)"
        # "no jargon, it's for execs": wording to leave out.
        r"|^\W{0,3}(?:and\s{1,3}|but\s{1,3}|also\s{1,3})?(?:no|zero)\s{1,3}(?:jargon|emojis?|acronyms|slang|"
        r"bullet\s{1,3}points|bullets|markdown|"
        r"headers|code\s{1,3}blocks|exclamation\s{1,3}marks|swearing|marketing\s{1,3}speak|buzzwords|fluff|"
        r"filler|hedging|passive\s{1,3}voice|"
        r"ads|tracking|cookies|images|pictures|tables)\b",
    ),
    # "good start. sort the output by created_at too": after the first sentence, one more
    # thing to do on the same work ("too" / "as well" mark the addition).
    _cue(
        "imperative-too",
        "constraint",
        1.0,
        r"(?:^|[.!;,，。]\s{0,3})\W{0,3}(?:please\s{1,3}|now\s{1,3}|and\s{1,3})?"
        + _INSTRUCTION_VERBS
        + r"\b[^.;!?\n]{1,60}?\s(?:too|as\s{1,3}well)\b(?!\s{1,3}(?:much|many|long|short|slow|fast|big|small|"
        r"early|late|far)\b)",
    ),
    _cue("same-but", "constraint", 0.6, r"\b(?:same|keep|keeping|as\s{1,3}is)\b.{0,40}?\bbut\b"),
    _cue(
        "cn-but-must",
        "constraint",
        1.2,
        r"(?:但是|但|不过|可是|只是)\s{0,2}(?:也|还|都)?\s{0,2}(?:要|得|需要|必须|务必|记得|只|别|不要|不能|"
        r"make\s{1,3}sure|also|加上|加个|补上|先|请)"
        # "但周五下午要空出来": the modal a few words later.
        r"|(?:但是|但|不过|可是|只是)\s{0,2}[^，。！？,.!?]{1,20}?(?<![想不我你他她])(?:要|需要|必须|务必|记得|别|不要|不能)",
    ),
    _cue(
        "cn-also",
        "constraint",
        1.0,
        r"还(?:得|要|需要)(?!.{0,6}[吗呢？?])|另外|此外|顺便(?!.{0,3}(?:帮|请|麻烦))(?:也)?|同时(?:也)?要|并且要|而且要|也要|都要(?!.{0,3}吗)",
    ),
    _cue(
        "cn-must",
        "constraint",
        1.0,
        r"必须|务必|确保|一定要|记得|别忘了|不要忘了"
        # "输出要按时间排序", "函数要有类型注解": what the work must have.
        r"|(?<![我你他她])(?:要|需要)(?:按|有|带上?|支持|兼容|包含|保留|保持|限制在|控制在|符合|满足|遵循|遵守|加上)",
    ),
    _cue(
        "cn-only-limit",
        "constraint",
        1.0,
        r"只(?:改|动|处理|保留|要|看|查|算|统计|包括|包含|发|在|针对|需要|修改|影响|寄|给|回复|抄送|通知|显示|输出|导出|列出|"
        r"选|取|读|跑|测|部署|推|翻译|约|订|排|留|用于)|控制在|以内|之内|不超过|不要超过|"
        r"最多|至少|限制在|限定在|仅限|只限|限于|只允许|只能",
    ),
    _cue(
        "cn-dont-touch",
        "constraint",
        1.0,
        # Not "要不要加" (a question whether to).
        r"(?:(?<!要)不要|别|不能|不许|不准|勿)\s{0,2}(?:直接|随便|擅自|乱|再)?\s{0,2}(?:动|改|碰|删|提交|推送|推|修改|改动|影响|排|超过|加|包含|出现|覆盖|安排|约|放|"
        r"引入|push|commit|touch|delete|merge|change|hardcode|hard-code|log|print|expose|skip|bypass|override|"
        r"drop|rename|force)"
        # "不要用英文", "中文回复", "请用中文回答": the language or wording of the answer.
        r"|(?:不要|别|不能|不许)\s{0,2}(?:用|使用|出现|带|加)\s{0,2}"
        + _CN_WORDING
        + r"|(?:用|以)?\s{0,2}(?:中文|英文|英语|日文|日语|繁体|简体|粤语)\s{0,2}"
        r"(?:回复|回答|写|输出|显示|作答)",
    ),
    _cue(
        "cn-avoid-keep",
        "constraint",
        1.0,
        r"避开|避免|排除|保留|保持|沿用|除了|除外|不包括|尽量|兼容|支持(?!一下)",
    ),
    # "别把老接口删了", "不能连上三个夜班", "keep 原来的 API signature 不变": what must not happen, or
    # what must stay as it is.
    _cue(
        "cn-must-not-happen",
        "constraint",
        1.0,
        r"(?:别|不要|不能|不许|不准)\s{0,2}把[^，。？！,.?!]{1,12}?(?:删|改|动|覆盖|去掉|弄丢|清掉|关掉)"
        r"|不能\s{0,2}(?:连续|连上|同时|多于|少于|早于|晚于)|(?:\bkeep|保持|保留)\s{0,2}[^，。？！,.?!]{1,30}?不变",
    ),
    # "just rows from 2022 onwards", "only orders over $50": the subset to keep.
    _cue(
        "subset-only",
        "constraint",
        1.0,
        r"^\W{0,3}(?:just|only)\s{1,3}(?:the\s{1,3})?(?:rows|records|entries|files|items|lines|orders|users|"
        r"customers|emails|tickets|commits|results|transactions|invoices|events|logs|accounts)\s{1,3}"
        r"(?:from|since|after|before|with|where|that|older|newer|over|under|created|updated|in\s{1,3}the)\b",
    ),
    # "能不能别每次都重新编译": a request not to, phrased as a question.
    _cue("cn-could-you-not", "constraint", 1.0, r"(?:能不能|可不可以|能否|可否)\s{0,2}(?:别|不要)"),
    _cue("cn-ack-but", "constraint", 0.4, r"(?:但是|不过|可是|但)"),
    # Scope limits stated without a modal: "subject line under 60 chars", "only between 9 and 5",
    # "with no external dependencies", "exclude weekends", "preserve the original timestamps".
    _cue(
        "unit-limit",
        "constraint",
        1.0,
        r"\b(?:under|below|at\s{1,3}most|no\s{1,3}more\s{1,3}than|less\s{1,3}than|fewer\s{1,3}than|"
        r"max(?:imum)?|up\s{1,3}to|"
        r"within|at\s{1,3}least|min(?:imum)?)\s{1,3}(?:\d{1,6}|one|two|three|four|five|six|seven|eight|nine|"
        r"ten|twenty|fifty)"
        r"\s{0,3}(?:chars?|characters|words|lines|pages|slides|bullets?|bullet\s{1,3}points|items|sentences|"
        r"paragraphs|emojis?|"
        r"meetings?|calls?|mb|kb|gb|ms|seconds|secs?|minutes|mins?|hours?|rows|columns|files|requests|"
        r"retries|tokens|"
        r"points|steps|colou?rs|fonts|dependencies|deps|queries|attendees|people|options|"
        r"examples)\b(?!\s{0,3}now\b)",
    ),
    _cue(
        "scope-only",
        "constraint",
        1.0,
        r"(?:^|[,;:—–]\s{0,3}|\s[—–-]\s{1,3})\W{0,2}only\s{1,3}(?!if\s{1,3}you\s{1,3}want|because|just|"
        r"when\s{1,3}i)[\w$€£¥]"
        r"|\bonly\s{1,3}(?:between|after|before|within|during|from|weekdays?|business\s{1,3}hours|internal|"
        r"send|email|cc|"
        r"reply|ship|deploy|push|commit|merge|delete|remove|mention|quote|cite|pick|book|schedule|invite|"
        r"post|notify)\b"
        r"|\bwith\s{1,3}(?:no|zero)\s{1,3}(?:external|extra|new|additional|third[- ]party|dependencies|deps|"
        r"changes|downtime|breaking|network|internet|emojis?|jargon|markdown|bullets?|ads|tracking|cookies|"
        r"side\s{1,3}effects|"
        r"globals?)\b"
        r"|(?<![/\w])(?:exclude|omit)\s{1,3}(?!(?:it|this|that|them)\b)[\w$€£¥]"
        r"|\b(?:preserve|retain)\s{1,3}(?:the|all|any|existing|original|my|our|its|their|every|each|"
        r"whitespace|formatting|"
        r"order|indentation|comments|timestamps|case|line|history|metadata|permissions)\b",
    ),
    # "good draft, but anonymise the names": after any clause, "but" + a verb + its object.
    _cue(
        "but-verb-object",
        "constraint",
        1.0,
        r"[,，;]\s{0,3}but\s{1,3}(?:please\s{1,3}|also\s{1,3})?(?!(?:then|now|still|also|when|why|what|how|"
        r"where|after|before|for|"
        r"with|from|like|even|not|maybe|only|just|that|this|these|those|is|was|it's|its|all|in|on|at|of|to|"
        r"by|as|if|so|you|"
        r"your|i|we|they|he|she|my|our|there|here|the|a|an|some|no|nothing|every|each|it|which|who|sadly|"
        r"unfortunately|"
        r"honestly|seriously|somehow|again|yet|otherwise|instead|either|none|most|many|one|two|"
        r"three)\b)(?![a-z]{2,14}(?:ed|ing|s)\b)"
        r"[a-z]{3,14}\s{1,3}(?:the|all|any|each|every|them|this|that|my|our|those|these|their|its|it)\b",
    ),
    _cue(
        "mixed-but-must",
        "constraint",
        1.2,
        r"\bbut\s{0,2}(?:也|还|都)?\s{0,2}(?:要|得|需要|必须|务必|记得|只|别|不要|不能)"
        r"|(?:但是|但|不过|可是|只是)\s{0,2}(?:only|just|no|don't|dont|not|never|make\s{1,3}sure|please|pls)\b",
    ),
    # "also, unrelated: can you …": a new topic, not a requirement on the last answer.
    _cue(
        "unrelated-topic",
        "constraint",
        -1.5,
        r"\b(?:unrelated|different\s{1,3}topic|change\s{1,3}of\s{1,3}topic|side\s{1,3}note|"
        r"on\s{1,3}another\s{1,3}note|"
        r"separate\s{1,3}(?:thing|question|request))\b",
    ),
    # "new task:" starts something unrelated: not a requirement on the last answer.
    _cue("new-task", "constraint", -1.5, _NEW_TASK),
    _cue("new-task-negative", "negative", -1.0, _NEW_TASK),
    # ===== preference ==========================================================
    _cue(
        "use-instead",
        "preference",
        1.5,
        r"\b(?:use|using|try|trying|pick|choose|consider|go\s{1,3}with|make\s{1,3}(?:it|this|that|"
        r"them)\s{1,3}(?:a|an|into))\s{1,3}\S{1,40}"
        r"(?:\s{1,3}\S{1,20})?\s{1,3}(?:instead|rather)\b"
        r"|\binstead\s{1,3}of\b"
        r"|\b(?:use|using)\s{1,3}\S{1,40}\s{1,3}over\b",
    ),
    _cue(
        "use-start",
        "preference",
        1.2,
        r"(?:^|[,.;:!?，。；—]\s{0,3}|\b(?:no|nope|then|so)\W{1,3})\W{0,3}(?:please\s{1,3}|"
        r"just\s{1,3})?use\s{1,3}"
        r"(?!"
        + _DEMONSTRATIVE
        + r"|"
        + _LIMIT_WORDS
        + r")|^\W{0,3}(?:no|nope|nah|不对|不是)\W{1,3}用\s{0,2}(?!"
        + _CN_DEMONSTRATIVE
        + r")",
    ),
    _cue(
        "dont-with",
        "preference",
        0.4,
        r"\b(?:don't|do\s{1,3}not|dont|not)\b.{0,40}?\b(?:with|in|using|via)\s{1,3}[A-Za-z`]|不用(?:写|搞|弄|手写)",
    ),
    _cue(
        "use-generic",
        "preference",
        0.7,
        r"\b(?:use|using)\s{1,3}(?!" + _DEMONSTRATIVE + r"|" + _LIMIT_WORDS + r"|case|of\b)" + _TOOLISH,
    ),
    _cue(
        "switch-to",
        "preference",
        1.2,
        # Not the noun: "our move to k8s", "the switch to async".
        r"(?<!\b(?:our|the|a|their|your|my|his|her|this|that|big)\s{1,3})"
        r"\b(?:switch|switching|migrate|migrating|move|moving|port|porting)\s{1,3}(?:it\s{1,3}|this\s{1,3}|"
        r"that\s{1,3}|"
        r"everything\s{1,3}|back\s{1,3}|over\s{1,3})?to\b(?!\s{1,3}(?:the\s{1,3})?(?:next|main|step|branch))"
        # Not a place or a time: "move it to #ops", "move it to Friday".
        r"(?!\s{1,3}(?:[#/~.\d]|the\b|a\b|an\b|my\b|our\b|tomorrow|today|tonight|next\b|mon|tue|wed|thu|fri|"
        r"sat|sun|jan|feb|mar|apr|jun|jul|"
        r"aug|sep|oct|nov|dec))"
        r"|\bstick\s{1,3}(?:with|to)\b|\bgo\s{1,3}(?:with|for)\b|\bprefer\b|\bi'd\s{1,3}rather\b|"
        r"\bwould\s{1,3}rather\b"
        r"|\brather\s{1,3}you\b|\bopt\s{1,3}for\b|\bwhy\s{1,3}not\s{1,3}(?:use|just)\b"
        r"|\b(?:should|could)(?:'ve|\s{1,3}have)\s{1,3}(?:just\s{1,3})?used\b",
    ),
    _cue(
        "stop-using",
        "preference",
        1.2,
        r"\b(?:stop|quit)\s{1,3}(?:using|reaching\s{1,3}for|pulling\s{1,3}in|importing|relying\s{1,3}on|"
        r"defaulting\s{1,3}to)\b"
        r"|\b(?:don't|do\s{1,3}not|dont|never)\s{1,3}use\b|\bavoid\s{1,3}using\b"
        r"|\bditch\b|\bget\s{1,3}rid\s{1,3}of\b|\bno\s{1,3}more\s{1,3}(?!than\b|[#\d]|" + _PROBLEM_NOUN + r")"
        r"|\b(?:don't|do\s{1,3}not|dont)\s{1,3}(?:hand|give|"
        r"send)\s{1,3}me\s{1,3}(?:any\s{1,3}more\s{1,3})?[A-Z`]",
    ),
    _cue(
        "x-over-y",
        "preference",
        1.0,
        r"^\W{0,3}(?:prefer\s{1,3})?(?!(?:went|go|goes|going|gone|looked|look|looking|read|skimmed|ran|run|"
        r"came|come|moved|move|"
        r"fell|jumped|handed|hand|passed|pass|took|think|thought|talked|talk|get|got|glanced|glance|all|it|"
        r"i)\b)"
        r"[A-Za-z`][\w.`+#/-]{0,30}(?:\s{1,3}(?!(?:went|goes|go|is|was|are|were|came|comes|ran|runs|fell|"
        r"flew|jumped|moved|looked|took|got|all|it)\b)"
        r"[A-Za-z][\w.`+#/-]{0,20})?\s{1,3}(?:over|instead\s{1,3}of|"
        r"rather\s{1,3}than)\s{1,3}(?!(?:it|this|that|them|these|those|there|here|my|our|your|his|her|"
        r"and)\b)[\w.`+#/-]{1,30}"
        r"|\breplace\s{1,3}(?:the\s{1,3}|all\s{1,3})?\S{1,30}(?:\s{1,3}\S{1,20})?\s{1,3}with\b"
        r"|\bhow\s{1,3}about\s{1,3}(?:using|trying|switching|we\s{1,3}use)\b"
        r"|\b(?:let's|lets|we\s{1,3}should|you\s{1,3}should)\s{1,3}not\s{1,3}use\b|\bshouldn't\s{1,3}use\b"
        r"|\bavoid\s{1,3}(?:using\s{1,3})?(?!"
        + _TIMES_TO_AVOID
        + r"\b)[\w.`+#-]{1,30}(?:\s{1,3}[\w.`+#-]{1,20})?\W{0,3}(?:please|pls)?\W{0,3}$"
        r"|^\W{0,3}(?!(?:no|nope|nah|yes|yeah|yep|ok|okay|sure|sorry|hmm|um|uh|oh|well|so|but|and|good|fine|"
        r"close)\b)"
        r"[A-Za-z`][\w.`+#/-]{0,30}(?:(?:\s{1,3}[A-Za-z][\w.+#/-]{0,20})?\s{1,3}(?:please|pls|"
        r"plz))?\s{0,3}[,，]\s{0,3}not\s{1,3}"
        r"(?!(?:that|this|it|quite|really|yet|now|exactly|sure|so|too|very|bad|great|good)\b)[\w.`+#/-]{1,30}"
        r"(?:\s{1,3}[\w.`+#/-]{1,30})?(?:\W{0,3}$|\s{0,3}[,;，]|\s{1,3}for\b)"
        r"|(?<![\d\s])\s{0,2}(?:>|>>)\s{0,2}[A-Za-z`]"
        r"|\b(?:less|fewer|no)\s{1,3}[\w.`+#-]{1,30}[,;]?\s{1,3}more\s{1,3}[\w.`+#-]"
        r"|\b(?:is|are)\s{1,3}what\s{1,3}(?:we|i)\s{1,3}(?:use|prefer|want|go\s{1,3}with|"
        r"standardi[sz]ed\s{1,3}on)\b"
        r"|(?:直接|就)\s{0,2}(?:用\s{0,2})?[A-Za-z`][\w.`+#/-]{0,30}\s{0,2}(?:一下)?\s{0,2}(?:就行|就好|就可以|即可)",
    ),
    _cue(
        "skip-tool",
        "preference",
        0.6,
        r"\b(?:skip|drop|"
        r"lose)\s{1,3}(?:the\s{1,3})?[\w.+#`-]{1,30}(?:\s{1,3}[\w.+#-]{1,20})?\s{0,3}(?:[,;.!]|and\b|$)"
        r"|\bno\s{1,3}need\s{1,3}for\b",
    ),
    _cue(
        "tool-complaint",
        "preference",
        0.5,
        r"\b(?:is|are)\s{1,3}(?:way\s{1,3}|too\s{1,3}|so\s{1,3}|really\s{1,3}|just\s{1,3}|kinda\s{1,3})?"
        r"(?:overkill|flaky|too\s{1,3}slow|slow|clunky|bloated|deprecated|unreliable|outdated|ugly|"
        r"a\s{1,3}pain)\b"
        r"|\btakes\s{1,3}forever\b|\b(?:picked|chose|went\s{1,3}with)\b"
        # "it's deprecated", "os.path is painful", "wget keeps stalling": a complaint about a tool.
        r"|\b(?:is|are|it's|they're|its)\s{1,3}(?:way\s{1,3}|too\s{1,3}|so\s{1,3}|really\s{1,3}|just\s{1,3}|"
        r"kinda\s{1,3})?"
        r"(?:deprecated|painful|annoying|brittle|fragile|verbose|heavy|overcomplicated|error-prone|"
        r"a\s{1,3}nightmare|"
        r"cumbersome|awkward|legacy|abandoned|unmaintained|dead|unreadable|hard\s{1,3}to\s{1,3}(?:read|"
        r"maintain|debug)|banned|"
        r"forbidden|not\s{1,3}allowed|off-limits|a\s{1,3}mess)\b"
        r"|\bkeeps\s{1,3}(?:stalling|failing|crashing|hanging|breaking|dying|timing\s{1,3}out)\b",
    ),
    _cue(
        "better-tool",
        "preference",
        0.6,
        r"\bworks?\s{1,3}(?:way\s{1,3}|much\s{1,3}|a\s{1,3}lot\s{1,3}|far\s{1,3})?better\b"
        r"|\b(?:is|are)\s{1,3}(?:way\s{1,3}|much\s{1,3}|far\s{1,3}|a\s{1,3}lot\s{1,3})?(?:better|faster|"
        r"simpler|enough|plenty|easier|cheaper|"
        r"quicker|safer|lighter|more\s{1,3}(?:reliable|familiar|readable|standard|common|idiomatic))\b",
    ),
    _cue(
        "wrong-tool",
        "preference",
        1.2,
        r"\bwrong\s{1,3}(?:tool|library|lib|package|package\s{1,3}manager|framework|approach|method|language|"
        r"command|module|api|runtime|shell|editor|engine|database|db|lib|image|base\s{1,3}image)\b",
    ),
    _cue(
        "with-not",
        "preference",
        0.8,
        r"\b(?:with|using|in|via)\s{1,3}"
        + _TOOLISH
        + r".{0,30}?[,，]?\s{0,3}not\s{1,3}(?:plain\s{1,3}|raw\s{1,3})?[a-z`]",
    ),
    _cue(
        "do-it-in",
        "preference",
        0.8,
        r"\b(?:do|write|rewrite|implement|redo|build|vectori[sz]e|parse|handle|manage|format|lint|test|plot|"
        r"script|run|want|need|like)\s{1,3}(?:it|this|that|them|the\s{1,3}\w{1,20}|tests|deps|dependencies|"
        r"everything)"
        r"\s{1,3}(?:with|using|in|via)\s{1,3}(?!the\s{1,3}same)" + _TOOLISH,
    ),
    # "just run `git bisect`": a named command as the way to do it.
    _cue("just-run-command", "preference", 0.6, r"\bjust\s{1,3}(?:run|use|call|try|do)\s{1,3}`"),
    # "ask via Slack", "book these through Calendly": the channel or tool to go through.
    _cue(
        "via-tool",
        "preference",
        0.6,
        r"\b(?:[Vv]ia|[Tt]hrough)\s{1,3}(?:the\s{1,3}|a\s{1,3}|an\s{1,3})?[A-Z`][\w.+#-]{0,30}",
        keep_case=True,
    ),
    # "no, ask via Slack": a rejection that goes on with another way to do it.
    _cue(
        "no-then-verb",
        "preference",
        0.4,
        r"^\W{0,3}(?:no|nope|nah)\W{1,3}(?!(?:it|that|this|the|i|you|we|still|not|it's|that's|its|is|"
        r"was)\b)[a-z]{2,15}\s",
    ),
    # "pathlib please": a bare tool name asked for.
    _cue(
        "tool-please",
        "preference",
        0.6,
        r"^\W{0,3}(?!(?:yes|yeah|yep|ok|okay|more|no|thanks|thank|sure|help|stop|less|faster|again)\b)"
        r"[A-Za-z`][\w.`+#/-]{1,30}(?:\s{1,3}[a-z][\w.+#/-]{1,20})?\s{1,3}(?:please|pls|plz)\b",
    ),
    # "a bar chart would read better than the pie chart": one option judged against another.
    _cue(
        "would-be-better",
        "preference",
        1.2,
        r"\b(?:would|will|'d|might|could)\s{1,3}(?:read|look|work|be|fit|do|serve|scale|perform|run)\s{1,3}"
        r"(?:way\s{1,3}|much\s{1,3}|a\s{1,3}lot\s{1,3}|far\s{1,3})?better\s{1,3}than\b(?!\s{1,3}nothing)",
    ),
    # "swap the bash script for a Makefile target".
    _cue(
        "swap-for",
        "preference",
        1.2,
        r"\bswap\s{1,3}(?:out\s{1,3})?(?:the\s{1,3}|all\s{1,3}|our\s{1,3}|"
        r"my\s{1,3})?[\w.`+#-]{1,30}(?:\s{1,3}[\w.`+#-]{1,20}){0,2}"
        r"\s{1,3}(?:for|with)\b",
    ),
    _cue(
        "house-tool",
        "preference",
        1.2,
        r"\b[Ww]e(?:'re|\s{1,3}are)\s{1,3}an?\s{1,3}[A-Z][\w.+#-]{1,30}\s{1,3}(?:shop|house)\b"
        # "we're a kubectl apply shop" (not "a small shop").
        r"|\b[Ww]e(?:'re|\s{1,3}are)\s{1,3}an?\s{1,3}(?!(?:small|big|tiny|large|little|young|new|busy|lean|"
        r"remote|family|coffee|"
        r"one-person|two-person|design|dev|consulting|boutique|full|"
        r"open)\b)[a-z`][\w.+#`-]{1,30}(?:\s{1,3}[a-z][\w.+#-]{1,20})?"
        r"\s{1,3}(?:shop|house)\b",
        keep_case=True,
    ),
    # Habits: "we do trunk-based dev, no long-lived branches", "let's keep using conda",
    # "reach for playwright", "please default to British spelling", "we're off Teams".
    _cue(
        "habit-pref",
        "preference",
        1.2,
        r"\bwe\s{1,3}(?:always\s{1,3}|only\s{1,3})?(?:do|use|run|write|ship|deploy|"
        r"work\s{1,3}with)\s{1,3}[^,.;\n]{1,40}[,;]\s{0,3}"
        r"(?:no|not|never)\s{1,3}[a-z`]"
        r"|\b(?:keep|continue|stay)\s{1,3}(?:using|with|on)\s{1,3}(?!(?:it|this|that|the\s{1,3}same|track|"
        r"topic|task)\b)"
        r"|(?<!\b(?:stop|quit|don't|dont|never)\s{1,3})\breach\s{1,3}for\b"
        r"|(?<!\b(?:stop|quit|don't|dont|never)\s{1,3})\bdefault\s{1,3}to\b"
        r"|\b(?:we're|we\s{1,3}are|we've\s{1,3}moved|we\s{1,3}moved|we\s{1,3}switched|"
        r"we\s{1,3}migrated)\s{1,3}(?:off|away\s{1,3}from)\s{1,3}[A-Za-z`]"
        r"|\b(?:with|using|via|"
        r"in)\s{1,3}[\w.`+#/-]{1,30}(?:\s{1,3}[\w.`+#/-]{1,20})?\s{1,3}rather\s{1,3}than\b"
        r"|\b(?:from\s{1,3}now\s{1,3}on|going\s{1,3}forward|in\s{1,3}future|always)\W{1,3}(?:`[^`\n]{1,40}`|"
        r"[A-Z][\w.+#-]{1,30})\s{1,3}"
        r"(?:for|everywhere|only|please|pls)\b",
    ),
    # "let's do a dataclass, not a namedtuple", "we'll go with X, not Y": a choice against another.
    _cue(
        "lets-do-not",
        "preference",
        1.2,
        r"\b(?:let's|lets|let\s{1,3}us|we'll|we\s{1,3}will|i'd|i\s{1,3}would)\s{1,3}(?:just\s{1,3})?(?:do|"
        r"use|try|pick|take|go\s{1,3}with|"
        r"go\s{1,3}for|make\s{1,3}it)\s{1,3}[^,.;!?\n]{1,40}?[,，]?\s{0,3}\bnot\s{1,3}(?:a\s{1,3}|an\s{1,3}|"
        r"the\s{1,3})?[a-z`]",
    ),
    # "try polars for this", "try httpx here": a tool suggested for the job at hand.
    _cue(
        "try-tool",
        "preference",
        1.0,
        r"\btry\s{1,3}(?:using\s{1,3})?(?!(?:it|this|that|them|again|harder|once|twice|later|now|something|"
        r"anything|to|and|"
        r"the\s{1,3}same)\b)(?![a-z]{1,20}ing\b)[A-Za-z`][\w.+#`-]{1,30}\s{1,3}(?:for\s{1,3}(?:this|that|it|"
        r"these|those|the\s{1,3}\w{1,20})|"
        r"here|on\s{1,3}(?:this|that|it))\b",
    ),
    # "no, not mysql — mariadb", "not Jest, Vitest": the rejected tool, then the one to use.
    _cue(
        "not-y-but-x",
        "preference",
        1.0,
        r"^\W{0,3}(?:(?:no|nope|nah)\W{1,3})?not\s{1,3}(?!(?:now|yet|really|quite|sure|today|here|this|that|"
        r"it|again|me|you|exactly|"
        r"much|bad|great|good|so|too|at|even|only|just)\b)[A-Za-z`][\w.`+#/-]{0,30}\s{0,3}(?:[,;—–]|"
        r"\s-{1,2}\s)\s{0,3}"
        r"(?!(?:it|that|this|the|a|i|you|we|but|and|just|please|later|thanks|sorry|never|ever|"
        r"though)\b)[A-Za-z`][\w.`+#/-]{0,30}"
        r"\s{0,3}(?:[,;.!—–]|$)",
    ),
    # "zod, that's what the other services use": a tool named first, then the house habit.
    _cue(
        "tool-what-we-run",
        "preference",
        1.2,
        r"^\W{0,3}[A-Za-z`][\w.`+#/-]{0,30}(?:\s{1,3}[A-Za-z][\w.+#/-]{0,20})?\s{0,3}(?:[,，;]|"
        r"\s[—–-]{1,2})\s{0,3}"
        r"(?:that's|that\s{1,3}is|it's|it\s{1,3}is|thats)\s{1,3}what\s{1,3}" + _WHAT_WE_RUN,
    ),
    # "這裡用正規表示式就好": the tool, and "that is enough"; "不需要自己寫解析器": no hand-rolled one.
    # "shell 脚本就够了，没必要上 Python", "Docker Compose 就行，no need for k8s", "axios 没必要":
    # one tool is enough, the other unneeded; each half alone is weak.
    _cue(
        "cn-tool-enough",
        "preference",
        0.6,
        r"[A-Za-z`][\w.+#`-]{0,30}\s{0,2}(?:脚本\s{0,2})?(?:就够了|就够用了|就足够了|就行|就可以了|足够了)",
    ),
    _cue(
        "cn-tool-unneeded",
        "preference",
        0.6,
        r"没必要\s{0,2}(?:上|用|引入|装|搞)?\s{0,2}[A-Za-z`]|[A-Za-z`][\w.+#`-]{0,30}\s{0,2}没必要"
        r"|\bno\s{1,3}need\s{1,3}for\s{1,3}[A-Za-z`]",
    ),
    # "直接上 Playwright", "switch 到 Postgres", "交给 DeepL 吧", "一律转成 WebP": the tool to go to.
    _cue(
        "cn-go-to-tool",
        "preference",
        1.2,
        r"(?:直接|干脆)上\s{0,2}[A-Za-z`]|(?:\bswitch\s{0,2}|换|迁移?)到\s{0,2}[A-Za-z`]|"
        r"(?:交给|丢给|扔给|交由)\s{0,2}[A-Za-z`][\w.+#`-]{0,30}\s{0,2}(?:吧|去|来|处理|做|跑|搞)|"
        r"(?:一律|统一|都)(?:转成|转为|存成|导出成|换成)\s{0,2}[A-Za-z`]",
    ),
    # "send the reminders through Slack, not email": the channel, and the one it replaces.
    _cue(
        "via-not",
        "preference",
        1.2,
        r"\b(?:via|through)\s{1,3}(?:the\s{1,3})?[A-Za-z`][\w.+#-]{0,30}\s{0,3}[,，]\s{0,3}not\s{1,3}"
        r"(?:via\s{1,3}|through\s{1,3})?[A-Za-z`]",
    ),
    # "option 2 please", "pick the second approach": one of the options offered.
    _cue(
        "pick-option",
        "preference",
        1.2,
        r"^\W{0,3}(?:option|approach|variant|version|plan|choice)\s{1,3}(?:[a-d1-4]|one|two|three|four|"
        r"#\d)\b\W{0,3}"
        r"(?:please|pls|plz|it\s{1,3}is|then|for\s{1,3}sure|sounds\s{1,3}(?:good|right|best))?\W{0,3}$"
        r"|\b(?:go\s{1,3}with|pick|choose|take|prefer|use|let's\s{1,3}do|i'd\s{1,3}(?:go\s{1,3}with|pick|"
        r"take))\s{1,3}(?:the\s{1,3})?"
        r"(?:first|second|third|last|other|simpler|simplest|faster|fastest|shorter|cleaner|lighter)\s{1,3}"
        r"(?:option|approach|one|version|variant|way|solution|method|proposal)\b"
        r"|\b(?:go\s{1,3}with|pick|choose|take|prefer|let's\s{1,3}do)\s{1,3}(?:option|approach|variant|"
        r"plan)\s{1,3}(?:[a-d1-4]|one|two|three)\b",
    ),
    # "could you do it with awk instead", "write it in Go instead?".
    _cue(
        "with-x-instead",
        "preference",
        1.5,
        r"\b(?:with|in|via|using|"
        r"through)\s{1,3}[\w.`+#/-]{1,30}(?:\s{1,3}[\w.`+#/-]{1,20})?\s{1,3}instead\b(?!\s{1,3}of)",
    ),
    # "let's keep it in bash", "keep this in Python": the language or tool to stay with.
    _cue(
        "keep-it-in",
        "preference",
        1.2,
        r"\bkeep\s{1,3}(?:it|this|that|them|everything)\s{1,3}in\s{1,3}(?:plain\s{1,3}|pure\s{1,3}|"
        r"vanilla\s{1,3})?"
        r"(?!(?:one|a|an|the|sync|mind|place|memory|check|line|order|scope|range|english|utc|view|stock|"
        r"front|sight|touch|"
        r"draft|review|staging|prod|production|sequence|bounds|context|shape|there|here|case|"
        r"mind)\b)[A-Za-z`][\w.+#`-]{0,30}\W{0,3}$",
    ),
    # "Why are you using moment.js? date-fns is what we standardised on": a why-question, then
    # the replacement named (rule 1 of the spec: preference).
    _cue(
        "why-then-replacement",
        "preference",
        2.5,
        r"\bwhy\b[^?\n]{0,80}\?\s{0,3}(?:(?:just\s{1,3}|please\s{1,3})?use\s{1,3}[A-Za-z`]|"
        r"[^?\n]{0,60}?(?:\b(?:is|are)\s{1,3}what\s{1,3}"
        r"(?:we|the\s{1,3}team|everyone)\s{1,3}(?:use|uses|standardi[sz]ed\s{1,3}on|agreed\s{1,3}on|"
        r"settled\s{1,3}on|prefer)\b|\bwe\s{1,3}"
        r"(?:always\s{1,3})?(?:use|standardi[sz]ed\s{1,3}on|prefer|moved\s{1,3}to|switched\s{1,3}to)\b))",
    ),
    # "SQLAlchemy core is fine, skip the ORM": enough of one thing, and the other dropped.
    _cue(
        "fine-skip",
        "preference",
        0.6,
        r"\b(?:is|are)\s{1,3}(?:fine|good\s{1,3}enough|plenty)\W{1,3}(?:just\s{1,3})?(?:skip|drop|no|don't|"
        r"dont|forget|ditch|lose)\b",
    ),
    # "PostgreSQL 比 MySQL 好用，换过去吧".
    _cue(
        "cn-better-than",
        "preference",
        1.2,
        r"[A-Za-z`][\w.+#`-]{0,30}\s{0,2}比\s{0,2}[A-Za-z`][\w.+#`-]{0,30}\s{0,2}(?:更|还)?\s{0,2}(?:好用|好|快|稳|强|"
        r"方便|靠谱|简单|合适|顺手)",
    ),
    _cue(
        "habit-marker",
        "preference",
        0.6,
        r"\bfrom\s{1,3}now\s{1,3}on\b|\bgoing\s{1,3}forward\b|\bnext\s{1,3}time\b|"
        r"\bin\s{1,3}(?:the\s{1,3})?future\b"
        r"|\balways\b|\bin\s{1,3}this\s{1,3}(?:repo|project|codebase|team)\b|\bwe\s{1,3}(?:use|prefer|manage|"
        r"do)\b",
    ),
    _cue(
        "cn-use",
        "preference",
        1.2,
        r"(?<![不别])(?:改用|换成|换用|统一用|统一放|统一存|统一走|一律用|一律放|都用|还是用|就用|改成用|最好用|建议用|推荐用|请用|请使用|应该用|要用|得用|"
        r"以后用|以后都用|直接用|转用|改返|用返)\s{0,2}(?!" + _CN_DEMONSTRATIVE + r"|" + _CN_NOT_TOOL + r")",
    ),
    # "为啥要用 Redux，context 不就够了": the why-question names what to avoid, the rest the
    # replacement (rule 1 of the spec, as "why X? Y is what we use").
    _cue(
        "cn-why-then-enough",
        "preference",
        3.5,
        r"为(?:什么|啥)(?:要)?(?:用|上|引入)\s{0,2}[^？?。]{1,30}?[A-Za-z`][\w.+#`-]{0,30}\s{0,2}不就(?:够了|行了|可以了|好了)",
    ),
    # "我平时用 Mac", "同事都用 Vim": someone's own habit, told in passing.
    _cue(
        "cn-personal-habit",
        "preference",
        -1.5,
        r"我(?!们)(?:平时|平常|自己|家里|个人)(?:都|也|一直)?(?:用|使用)|"
        r"(?:同事|朋友|他们|她们|大家|别人|家里)(?:都|也|平时|一般|一直)(?:在)?(?:用|使用)",
    ),
    # "优先用标准库", "首选 Redis": the first choice.
    _cue("cn-first-choice", "preference", 1.2, r"优先(?:用|使用|考虑|选用?)|首选|尽量用"),
    _cue(
        "cn-use-tool",
        "preference",
        1.0,
        _CN_USE_BLOCK + r"用\s{0,2}(?:[A-Za-z`]|\S{1,20}?(?:吧|代替|替代|来做|来处理|来写|比较好|更好))"
        # "表格用飞书文档做": the tool, then the job done with it, at the end of a clause.
        r"|"
        + _CN_USE_BLOCK
        + r"用\s{0,2}(?!"
        + _CN_DEMONSTRATIVE
        + r")[\u4e00-\u9fff]{2,8}?(?:来)?(?:做|写|画|存|管理)"
        r"(?=\s{0,2}(?:[，,。！!；;]|$))",
    ),
    _cue(
        "cn-dont-use",
        "preference",
        1.2,
        r"(?:别|不要|别再|不要再|停止|不再|勿|少|唔好)\s{0,2}(?:用|使用)(?!\s{0,2}"
        + _CN_WORDING
        + r")|不用\s{0,2}[A-Za-z`]|弃用|换掉|别手写|不要手写|"
        r"别手动|不要手动",
    ),
    _cue("cn-switch", "preference", 1.0, r"换\s{0,2}(?:[A-Za-z`]|个|一个|成)|(?:换|切|迁|转)过去"),
    # A question about the agent's own choice of tool is confusion, not a request.
    _cue(
        "why-did-you-use",
        "preference",
        -3.0,
        r"\b(?:why\s{1,3}(?:did|do|would|are|were)\s{1,3}you|why'd\s{1,3}you|what\s{1,3}made\s{1,3}you|"
        r"how\s{1,3}come\s{1,3}you|why\s{1,3}(?:are|were|do|did|would)\s{1,3}we)\b|为(?:什么|啥)(?:要)?用|"
        # "why 要用 left join？": the English question word before a Chinese verb.
        r"\bwhy\s{0,3}(?:要|你要|你|还要|非要)\s{0,2}用|"
        r"\bwhy\s{1,3}(?:[\w'-]{1,20}\s{1,3}){1,3}(?:instead\s{1,3}of|rather\s{1,3}than)\b[^?\n]{0,40}\?|"
        r"\bwhy\s{1,3}(?:the|a|an|this|that)\s[^?\n.!]{1,40}\?",
    ),
    # ===== confusion ===========================================================
    _cue(
        "why-you",
        "confusion",
        1.2,
        r"\bwhy\s{1,3}(?:did|do|does|would|are|is|were|was|'d|has|have|on\s{1,3}earth|the\s{1,3}heck)"
        r"\s{1,3}(?:you|this|that|there|the)\b|\bwhat\s{1,3}(?:made|makes)\s{1,3}you\b|\bhow\s{1,3}come\b"
        r"|\bwhy\s{1,3}you\b|\bwhy\s{1,3}(?:not|the)\b|\bwhy'd\b|\bwhy\s{0,3}(?:要|把|你|这|那)"
        r"|\bwhy\s{1,3}(?:were|was|are|is|did|does|do)\s{1,3}\S[^?\n]{0,60}\?"
        r"|\bwhat(?:'s|\s{1,3}is)\s{1,3}the\s{1,3}(?:point|purpose|idea|reason|reasoning|rationale|logic|"
        r"thinking|motivation|benefit)"
        r"\s{1,3}(?:of|for|behind)\b",
    ),
    _cue("why", "confusion", 0.5, r"\bwhy\b"),
    # Questions about the answer itself: how it was reached, what it implies, where a figure
    # comes from, which of its settings is meant.
    _cue(
        "about-the-answer",
        "confusion",
        1.2,
        r"\b(?:how\s{1,3}(?:did|do|would|does)|how'd)\s{1,3}you\s{1,3}(?:get|arrive|come\s{1,3}up|calculate|"
        r"compute|figure|derive|"
        r"decide|pick|choose|end\s{1,3}up|know|work\s{1,3}out|count|find)\b"
        r"|\b(?:does|did|would|will)\s{1,3}(?:this|that|it)\s{1,3}mean\b"
        r"|\bwhere(?:'s|\s{1,3}is|\s{1,3}are|\s{1,3}does|\s{1,3}do)\s{1,3}(?:that|this|these|those|the|"
        r"it)\b[^?\n]{0,40}?"
        r"\b(?:coming\s{1,3}from|come\s{1,3}from|from)\b"
        r"|\b(?:which|what)\s{1,3}(?:\w{1,20}\s{1,3}){0,4}(?:is|are|was|were)\s{1,3}(?:that|this|these|"
        r"those)\b[^?\n]{0,40}\?"
        # "which 3 were skipped?", "which ones did it drop?": which of the things the answer counted.
        r"|(?:^|[.!?]\s{1,3})\W{0,3}which\s{1,3}(?:\d{1,4}|ones|two|three|four|five|of\s{1,3}(?:them|these|"
        r"those))\s{1,3}"
        r"(?:\w{1,20}\s{1,3})?(?:were|was|are|is|did|do|does|got|have|has|failed|changed)\b[^?\n]{0,40}\?"
        # "where is this value set?", "so what changed?".
        r"|\bwhere\s{1,3}(?:is|are|was|were|does|do|did)\s{1,3}(?:this|that|these|those|it)\b[^?\n]{0,40}\?"
        r"|^\W{0,3}(?:so|ok(?:ay)?|and|but|wait|sorry)?\W{0,3}what\s{1,3}(?:changed|happened|"
        r"was\s{1,3}the\s{1,3}(?:change|fix|problem|issue|bug))\s{0,3}\?"
        # "where did MAX_BATCH=500 come from?", "where does that number come from".
        r"|\bwhere\s{1,3}(?:did|does|do|'d)\s{1,3}[^?\n]{1,40}?\s(?:come|comes|coming)\s{1,3}from\b"
        r"|\bdifferences?\s{1,3}between\s{1,3}(?:the\s{1,3}two|these|those|them|your|the\s{1,3}(?:options|"
        r"versions|approaches|"
        r"methods|two))\b|\bdifference\b[^?\n]{0,60}\byou\b"
        r"|\b(?:is|was|are|were)\s{1,3}(?:that|this|it|these|those)\s{1,3}(?:\w{1,20}\s{1,3}){0,2}(?:from|"
        r"because\s{1,3}of|"
        r"caused\s{1,3}by|due\s{1,3}to|related\s{1,3}to|expected|normal|intended|supposed)\b[^?\n]{0,40}\?"
        r"|\bis\s{1,3}(?:that|this|it)(?:\s{1,3}\w{1,20})?\s{1,3}(?:right|correct|true|safe|necessary|needed|"
        r"intended|"
        r"expected|normal|ok|okay|going\s{1,3}to)\b[^?\n]{0,50}\?"
        r"|\bwhat\s{1,3}am\s{1,3}i\s{1,3}(?:looking\s{1,3}at|seeing|supposed)\b"
        r"|\bwhich\s{1,3}\w{1,20}\s{1,3}(?:are\s{1,3}we|should\s{1,3}(?:i|we)|do\s{1,3}i|is\s{1,3}(?:it|this|"
        r"that))\b[^?\n]{0,40}\?",
    ),
    # "what's going on with the second function?", "what's with the extra flag?", "and this does
    # what exactly?", "is the lock actually needed?", "how does the cache get invalidated?",
    # "what exactly does the wrapper do", "should I be worried about this warning?", "meaning?".
    _cue(
        "about-the-work",
        "confusion",
        1.2,
        r"\bwhat(?:'s|\s{1,3}is)\s{1,3}(?:going\s{1,3}on|up|happening)\s{1,3}(?:with|in|here|"
        r"there)\b[^?\n]{0,50}\?"
        r"|\bwhat(?:'s|\s{1,3}is)\s{1,3}(?:up\s{1,3})?with\s{1,3}(?:the|this|that|these|those|"
        r"all\s{1,3}(?:the|these))\b[^?\n]{0,50}\?"
        r"|\b(?:does|do|did|is|are)\s{1,3}what(?:\s{1,3}exactly)?\s{0,3}\?"
        r"|\b(?:is|are)\s{1,3}(?:the|this|that|these|"
        r"those)\s{1,3}(?:[\w-]{1,20}\s{1,3}){0,2}(?:actually\s{1,3}|really\s{1,3}|even\s{1,3}|still\s{1,3})?"
        r"(?:needed|necessary|required|used|safe|intended|expected|normal|supposed\s{1,3}to)\b[^?\n]{0,40}\?"
        r"|\bhow\s{1,3}(?:does|do|is|are|will|would|did)\s{1,3}the\s{1,3}[\w-]{1,20}\s{1,3}[^?\n]{1,40}\?"
        r"|\bwhat\s{1,3}(?:exactly\s{1,3})?(?:does|do|did)\s{1,3}[^.!?\n]{1,40}?\s(?:do|mean|change|"
        r"return)\W{0,3}$"
        r"|\bwhat\s{1,3}exactly\s{1,3}(?:does|do|did|is|are)\b[^?\n]{0,50}\?"
        r"|\b(?:do|should|must)\s{1,3}(?:i|we)\s{1,3}(?:need\s{1,3}to|have\s{1,3}to|be\s{1,3}(?:worried|"
        r"concerned)|worry|care|still|also|now)\b"
        r"[^?\n]{0,60}\?|^\W{0,3}(?:meaning|as\s{1,3}in|which\s{1,3}means)\s{0,3}\?",
    ),
    # Questions about the work itself: "does this handle the retry case?", "did you test it?",
    # "so the cache is per-user?", "what happens to the old records?", "which part handles
    # auth?", "where's the config loaded?", "any reason for the global?", "are you saying …?".
    _cue(
        "question-about-work",
        "confusion",
        1.0,
        r"^\W{0,3}(?:(?:so|and|but|wait|hang\s{1,3}on|hold\s{1,3}on|sorry|ok(?:ay)?|um|hmm|"
        r"also)\W{1,3}){0,2}(?:does|did|do|is|was|will|would|"
        r"should|has|have|are|were|isn't|wasn't|doesn't|didn't|won't|shouldn't)\s{1,3}(?:this|that|it|these|"
        r"those|the\s{1,3}(?:fix|change|"
        r"patch|script|code|new\s{1,3}\w{1,20}|function|query|migration|tests?|output|result|cache|config|"
        r"update|build|job)|your\s{1,3}\w{1,20})\b"
        r"[^?\n]{0,80}\?"
        r"|^\W{0,3}(?:so|wait|hang\s{1,3}on|hold\s{1,3}on)\W{1,3}[^?\n]{3,80}\?\W{0,3}$"
        r"|\bwhat\s{1,3}(?:would|will)\s{1,3}happen\s{1,3}(?:if|when)\s{1,3}(?:i|we|you|it|this|that|"
        r"the\s{1,3}(?:api|server|job|db|database|cache|"
        r"request|script|migration|service|queue|network|disk|file))\b[^?\n]{0,60}\?"
        r"|\bwhat\s{1,3}(?:happens|happened|will\s{1,3}happen)\s{1,3}to\s{1,3}(?:the|my|our|existing|old|"
        r"all\s{1,3}the)\b[^?\n]{0,60}\?"
        r"|\bwhat(?:'s|\s{1,3}is|\s{1,3}are)\s{1,3}the\s{1,3}(?:catch|downside|downsides|trade-?offs?|risk|"
        r"risks)\b"
        r"|\bwhich\s{1,3}(?:part|file|repo|branch|function|line|step|version|table|column|service|module|"
        r"method|class|endpoint|env|"
        r"environment|config|key|flag|option|query|commit)\b[^?\n]{0,50}\?"
        r"|\bwhere(?:'s|\s{1,3}is|\s{1,3}are|\s{1,3}does|\s{1,3}do)\s{1,3}(?:the|this|that|my|our|"
        r"your)\s{1,3}[\w-]{1,20}\s{1,3}(?:being\s{1,3})?"
        r"(?:loaded|set|defined|configured|called|used|stored|created|handled|read|written|initiali[sz]ed|"
        r"imported|declared)\b"
        r"|\b(?:any|is\s{1,3}there\s{1,3}a|was\s{1,3}there\s{1,3}a)\s{1,3}(?:particular\s{1,3}|"
        r"specific\s{1,3}|good\s{1,3})?reason\s{1,3}"
        r"(?:for|why|behind|you)\b|\bare\s{1,3}you\s{1,3}(?:saying|suggesting|telling\s{1,3}me|implying)\b"
        # "did you test it?", "have you run it?" (not "do you like jazz?": the agent's work, not the agent).
        r"|\b(?:did|have|has)\s{1,3}you\s{1,3}(?:actually\s{1,3}|even\s{1,3}|already\s{1,3})?(?:test|tested|"
        r"run|ran|check|checked|try|tried|"
        r"verify|verified|update|updated|change|changed|commit|committed|push|pushed|save|saved|deploy|"
        r"deployed|build|built|restart|"
        r"restarted|include|included|handle|handled|consider|considered|account|accounted|remove|removed|"
        r"delete|deleted|add|added|read|"
        r"look|looked)\b[^?\n]{0,60}\?",
    ),
    # The same in Chinese: "这样可以吗？", "这块逻辑是啥", "这个函数返回什么？", "会不会有问题？",
    # "需要重启吗？", "这是在哪改的？", "所以现在要怎么做？", "怎么理解？", "啥情况".
    _cue(
        "cn-question-about-work",
        "confusion",
        1.2,
        r"(?:这样|这么做|这么写|这样做|这样写|这么改|这样改)(?:可以|行|对|好|没问题|ok|OK)(?:吗|么|不)"
        r"|(?:这|那)[\u4e00-\u9fff]{0,8}?是(?:啥|什么)(?:意思|东西)?\W{0,3}$"
        r"|(?:这|那)[^，。？！,.?!]{0,10}?(?:返回|输出|代表|表示|负责|检查)(?:的)?(?:是)?(?:什么|啥)"
        r"|(?:需要|需不需要)[^，。？！,.?!]{1,12}(?:吗|么)?\s{0,2}[？?]"
        r"|(?:会不会|会)(?:有|影响|导致|造成|破坏|丢)[^，。？！,.?!]{0,12}(?:吗|么)?\s{0,2}[？?]"
        r"|在哪(?:里|儿)?(?:改|加|设|定义|配置|调用)的"
        r"|(?:现在|接下来|那|所以)(?:我)?(?:要|该|应该)?怎么(?:做|办|弄|处理|用)"
        r"|怎么理解|如何理解|(?:啥|什么)情况",
    ),
    # The same questions carry "need to": a question, not a requirement.
    _cue(
        "question-not-requirement",
        "constraint",
        -1.2,
        r"\b(?:do|does|did|should|must|would|will)\s{1,3}(?:i|we|you|it|this|that)\s{1,3}(?:still\s{1,3}|"
        r"also\s{1,3}|really\s{1,3})?"
        r"(?:need\s{1,3}to|have\s{1,3}to|must)\b[^?\n]{0,60}\?"
        r"|\bmean\s{1,3}(?:i|we|you)\s{1,3}(?:need|have)\s{1,3}to\b[^?\n]{0,60}\?",
    ),
    # "does this mean the backups are gone?" asks; it does not report a failure.
    _cue(
        "means-question",
        "negative",
        -1.0,
        r"\b(?:does|did|would|will)\s{1,3}(?:this|that|it)\s{1,3}mean\b[^?\n]{0,80}\?",
    ),
    # "what does 'bikeshedding' mean? someone used it in a meeting": about a third party's words.
    _cue(
        "third-party-words",
        "confusion",
        -2.0,
        r"\b(?:someone|somebody|a\s{1,3}friend|my\s{1,3}(?:boss|friend|colleague|coworker|teacher|kid|son|"
        r"daughter|wife|"
        r"husband|manager|mom|dad)|people|a\s{1,3}(?:colleague|coworker))\s{1,3}(?:used|said|mentioned|wrote|"
        r"asked|told|"
        r"keeps?\s{1,3}saying|uses)\b",
    ),
    # A why-question in a feedback stream is nearly always about the last step.
    _cue("why-question", "confusion", 0.6, r"\bwhy\b[^?\n]{0,60}\?"),
    # "you mean the old config?", "do you mean staging?": checking what the agent meant.
    _cue("you-mean-question", "confusion", 1.2, r"\byou\s{1,3}(?:mean|meant)\b[^?\n]{0,60}\?"),
    _cue(
        "what-mean",
        "confusion",
        1.5,
        r"\bwhat\s{1,3}(?:do|did|does)\s{1,3}you\s{1,3}mean\b|\bwhat\s{1,3}does\s{1,3}.{1,40}?\bmean\b"
        r"|\bwhat\s{1,3}is\s{1,3}meant\b|\bwhat\s{1,3}(?:is|it|does\s{1,3}it)\s{1,3}means?\s{1,3}(?:this|"
        r"that|the)\b|\bwdym\b|\bmeaning\s{1,3}of\b|\bmeans\s{0,3}\?|\bmean\s{1,3}by\b",
    ),
    _cue(
        "dont-understand",
        "confusion",
        1.5,
        r"\bi\s{1,3}(?:not|no)\s{1,3}(?:understand|get\s{1,3}it|follow)\b|"
        r"\b(?:i\s{1,3})?(?:don't|do\s{1,3}not|dont|didn't|did\s{1,3}not|didnt|couldn't|could\s{1,3}not|can't|"
        r"cannot)\s{1,3}(?:really\s{1,3})?(?:understand|get\s{1,3}it|"
        r"get\s{1,3}(?:this|that|what|why|how)|follow|see\s{1,3}(?:why|how|what)|"
        # "I don't get the second chart": a part of the answer.
        r"get\s{1,3}(?:the|your|this|that|these|those)\s{1,3}(?:[\w-]{1,20}\s{1,3})?(?:chart|graph|plot|part|"
        r"bit|step|logic|point|idea|"
        r"reasoning|approach|change|diff|code|function|query|formula|table|output|result|numbers?|example|"
        r"explanation|difference|"
        r"section|paragraph|sentence|line|loop|regex|config))\b|\bconfus(?:ed|ing)\b"
        r"|\blost\s{1,3}me\b|\bno\s{1,3}idea\s{1,3}what\b|\bnot\s{1,3}sure\s{1,3}(?:what|why|how)\b"
        r"|\b(?:doesn't|does\s{1,3}not|didn't|don't)\s{1,3}make\s{1,3}(?:any\s{1,3}|much\s{1,3})?sense\b"
        r"|\bnot\s{1,3}following\b|\bmakes\s{1,3}no\s{1,3}sense\b|\bi'm\s{1,3}lost\b|"
        r"\bover\s{1,3}my\s{1,3}head\b"
        r"|\bnot\s{1,3}sure\s{1,3}i\s{1,3}(?:follow|get|understand|see)\b",
    ),
    _cue(
        "bare-huh",
        "confusion",
        1.5,
        r"^\W{0,3}(?:(?:sorry|wait|hold\s{1,3}on|uh|um|hmm|but)\W{1,3})?(?:huh|what|eh|hm{1,5}|umm?|wut|wat|"
        r"come\s{1,3}again|pardon|say\s{1,3}what|sorry|why|how\s{1,3}so|"
        r"wait\s{1,3}what)?\s{0,3}\?{1,5}\W{0,3}$"
        r"|^\W{0,3}(?:huh|wait\s{1,3}what|why|how\s{1,3}so|wdym|wat|wut|what|wha|eh|come\s{1,3}again|"
        r"say\s{1,3}what)\W{0,3}$"
        # "huh? which file?": a short puzzled opener, or a bare which-question.
        r"|^\W{0,3}(?:huh|eh|wait\s{1,3}what|hm{1,5}|umm?)\s{0,3}\?"
        # "137?", "`--force`?": one figure or code word, asked about.
        r"|^\W{0,3}(?:`[^`\n]{1,40}`|[\w.-]{0,20}\d[\w.-]{0,20})\s{0,3}\?{1,3}\W{0,3}$|"
        r"^\W{0,3}which\s{1,3}(?:one|\w{1,20})\s{0,3}\?\W{0,3}$|^\W{0,3}(?:啥|什么|蛤|嗯|"
        r"啊)\W{0,3}[？?]{1,5}\W{0,3}$",
    ),
    _cue(
        "explain",
        "confusion",
        1.0,
        r"\bexplain\b|\bclarify\b|\bwalk\s{1,3}me\s{1,3}through\b|解释|讲讲|说明一下|什么是"
        r"|\b(?:say|tell\s{1,3}me)\s{1,3}(?:a\s{1,3}bit\s{1,3})?more\s{1,3}about\b|\belaborate\b|"
        r"\bexpand\s{1,3}on\b|^\W{0,3}(?:🤔|😕|🧐|🤨)\W{0,4}$",
    ),
    _cue(
        "what-for",
        "confusion",
        1.2,
        r"\bwhat(?:'s|\s{1,3}is|\s{1,3}are)\s{1,3}(?:this|that|these|those|the|it)\b.{0,40}?\bfor\s{0,3}\?"
        r"|\bwhat\s{1,3}(?:does|do|did|is|are|will)\s{1,3}.{1,40}?\s(?:do|for|mean|stand\s{1,3}for|"
        r"change)\s{0,3}\?"
        r"|\bhow\s{1,3}(?:does|did|is|would|will|do)\s{1,3}(?:this|that|it|your|the\s{1,3}(?:change|fix|"
        r"new))\b"
        r"|\bare\s{1,3}you\s{1,3}sure\b|\bis\s{1,3}(?:that|this|it)\s{1,3}(?:right|correct|true|safe|"
        r"necessary|needed|intended)\s{0,3}\?"
        r"|\bwhat\s{1,3}happened\s{1,3}to\b|\bwhere\s{1,3}did\s{1,3}(?:the|my|it|that|this)\b"
        # "what does -P do in that call?", "what's this `|| true` for" (no question mark).
        r"|\bwhat\s{1,3}(?:does|do|did)\s{1,3}\S{1,30}\s{1,3}do\b[^?\n]{0,60}\?"
        r"|\bwhat(?:'s|\s{1,3}is|\s{1,3}are)\s{1,3}(?:this|that|these|those|"
        r"the)\b[^.!?\n]{0,40}?\bfor\W{0,3}$"
        r"|\bwhat(?:'s|\s{1,3}is|\s{1,3}are)\s{1,3}.{1,40}?\s(?:doing|for|measuring|showing|counting|"
        r"tracking|plotting|comparing|representing|"
        r"checking|testing|saying|trying\s{1,3}to)\b.{0,40}?\?"
        r"|\bwhat\s{1,3}for\s{0,3}[?？]"
        r"|怎么来的|怎么算(?:出来)?的|怎么得出|哪(?:里|儿)?来的|从哪(?:里|儿)?来|指什么|指的什么"
        r"|(?:是)?(?:干|做)(?:什么|啥)(?:用)?的|干嘛(?:用)?的|干嘛用|(?:这|那|这个|那个|这里|它)(?:又)?是(?:啥|什么)(?:意思)?[？?]|为何",
    ),
    _cue(
        "which-did-you",
        "confusion",
        1.0,
        r"\b(?:which|what)\s{1,3}(?:\w{1,20}\s{1,3})?(?:did|do|are|were|have)\s{1,3}you\b"
        r"|\bis\s{1,3}(?:this|that|it|the\s{1,3}\w{1,20})\b.{1,60}?\bor\b.{1,60}?\?"
        r"|\bwhich\s{1,3}(?:of\s{1,3})?(?:these|those|the\s{1,3}(?:two|three|four|options|versions|"
        r"drafts))\b[^?\n]{0,60}\?|\bdid\s{1,3}(?:it|this|that|you)\b.{1,50}?\bor\s{1,3}not\b"
        r"|\bdid\s{1,3}(?:it|this|that|you)\s{1,3}(?:actually\s{1,3}|really\s{1,3}|even\s{1,3})?(?:change|"
        r"run|test|update|"
        r"delete|remove|add|check|commit|push|save|try|use|modify|touch|include|mean|break|install|"
        r"restart)\b",
    ),
    _cue(
        "cn-confused",
        "confusion",
        1.5,
        r"什么意思|啥意思|何意|什么叫|啥叫|是指|指的是|没看懂|看不懂|不懂|不明白|没明白|搞不懂|不太明白|没太明白|"
        r"没理解|不理解|没\s{0,2}get|get\s{0,2}不到|懵|糊涂|迷糊|费解|没太看懂|看不明白|没(?:听|看)?(?:懂|明白)|听不懂|"
        r"不(?:太|是很|大)(?:理解|明白|懂|清楚)|你的意思|咩意思|乜嘢意思|唔明|唔懂|睇唔明|唔知你讲"
        # "你是说要重启吗？", "这段代码在干嘛？", "怎么突然多了一个文件？".
        r"|你(?:是说|是指|指的是)|(?:要紧|要不要紧|正常|对吗|有影响|安全|必要)吗|是正常的吗|你确定|确定吗|哪里(?:改|动|变)了|改了哪里|动了哪里"
        r"|(?:为什么|为啥|干嘛|点解|怎么会)\s{0,2}(?:报错|出错|失败|挂了|崩|多了|少了|没了|不行|不对)|(?:这|那)(?:段|个|行|里|些|"
        r"块)?[\u4e00-\u9fff]{0,6}?在(?:干嘛|做什么|干什么)"
        r"|怎么(?:突然|又|会)?(?:多了|少了|没了|变了|不见了|变成)[^？?\n]{0,20}[？?]"
        # "怎么突然多了个目录", "到底做了什么", "downgrade 的 reason 是啥", "necessary 吗", "啥？": the
        # agent's change questioned, without a question mark or half in English.
        r"|(?:怎么|咋)突然|到底[^，。？！,.?!]{0,12}?(?:什么|啥)|"
        r"(?:reason|原因|目的|用意|理由|依据|区别)\s{0,2}(?:是|在)?\s{0,2}(?:啥|什么|哪)|"
        r"^\W{0,3}(?:啥|什么|蛤|嗯)\s{0,2}[？?]|\b(?:necessary|needed|required)\s{0,2}吗|没太\s{0,2}get|有关系?吗",
    ),
    # "查一下订单为什么少了": a request to find out why, not a question to the agent.
    _cue(
        "cn-find-out-why",
        "confusion",
        -3.0,
        r"^\W{0,3}(?:帮我|麻烦你?|请你?)?\s{0,2}(?:查|看|排查|分析|研究|调查|找|定位)(?:一下|下|看|查|一查|清楚)"
        r"[^，。？！,.?!]{0,20}?(?:为什么|为啥|怎么回事)",
    ),
    _cue(
        "cn-why-you",
        "confusion",
        1.2,
        # 干嘛 at the end asks what someone does ("你周末一般干嘛"), not why.
        r"(?:你|这|那|要|把).{0,10}?(?:为什么|为啥|点解|干嘛(?![呢呀啊吗哦？?。！!，,\s]|$))"
        r"|(?:为什么|为啥|干嘛|点解|怎么会).{0,12}?(?:你|这|那|要|把|改|加|删|用|设|会|是)"
        r"|咋回事|怎么回事|(?:为什么|为啥).{0,8}?了",
    ),
    _cue(
        "cn-which",
        "confusion",
        1.0,
        r"到底.{0,15}?(?:了没有|没有|吗|没|呢)|到底.{0,10}?(?:要不要|是不是|有没有|能不能|对不对|行不行|该不该|会不会|用不用)|(?:这|那|"
        r"它)[^，。？！,.?!]{0,12}?(?:是|要).{1,20}?还是.{1,20}?[？?]|啥区别|什么区别|有什么不同|有啥不同|"
        r"哪个文件|哪一个|改了哪|是哪(?:个|一个|些|里|儿)|指哪|(?<![按照像如依])你说的",
    ),
    # ===== seventh set: English phrasing variety =================================
    # Sarcasm: "wow, you managed to delete my whole calendar. fantastic."
    _cue(
        "managed-to-break",
        "negative",
        1.5,
        r"\b(?:you|u)\s{1,3}(?:somehow\s{1,3}|actually\s{1,3}|really\s{1,3}|even\s{1,3})?managed\s{1,3}to\s{1,3}"
        r"(?:\w{1,12}\s{1,3})?(?:delete|break|lose|wipe|crash|overwrite|erase|remove|mess|corrupt|drop|kill|"
        r"nuke|ruin|trash|destroy|cancel|double[\s-]{0,1}book|undo|revert|leak|brick|mangle|scramble)",
    ),
    # "great, yet another outage", "oh perfect, another typo".
    _cue(
        "sarcasm-another",
        "negative",
        1.2,
        r"^\W{0,3}(?:oh\s{1,3}|wow\W{1,3})?(?:great|perfect|wonderful|fantastic|brilliant|awesome|lovely|"
        r"splendid|just\s{1,3}great|super|good|nice|cool)\W{1,3}(?:yet\s{1,3})?(?:another|more)\s{1,3}"
        r"(?:\w{1,15}\s{1,3})?(?:outages?|typos?|mistakes?|hallucinations?|duplicates?|conflicts?|incidents?|broken|"
        r"blank|red|failed|failing|404s?|500s?|errors|bugs|crashes|failures|timeouts|exceptions|"
        r"stack\s{1,3}traces?|tracebacks?|warnings?|glitch|glitches|meltdown|disaster)\b"
        # "thanks a bunch for wiping my notes".
        r"|\bthanks?\s{1,3}(?:a\s{1,3}(?:lot|bunch|ton)\s{1,3}|so\s{1,3}much\s{1,3})?for\s{1,3}(?:wiping|deleting|"
        r"breaking|losing|erasing|overwriting|nuking|ruining|crashing|trashing|corrupting|destroying|"
        r"messing\s{1,3}up)\b",
    ),
    # "nothing to add", "couldn't ask for more", "Danke!", "the invite went out fine".
    _cue(
        "approval-idioms",
        "positive",
        1.0,
        r"\bnothing\s{1,3}to\s{1,3}add\b|\b(?:couldn't|could\s{1,3}not|can't)\s{1,3}ask\s{1,3}for\s{1,3}(?:more|"
        r"better|anything\s{1,3}more)\b|\b(?:danke|merci|gracias|obrigad[oa]|grazie|shukriya|dhanyavaad|"
        r"arigato)\b|\bbang\s{1,3}on\b|\b(?:went|got|goes)\s{1,3}(?:out|through)\s{1,3}(?:fine|ok|okay|smoothly|cleanly|"
        r"without\s{1,3}a\s{1,3}hitch)\b",
    ),
    # "same query, restricted to last 30 days": a scope given as a limit.
    _cue(
        "restricted-to",
        "constraint",
        1.2,
        r"\b(?:restricted|limited|filtered|narrowed|scoped|capped)\s{1,3}(?:down\s{1,3})?(?:to|at)\s{1,3}"
        r"(?:the\s{1,3})?(?:last|first|past|only|top|\d|one|two|three|five|ten|our|active|current)\b",
    ),
    # Non-native: "the code is not giving correct output", "not showing the expected result".
    _cue(
        "not-giving-correct",
        "negative",
        1.2,
        r"\b(?:not|isn't|doesn't|didn't|does\s{1,3}not|did\s{1,3}not)\s{1,3}(?:giving|give|showing|show|returning|"
        r"return|producing|produce|coming)\s{1,3}(?:the\s{1,3})?(?:correct|right|proper|expected|desired|exact)\b",
    ),
    # Hedged: "maybe try Poetry?", "what about using a queue?", "have you considered Terraform?".
    _cue(
        "hedged-suggestion",
        "preference",
        1.2,
        r"^\W{0,3}(?:(?:hmm|um|so|ok|okay)\W{1,3})?(?:maybe|perhaps|possibly|how\s{1,3}about|what\s{1,3}about)"
        r"\s{1,3}(?:we\s{1,3})?(?:just\s{1,3})?(?:try|trying|use|using|go\s{1,3}with|going\s{1,3}with|"
        r"switch\s{1,3}to|switching\s{1,3}to)\s{1,3}(?![a-z]{2,20}ing\b)(?!" + _DEMONSTRATIVE + r")[\w`'\"]"
        r"|\b(?:have|did)\s{1,3}you\s{1,3}(?:considered|thought\s{1,3}about|tried)\s{1,3}(?:using\s{1,3})?"
        r"(?![a-z]{2,20}ing\b)(?!" + _DEMONSTRATIVE + r")[\w`'\"]",
    ),
    # "I think Redis might be a better fit", "Figma is the better choice here".
    _cue(
        "better-fit",
        "preference",
        1.2,
        r"\b(?:might|may|would|could)\s{1,3}be\s{1,3}(?:a\s{1,3})?(?:better|more\s{1,3}suitable)\s{1,3}(?:fit|choice|"
        r"option|bet|tool|pick)\b|\bis\s{1,3}(?:a|the)\s{1,3}better\s{1,3}(?:fit|choice|option|bet|pick)\b",
    ),
    # "it is giving error", "keeps throwing exceptions", "you have done mistake in the total" (non-native
    # and plain), "it does not reflect what we discussed".
    _cue(
        "giving-error",
        "negative",
        1.2,
        r"\b(?:is|are|was|were|it's|still|keeps?)\s{1,3}(?:giving|throwing|showing|returning)\s{1,3}(?:an?\s{1,3}|"
        r"the\s{1,3}same\s{1,3}|some\s{1,3}|many\s{1,3})?(?:errors?|exceptions?|issues?|problems?|warnings?)\b"
        r"|\b(?:you|u)\s{1,3}(?:have\s{1,3}|has\s{1,3}|'ve\s{1,3})?(?:done|made|did)\s{1,3}(?:a\s{1,3}|some\s{1,3}|"
        r"many\s{1,3}|few\s{1,3}|one\s{1,3}|big\s{1,3}|serious\s{1,3})?(?:mistakes?|errors?|blunders?)\b"
        r"|\b(?:doesn't|does\s{1,3}not|didn't|did\s{1,3}not|don't|do\s{1,3}not)\s{1,3}(?:really\s{1,3}|quite\s{1,3})?"
        r"(?:reflect|capture|follow|cover)\s{1,3}(?:what|the\s{1,3}(?:brief|spec|requirements?|discussion|notes|"
        r"ticket|template|guidelines|agreement))\b",
    ),
    _cue("why-tho", "confusion", 1.2, r"^\W{0,3}(?:but\s{1,3})?why\s{1,3}(?:tho|though|so)\W{0,4}$"),
    # "the old version was better", "I preferred the first draft", "can we go back to the previous
    # layout?": the new answer is rejected in favour of what came before.
    _cue(
        "old-was-better",
        "negative",
        1.2,
        r"\b(?:old|older|previous|original|first|earlier|last)\s{1,3}(?:version|draft|one|layout|design|wording|"
        r"copy|logo|attempt|try)\s{1,3}(?:was|is|looked|looks|read|reads|sounded)\s{1,3}(?:way\s{1,3}|much\s{1,3}|"
        r"a\s{1,3}lot\s{1,3}|far\s{1,3})?better\b"
        r"|\bi\s{1,3}(?:preferred|liked)\s{1,3}(?:the\s{1,3}|your\s{1,3})?(?:old|older|previous|original|first|"
        r"earlier|last)\s{1,3}(?:version|draft|one|layout|design|wording|copy|logo|attempt|try)\b"
        r"|\b(?:go|going|roll|switch)\s{1,3}back\s{1,3}to\s{1,3}(?:the\s{1,3})?(?:old|previous|original|earlier|"
        r"last|first)\s{1,3}(?:version|draft|one|layout|design|wording)\b",
    ),
    # Hedged corrections: "pretty sure it's 8443", "if I remember correctly, the office is on
    # floor 5", "afaik Lisbon is UTC+0" (each with a stated value).
    _cue(
        "hedged-fact",
        "correction",
        0.6,
        r"\b(?:(?:pretty|fairly|quite|100%|almost|i'm|im)\s{1,3}(?:sure|certain)|if\s{1,3}i\s{1,3}(?:remember|"
        r"recall)\s{1,3}(?:correctly|right)|iirc|last\s{1,3}(?:i|we)\s{1,3}checked|as\s{1,3}far\s{1,3}as\s{1,3}"
        r"i\s{1,3}know|afaik)\b",
    ),
    # Adjustments asked for by degree: "a bit shorter please", "slightly more formal", "tone it down";
    # "it would be nice if it also handled nulls"; "ideally …".
    _cue(
        "adjust-degree",
        "constraint",
        1.2,
        r"^\W{0,3}(?:(?:maybe|just|ok|okay|hmm|but|and)\W{1,3})?(?:make\s{1,3}it\s{1,3})?(?:a\s{1,3}(?:bit|little|"
        r"touch|tad)\s{1,3}|slightly\s{1,3}|much\s{1,3}|way\s{1,3})(?:shorter|longer|simpler|more\s{1,3}[a-z]{3,15}|"
        r"less\s{1,3}[a-z]{3,15}|friendlier|warmer|punchier|tighter|bigger|smaller|darker|lighter|brighter|"
        r"crisper|snappier|plainer|briefer)\b"
        r"|\btone\s{1,3}(?:it|this|that|the\s{1,3}[a-z]{2,15})\s{1,3}down\b"
        r"|\bbe\s{1,3}(?:nice|great|good|ideal|helpful|better)\s{1,3}if\s{1,3}[^.;!?\n]{0,40}?\b(?:also|too|as\s{1,3}well)\b",
    ),
    _cue("ideally", "constraint", 0.6, r"^\W{0,3}ideally\b"),
    # Exasperation and giving up: "close but no cigar", "that's not the one", "you're
    # overcomplicating this", "way too verbose", "I can't use this", "forget it", "I give up",
    # "seriously?", "are you kidding me", "did you even read my message?".
    _cue(
        "exasperation",
        "negative",
        1.2,
        r"\bclose\W{1,3}but\s{1,3}no\s{1,3}cigar\b|^\W{0,3}(?:almost|close|nearly)\W{1,3}but\s{1,3}not\s{1,3}quite\b"
        r"|\b(?:that's|that\s{1,3}is|thats|this\s{1,3}is|this's|it's)\s{1,3}not\s{1,3}the\s{1,3}(?:one|right\s{1,3}one)\W{0,4}$"
        r"|\b(?:you're|you\s{1,3}are|ur)\s{1,3}(?:over-?complicating|over-?engineering|overthinking|overdoing)\b"
        r"|^\W{0,3}(?:way|far|much|waaay|wayyy)\s{1,3}too\s{1,3}[a-z]{3,15}\W{0,4}$|\btoo\s{1,3}long\W{1,3}"
        r"(?:didn't|did\s{1,3}not|didnt)\s{1,3}read\b|^\W{0,3}tl\W{0,1}dr\W{0,4}$"
        r"|\bi\s{1,3}(?:can't|cannot|can\s{1,3}not|couldn't)\s{1,3}(?:use|work\s{1,3}with|ship|send)\s{1,3}(?:this|that|"
        r"it)\W{0,4}$|\b(?:this|that|it)\s{1,3}(?:isn't|is\s{1,3}not|is\s{1,3}un)\s{0,3}usable\b"
        r"|^\W{0,3}(?:(?:ok|okay|ugh|sigh|meh)\W{1,3})?(?:forget\s{1,3}it|i\s{1,3}give\s{1,3}up|never\s{1,3}mind\W{1,3}"
        r"i'll\s{1,3}do\s{1,3}it\s{1,3}myself|nvm\W{1,3}i'll\s{1,3}do\s{1,3}it\s{1,3}myself)\b"
        r"|^\W{0,3}(?:seriously|are\s{1,3}you\s{1,3}(?:kidding|serious|joking)(?:\s{1,3}me)?|come\s{1,3}on|"
        r"you\s{1,3}can't\s{1,3}be\s{1,3}serious)\W{0,5}$"
        r"|\bdid\s{1,3}you\s{1,3}even\s{1,3}(?:read|look\s{1,3}at|open|test|run|try)\b",
    ),
    # "good enough", "that'll do", "fine." as the whole message: consent.
    _cue(
        "consent-plain",
        "positive",
        1.0,
        r"^\W{0,3}(?:(?:ok(?:ay)?|yeah|yep|sure)\W{1,3})?(?:good\s{1,3}enough|that'll\s{1,3}do|that\s{1,3}will\s{1,3}do|"
        r"fine|works\s{1,3}for\s{1,3}me)\W{0,4}$",
    ),
    # Corrections asked as a question: "isn't the port 8080?", "shouldn't it be 3 decimal places?",
    # "wasn't the deadline Friday?".
    _cue(
        "question-correction",
        "correction",
        1.2,
        r"\b(?:isn't|wasn't|aren't|weren't|shouldn't|doesn't)\s{1,3}(?:it|that|this|they|the\s{1,3}[a-z]{2,20}"
        r"(?:\s{1,3}[a-z]{2,20})?)\s{1,3}(?:be\s{1,3}|supposed\s{1,3}to\s{1,3}be\s{1,3}|actually\s{1,3}|"
        r"start\s{1,3}at\s{1,3}|end\s{1,3}at\s{1,3}|on\s{1,3}|at\s{1,3}|in\s{1,3}|due\s{1,3}on\s{1,3}|"
        r"called\s{1,3})?(?:port\s{1,3}|version\s{1,3}|v|the\s{1,3})?(?:[#$\u20ac\u00a3]?\d[^?\n]{0,30}|"
        r"(?:mon|tues|wednes|thurs|fri|satur|sun)day\b[^?\n]{0,20})\?",
    ),
    # A value and the wrong one after a verb that states a fact: "the room holds 12 people,
    # not 20", "the train departs from Paddington, not Euston", "should divide by B2, not C2".
    _cue(
        "fact-verb-contrast",
        "correction",
        1.2,
        r"\b(?:departs?|leaves|arrives?|lands|starts|ends|finishes|opens|closes|holds|seats|fits|costs|weighs|"
        r"lasts|begins|meets|sleeps|divides?|multipl(?:y|ies)|subtracts?|sums|counts|"
        r"should\s{1,3}(?:divide|multiply|subtract|sum|count|add|round|start|end|depart|leave|arrive|point|"
        r"reference|go|read|say|link|open|close|return))\b[^,.;!?\n]{1,40}?,\s{0,3}not\s{1,3}"
        # "my flight leaves at 9, not sure when I land": "not" starting another remark.
        r"(?!(?:sure|bad|too|really|yet|so|that|quite|much|great|ideal|entirely|exactly|always|all|to|even|only|"
        r"just|necessarily|ok|okay|good|certain|a|an)\b)[\w#$]",
    ),
    # "fun fact: the office dog is called Biscuit": trivia, not a fix.
    _cue(
        "trivia",
        "correction",
        -1.5,
        r"\b(?:fun|random|useless)\s{1,3}fact\b|\bdid\s{1,3}you\s{1,3}know\s{1,3}(?:that\s{1,3})?",
    ),
    # Passive preferences: "Pandas should be used here, not Excel macros".
    _cue(
        "passive-use",
        "preference",
        1.5,
        r"\b(?:should|must|has\s{1,3}to|needs\s{1,3}to|ought\s{1,3}to)\s{1,3}be\s{1,3}(?:used|done\s{1,3}(?:in|with|via)|"
        r"written\s{1,3}in|handled\s{1,3}(?:by|with|in)|built\s{1,3}(?:with|in)|managed\s{1,3}(?:with|by)|"
        r"preferred)\b",
    ),
    # "R would be my pick for this, not SPSS", "my vote is Figma", "I vote for Notion".
    _cue(
        "my-pick",
        "preference",
        1.2,
        r"\b(?:would\s{1,3}be|is|'d\s{1,3}be)\s{1,3}my\s{1,3}(?:pick|choice|preference|go-to|vote|"
        r"first\s{1,3}choice|recommendation)\b"
        r"|\bmy\s{1,3}(?:pick|choice|vote|preference|recommendation)\s{1,3}(?:would\s{1,3}be|is|goes\s{1,3}to)\b"
        r"|\bi\s{1,3}vote\s{1,3}(?:for\s{1,3})?(?!(?:yes|no|we|to|that|you|i|us|they|against)\b)[\w`'-]",
    ),
    # ===== instruction =========================================================
    # "ship this build to QA", "lowercase the column names": release and formatting verbs (kept
    # out of the shared verb list, whose gate keys would grow past what the gate derives).
    _cue(
        "release-format-verb",
        "instruction",
        1.2,
        r"^\W{0,3}(?:please\s{1,3}|now\s{1,3}|ok\s{1,3}|then\s{1,3})?(?:ship|promote|stage|lowercase|uppercase|"
        r"capitali[sz]e|truncate|trim|strip|pad|bold|highlight|indent|uncomment)\s{1,3}(?:the|this|that|"
        r"these|those|it|them|all|every|our|my|each)\b",
    ),
    _cue(
        "imperative-start",
        "instruction",
        1.2,
        r"^\W{0,3}(?:please\s{1,3}|pls\s{1,3}|now\s{1,3}|next\s{0,3}[,:]?\s{1,3}|then\s{1,3}|"
        r"ok(?:ay)?,?\s{1,3}|alright,?\s{1,3}"
        r"|first,?\s{1,3}|go\s{1,3}ahead\s{1,3}and\s{1,3}|can\s{1,3}you\s{1,3}|could\s{1,3}you\s{1,3})?"
        + _INSTRUCTION_VERBS
        + r"\b(?!\s{0,3}[?])",
    ),
    # "what went wrong last night? dig through the logs": a command after the first sentence.
    _cue(
        "imperative-after-break",
        "instruction",
        1.2,
        r"[.?!;]\s{1,3}(?:please\s{1,3}|now\s{1,3}|then\s{1,3}|and\s{1,3})?"
        + _INSTRUCTION_VERBS
        + r"\b(?!\s{0,3}[?])",
    ),
    _cue(
        "request",
        "instruction",
        1.2,
        r"\b(?:can|could|would|will)\s{1,3}(?:you|u)\s{1,3}(?:please\s{1,3}|pls\s{1,3}|kindly\s{1,3}|"
        r"also\s{1,3}|now\s{1,3}|possibly\s{1,3}|"
        r"maybe\s{1,3}|just\s{1,3}|quickly\s{1,3})?"
        + _INSTRUCTION_VERBS
        # "would you mind updating …", "I was wondering if you could …", "when you get a chance, bump …".
        + r"\b|\bwould\s{1,3}you\s{1,3}mind\s{1,3}[a-z]{2,20}ing\b|"
        r"\bwonder(?:ing)?\s{1,3}if\s{1,3}you\s{1,3}(?:could|can|would)\s{1,3}"
        + _INSTRUCTION_VERBS
        + r"\b|\b(?:when\s{1,3}you\s{1,3}(?:get|have)\s{1,3}a\s{1,3}(?:chance|moment|minute|sec|second)|"
        r"whenever\s{1,3}you\s{1,3}can)\W{1,3}"
        + _INSTRUCTION_VERBS
        + r"\b|\b(?:please|kindly)\s{1,3}(?:to\s{1,3})?"
        + _INSTRUCTION_VERBS
        + r"\b|\bwhy\s{1,3}(?:don't|dont)\s{1,3}you\s{1,3}(?:just\s{1,3})?"
        + r"(?:go\s{1,3}ahead\s{1,3}and\s{1,3})?"
        + _INSTRUCTION_VERBS
        + r"\b|\b(?:then|and\s{1,3}then|now)\s{1,3}"
        + _INSTRUCTION_VERBS
        + r"\b",
    ),
    _cue(
        "lets-do",
        "instruction",
        1.0,
        r"\b(?:let's|lets)\s{1,3}(?:move\s{1,3}on|start|work\s{1,3}on|build|add|look|try|write|begin|"
        r"continue|go|do|tackle|handle|fix|finish|"
        r"wrap\s{1,3}up|ship|deploy|review|test|refactor|clean|set\s{1,3}up|get)\b"
        # "ok now the docs": the next thing, named.
        r"|^\W{0,3}(?:(?:ok(?:ay)?|alright|cool|great|good|nice|thanks|perfect)\W{1,3})?now\s{1,3}(?:the|"
        r"do\s{1,3}the|for\s{1,3}the)\s{1,3}"
        r"[\w-]{1,30}(?:\s{1,3}[\w-]{1,30})?\W{0,3}$"
        r"|\bdo\s{1,3}the\s{1,3}same\s{1,3}(?:for|with|to|on|in)\b|\bmove\s{1,3}on\s{1,3}to\b|"
        r"^\W{0,3}(?:go\s{1,3}ahead|proceed|continue|carry\s{1,3}on|do\s{1,3}it)\b"
        r"|^\W{0,3}(?:继续|开始吧|下一步|开干)"
        # "same for the other two files".
        r"|^\W{0,3}(?:(?:ok(?:ay)?|now|and|great|thanks|cool|nice|"
        r"good)\W{1,3})?(?:the\s{1,3})?same\s{1,3}(?:thing\s{1,3})?(?:for|with|on)\s{1,3}(?!me\b|us\b)",
    ),
    _cue("task-label-next", "instruction", 1.5, _NEW_TASK),
    # "let's containerize it", "time to write the migration", "ok, on to the API layer",
    # "I need a script that …", "I'd like you to …", "help me write …".
    _cue(
        "next-step-plain",
        "instruction",
        1.2,
        r"\b(?:let's|lets)\s{1,3}(?!(?:not|see|just\s{1,3}say|hope|be|say|use|stick|keep|"
        r"go\s{1,3}with)\b)[a-z]{3,15}\s{1,3}"
        r"(?:it|this|that|them|the|a|an|some|our|everything|up)\b"
        r"|^\W{0,3}(?:(?:ok(?:ay)?|alright|right|now)\W{1,3})?(?:time\s{1,3}to|"
        r"now\s{1,3}(?:it's\s{1,3})?time\s{1,3}to)\s{1,3}[a-z]"
        r"|^\W{0,3}(?:(?:ok(?:ay)?|alright|right|cool|great|good|nice|thanks|perfect|"
        r"done)\W{1,3})?(?:(?:and\s{1,3})?(?:now\s{1,3})?on\s{1,3}to|onto|"
        r"moving\s{1,3}on\s{1,3}to)\s{1,3}(?:the\s{1,3})?\w"
        r"|^\W{0,3}(?:(?:ok(?:ay)?|so|now|next|alright)\W{1,3})?(?:i|we)(?:'d|"
        r"\s{1,3}would)?\s{1,3}(?:really\s{1,3}|also\s{1,3})?"
        r"(?:need|want|like)\s{1,3}(?:a|an|some)\s"
        r"|\b(?:i|we)(?:'d|\s{1,3}would)?\s{1,3}(?:like|need|want)\s{1,3}you\s{1,3}to\s{1,3}[a-z]"
        r"|\bhelp\s{1,3}me\s{1,3}(?:with|write|draft|set|plan|figure|debug|fix|build|make|create|find|choose|"
        r"pick|prepare|organi[sz]e|translate|"
        r"outline|structure|rewrite|clean|refactor|migrate|port)\b",
    ),
    # "这个报表能不能按月份分组": a next step asked politely.
    _cue(
        "cn-could-you",
        "instruction",
        1.2,
        r"(?:能不能|可不可以|能否|可否)\s{0,2}(?:帮我|帮忙|再)?\s{0,2}(?:把|按|给|加|改|做|写|生成|导出|整理|发|查|算|画|"
        r"分|排|翻译|补|列|汇总|统计|转)",
    ),
    _cue(
        "cn-request",
        "instruction",
        1.2,
        r"帮我|帮忙|麻烦(?:你)?|请(?:你)?(?!问|用|使用|假|客|教|吃|喝)|给我|^\W{0,3}(?:把|将)\s{0,2}\S|(?<!了)一下(?![午子])|接下来|然后|"
        r"^\W{0,3}(?:给|跟|和|向)[^，。？！,.?!]{1,8}?(?:发|打|说|回|写|约|订|加|添加|补|配|设|建)|"
        r"^\W{0,3}(?:now\s{1,3}|现在|接着|再|先|去)?\s{0,2}"
        + _CN_INSTRUCTION_VERBS
        # "next，写个 README", "then: 跑一下测试".
        + r"|^\W{0,3}(?:next|then)\s{0,3}[,，:：]?\s{0,3}"
        + _CN_INSTRUCTION_VERBS
        # "在日历上加一个提醒": where, then what to add there.
        + r"|^\W{0,3}在[^，。？！,.?!]{1,12}?(?:加|添加|建|创建|新建|设|设置|写|放|开|记|做个|做一个|"
        r"画个|画一个)"
        # "今晚十点把这版上到正式机": when, then what to do with what.
        r"|^\W{0,3}(?:今晚|今天|明天|明早|今早|晚上|下午|上午|中午|等下|待会儿?|稍后|周[一二三四五六日末])"
        r"[^，。？！,.?!]{0,6}?(?:把|将)\s{0,2}\S",
    ),
    # Small talk whose words look like a command ("测试一下" is a mic check).
    _cue(
        "small-talk",
        "instruction",
        -2.0,
        r"^\W{0,3}(?:hi|hello|hey|yo|sup|brb|bbl|gtg|afk|lol|lmao|ok|okay|k|test(?:ing)?|ping|"
        r"good\s{1,3}(?:morning|night|evening|afternoon)|gm|gn|早上好|晚上好|下午好|中午好|早|晚安|你好|您好|嗨|"
        r"在吗|在不在|测试一?下?|试试|试一下)\W{0,4}$|^\W{0,3}(?:我|i'm|i\s{1,3}am)\s{0,3}(?:先|要|going\s{1,3}to|gonna)?"
        r"\s{0,3}(?:去|go\b|grab)"
        # "等我一下，先去开个会": the user steps away.
        r"|^\W{0,3}(?:我|俺)\s{0,2}(?:先|要|得)?\s{0,2}(?:出去|下班|走了|睡了|撤了|溜了|离开)"
        r"|^\W{0,3}(?:等我|稍等|等一下|等下我|等等我)|(?:先|要|得)去(?:开个?会|吃个?饭|睡觉|上课|上班|接孩子|开车)",
    ),
)

# ---------------------------------------------------------------------------
# Extraction frames for the corrected value: where the value starts.
# ---------------------------------------------------------------------------
CORRECTION_FRAMES: Final[tuple[regex.Pattern[str], ...]] = (
    compile_pattern(
        r"\bshould\s{1,3}(?:be|have\s{1,3}been|say|read|equal)\s{1,3}|\b(?:was|were|is|are)\s{1,3}supposed\s{1,3}to"
        r"\s{1,3}(?:be|say|read|show)\s{1,3}|\b(?:is|it's|its|"
        r"was)\s{1,3}actually\s{1,3}"
        r"|\bshould\s{1,3}(?:come\s{1,3}out\s{1,3}to|add\s{1,3}up\s{1,3}to|total|sum\s{1,3}to)\s{1,3}(?=[$€£¥]?\d)"
        r"|\bcorrect\s{1,3}(?:one|value|answer|number|name|date|figure)\s{1,3}is\s{1,3}"
        r"|应该是|应是|应为|应该为|应该叫|应该在|其实是|实际上是|正确的是|正确答案是"
    ),
    # "should run at 02:30 UTC", "I said develop".
    compile_pattern(
        r"\bshould\s{1,3}(?:run|fire|start|end|go\s{1,3}off|trigger|happen|begin|finish|expire)\s{1,3}(?:at|"
        r"on|by)\s{1,3}"
        r"|\bi\s{1,3}(?:said|meant|asked\s{1,3}for)\s{1,3}"
        # "you mean `user_id`", "the loop should stop at len(items) - 1".
        r"|(?<!\b(?:do|did|does|what)\s{1,3})\byou\s{1,3}(?:mean|meant)\s{1,3}"
        r"|\bshould\s{1,3}(?:stop|end|start|begin|break|cut\s{1,3}off|wrap)\s{1,3}(?:at|after|before)\s{1,3}"
        r"|\bshould\s{1,3}(?:reference|point\s{1,3}(?:to|at)|link\s{1,3}to|read\s{1,3}from|write\s{1,3}to|"
        r"target|import\s{1,3}from)\s{1,3}"
        r"|\bshould\s{1,3}(?:start|begin|end)\s{1,3}with\s{1,3}"
        r"|\b(?:moved|changed|shifted|pushed|bumped|rescheduled|renamed)\s{1,3}(?:back\s{1,3}|"
        r"up\s{1,3})?to\s{1,3}"
        # "the paper came out in 2017".
        r"|\b(?:came\s{1,3}out|first\s{1,3}(?:appeared|shipped)|(?:was|were)\s{1,3}(?:released|published|"
        r"founded|launched|"
        r"introduced))\s{1,3}(?:in|on)\s{1,3}(?=\d)"
        # "the API key goes in the X-Api-Key header".
        r"|\b(?:goes|go|belongs?)\s{1,3}(?:in|into|under)\s{1,3}the\s{1,3}(?=[^,，\n]{1,30}?\s(?:header|field|"
        r"column|folder|section|tab|body|footer|table|file|directory|config|sheet|cell)\b)"
    ),
)


# ---------------------------------------------------------------------------
# Text preparation and extraction: lexicons and frames used by prepare.py and extract.py.
# ---------------------------------------------------------------------------

CONTROL: Final = compile_pattern(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")

INLINE_CODE: Final = compile_pattern(r"`[^`\n]{1,200}`")

# Lines of a pasted log or traceback that were not fenced.
LOG_LINE: Final = compile_pattern(
    r"[ ]{4}|\t|\$ |>>> |Traceback \(most recent|File \"|\s{0,8}at \S{1,200}\(|"
    r"\d{4}-\d\d-\d\d[ T]\d|\[?(?:INFO|DEBUG|WARN|WARNING|ERROR|FATAL|TRACE)\]?[: ]|"
    r"[A-Za-z_.]{1,60}(?:Error|Exception|Warning)\b:",
)

CODE_TROUBLE: Final = compile_pattern(
    r"\b(?:traceback|error|exception|failed|failure|failing|fatal|panic|segmentation\s{1,3}fault|segfault|"
    r"core\s{1,3}dumped|"
    r"oomkilled|killed|aborted)\b|报错|失败|异常"
)

TOKEN: Final = compile_pattern(
    r"`[^`\n]{1,80}`|\"[^\"\n]{1,80}\"|“[^”\n]{1,80}”|「[^」\n]{1,80}」"
    r"|(?:[A-Z]{1,3})?[$¥€£]?\d{1,3}(?:,\d{3}){1,6}(?:\.\d{1,6})?[A-Za-z%]{0,6}"
    r"|[A-Za-z0-9_$¥€£~@#+./:'%\-\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]{1,80}"
    r"|[\u3400-\u9fff\uf900-\ufaff]{1,40}"
    r"|\S"
)

# The reference ``extract._is_cjk`` is tested against (it reads the same two
# ranges without a regex call).
CJK: Final = compile_pattern(r"[\u3400-\u9fff\uf900-\ufaff]")

QUOTES: Final = "`\"'“”‘’「」『』"

EDGE_PUNCT: Final = " \t\n.,;:!?。，；：！？、()[]{}（）" + QUOTES

DETERMINERS: Final = _words(
    "a an the some any just only whole regular normal simple good "
    "old our my your their its teh proper dedicated"
)

# Modifiers that make an approach of their own and stay in the phrase: "plain SQL"
# (no ORM), "vanilla JS" (no framework), "raw manifests" (no Helm), "bare metal".
APPROACH_MODIFIERS: Final = _words("plain vanilla native raw bare pure")

# After "the", a word naming the kind of thing, not the thing: "the logging module" is
# ``logging``, "the orders table" is ``orders`` ("csv module" without an article stays whole).
KIND_NOUNS: Final = _words(
    "module modules package packages library libraries lib crate plugin table column approach pattern method "
    "calls"
)

# A quantity before the phrase: "that chain of str.replace calls", "a bunch of shell scripts".
QUANTITY_HEAD: Final = compile_pattern(
    r"(?:(?:a|an|the|that|this|those|these|some)\s{1,3})?(?:(?:whole|long|big|huge|giant)\s{1,3})?"
    r"(?:chain|bunch|pile|lot|lots|series|set|mess|wall|heap|stack|ton|tons|load|loads|couple|"
    r"handful)\s{1,3}of\s{1,3}"
)

# After a call in a value, an offset: "len(items) - 1".
EXPRESSION_TAIL: Final = compile_pattern(r"\s{0,2}[-+*/]\s{0,2}\d{1,6}\b")

# A Chinese noun that makes a kind out of the word before it ("shell 脚本", "for 迴圈").
CN_KIND_NOUN: Final = compile_pattern(r"脚本|循环|迴圈|回圈|语句")

DEMONSTRATIVES: Final = _words("it this that these those them one same existing current")

TOOL_STOP: Final = _words(
    "instead rather over not for to in on at with from and or but because since so as is are was were "
    "be works work worked takes took here there this that it them please pls plz thanks thank next "
    "now always anymore again though then when if which where than by of like too also way whenever "
    "already lol tbh we i you they he she us wouldn't wouldnt won't couldn't would could should going "
    "think guess reckon"
)

# Words that trail or stand in for a tool name but never are one.
SOFTENERS: Final = _words("please pls plz then instead too here there now again thanks")

CN_MODIFIERS: Final = _words(
    "原生 手动 默认 自带 纯 普通 直接 原来的 现在的 那个 这个 我的 你的 我们的 他的 "
    "一堆 一大堆 一些 各种 一坨 一串 自己"
)

CN_CUT: Final = compile_pattern(
    r"吧|了|呢|啊|吗|嘛|太|的|来|去|做|处理|实现|写|算|画|跑|替代|代替|而|启动|运行|就(?:好|行|够|可以)|即可|发|记|存|部署|打包"
    r"|约|订|装|传|聊|通知|沟通|开会"
)

VALUE_STOP: Final = _words(
    "not you on in at for but and so because since instead rather than which with from by when if "
    "this that here there your i we behind via through btw though ago after before until inclusive exclusive "
    "now only"
)

# A Chinese unit or date part that stays with the figure before it ("60 秒", "5 月").
CN_UNIT: Final = compile_pattern(
    r"(?:万|亿|千|百)(?:元|块|人|个|次|行|条)?"
    r"|(?:分钟|小时|毫秒|公里|公斤|千克|厘米|毫米|年|月|日|号|点|分|秒|天|周|元|块|个|次|岁|核|倍|人|行|条|页|字|米|克|层|楼|度)"
)

# A unit of measure after a figure stays with it: "200 g", "100 degrees", "30 ms".
MEASURE_UNIT: Final = _words(
    "ms s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks "
    "month months year years g kg mg lb lbs oz km m cm mm mi ft in degree degrees °c °f kb mb gb tb "
    "kib mib gib px pt em rem usd eur gbp rmb cny jpy percent"
)

# "18 号啦": a sentence particle after a figure's unit is not part of the value.
CN_PARTICLES: Final = frozenset("啦了吧呢哦呀嘛哈的")

# "你把李总写成王总了": the right value is the one the agent replaced.
WROTE_AS: Final = compile_pattern(
    r"你\s{0,2}(?:把|将)\s{0,2}([^，。？！,.?!\s]{1,20}|[A-Za-z0-9][\w.@/-]{0,30})\s{0,2}"
    r"(?:写|打|拼|记|算|填|标|说|翻译|译|改|弄)成"
)

# The verb before a tool name ("prefer 用 Obsidian"): skipped by the phrase grabber.
CN_USE_VERBS: Final = frozenset({"用", "使用", "改用", "换用"})

CN_EVENT_VERB: Final = compile_pattern(
    r"(?:落地|起飞|出发|到达|到|开始|结束|截止|见面|开会|举行|上线|发布|要|值班|上班|交|到期)$"
)

PREFER_FORWARD: Final = (
    compile_pattern(
        r"(?<![不别])(?:改用|换成|换用|统一用|统一放|统一存|统一走|一律用|一律放|都用|还是用|就用|改成用|最好用|建议用|推荐用|请用|请使用|应该用|要用|得用|"
        r"以后用|以后都用|直接用|(?<!替)换(?!过去|回|掉)|直接(?=\s{0,2}[A-Za-z`]))\s{0,2}"
        # "上 Kubernetes 吧", "推荐 Poetry", "数据库选 PostgreSQL", "还是 MySQL 稳".
        r"|^\W{0,3}(?:直接|还是|干脆)?上\s{0,2}(?=[A-Za-z`])|(?:推荐|建议|倾向于|倾向|选用|改选|选)(?:用)?\s{0,2}(?=[A-Za-z`])"
        r"|还是\s{0,2}(?=[A-Za-z`])|(?:我们|咱们|团队|公司)(?:这边|一直|都|习惯|一般|统一)?(?:都)?用\s{0,2}"
        r"|(?:直接|干脆)上\s{0,2}(?=[A-Za-z`])|(?:\bswitch\s{0,2}|换|迁移?)到\s{0,2}(?=[A-Za-z`])"
        r"|(?:交给|丢给|扔给|交由)\s{0,2}(?=[A-Za-z`])|(?:一律|统一|都)(?:转成|转为|存成|导出成)\s{0,2}(?=[A-Za-z`])"
    ),
    compile_pattern(
        r"\b(?:switch|switching|migrate|migrating|move|moving|port|porting)\s{1,3}(?:it\s{1,3}|this\s{1,3}|"
        r"that\s{1,3}|everything\s{1,3}|back\s{1,3}|over\s{1,3})?to\s{1,3}|\bstick\s{1,3}(?:with|to)\s{1,3}"
        r"|\b(?:go|gone|went)\s{1,3}(?:with|for)\s{1,3}|\bprefer(?:s|red)?\s{1,3}(?:(?:it\s{1,3})?if\s{1,3}(?:you|we)"
        r"\s{1,3}(?:used|use|went\s{1,3}with|switched\s{1,3}to)\s{1,3})?|\bopt(?:ed)?\s{1,3}for\s{1,3}"
        # "I'd have picked R", "my vote is Notion", "I vote for Figma", "better take Compose".
        r"|\b(?:i|we)(?:'d|\s{1,3}would)(?:\s{1,3}have|'ve)\s{1,3}(?:just\s{1,3}|probably\s{1,3})?(?:picked|chosen|"
        r"reached\s{1,3}for)\s{1,3}|\b(?:i|we)\s{1,3}would've\s{1,3}(?:just\s{1,3}|probably\s{1,3})?(?:picked|"
        r"chosen)\s{1,3}|\bmy\s{1,3}(?:pick|choice|vote|preference|recommendation)\s{1,3}(?:would\s{1,3}be|is|"
        r"goes\s{1,3}to)\s{1,3}|\bi\s{1,3}vote\s{1,3}(?:for\s{1,3})?|^\W{0,3}(?:better|best)\s{1,3}(?:to\s{1,3})?"
        r"(?:take|pick|choose)\s{1,3}"
        r"|\brather\s{1,3}(?:you\s{1,3})?(?:use|used|go\s{1,3}with|went\s{1,3}with)\s{1,3}"
        r"|\bwhy\s{1,3}not\s{1,3}(?:just\s{1,3})?(?:use\s{1,3}|try\s{1,3})?"
        # "switch the retry logic over to `tenacity`", "replace moment with date-fns".
        r"|\b(?:switch|migrate)\s{1,3}(?:the\s{1,3}|our\s{1,3}|all\s{1,3}|"
        r"my\s{1,3})?(?:[\w.-]{1,20}\s{1,3}){1,3}(?:over\s{1,3})?to\s{1,3}"
        r"|\breplace\s{1,3}(?:the\s{1,3}|all\s{1,3}|our\s{1,3})?[^,.;!?\n]{1,40}?\swith\s{1,3}"
        # "with docker compose please", "make it a bash script instead".
        r"|^\W{0,3}(?:with|via|using|through|in)\s{1,3}(?=[^,.;!?\n]{1,50}\s(?:please|pls|plz|"
        r"instead)\W{0,3}$)"
        r"|\bmake\s{1,3}(?:it|this|that|them)\s{1,3}(?:a|an|into)\s{1,3}(?=[^,.;!?\n]{1,50}\sinstead\b)"
        # "let's do a dataclass, not …"; "no, not mysql — mariadb".
        r"|\b(?:let's|lets|let\s{1,3}us)\s{1,3}(?:just\s{1,3})?(?:do|try|pick|"
        r"take)\s{1,3}(?=[^,.;!?\n]{1,40}?[,，]?\s{0,3}\bnot\b)"
        r"|^\W{0,3}(?:(?:no|nope|nah)\W{1,3})?not\s{1,3}[A-Za-z`][\w.`+#/-]{0,30}\s{0,3}(?:[,;—–]|"
        r"\s-{1,2}\s)\s{0,3}"
    ),
    compile_pattern(
        r"(?<!\b(?:stop|quit|avoid|avoiding|don't|dont|not|never)\s{1,3})\b(?:use|using|used)\s{1,3}"
    ),
    compile_pattern(
        r"\b(?:do|write|rewrite|implement|redo|build|vectori[sz]e|parse|handle|manage|format|lint|test|plot|"
        r"script|run)\b.{0,30}?\b(?:with|using|in|via)\s{1,3}"
    ),
    compile_pattern(r"\bjust\s{1,3}(?=[a-z][\w.-]{1,20}\s{1,3}(?:it|this|that|them)\b)"),
    # "via Slack", "through Calendly": the channel to go through.
    compile_pattern(r"\b(?:via|through)\s{1,3}(?=(?:the\s{1,3}|a\s{1,3})?[A-Z`])"),
    # "swap the bash script for a Makefile target".
    compile_pattern(r"\bswap\s{1,3}(?:out\s{1,3})?[^,.;!?\n]{1,40}?\s(?:for|with)\s{1,3}"),
    # Not after 要: "不要用 for 迴圈" avoids, it does not prefer.
    compile_pattern(r"(?<![没有不可能费作应调引备通专常信使试采享所我他她们在还再就好别要够])用\s{0,2}"),
    compile_pattern(r"(?<!\bno\s{1,3})\bmore\s{1,3}|走(?!了|吧|啦|过|开)\s{0,2}"),
    # Habits: "reach for X", "default to X", "keep using X", "we do X, no Y", "统一放 X",
    # "from now on, `X` for …".
    compile_pattern(
        r"(?<!\b(?:stop|quit|don't|dont|never)\s{1,3})\b(?:reach\s{1,3}for|default\s{1,3}to|"
        r"stay\s{1,3}(?:with|on))\s{1,3}"
        r"|\bwe\s{1,3}(?:always\s{1,3})?do\s{1,3}(?=[^,.;\n]{1,40}[,;]\s{0,3}(?:no|not|never)\b)"
        r"|(?:统一|一律|都)(?:放|存|走|发|记|写到|放到|存到)\s{0,2}"
        r"|\b(?:from\s{1,3}now\s{1,3}on|going\s{1,3}forward)\W{1,3}(?=`)"
    ),
    # "try polars for this".
    compile_pattern(r"\btry\s{1,3}(?:using\s{1,3})?"),
)

PREFER_BACKWARD: Final = (
    compile_pattern(
        r"\s(?:works?|is|are)\s{1,3}(?:way\s{1,3}|much\s{1,3}|far\s{1,3}|a\s{1,3}lot\s{1,3})?"
        r"(?:better|faster|simpler|enough|plenty|easier|cheaper|quicker|safer|lighter|more\s{1,3}(?:reliable|"
        r"familiar|readable|standard|"
        r"common|idiomatic))\b"
    ),
    compile_pattern(
        r"[,，]\s{0,3}not\s{1,3}\w|\s{0,2}>{1,2}\s{0,2}[A-Za-z`]|\s(?:is|are)\s{1,3}what\s{1,3}(?:we|i)\b"
    ),
    # "pathlib please", "native array methods are fine", "a bar chart would read better",
    # "we're a Terraform shop": the tool named before its praise.
    compile_pattern(
        r"\s(?:please|pls|plz)\b|\s(?:is|are)\s{1,3}(?:fine|good\s{1,3}enough)\b|\s(?:would|will|might|"
        r"could)\s{1,3}(?:read|look|work|be|fit)\s{1,3}"
        r"(?:way\s{1,3}|much\s{1,3}|a\s{1,3}lot\s{1,3})?better\b|\s(?:shop|house)\b"
        # "R would be my pick", "Pandas should be used here", "wouldn't rsync be simpler?".
        r"|\s(?:might|may|would|could)\s{1,3}be\s{1,3}(?:a\s{1,3})?(?:better|more\s{1,3}suitable)\s{1,3}(?:fit|"
        r"choice|option|bet|tool|pick)\b|\sis\s{1,3}(?:a|the)\s{1,3}better\s{1,3}(?:fit|choice|option|bet|pick)\b"
        r"|\s(?:would\s{1,3}be|is|'d\s{1,3}be)\s{1,3}my\s{1,3}(?:pick|choice|preference|go-to|vote|"
        r"first\s{1,3}choice|recommendation)\b|\s(?:should|must|has\s{1,3}to|needs\s{1,3}to|ought\s{1,3}to)"
        r"\s{1,3}be\s{1,3}(?:used|preferred)\b|\sbe\s{1,3}(?:a\s{1,3}(?:lot|bit)\s{1,3}|much\s{1,3}|way\s{1,3}|"
        r"far\s{1,3})?(?:simpler|easier|better|faster|cleaner|safer|quicker)\b"
    ),
    # "Postgres over MySQL", "DOIs rather than URLs", "PostgreSQL 比 MySQL 好用".
    compile_pattern(
        r"\s(?:over|rather\s{1,3}than)\s{1,3}(?=[\w`])|\s{0,2}比\s{0,2}(?=[A-Za-z`])|\sinstead\b(?!\s{1,3}of)"
    ),
    # "shell 脚本就够了", "Docker Compose 就行", "fetch 就够用了".
    compile_pattern(r"(?<=[\w`脚本]\s{0,2})不?(?:就够了|就够用了|就足够了|就行|就可以了|足够了)"),
    # "GitHub Actions is our standard", "mariadb, that's what prod runs".
    compile_pattern(
        r"\s(?:is|are)\s{1,3}(?:our|the\s{1,3}(?:team's|house|company))\s{1,3}(?:standard|default|go-to|"
        r"convention|norm)\b"
        r"|\s(?:is|are)\s{1,3}(?:the\s{1,3})?(?:standard|default)\s{1,3}(?:here|in\s{1,3}this)\b"
        # "BeautifulSoup is made for this".
        r"|\s(?:is|are)\s{1,3}(?:made|built|designed|meant)\s{1,3}for\s{1,3}(?:this|that|exactly\s{1,3}this)\b"
        r"|\s{0,2}[,，]\s{0,3}(?:that's|that\s{1,3}is|it's|it\s{1,3}is|thats)\s{1,3}what\s{1,3}"
    ),
)

AVOID_FORWARD: Final = compile_pattern(
    # "no need to pull in click", "don't add the toml package", "replace moment with …",
    # "prefer f-strings to string concatenation", "不需要自己寫解析器", "别自己写 threading".
    r"\b(?:no\s{1,3}need\s{1,3}to|(?:don't|do\s{1,3}not|dont|never)(?:\s{1,3}(?:need\s{1,3}to|"
    r"bother))?)\s{1,3}(?:pull\s{1,3}in|add|install|"
    r"import|bring\s{1,3}in|introduce|depend\s{1,3}on|use|vendor)\s{1,3}"
    r"|\breplace\s{1,3}(?:all\s{1,3}|our\s{1,3})?(?=[^,.;!?\n]{1,40}?\swith\b)"
    r"|\bprefer(?:s|red)?\s{1,3}(?!to\b|using\b)[^,.;!?\n]{1,40}?\sto\s{1,3}(?!(?:be|use|have|keep|do|go|see|"
    r"get)\b)"
    r"|(?:不需要|不用|没必要|无需|不必|别再?|不要再?)\s{0,2}(?:自己|手动)\s{0,2}(?:写|搞|弄|造|实现|撸|拼|用)?\s{0,2}"
    r"|^\W{0,3}(?:(?:no|nope|nah)\W{1,3})?not\s{1,3}(?=[A-Za-z`][\w.`+#/-]{0,30}\s{0,3}(?:[,;—–]|\s-{1,2}\s))"
    r"|\b(?:let's|lets|let\s{1,3}us)\s{1,3}not\s{1,3}(?:use|go\s{1,3}with|add|pull\s{1,3}in|bring\s{1,3}in)\s{1,3}"
    r"|\b(?:stop|quit)\s{1,3}using\s{1,3}|\b(?:don't|do\s{1,3}not|dont|never)\s{1,3}use\s{1,3}"
    r"|\bavoid(?:ing)?\s{1,3}(?:using\s{1,3})?|\bno\s{1,3}more\s{1,3}|\bditch(?:ing)?\s{1,3}|\bdrop\s{1,3}"
    r"|\bskip\s{1,3}|\bget\s{1,3}rid\s{1,3}of\s{1,3}|\bno\s{1,3}need\s{1,3}for\s{1,3}"
    r"|\binstead\s{1,3}of\s{1,3}(?:using\s{1,3})?|\brather\s{1,3}than\s{1,3}(?:using\s{1,3})?"
    r"|\b(?:picked|chose|went\s{1,3}with)\s{1,3}|\b(?:switch(?:ing)?|mov(?:e|"
    r"ing)\s{1,3}away)\s{1,3}from\s{1,3}"
    r"|[,，]\s{0,3}not\s{1,3}(?:plain\s{1,3}|using\s{1,3}|with\s{1,3})?"
    r"|(?:别再?|不要再?|停止|不再|勿)\s{0,2}(?:用|使用|写)?\s{0,2}|而不是\s{0,2}(?:用)?|而非|(?<!为什么|为啥|何不)不用\s{0,2}(?=[A-Za-z`])"
    r"|(?<=[，,]\s{0,2})不用\s{0,2}(?=[\u4e00-\u9fff])(?!写|搞|弄|手写|起|装|开|跑|搭|引入|上|加|换|自己|手动)"
    r"|\b(?:don't|do\s{1,3}not|dont)\b.{0,40}?\b(?:with|using|via)\s{1,3}|\bless\s{1,3}|不用(?:写|搞|弄|手写|起|装|开|"
    r"跑|搭|引入)\s{0,2}|没必要\s{0,2}(?:上|用|引入|装|搞)\s{0,2}"
    r"|[,，;]\s{0,3}no\s{1,3}(?!need\b|more\b|longer\b)|\b(?:off|away\s{1,3}from)\s{1,3}(?=[A-Za-z`])"
    r"|\bswap\s{1,3}(?:out\s{1,3})?|\bbetter\s{1,3}than\s{1,3}|不用(?:上|加|换)\s{0,2}|\b(?:stop|"
    r"quit)\s{1,3}(?:reaching\s{1,3}for|pulling\s{1,3}in|"
    r"relying\s{1,3}on|defaulting\s{1,3}to)\s{1,3}|\b(?:don't|do\s{1,3}not|dont)\s{1,3}(?:hand|give|"
    r"send)\s{1,3}me\s{1,3}"
)

AVOID_BACKWARD: Final = compile_pattern(
    r"\s{0,3}(?:is|are)\s{1,3}(?:way\s{1,3}|too\s{1,3}|so\s{1,3}|really\s{1,3}|just\s{1,3}|kinda\s{1,3}|"
    r"painfully\s{1,3}|"
    r"super\s{1,3}|pretty\s{1,3}|very\s{1,3}|terribly\s{1,3}|incredibly\s{1,3}|unbearably\s{1,3}){0,2}"
    r"(?:overkill|flaky|slow|clunky|bloated|deprecated|unreliable|outdated|ugly|a\s{1,3}pain|painful|"
    r"error-prone|brittle|"
    r"unreadable|hard\s{1,3}to\s{1,3}(?:read|maintain|debug)|banned|forbidden|not\s{1,3}allowed)\b"
    r"|\s{0,3}keeps\s{1,3}(?:stalling|failing|crashing|hanging|breaking|dying)\b"
    r"|\s{0,3}takes\s{1,3}forever"
    # "pandas chokes on the 4GB file", "memcached isn't available", "threads make the shutdown logic messy".
    r"|\s(?:chokes|choked|falls\s{1,3}over|struggles\s{1,3}with|can't\s{1,3}handle)\b"
    r"|\s(?:can't|cannot|doesn't|does\s{1,3}not|won't)\s{1,3}(?:do|handle|support|scale\s{1,3}to)\b"
    r"|\s(?:isn't|is\s{1,3}not|aren't|are\s{1,3}not)\s{1,3}(?:available|installed|supported|allowed|"
    r"an\s{1,3}option|maintained)\b"
    r"|\s(?:make|makes|made)\s{1,3}(?:the\s{1,3}|it\s{1,3}|everything\s{1,3}|this\s{1,3}|"
    r"our\s{1,3})?(?:[\w-]{1,20}\s{1,3}){0,2}"
    r"(?:messy|messier|harder|painful|slower|complicated|brittle|fragile|ugly|uglier|unreadable|flaky)\b"
    # "webpack 配置太折腾了", "Teams 老是 lag", "SQLite 扛不住", "Python 性能不够", "axios 没必要",
    # "Selenium too flaky".
    r"|\s{0,3}(?:配置|没类型|性能|速度)?\s{0,2}太(?:折腾|坑|费)|\s{0,3}(?:老是|总是|经常)\s{0,2}(?:lag|卡|崩|挂|掉线|断|出错|报错|"
    r"crash)|\s{0,3}太难(?:维护|懂|读|调试|改|配)|\s{0,3}(?:扛不住|撑不住|顶不住|没必要)|\s{0,3}(?:性能|速度)不够|\s{1,3}too\s{1,3}(?:flaky|slow|heavy|buggy|"
    r"clunky)\b"
    r"|\s{0,3}太(?:丑|慢|重|麻烦|难用|老|复杂|啰嗦|笨|卡|乱|散)|\s{0,3}(?:不支持|不兼容|"
    r"不稳定|有\s{0,2}bug)"
)

# "logging 换成 structlog": what is replaced comes before 换成 (tried after the complaints above:
# "换成 uv 吧，pip 装依赖太慢了" avoids pip).
AVOID_REPLACED: Final = compile_pattern(r"\s{0,2}(?:换成|改成|替换成|换为|改为)\s{0,2}(?=[A-Za-z`])")

# "为啥要用 Redux，context 不就够了": the tool asked about is avoided, the one after it preferred.
CN_WHY_THEN_ENOUGH: Final = compile_pattern(
    r"为(?:什么|啥)(?:要)?(?:用|上|引入)(?P<tool>\s{0,2}[^？?。]{1,30}?)(?P<enough>\s{0,2}不就(?:够了|行了|可以了|好了))"
)

# A why-question: in "why are you using X? Y is what we use", X is the one to avoid.
WHY_QUESTION: Final = compile_pattern(r"\bwhy\b[^?\n]{0,80}\?")

# "you wrote Monday but it's Tuesday": where the stated value starts in a "you did X" clause.
BUT_STATED: Final = compile_pattern(r"\s(?:but|while|whereas)\s{1,3}(?=(?:it|the|this|that|they)\b)")

# A clause that is only a lead-in ("also, log every retry"): the requirement is in the next one.
LEAD_INS: Final = _words("also and plus oh 另外 此外 同时 还有 顺便 而且")

VALUE_BEFORE_NOT: Final = compile_pattern(r"\s{0,3}[,，]?\s{0,3}(?:\bnot\b|而不是|不是|不在|不叫|不姓)")

COPULA: Final = compile_pattern(
    r"\b(?:lives|located|stored|sits|is)\s{1,3}(?:in|at|under)\s{1,3}"
    # "the flight lands at 7:40": the value is when.
    r"|\b(?:lands|arrives|departs|leaves|starts|begins|ends|opens|closes|fires|kicks\s{1,3}off|is\s{1,3}due|"
    r"takes\s{1,3}off|'s\s{1,3}due|due)\s{1,3}"
    r"(?:at|on|by)\s{1,3}(?=\d|(?:mon|tues|wednes|thurs|fri|satur|sun)day\b)"
    # "it was written by Ines Duarte": the value is who.
    r"|\b(?:was|were|is|are)\s{1,3}(?:actually\s{1,3})?(?:written|authored|created|made|built|designed|"
    r"painted|composed|directed|"
    r"developed|maintained|published|founded|signed|owned|run|invented|discovered)\s{1,3}by\s{1,3}"
    r"|(?:\b(?:is|are|was|were)|'s)\s{1,3}(?:(?:actually\s{1,3})?(?:spelled|spelt|called|named)\s{1,3}|"
    r"on\s{1,3}|at\s{1,3})?"
    r"(?:port\s{1,3})?"
    # "prod runs Python 3.11": a version stated with its runtime.
    r"|\b(?:runs|targets)\s{1,3}(?=(?:[A-Za-z][\w+-]{0,20}\s{1,3})?v?\d)"
    r"|(?<![这那还就但不总可要于若倒凡像也都])(?<!(?<![预打计])算)(?:是|叫|在|为|姓)\s{0,2}"
)

YOU_CLAUSE: Final = compile_pattern(r"\W{0,3}(?:you\b|你)")

CONNECTIVE: Final = compile_pattern(
    r"(?:\bbut\s{1,3}(?:with\s{1,3}(?=(?:no|zero)\b))?|\G\W{0,3}(?:(?:ok(?:ay)?|fine|good|great|sure|yes|yep|"
    r"nice|cool|now)\W{1,3})?"
    r"(?:and|also|plus)\s{1,3})(?:(?:please|also|then|now)\s{1,3}){0,2}"
    r"|(?:但是|不过|可是|但|只是)\s{0,2}|\G\W{0,3}(?:另外|此外|同时|而且|并且|还有|顺便)\s{0,2}"
    # "fine, just keep …", "great. please also add …": softeners before the requirement.
    # "it would be nice if it also handled nulls": the wish frames the requirement.
    r"|\G\W{0,3}(?:it\s{1,3}would|it'd|would)\s{1,3}be\s{1,3}(?:nice|great|good|ideal|helpful|better)\s{1,3}if\s{1,3}"
    r"(?:it|you|we)\s{1,3}(?:could\s{1,3})?(?:also\s{1,3})?"
    # "could you also make it work offline?", "kindly also include …", "ideally under 100 words".
    r"|\G\W{0,3}(?:just|please|kindly|ideally|preferably|(?:could|can|would|will)\s{1,3}(?:you|u)"
    r"(?:\s{1,3}(?:please|kindly))?)\s{1,3}(?:also\s{1,3})?(?![^,.;!?\n]{0,60}\b(?:but|without)\b)"
    # "do it without adding new dependencies": the requirement is the "without" part.
    r"|\G\W{0,3}(?:just\s{1,3}|please\s{1,3})?(?:do|redo|make|write|build|rewrite|run)\s{1,3}(?:it|this|that|"
    r"them)\s{1,3}"
    r"(?=without\b|with\s{1,3}(?:no|zero|only)\b)"
    # "改的时候别把老接口删了", "继续吧 只处理华东区": the occasion or the go-ahead before the requirement.
    r"|\G\W{0,3}[^，。？！,.?!\s]{1,8}?(?:的时候|之前|之后)\s{0,2}"
    r"|\G\W{0,3}(?:继续|好|行|可以|嗯|ok)(?:吧|的)?\W{1,3}(?=只|仅|别|不要|不能)"
    r"|\G\W{0,3}(?:下次|以后|今后)\s{0,2}(?=记得|要|别|不要|先)"
)

EN_MODAL: Final = compile_pattern(
    r"\b(?:must|needs?\s{1,3}to|has\s{1,3}to|have\s{1,3}to|got\s{1,3}to|should(?:\s{1,3}also)?|"
    r"make\s{1,3}sure(?:\s{1,3}(?:that|to))?|ensure(?:\s{1,3}that)?|remember\s{1,3}to|"
    r"don't\s{1,3}forget\s{1,3}to|be\s{1,3}sure\s{1,3}to|be\s{1,3}careful|take\s{1,3}care)\s{1,3}"
)

CN_MODAL: Final = compile_pattern(
    r"\s{0,2}(?:也|还|都)?\s{0,2}(?:要|得|需要|必须|务必|记得|一定要|确保|请|make\s{1,3}sure(?:\s{1,3}(?:that|to))?)\s{0,2}"
    r"|\s{0,2}(?:这次|这回|本次|这里)\s{0,2}(?=只|仅)|\s{0,2}(?:能不能|可不可以|能否|可否)\s{0,2}(?=别|不要)"
)

# "preserve the timestamps when you copy them": the occasion is not part of the requirement.
TRAILING_OCCASION: Final = compile_pattern(
    r"\s(?:when|whenever|before|after|once|while)\s{1,3}(?:you|it|they|we|i|this|that|the\s{1,3}\w{1,20})\b"
    # "… be idempotent since we rerun it on every deploy": the reason is not the requirement.
    r"|\s(?:since|because|cause|cuz)\s{1,3}(?:we|it|they|you|i|this|that|our|the\s{1,3}\w{1,20}\s{1,3}(?:is|"
    r"are|was|were|will|has|have|can|does|do))\b"
)

TRAILING_SOFTENER: Final = compile_pattern(
    r"(?:\s{1,3}(?:though|please|pls|thanks|thx|too)|\s{0,2}(?:就行|就好|就可以|即可)?\s{0,2}(?:吧|哦|啊|呀|哈)|"
    r"\s{0,2}(?:就行|就好|就可以|即可))\W{0,3}$"
)
