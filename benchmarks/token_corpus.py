"""The text samples that fit_tokens.py fits on and bench_tokens.py measures on.

Everything comes from this machine, offline: Python's standard library (source,
docstrings and the pydoc topics under sys.prefix), the licence texts, package
READMEs and vim's tutors under /usr/share, the message catalogues of installed
programs (/usr/share/locale/*/LC_MESSAGES/*.mo, read with the gettext module),
C headers, the JavaScript that ships with npm, and the Chinese paragraphs
written for this file (ZH_WRITTEN). Sources that are missing are skipped, so
the corpus shrinks on a bare machine but never fails.

Every document goes to exactly one split, "fit" or "test", by a hash of its
name, so the benchmark never measures on text the weights were fitted on.
Documents are cut into samples of 150 to 6,000 characters (log-uniform, at line
ends where possible), the sizes of the messages ctxd stores. "mixed" samples are
chat-like messages assembled from the same split's Chinese, English and code.
"""

import ast
import glob
import gzip
import os
import random
import sys
import zlib

EMOJI = "😀😂🤔👍👎🙏🎉🔥✨✅❌⚠️🚀💡📌📝🐛🤖❤️😅😭👀💯🙂🥲🤷"

CATEGORIES = ("english", "chinese", "code", "mixed")
EXTRA = ("other-languages", "data")  # fitted too; reported without a target

