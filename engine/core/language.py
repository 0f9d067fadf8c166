"""The item's language: ISO 639-1 codes, their English names, and detection from the item's text.

A language is named by its two-letter ISO 639-1 code, in any case (``"FR"`` is ``"fr"``); the
setting ``"auto"`` (the default) detects it. `check_language` reads a setting and raises
`LanguageError` (a `ValueError`) for any other value, naming the value and where it came from.

`detect` asks py3langid, whose model ships inside its package (nothing is downloaded; it is
imported on first use, about half a second, and then takes a fraction of a millisecond per text).
Its own labels that are no ISO 639-1 code are counted with the code they belong to (Cantonese and
Wu Chinese as ``zh``, the Arabic varieties as ``ar``) or left out. It reads the first
`SAMPLE_CHARS` characters of a text, and remembers its answer for the last `CACHED_TEXTS`
distinct samples.

`item_language` settles one item's language: the item's own ``language`` field, else the
setting, else detection from the output text, then the input text; a detection below
`MIN_CONFIDENCE` (short texts such as "Hello World") counts as English. A text that is obviously
English (`obviously_english`: plain ASCII whose words are mostly English function words and none
another language's) is English without asking the detector, so an English item never loads it.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .errors import UserError

__all__ = ["AUTO", "DEFAULT_LANGUAGE", "LANGUAGE_NAMES", "MIN_CONFIDENCE", "ItemLanguage", "LanguageError",
           "SAMPLE_CHARS", "check_language", "detect", "item_language", "language_name", "obviously_english"]

AUTO = "auto"
DEFAULT_LANGUAGE = "en"
#: The least probability (py3langid's normalised probabilities, summed per ISO 639-1 code) a
#: detection needs to count; below it the text counts as English.
MIN_CONFIDENCE = 0.5
#: The first characters of a text detection reads (a longer text adds time, not certainty).
SAMPLE_CHARS = 600
#: How many distinct samples' detections are remembered (a data set repeating a text detects it once).
CACHED_TEXTS = 4096

#: Frequent English function words; `obviously_english` counts them.
_ENGLISH_WORDS = frozenset("""
a about above across after again against all also among an and any are as at be because been
before being below between both but by can could did do does down during each every few for from
had has have he her here him his how i if in into is it its just many may me might more most much must
my no not now of off on once only or other our out over own same she should so some such than
that the their them then there these they this those through to too under until up upon us very
was we were what when where which while who whom why will with within without would yet you your
""".split())
#: Frequent function words of the other languages written in plain ASCII (French, German,
#: Spanish, Italian, Portuguese, Dutch, the Scandinavian languages, Indonesian…) that are no
#: English words: one of them makes a text not obviously English.
_OTHER_WORDS = frozenset("""
aber al alla als auch aus bei bij con cosa da dalla das del della dem den der des det di die doch
dos du ein eine einen einer eines el ella els em en er es est et ett gli het ich ihr il ist la le
les los mais mit nicht och og ons op para pas pela pelo per pero por pour qu que questa questo
qui sich sind som sont sur und una une uno van vous wir y yang zu zijn dan dengan ini itu
""".split())
_WORD = re.compile(r"[a-z']+")
#: The first characters `obviously_english` reads.
_ENGLISH_SAMPLE_CHARS = 300
#: The fewest words a text needs before its function words say anything.
_MIN_WORDS = 8
#: The least share of English function words among a text's words (English prose: 40-55 %).
_MIN_ENGLISH_SHARE = 0.2

_CODES = """
aa Afar|ab Abkhazian|ae Avestan|af Afrikaans|ak Akan|am Amharic|an Aragonese|ar Arabic|as Assamese|av Avaric|
ay Aymara|az Azerbaijani|ba Bashkir|be Belarusian|bg Bulgarian|bi Bislama|bm Bambara|bn Bengali|bo Tibetan|
br Breton|bs Bosnian|ca Catalan|ce Chechen|ch Chamorro|co Corsican|cr Cree|cs Czech|cu Church Slavonic|
cv Chuvash|cy Welsh|da Danish|de German|dv Divehi|dz Dzongkha|ee Ewe|el Greek|en English|eo Esperanto|
es Spanish|et Estonian|eu Basque|fa Persian|ff Fulah|fi Finnish|fj Fijian|fo Faroese|fr French|
fy Western Frisian|ga Irish|gd Scottish Gaelic|gl Galician|gn Guarani|gu Gujarati|gv Manx|ha Hausa|
he Hebrew|hi Hindi|ho Hiri Motu|hr Croatian|ht Haitian Creole|hu Hungarian|hy Armenian|hz Herero|
ia Interlingua|id Indonesian|ie Interlingue|ig Igbo|ii Sichuan Yi|ik Inupiaq|io Ido|is Icelandic|
it Italian|iu Inuktitut|ja Japanese|jv Javanese|ka Georgian|kg Kongo|ki Kikuyu|kj Kuanyama|kk Kazakh|
kl Kalaallisut|km Khmer|kn Kannada|ko Korean|kr Kanuri|ks Kashmiri|ku Kurdish|kv Komi|kw Cornish|
ky Kyrgyz|la Latin|lb Luxembourgish|lg Ganda|li Limburgish|ln Lingala|lo Lao|lt Lithuanian|
lu Luba-Katanga|lv Latvian|mg Malagasy|mh Marshallese|mi Maori|mk Macedonian|ml Malayalam|mn Mongolian|
mr Marathi|ms Malay|mt Maltese|my Burmese|na Nauru|nb Norwegian Bokmål|nd North Ndebele|ne Nepali|
ng Ndonga|nl Dutch|nn Norwegian Nynorsk|no Norwegian|nr South Ndebele|nv Navajo|ny Chichewa|oc Occitan|
oj Ojibwa|om Oromo|or Odia|os Ossetian|pa Punjabi|pi Pali|pl Polish|ps Pashto|pt Portuguese|qu Quechua|
rm Romansh|rn Rundi|ro Romanian|ru Russian|rw Kinyarwanda|sa Sanskrit|sc Sardinian|sd Sindhi|
se Northern Sami|sg Sango|si Sinhala|sk Slovak|sl Slovenian|sm Samoan|sn Shona|so Somali|sq Albanian|
sr Serbian|ss Swati|st Southern Sotho|su Sundanese|sv Swedish|sw Swahili|ta Tamil|te Telugu|tg Tajik|
th Thai|ti Tigrinya|tk Turkmen|tl Tagalog|tn Tswana|to Tongan|tr Turkish|ts Tsonga|tt Tatar|tw Twi|
ty Tahitian|ug Uyghur|uk Ukrainian|ur Urdu|uz Uzbek|ve Venda|vi Vietnamese|vo Volapük|wa Walloon|
wo Wolof|xh Xhosa|yi Yiddish|yo Yoruba|za Zhuang|zh Chinese|zu Zulu
"""
LANGUAGE_NAMES: dict[str, str] = dict(
    entry.strip().split(" ", 1) for entry in _CODES.replace("\n", "").split("|") if entry.strip())
"""Every ISO 639-1 code → the language's English name (``{"fr": "French", …}``)."""

