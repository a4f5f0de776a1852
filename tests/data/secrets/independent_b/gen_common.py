"""Shared seeded helpers for make_secrets_b.py (random-value generators only)."""
import base64, json, random, string, struct, uuid

SEED = 0xB5EC2024
R = random.Random(SEED)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
B62 = UP + LO + DG
HEX = "0123456789abcdef"
B64 = B62 + "+/"
URLS = B62 + "-_"
B32 = UP + "234567"
BECH = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def r(al, n):
    return "".join(R.choice(al) for _ in range(n))


def rb(n):
    return bytes(R.getrandbits(8) for _ in range(n))


def b64(b):
    return base64.b64encode(b).decode()


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def hexs(n):
    return r(HEX, n)


def uid():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def pick(*xs):
    return R.choice(xs)


def ri(a, b):
    return R.randint(a, b)


WORDS = ["Falcon", "Harbor", "Maple", "Orion", "Tiger", "Sunset", "Panda", "Rocket",
         "Cobalt", "Willow", "Jasper", "Nimbus", "Quartz", "Summit", "Dragon", "Lotus",
         "Bamboo", "Mango", "Velvet", "Copper", "Glacier", "Pepper", "Saturn", "Coral"]


def pw_human():
    return f"{pick(*WORDS)}{pick(*WORDS).lower()}{ri(2, 9999)}{pick('!', '#', '%', '*', '_', '.')}"


def pw_strong(n=None, al=B62 + "!#%^*_-+="):
    n = n or ri(16, 28)
    while True:
        s = r(al, n)
        if any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s):
            return s


def pw_url(n=None):
    return pw_strong(n, B62 + "-_.~")


def pw():
    return pick(pw_human, pw_strong, pw_url, pw_strong)()


def pw_u():
    """password safe inside URLs and shell quotes"""
    return pick(pw_human, pw_url, pw_url)().replace("#", "-").replace("%", "_")


def pw_weak():
    return pick("admin123", "Passw0rd!", "root1234", "qwer1234!", "Welcome@2024", "abc@123456",
                "P@ssw0rd2023", "zaq12wsx!", "letmein2024", "Aa123456!", "Huawei@123", "Test@1234")


# ---------------------------------------------------------------- token generators
def ghp(): return "ghp_" + r(B62, 36)
def gho(): return "gho_" + r(B62, 36)
def ghs(): return "ghs_" + r(B62, 36)
def ghu(): return "ghu_" + r(B62, 36)
def github_pat(): return "github_pat_11" + r(UP + DG, 20) + "_" + r(B62, 59)
def any_gh(): return pick(ghp, ghp, github_pat, gho)()
def glpat(): return "glpat-" + r(URLS, 20)
def akia(): return "AKIA" + r(UP + "234567", 16)
def asia(): return "ASIA" + r(UP + "234567", 16)
def aws_secret(): return r(B62 + "+/", 40)
def aws_session(): return "IQoJb3JpZ2luX2VjE" + r(B64, ri(330, 420))
def aiza(): return "AIza" + r(URLS, 35)
def xoxb(): return f"xoxb-{ri(10**10, 10**12)}-{ri(10**12, 10**13)}-{r(B62, 24)}"
def xoxp(): return f"xoxp-{ri(10**10, 10**12)}-{ri(10**10, 10**12)}-{ri(10**12, 10**13)}-{hexs(32)}"
def xapp(): return f"xapp-1-A{r(UP + DG, 10)}-{ri(10**12, 10**13)}-{hexs(64)}"
def stripe_sk(): return pick("sk_live_", "sk_live_", "rk_live_", "sk_test_") + r(B62, pick(24, 99))
def whsec(): return "whsec_" + r(B62, 32)
def openai_key():
    return pick(lambda: "sk-proj-" + r(URLS, 74) + "T3BlbkFJ" + r(URLS, 74),
                lambda: "sk-" + r(B62, 20) + "T3BlbkFJ" + r(B62, 20),
                lambda: "sk-svcacct-" + r(URLS, 74) + "T3BlbkFJ" + r(URLS, 74))()