ZH_WRITTEN = [
    "今天下午我们把数据库从旧服务器迁移到了新集群，整个过程比预想的顺利。迁移前先做了一次完整备份，"
    "然后停掉写入，同步增量日志，最后切换域名。唯一的问题是有两张表的索引没有重建，导致查询变慢，"
    "重建之后响应时间恢复到了二十毫秒左右。",
    "这个函数的问题在于它在循环里重复打开文件。每次调用都会读取整个配置，然后只取其中一个字段。"
    "更好的做法是在启动时读取一次，把结果缓存起来，后面直接使用缓存。如果配置文件被修改了，"
    "可以根据修改时间判断是否需要重新加载。",
    "周末去了一趟杭州，住在西湖边上的一家小旅馆。早上六点起床沿着苏堤散步，湖面上还有一层薄雾，"
    "远处的雷峰塔若隐若现。中午吃了龙井虾仁和东坡肉，味道比想象中清淡。下午下起了小雨，"
    "我们就在茶馆里坐了两个小时，听隔壁桌的老人聊天。",
    "请帮我检查一下这段代码为什么在测试环境能通过，在生产环境却报错。我怀疑是时区设置不同导致的，"
    "因为日志里的时间戳差了八个小时。另外，生产环境的依赖版本也比测试环境新一个小版本，不知道有没有影响。",
    "会议纪要：一、下个季度的重点是提升系统稳定性，目标是把故障恢复时间缩短到十五分钟以内。"
    "二、前端团队负责重构登录页面，预计三周完成。三、预算方面，云服务费用需要控制在每月三万元以内，"
    "超出部分需要提前申请。四、下次会议定在周四上午十点。",
    "我不同意把所有的错误都记录成警告。真正的错误应该让程序停下来，并且给用户一条看得懂的提示，"
    "告诉他哪里出了问题、怎么修复。如果只是打印一条警告然后继续运行，问题会被掩盖，"
    "等到数据已经损坏的时候才发现就晚了。",
    "秋天的北京是一年中最好的季节。天空很高很蓝，风不冷不热，香山的红叶也开始变色了。"
    "胡同里的老槐树下，总有几位老人在下象棋，旁边围着一圈看热闹的人，谁也不说话，"
    "只有棋子落在棋盘上清脆的声音。",
    "根据上个月的统计，网站的日均访问量大约是十二万次，其中百分之六十来自移动端。"
    "用户平均停留时间为三分四十秒，跳出率比去年同期下降了五个百分点。"
    "搜索引擎带来的流量占总流量的三分之一左右，社交媒体的占比在持续上升。",
    "之前提到的那个内存泄漏问题已经找到原因了。是因为事件监听器在组件销毁时没有被移除，"
    "每次打开对话框都会多注册一个回调。修复方法很简单，在清理函数里调用移除监听的方法就行。"
    "我已经提交了修改，麻烦你有空的时候看一下。",
    "学习一门新的编程语言，最有效的办法不是从头到尾读完一本书，而是找一个自己真正需要的小项目，"
    "边做边查。遇到不懂的地方再去翻文档，这样记得更牢。当然，基础语法还是要先过一遍，"
    "否则连报错信息都看不懂。",
    "昨天晚上服务器的磁盘空间满了，原因是日志轮转的配置写错了，旧日志一直没有被删除。"
    "我临时清理了三十个吉字节的文件，又把保留天数改成了七天。为了防止再次发生，"
    "还加了一个监控，磁盘使用率超过百分之八十就发告警。",
    "妈妈打电话来说家里的橘子熟了，今年结得特别多，让我国庆节回去帮忙摘。"
    "院子里那棵树是爷爷二十年前种下的，每到秋天就挂满了金黄色的果子。"
    "小时候我最喜欢爬到树上，一边摘一边吃，常常被大人骂。",
    "这份需求文档有几个地方写得不够清楚。第一，导出功能支持哪些格式没有说明；第二，"
    "权限控制是按角色还是按用户来设置；第三，历史数据是否需要迁移。建议在开发之前和产品经理再确认一次，"
    "免得做完之后返工。",
    "人工智能模型的上下文窗口越来越大，但这并不意味着可以把所有内容都塞进去。"
    "信息太多反而会干扰模型的判断，而且每次请求的费用也会随着输入长度增加。"
    "比较好的做法是先对历史对话做摘要，只保留和当前问题相关的部分。",
    "我们的发布流程分为四步：先在本地运行全部测试，然后提交合并请求，等待至少一位同事审核，"
    "最后由持续集成系统自动构建并部署到预发布环境。在预发布环境验证没有问题之后，"
    "才会在晚上流量较低的时候发布到正式环境。",
    "他在这家公司工作了整整十年，从一名普通的实习生成长为技术负责人。"
    "离职的那天，同事们给他准备了一个小小的告别会，大家回忆起当年一起熬夜赶项目的日子，"
    "都有些感慨。他说，最舍不得的不是工作，而是这群人。",
    "如果你只需要统计词数，用标准库就够了，没有必要引入一个很重的依赖。"
    "依赖越多，安装越慢，出问题的地方也越多。尤其是命令行工具，启动速度非常重要，"
    "用户每敲一次命令都要等，多等半秒钟就会觉得卡。",
    "春节前的火车站人山人海，到处都是拖着行李箱的旅客。广播里一遍又一遍地播放着检票信息，"
    "小孩子在人群中跑来跑去，大人们一边看着时刻表一边打电话。虽然拥挤，"
    "但每个人的脸上都带着回家的期待。",
    "测试用例应该覆盖边界情况：空字符串、只有空格的字符串、超长的输入、包含特殊字符的文件名，"
    "还有网络中断、磁盘已满这类异常情况。很多线上故障并不是因为主流程有问题，"
    "而是某个很少出现的分支从来没有被测试过。",
    "这家小饭馆开在学校后门，老板是一对四川来的夫妻。店面不大，只有六张桌子，"
    "但一到饭点就坐满了人。招牌菜是麻婆豆腐和回锅肉，价格便宜，分量也足。"
    "毕业好几年了，我还是会时不时回去吃一顿。",
    "关于缓存失效的问题，我的建议是给每个缓存项加上版本号。数据更新的时候，"
    "只需要把版本号加一，旧的缓存自然就不会再被读到。这样比逐个删除缓存键要可靠，"
    "也不用担心删除操作失败导致数据不一致。",
    "读书的时候老师常说，写文章要先想清楚再动笔。现在写代码也是一样，"
    "如果一开始没有把数据结构设计好，后面就要花很多时间去修补。"
    "宁可在设计阶段多讨论半天，也不要在实现阶段推倒重来。",
    "下周一开始办公室要装修，大概需要两周时间。这段时间大家可以选择在家办公，"
    "或者去三楼的临时会议室。请把个人物品在周五下班前收好，贵重物品自己带走。"
    "如有问题，请联系行政部的王老师。",
    "用户反馈说导入文件的时候程序没有任何反应。查了一下发现是文件编码的问题，"
    "用户的文件是用旧版办公软件导出的，编码不是统一码。我们现在会先尝试自动识别编码，"
    "识别失败的话给出明确的错误提示，而不是直接退出。",
]