#: py3langid's labels that are no ISO 639-1 code → the code they count for.
_DETECTOR_CODES = {"yue": "zh", "wuu": "zh", "ary": "ar", "arz": "ar", "uzs": "uz", "gug": "gn", "sdh": "ku"}


class LanguageError(UserError, ValueError):
    """A language setting that is neither ``auto`` nor an ISO 639-1 code; the message names it."""


def check_language(value: Any, where: str = "language", *, auto: bool = True) -> str:
    """`value` as a setting: ``"auto"`` (when `auto` allows it) or a lower-case ISO 639-1 code
    (``"FR"`` → ``"fr"``); a language tag with a region or script (``"zh-CN"``, ``"fr_FR"``,
    ``"zh-Hant-TW"``) gives its language's code. Raises `LanguageError` naming `where` for
    anything else (a three-letter code, a language's name, a non-string)."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text in LANGUAGE_NAMES or auto and text == AUTO:
        return text  # type: ignore[return-value]
    primary = text.replace("_", "-").split("-", 1)[0] if text and ("-" in text or "_" in text) else None
    if primary in LANGUAGE_NAMES:
        return primary  # type: ignore[return-value]
    named = {name.lower(): code for code, name in LANGUAGE_NAMES.items()}
    hint = f" (did you mean {named[text]!r}?)" if text in named else ""
    expected = "auto or " if auto else ""
    raise LanguageError(f"{where}: {value!r} is not a language code; give {expected}a two-letter ISO 639-1 code "
                        f"such as en, fr, de, es, zh, ja{hint}")


def language_name(code: str) -> str:
    """The English name of an ISO 639-1 code (``"ja"`` → ``"Japanese"``); `KeyError` for another."""
    return LANGUAGE_NAMES[code]


_identifier: Any = None
_identifier_lock = threading.Lock()
_code_of_column: Any = None  # py3langid's score columns → position in _column_codes (the last: no code)
_column_codes: list[str] = []


def _detector() -> Any:
    """py3langid's identifier with normalised probabilities, loaded once (thread-safe), and the
    ISO 639-1 code each of its score columns counts for."""
    global _identifier, _code_of_column, _column_codes
    if _identifier is None:
        with _identifier_lock:
            if _identifier is None:
                import numpy as np
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                codes = [_DETECTOR_CODES.get(label, label) for label in identifier.nb_classes]
                _column_codes = list(dict.fromkeys(code for code in codes if code in LANGUAGE_NAMES))
                position = {code: i for i, code in enumerate(_column_codes)}
                _code_of_column = np.array([position.get(code, len(_column_codes)) for code in codes])
                _identifier = identifier
    return _identifier


def obviously_english(text: str) -> bool:
    """Whether the first 300 characters of `text` are obviously English: plain ASCII,
    at least 8 words, at least 20 % of them English function words (``the``, ``of``, ``and``,
    ...) and none a function word of another language written in ASCII (``der``, ``les``,
    ``que``, ...). A text that is not may still be English: the detector decides it."""
    sample = text[:_ENGLISH_SAMPLE_CHARS]
    if not sample.isascii():
        return False
    words = _WORD.findall(sample.lower())
    if len(words) < _MIN_WORDS or not _OTHER_WORDS.isdisjoint(words):
        return False
    english = sum(map(_ENGLISH_WORDS.__contains__, words))
    return english >= _MIN_ENGLISH_SHARE * len(words)


def detect(text: str) -> tuple[str, float] | None:
    """The most likely ISO 639-1 code of `text` (its first `SAMPLE_CHARS` characters) and its
    probability in [0, 1] (py3langid's normalised probabilities, summed per code), or None for a
    text with no letters to read. The answer for a sample is remembered (`CACHED_TEXTS`)."""
    return _detect_sample(text[:SAMPLE_CHARS])


@lru_cache(maxsize=CACHED_TEXTS)
def _detect_sample(sample: str) -> tuple[str, float] | None:
    if not any(ch.isalpha() for ch in sample):
        return None
    import numpy as np

    # the per-column probabilities py3langid ranks (an alias's column already folded into its
    # label's; its ``_decide``, py3langid 0.4 as pinned), summed per code in one pass: a third of
    # the time of ranking them
    scores = _detector()._decide(sample)
    sums = np.bincount(_code_of_column, weights=scores, minlength=len(_column_codes) + 1)[:-1]
    if not len(sums):
        return None
    best = int(sums.argmax())
    return _column_codes[best], min(1.0, max(0.0, float(sums[best])))


@dataclass(frozen=True)
class ItemLanguage:
    """One item's language: `code` (ISO 639-1), whether it was `detected` (else given by the item
    or the setting), and its English `name`."""

    code: str
    detected: bool

    @property
    def name(self) -> str:
        return LANGUAGE_NAMES[self.code]


def item_language(setting: str, given: Any, output_text: str, input_text: str) -> ItemLanguage:
    """The item's language: `given` (the item's ``language`` field, when not None or empty) wins,
    then `setting` (a code, or ``"auto"``); with ``auto`` the output text is detected, then the
    input text, and a text too short or mixed to tell (`MIN_CONFIDENCE`) counts as English; an
    obviously English text (`obviously_english`) is English without the detector. Raises
    `LanguageError` for a `given` value that is no code (the item's error)."""
    if given is not None and not (isinstance(given, str) and not given.strip()):
        code = check_language(given, "the item's language field")
        if code != AUTO:
            return ItemLanguage(code, False)
    if setting != AUTO:
        return ItemLanguage(setting, False)
    for text in (output_text, input_text):
        if obviously_english(text):
            return ItemLanguage(DEFAULT_LANGUAGE, True)
        found = detect(text) if text.strip() else None
        if found is not None and found[1] >= MIN_CONFIDENCE:
            return ItemLanguage(found[0], True)
    return ItemLanguage(DEFAULT_LANGUAGE, True)
