"""Token estimates, offline. (The context engine refines and calibrates these.)"""


def _is_cjk(o):
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x3040 <= o <= 0x30FF
            or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FA1F
            or 0x3000 <= o <= 0x303F or 0xFF00 <= o <= 0xFFEF)


def estimate(text):
    """Approximate tokens: CJK ~1.5 per character, other text ~0.25 per character."""
    if not text:
        return 0
    cjk = sum(1 for ch in text if ord(ch) > 0x2FFF and _is_cjk(ord(ch)))
    other = len(text) - cjk
    return int(cjk * 1.5 + other / 4 + 0.999)