# -- reading sources --------------------------------------------------------------

def _read(path):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError, EOFError):
        return None


def _stdlib_dir():
    import sysconfig
    return sysconfig.get_paths()["stdlib"]


def _stdlib_files(limit=None):
    out = []
    for path in sorted(glob.glob(os.path.join(_stdlib_dir(), "**", "*.py"), recursive=True)):
        if "site-packages" in path or "/test" in path or "lib2to3/tests" in path:
            continue
        out.append(path)
    return out[:limit] if limit else out


def _docstrings(source):
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc and len(doc) > 200:
                out.append(doc)
    return out


def _mo_strings(path, which):
    import gettext
    try:
        with open(path, "rb") as f:
            cat = gettext.GNUTranslations(f)._catalog
    except Exception:
        return []
    out = []
    for k, v in cat.items():
        key = k[0] if isinstance(k, tuple) else k
        if not key:
            continue  # the catalogue header
        s = key if which == "msgid" else v
        if isinstance(s, str) and s.strip():
            out.append(s.strip())
    return out


def _mo_docs(lang, which="msgstr"):
    docs = []
    for path in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
        strings = _mo_strings(path, which)
        if strings:
            docs.append((f"mo:{lang}:{os.path.basename(path)}", "\n".join(strings)))
    return docs


def _sections(name, text, marker):
    parts = [p for p in text.split(marker) if p.strip()]
    return [(f"{name}#{i}", marker + p if i else p) for i, p in enumerate(parts)]


def english_docs():
    docs = []
    try:
        from pydoc_data.topics import topics
        docs += [(f"pydoc:{k}", v) for k, v in sorted(topics.items())]
    except ImportError:
        pass
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        text = _read(path)
        if text:
            docs += _sections(f"license:{os.path.basename(path)}", text, "\n\n\n")
    for path in _stdlib_files():
        text = _read(path)
        if text:
            docs += [(f"doc:{path}:{i}", d) for i, d in enumerate(_docstrings(text))]
    for path in sorted(glob.glob("/usr/lib/node_modules/**/README.md", recursive=True)):
        text = _read(path)
        if text:
            docs.append((f"readme:{path}", text))
    for path in sorted(glob.glob("/usr/share/doc/*/README*")):
        text = _read(path)
        if text:
            docs.append((f"readme:{path}", text))
    text = _read("/usr/share/vim/vim90/tutor/tutor")
    if text:
        docs += _sections("tutor:en", text, "Lesson ")
    return docs


def _man_text(path):
    """A man page's troff source as plain text (requests dropped, font escapes removed)."""
    text = _read(path)
    if not text:
        return None
    lines = []
    for line in text.splitlines():
        if line.startswith((".", "'")):
            if line.startswith((".SH", ".SS")):
                lines.append(line[3:].strip().strip('"'))
            continue
        for esc in ("\\fB", "\\fI", "\\fR", "\\fP", "\\|", "\\&", "\\e"):
            line = line.replace(esc, "\\" if esc == "\\e" else "")
        lines.append(line.replace("\\-", "-"))
    return "\n".join(lines)


def chinese_docs():
    docs = [(f"written:{i}", p) for i, p in enumerate(ZH_WRITTEN)]
    for lang in ("zh_CN", "zh_TW"):
        for path in sorted(glob.glob(f"/usr/share/man/{lang}/man*/*.gz")):
            text = _man_text(path)
            if text:
                docs.append((f"man:{path}", text))
    for lang in ("zh_cn", "zh_tw"):
        text = _read(f"/usr/share/vim/vim90/tutor/tutor.{lang}.utf-8")
        if text:
            docs += _sections(f"tutor:{lang}", text, "~~~~~~~~~~")
    docs += _mo_docs("zh_CN") + _mo_docs("zh_TW")
    return docs