def anthropic_key(): return "sk-ant-api03-" + r(URLS, 93) + "AA"
def anthropic_admin(): return "sk-ant-admin01-" + r(URLS, 93) + "AA"
def hf(): return "hf_" + r(UP + LO, 34)
def npm_tok(): return "npm_" + r(B62, 36)
def pypi_tok(): return "pypi-AgEIcHlwaS5vcmcCJ" + r(URLS, ri(150, 190))
def twilio_sk(): return "SK" + hexs(32)
def twilio_ac(): return "AC" + hexs(32)
def sendgrid(): return "SG." + r(URLS, 22) + "." + r(URLS, 43)
def mailgun(): return "key-" + hexs(32)
def azure_storage_key(): return b64(rb(64))
def dd_api(): return hexs(32)
def dd_app(): return hexs(40)
def newrelic(): return "NRAK-" + r(UP + DG, 27)
def shopify(): return pick("shpat_", "shpss_", "shpca_") + hexs(32)
def vault_tok(): return "hvs." + r(URLS, pick(24, 91))
def do_tok(): return "dop_v1_" + hexs(64)
def cf_tok(): return r(URLS, 40)
def databricks(): return "dapi" + hexs(32)
def grafana(): return pick(lambda: "glsa_" + r(B62, 32) + "_" + hexs(8),
                           lambda: "glc_" + b64u(json.dumps({"o": str(ri(10**5, 10**6)), "n": "stack-" + str(ri(100000, 999999)) + "-hm-read", "k": r(B62, 24), "m": {"r": "prod-eu-west-2"}}, separators=(",", ":")).encode()))()
