"""The word for password, passphrase, token and secret in other languages.

Written by scripts/build_secret_words.py from the translations of open-source
programs' own prompts (GTK, Linux-PAM, shadow, system-config-printer, GnuPG, git,
psql): see that script for the sources and their licences. Lowercased. Do not edit
by hand: run the script again."""

from __future__ import annotations

# language (the catalogue's locale name) -> kind -> words
WORDS: dict[str, dict[str, tuple[str, ...]]] = {
    "ab": {
        "password": ("ажәамаӡа",),
    },
    "af": {
        "password": ("wagwoord",),
        "secret": ("geheim",),
    },
    "an": {
        "password": ("clau",),
    },
    "ar": {
        "password": ("كلمة السر",),
    },
    "as": {
        "password": (
            "গুপ্তশব্দ",
            "পাছৱৰ্ড",
        ),
        "secret": ("গোপণীয়",),
    },
    "ast": {
        "password": ("contraseña",),
        "secret": ("secretu",),
    },
    "az": {
        "password": ("şifrə",),
    },
    "be": {
        "password": ("пароль",),
        "secret": ("сакрэтна",),
    },
    "be@latin": {
        "password": ("parol",),
        "secret": ("sakretnaje",),
    },
    "bg": {
        "password": ("парола",),
        "secret": ("секретно",),
    },
    "bn": {
        "password": ("পাসওয়ার্ড",),
        "secret": ("গোপনীয়",),
    },
    "bn_IN": {
        "password": ("পাসওয়ার্ড",),
        "secret": ("গোপনীয়",),
    },
    "br": {
        "password": ("ger-tremen",),
    },
    "bs": {
        "password": (
            "lozinka",
            "šifra",
        ),
    },
    "ca": {
        "password": ("contrasenya",),
    },
    "ca@valencia": {
        "password": ("contrasenya",),
    },
    "ckb": {
        "password": ("تێپه\u200cڕه\u200cوشه\u200c",),
    },
    "crh": {
        "password": ("sır-söz",),
        "secret": ("gizli",),
    },
    "cs": {
        "passphrase": ("heslo",),
        "password": ("heslo",),
        "secret": ("tajné",),
    },
    "cy": {
        "password": ("cyfrinair",),
        "secret": ("cyfrinach",),
    },
    "da": {
        "passphrase": ("adgangsfrase",),
        "password": (
            "adgangskode",
            "kodeord",
        ),
        "secret": ("hemmelig",),
    },
    "de": {
        "passphrase": ("passwort",),
        "password": ("passwort",),
        "secret": ("geheim",),
        "token": ("token",),
    },
    "dz": {
        "password": ("ཆོག་ཡིག་",),
        "secret": ("གསང་བ།",),
    },
    "el": {
        "password": (
            "κωδικός πρόσβασης",
            "συνθηματικό",
        ),
        "secret": ("απόρρητο",),
    },
    "eo": {
        "password": ("pasvorto",),
        "secret": ("sekreto",),
    },
    "es": {
        "passphrase": ("frase contraseña",),
        "password": ("contraseña",),
        "secret": ("secreto",),
    },
    "et": {
        "password": ("parool",),
        "secret": ("salajane",),
    },
    "eu": {
        "password": ("pasahitza",),
        "secret": ("ezkutukoa",),
    },
    "fa": {
        "password": (
            "گذرواژه",
            "گذر\u200cواژه",
        ),
    },
    "fi": {
        "password": ("salasana",),
        "secret": ("salainen",),
    },
    "fr": {
        "passphrase": ("phrase secrète",),
        "password": ("mot de passe",),
        "token": ("jeton",),
    },
    "ga": {
        "password": ("focal faire",),
        "secret": ("rúnda",),
    },
    "gd": {
        "password": ("facal-faire",),
    },
    "gl": {
        "password": ("contrasinal",),
        "secret": ("secreto",),
    },
    "gu": {
        "password": ("પાસવર્ડ",),
        "secret": ("ખાનગી",),
    },
    "he": {
        "password": (
            "סיסמה",
            "ססמה",
        ),
        "secret": ("סודי",),
    },
    "hi": {
        "password": (
            "कूटशब्द",
            "शब्दकूट",
        ),
        "secret": ("गुप्त",),
    },
    "hr": {
        "password": ("lozinka",),
    },
    "hu": {
        "password": ("jelszó",),
        "secret": ("titkos",),
    },
    "hy": {
        "password": ("գաղտնաբառ",),
    },
    "ia": {
        "password": ("contrasigno",),
        "secret": ("secrete",),
    },
    "id": {
        "password": (
            "kata sandi",
            "sandi",
        ),
        "secret": ("rahasia",),
    },
    "ie": {
        "password": ("contrasigne",),
    },
    "io": {
        "secret": ("sekreta",),
    },
    "is": {
        "password": ("lykilorð",),
    },
    "it": {
        "password": ("password",),
        "secret": ("segreto",),
    },
    "ja": {
        "passphrase": ("パスフレーズ",),
        "password": ("パスワード",),
        "secret": ("秘密",),
        "token": ("トークン",),
    },
    "ka": {
        "password": ("პაროლი",),
        "secret": ("საიდუმლო",),
        "token": ("ტოკენი",),
    },
    "kg": {
        "password": ("lusuemi",),
    },
    "kk": {
        "password": ("пароль",),
        "secret": ("құпия сөз",),
    },
    "km": {
        "password": ("ពាក្យសម្ងាត់",),
    },
    "kn": {
        "password": ("ಗುಪ್ತಪದ",),
        "secret": ("ರಹಸ್ಯ",),
    },
    "ko": {
        "password": (
            "비밀번호",
            "암호",
        ),
        "secret": ("비밀",),
        "token": ("토큰",),
    },
    "ku": {
        "password": ("şîfre",),
        "secret": ("veşartî",),
    },
    "lg": {
        "password": ("kyama",),
    },
    "lt": {
        "password": ("slaptažodis",),
        "secret": ("slapta",),
    },
    "lv": {
        "password": ("parole",),
        "secret": ("slepena",),
    },
    "mai": {
        "password": ("गुड़किल्ली",),
        "secret": ("गुप्त",),
    },
    "mk": {
        "secret": ("тајно",),
    },
    "ml": {
        "password": (
            "അടയാളവാക്കു്",
            "അടയാളവാക്ക്",
            "പാസ്\u200cവേറ്\u200dഡ്",
            "രഹസ്യവാക്ക്",
        ),
        "secret": ("രഹസ്യം",),
    },
    "mr": {
        "password": (
            "गुप्तशब्द",
            "पासवर्ड",
        ),
        "secret": ("गुपित",),
    },
    "ms": {
        "password": (
            "kata laluan",
            "katalaluan",
        ),
    },
    "my": {
        "password": ("စကားဝှက်",),
        "secret": ("လျှို့ဝှက်ချက်",),
    },
    "nb": {
        "passphrase": ("passordfrase",),
        "password": ("passord",),
        "secret": ("hemmelig",),
    },
    "nds": {
        "password": ("passwoord",),
        "secret": ("geheim",),
    },
    "ne": {
        "password": (
            "गोप्यशब्द",
            "पासवर्ड",
        ),
    },
    "nl": {
        "password": ("wachtwoord",),
        "secret": ("geheim",),
    },
    "nn": {
        "password": ("passord",),
        "secret": ("hemmeleg",),
    },
    "oc": {
        "password": ("senhal",),
    },
    "or": {
        "password": (
            "ପ୍ରବେଶ ସଂକେତ",
            "ପ୍ରବେଶ ସଂଙ୍କେତ",
            "ପ୍ରବେଶ ସଙ୍କେତ",
        ),
        "secret": ("ଗୁପ୍ତ",),
    },
    "pa": {
        "password": (
            "ਗੁਪਤ-ਕੋਡ",
            "ਪਾਸਵਰਡ",
        ),
        "secret": ("ਖੁਫੀਆ",),
    },
    "pl": {
        "passphrase": ("hasło",),
        "password": ("hasło",),
        "secret": ("tajne",),
    },
    "ps": {
        "password": ("تېرنويې",),
    },
    "pt": {
        "password": (
            "palavra-passe",
            "senha",
        ),
        "secret": ("secreta",),
    },
    "pt_BR": {
        "password": ("senha",),
        "secret": ("secreto",),
    },
    "ro": {
        "password": (
            "parola",
            "parolă",
        ),
    },
    "ru": {
        "passphrase": ("фраза-пароль",),
        "password": ("пароль",),
        "secret": ("секретно",),
    },
    "si": {
        "password": ("රහස්පදය",),
        "secret": ("රහසිගත",),
    },
    "sk": {
        "password": ("heslo",),
        "secret": ("tajný",),
    },
    "sl": {
        "password": ("geslo",),
        "secret": ("skrivnost",),
    },
    "sq": {
        "password": ("fjalëkalimi",),
        "secret": ("sekrete",),
    },
    "sr": {
        "password": ("лозинка",),
        "secret": ("тајна",),
    },
    "sr@latin": {
        "password": ("lozinka",),
        "secret": ("tajna",),
    },
    "sv": {
        "passphrase": ("lösenfras",),
        "password": ("lösenord",),
        "secret": ("hemlig",),
    },
    "ta": {
        "password": ("கடவுச்சொல்",),
        "secret": ("இரகசியம்",),
    },
    "te": {
        "password": (
            "అనుమతిపదం",
            "సంకేతపదము",
        ),
        "secret": ("రహస్యం",),
    },
    "tg": {
        "password": ("парол",),
    },
    "th": {
        "password": ("รหัสผ่าน",),
    },
    "tl": {
        "password": ("kontrasenyas",),
    },
    "tr": {
        "passphrase": ("anahtar parolası",),
        "password": ("parola",),
        "secret": ("gizli",),
        "token": ("jeton",),
    },
    "uk": {
        "passphrase": ("пароль",),
        "password": ("пароль",),
        "secret": ("секретно",),
        "token": ("токен",),
    },
    "uz": {
        "password": ("maxfiy soʻz",),
        "secret": ("maxfiy",),
    },
    "uz@cyrillic": {
        "password": ("махфий сўз",),
        "secret": ("махфий",),
    },
    "vi": {
        "password": ("mật khẩu",),
        "secret": ("rất mật",),
    },
    "wa": {
        "secret": ("sicret",),
    },
    "zh_CN": {
        "passphrase": ("密码",),
        "password": ("密码",),
        "secret": ("秘密",),
        "token": ("令牌",),
    },
    "zh_HK": {
        "password": ("密碼",),
    },
    "zh_TW": {
        "passphrase": ("密語",),
        "password": ("密碼",),
        "token": ("代符",),
    },
    "zu": {
        "password": ("iphasiwedi",),
    },
}