def code_docs():
    docs = []
    for path in _stdlib_files():
        text = _read(path)
        if text:
            docs.append((f"py:{path}", text))
    for pattern in ("/usr/include/*.h", "/usr/include/*/*.h", "/usr/include/*/*/*.h"):
        for path in sorted(glob.glob(pattern)):
            text = _read(path)
            if text:
                docs.append((f"c:{path}", text))
    for path in sorted(glob.glob("/usr/lib/node_modules/**/*.js", recursive=True)):
        if ".min." in path or os.path.getsize(path) > 400_000:
            continue
        text = _read(path)
        if text:
            docs.append((f"js:{path}", text))
    for path in sorted(glob.glob("/usr/bin/*")):
        try:
            with open(path, "rb") as f:
                head = f.read(64)
        except OSError:
            continue
        if head.startswith(b"#!") and (b"sh" in head.split(b"\n")[0]):
            text = _read(path)
            if text:
                docs.append((f"sh:{path}", text))
    for path in sorted(glob.glob("/usr/share/vim/vim90/autoload/**/*.vim", recursive=True)):
        text = _read(path)
        if text:
            docs.append((f"vim:{path}", text))
    for path in sorted(glob.glob("/usr/share/doc/git/contrib/**/*.go", recursive=True)):
        text = _read(path)
        if text:
            docs.append((f"go:{path}", text))
    return docs


def other_language_docs():
    docs = []
    for lang in ("ja", "ko", "ru", "de", "fr", "es", "pt_BR", "pl", "tr", "vi", "uk", "ar",
                 "he", "fa", "hi", "bn", "ta", "th"):
        docs += _mo_docs(lang)
    for lang in ("ja", "ko", "ru", "de", "fr", "el", "vi"):
        text = _read(f"/usr/share/vim/vim90/tutor/tutor.{lang}.utf-8")
        if text:
            docs += _sections(f"tutor:{lang}", text, "~~~~~~~~~~")
    return docs


def data_docs():
    docs = []
    for path in sorted(glob.glob("/usr/lib/node_modules/**/*.json", recursive=True)):
        if os.path.getsize(path) > 400_000:
            continue
        text = _read(path)
        if text:
            docs.append((f"json:{path}", text))
    for path in sorted(glob.glob("/var/log/*.log")) + sorted(glob.glob("/var/log/apt/*.log")):
        text = _read(path)
        if text:
            docs.append((f"log:{path}", text))
    return docs + synthetic_data_docs()


def synthetic_data_docs(n=120):
    """Machine text a tool prints: base64, digests, UUIDs, URLs, number tables, logs."""
    import base64
    import json
    import uuid
    docs = []
    for i in range(n):
        rng = random.Random(f"synthetic:{i}")
        kind = i % 6
        if kind == 0:
            blob = base64.b64encode(rng.randbytes(rng.randint(200, 4000))).decode()
            wrapped = "\n".join(blob[j:j + 76] for j in range(0, len(blob), 76))
            text = wrapped if rng.random() < 0.5 else blob
        elif kind == 1:
            text = "\n".join(f"{rng.randbytes(20).hex()}  {rng.choice(['src', 'lib', 'docs'])}/"
                             f"file{rng.randint(1, 999)}.{rng.choice(['py', 'c', 'md'])}"
                             for _ in range(rng.randint(5, 80)))
        elif kind == 2:
            rows = [{"id": str(uuid.UUID(int=rng.getrandbits(128))),
                     "n": rng.randint(0, 10 ** rng.randint(1, 9)),
                     "ok": rng.random() < 0.5, "score": round(rng.random() * 100, 3)}
                    for _ in range(rng.randint(3, 40))]
            text = json.dumps(rows, indent=rng.choice([None, 2]))
        elif kind == 3:
            hosts = ["example.com", "api.github.com", "pypi.org"]
            text = "\n".join(f"https://{rng.choice(hosts)}/"
                             f"{rng.choice(['v1', 'repos', 'simple'])}/{rng.randbytes(4).hex()}"
                             f"?page={rng.randint(1, 50)}&sort=desc"
                             for _ in range(rng.randint(3, 60)))
        elif kind == 4:
            cols = rng.randint(2, 8)
            text = "\n".join(" ".join(f"{rng.uniform(-1e4, 1e4):>12.{rng.randint(0, 5)}f}"
                                      for _ in range(cols)) for _ in range(rng.randint(5, 60)))
        else:
            what = ["request done", "retrying", "cache miss", "timeout after"]
            text = "\n".join(f"2026-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}T"
                             f"{rng.randint(0, 23):02}:{rng.randint(0, 59):02}:"
                             f"{rng.randint(0, 59):02}Z "
                             f"{rng.choice(['INFO', 'WARN', 'ERROR', 'DEBUG'])} "
                             f"[{rng.choice(['http', 'db', 'worker'])}-{rng.randint(1, 9)}] "
                             f"{rng.choice(what)} "
                             f"{rng.randint(1, 5000)}ms pid={rng.randint(100, 99999)}"
                             for _ in range(rng.randint(5, 80)))
        docs.append((f"synthetic:{i}", text))
    return docs