def pulumi(): return "pul-" + hexs(40)
def atlassian(): return "ATATT3xFfGF0" + r(URLS, 170) + "=" + r(HEX.upper(), 8)
def notion(): return pick(lambda: "ntn_" + r(B62, 46), lambda: "secret_" + r(B62, 43))()
def linear(): return "lin_api_" + r(B62, 40)
def dckr(): return "dckr_pat_" + r(URLS, 27)
def mapbox_sk(user): return "sk." + b64u(json.dumps({"u": user, "a": r(LO + DG, 25)}, separators=(",", ":")).encode()) + "." + r(URLS, 22)
def algolia_admin(): return hexs(32)
def fcm(): return "AAAA" + r(URLS, 7) + ":APA91b" + r(URLS, 134)
def telegram(): return f"{ri(10**8, 10**10 - 1)}:AA{r(URLS, 33)}"
def discord_bot(): return b64u(str(ri(10**17, 10**18)).encode()) + "." + r(URLS, 6) + "." + r(URLS, 38)
def discord_wh(): return r(URLS, 68)
def slack_wh(): return f"T{r(UP + DG, 9)}/B{r(UP + DG, 10)}/{r(B62, 24)}"
def ngrok(): return "2" + r(B62, 26) + "_" + r(B62, 21)
def postman(): return "PMAK-" + hexs(24) + "-" + hexs(34)
def okta(): return "00" + r(URLS, 40)
def replicate(): return "r8_" + r(B62, 37)
def groq(): return "gsk_" + r(B62, 52)
def pplx(): return "pplx-" + r(B62, 48)
def xai(): return "xai-" + r(B62, 80)
def langsmith(): return "lsv2_pt_" + hexs(32) + "_" + hexs(10)
def pinecone(): return "pcsk_" + r(B62, 5) + "_" + r(B62, 63)
def figma(): return "figd_" + r(URLS, 40)
def vercel(): return r(B62, 24)
def netlify(): return "nfp_" + r(B62, 36)
def rubygems(): return "rubygems_" + hexs(48)
def cargo(): return "cio" + r(B62, 32)
def nuget(): return "oy2" + r(LO + DG, 43)
def mailchimp(): return hexs(32) + "-us" + str(ri(1, 21))
def square(): return "EAAA" + r(URLS, 60)
def paypal_secret(): return "E" + r(URLS, 79)
def aliyun_id(): return "LTAI5t" + r(B62, 18)
def aliyun_secret(): return r(B62, 30)
def tencent_id(): return "AKID" + r(B62, 32)
def tencent_key(): return r(B62, 32)
def deepseek(): return "sk-" + hexs(32)
def moonshot(): return "sk-" + r(B62, 48)
def azure_ad_secret(): return r(B62, 3) + r(DG, 1) + "Q~" + r(B62 + "_.~-", 34)
def gocspx(): return "GOCSPX-" + r(URLS, 28)
def gh_oauth_secret(): return hexs(40)
def django_key(): return pick("django-insecure-", "") + r(LO + DG + "!@#%^&*(-_=+)", 50)
def rails_kb(): return hexs(128)
def age_key(): return "AGE-SECRET-KEY-1" + r(BECH, 58)
def wg_key(): return b64(rb(32))
def azdo_pat(): return r(LO + "234567", 52)
def bb_app(): return "ATBB" + r(B62, 28) + r(HEX.upper(), 8)
def sonar(): return "squ_" + hexs(40)
def circleci(): return "CCIPAT_" + r(B62, 22) + "_" + hexs(40)
def buildkite(): return "bkua_" + hexs(40)
def tfc(): return r(B62, 14) + ".atlasv1." + r(B62, 67)
def airtable(): return "pat" + r(B62, 14) + "." + hexs(64)
def dropbox(): return "sl." + r(URLS, 135)
def twitter_bearer(): return "AAAAAAAAAAAAAAAAAAAAA" + r(B62, 25) + "%3D" + r(B62, 50)
def fb_token(): return "EAA" + r(B62, 160)
def hubspot(): return "pat-na1-" + uid()
def jenkins_tok(): return "11" + hexs(32)
def gitea(): return hexs(40)
def sentry_auth(): return "sntrys_" + b64u(json.dumps({"iat": ri(1700000000, 1750000000), "url": "https://sentry.io", "region_url": "https://us.sentry.io", "org": "acme"}, separators=(",", ":")).encode()) + "_" + r(URLS, 43)
def elastic_apikey(): return b64(f"{r(URLS, 20)}:{r(URLS, 22)}".encode())
def qiniu(): return r(URLS, 40)
def huawei_ak(): return r(UP + DG, 20)
def huawei_sk(): return r(B62, 40)
def wechat_secret(): return hexs(32)
def dingtalk(): return hexs(64)
def heroku_key(): return uid()
def supabase_service(ref):
    return jwt({"iss": "supabase", "ref": ref, "role": "service_role", "iat": 1712000000 + ri(0, 10**7), "exp": 2027000000 + ri(0, 10**7)})
def confluent_secret(): return r(B62 + "+/", 64)
def mistral(): return r(B62, 32)
def cohere(): return r(B62, 40)
def fly_tok(): return "FlyV1 fm2_" + r(URLS + "=", 300)
def ecr_pw(): return "eyJwYXlsb2FkIjoi" + r(B64, 520) + "=="
def segment(): return r(B62, 32)


def jwt(payload, alg="HS256", kid=None):
    hd = {"alg": alg, "typ": "JWT"}
    if kid:
        hd["kid"] = kid
    h = b64u(json.dumps(hd, separators=(",", ":")).encode())
    p = b64u(json.dumps(payload, separators=(",", ":")).encode())
    s = b64u(rb(32 if alg.startswith("HS") else 256))
    return f"{h}.{p}.{s}"


def user_jwt():
    now = 1714000000 + ri(0, 2 * 10**7)
    return jwt(pick(
        {"sub": str(ri(1000, 99999)), "email": pick("li.wei", "mchen", "anna.k", "dev") + "@example.com", "iat": now, "exp": now + 3600},
        {"sub": uid(), "role": "authenticated", "aud": "authenticated", "iat": now, "exp": now + 3600},
        {"uid": ri(1, 10**6), "scope": "read write", "iat": now, "exp": now + 86400, "jti": hexs(16)},
    ), alg=pick("HS256", "HS256", "RS256"), kid=pick(None, hexs(16)))