# -- splitting and sampling --------------------------------------------------------

def split_of(doc_id):
    """'test' for about a quarter of the documents, 'fit' for the rest."""
    return "test" if zlib.crc32(doc_id.encode("utf-8")) % 4 == 0 else "fit"


def _cut(text, rng, lo=150, hi=6000):
    """Cut text into pieces of log-uniform length, at line ends where possible."""
    out = []
    pos = 0
    n = len(text)
    while n - pos >= lo:
        want = int(lo * (hi / lo) ** rng.random())
        end = min(n, pos + want)
        if end < n:
            nl = text.rfind("\n", pos + lo, end)
            if nl != -1:
                end = nl + 1
        piece = text[pos:end]
        pos = end
        if piece.strip():
            out.append(piece)
    return out


_LOADERS = {
    "english": english_docs,
    "chinese": chinese_docs,
    "code": code_docs,
    "other-languages": other_language_docs,
    "data": data_docs,
}


PER_DOC = 6


def _pool(category, split, rng, limit):
    docs = [(d, t) for d, t in _LOADERS[category]() if split_of(d) == split]
    pieces = []
    for doc_id, text in docs:
        # At most PER_DOC pieces from one document, so that a few big files
        # (a long header, one large catalogue) cannot make up a category.
        cut = _cut(text, random.Random(doc_id))
        random.Random(doc_id).shuffle(cut)
        pieces += cut[:PER_DOC]
    rng.shuffle(pieces)
    return pieces[:limit]


def _sentences(text):
    out = []
    buf = ""
    for ch in text:
        buf += ch
        if ch in "。！？\n" or (ch in ".!?" and len(buf) > 40):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def _mixed(split, rng, limit):
    zh = [s for p in _pool("chinese", split, random.Random(1), 4000) for s in _sentences(p)]
    zh = [s for s in zh if sum(1 for c in s if "\u4e00" <= c <= "\u9fff") >= 4]
    en = [s for p in _pool("english", split, random.Random(2), 4000) for s in _sentences(p)]
    code = _pool("code", split, random.Random(3), 4000)
    idents = sorted({w for c in code[:400] for w in c.replace("(", " ").split()
                     if w.isidentifier() and len(w) > 3})
    out = []
    for _ in range(limit):
        parts = []
        for _ in range(rng.randint(2, 7)):
            r = rng.random()
            if r < 0.45 and zh:
                s = rng.choice(zh)
                if idents and rng.random() < 0.5:
                    i = rng.randint(0, len(s))
                    s = s[:i] + f" `{rng.choice(idents)}` " + s[i:]
                parts.append(s)
            elif r < 0.7 and en:
                parts.append(rng.choice(en))
            elif code:
                c = rng.choice(code)
                lines = c.splitlines()[: rng.randint(3, 25)]
                parts.append("```\n" + "\n".join(lines) + "\n```")
            if rng.random() < 0.1 and parts:
                parts[-1] += " " + "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))
            if rng.random() < 0.3 and parts:
                unit = rng.choice(["ms", "MB", "%", "行", "次", "个"])
                parts.append(f"{rng.randint(1, 99999)} {unit}")
        if parts:
            out.append(("\n\n" if rng.random() < 0.5 else "\n").join(parts))
    return out


def samples(category, split, limit=800, seed=0):
    """Up to `limit` samples of one category from one split ('fit' or 'test')."""
    rng = random.Random(f"{category}:{split}:{seed}")
    if category == "mixed":
        return _mixed(split, rng, limit)
    return _pool(category, split, rng, limit)


if __name__ == "__main__":  # a quick look: how much each category has
    for cat in CATEGORIES + EXTRA:
        for split in ("fit", "test"):
            s = samples(cat, split, limit=100000)
            print(f"{cat:16} {split:5} {len(s):6} samples {sum(map(len, s)):10} chars",
                  file=sys.stderr)