# ---------------------------------------------------------------- key material
def wrap(s, n):
    return [s[i:i + n] for i in range(0, len(s), n)]


def pem_lines(prefix, total):
    body = prefix + r(B64, total - len(prefix))
    body = body[: len(body) - len(body) % 4]
    if R.random() < 0.5:
        body = body[:-1] + "="
    return wrap(body, 64)


def rsa_pem():
    ls = pem_lines("MIIEpAIBAAKCAQEA", ri(1588, 1596))
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(ls) + "\n-----END RSA PRIVATE KEY-----", ls


def pkcs8_pem():
    ls = pem_lines("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 1624)
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(ls) + "\n-----END PRIVATE KEY-----", ls


def ec_pem():
    body = "MHcCAQEEI" + r(B64, 155)
    ls = wrap(body, 64)
    return "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(ls) + "\n-----END EC PRIVATE KEY-----", ls


def openssh_key(kind="ed25519"):
    if kind == "ed25519":
        raw = (b"openssh-key-v1\x00" + struct.pack(">I", 4) + b"none" + struct.pack(">I", 4) + b"none"
               + struct.pack(">I", 0) + struct.pack(">I", 1) + struct.pack(">I", 51)
               + struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + rb(32)
               + struct.pack(">I", 0x90) + rb(0x90))
    else:
        raw = (b"openssh-key-v1\x00" + struct.pack(">I", 4) + b"none" + struct.pack(">I", 4) + b"none"
               + struct.pack(">I", 0) + struct.pack(">I", 1) + struct.pack(">I", 0x197)
               + struct.pack(">I", 7) + b"ssh-rsa" + rb(1250))
    ls = wrap(b64(raw), 70)
    return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(ls) + "\n-----END OPENSSH PRIVATE KEY-----", ls


def pgp_private():
    body = "lQdGBG" + r(B64, 1210)
    body = body[: len(body) - len(body) % 4]
    ls = wrap(body, 64)
    crc = "=" + r(B64, 4)
    return ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(ls) + "\n" + crc
            + "\n-----END PGP PRIVATE KEY BLOCK-----"), ls


def label_lines(ls):
    return [l for l in ls if len(l) >= 20]


# ---------------------------------------------------------------- non-secret fillers
HOSTS = ["db-prod-1.internal", "pg.acme-corp.net", "10.0.3.17", "analytics-db.c9x2kq1z.eu-west-1.rds.amazonaws.com",
         "mysql.staging.svc.cluster.local", "127.0.0.1", "db.hk.example.com", "warehouse.cn-shanghai.rds.aliyuncs.com"]
USERS = ["app", "app_user", "etl", "svc_billing", "readonly", "deploy", "admin", "grafana", "metabase", "api"]
ORGS = ["acme", "northwind", "initech", "globex", "hooli", "tiangong-labs", "bluefin", "lumen-io"]
REPOS = ["web", "api-gateway", "infra", "billing-service", "mobile-app", "data-pipeline", "docs", "ml-platform"]
NAMES_ZH = ["小王", "老李", "张工", "阿杰", "陈姐", "刘总", "晓雯", "大鹏"]
NAMES_HANT = ["阿明", "小陳", "志豪", "怡君", "家豪", "淑芬"]


def sha1():
    return hexs(40)


def sha256():
    return hexs(64)


def ts():
    return f"2024-{ri(1, 12):02d}-{ri(1, 28):02d}T{ri(0, 23):02d}:{ri(0, 59):02d}:{ri(0, 59):02d}.{ri(0, 9999999):07d}Z"


def ip():
    return f"{pick(10, 172, 192)}.{ri(0, 255)}.{ri(0, 255)}.{ri(1, 254)}"
