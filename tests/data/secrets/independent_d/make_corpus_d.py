#!/usr/bin/env python3
"""Seeded generator for the held-out redaction corpus (secrets_d / lookalikes_d / lessons_d).

All credential values are synthetic: random bodies shaped like each vendor's published
format (prefix, alphabet, length).  Re-running rebuilds the three .jsonl files byte for byte.
"""
import base64
import hashlib
import json
import os
import random
import string

SEED = 0x5EC2E7D
R = random.Random(SEED)
OUT = os.path.dirname(os.path.abspath(__file__))

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
AN = UP + LO + DG
ANL = LO + DG
URL = AN + "-_"
B64 = AN + "+/"
HEX = "0123456789abcdef"
B32 = UP + "234567"
BECH = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def rs(n, alpha=AN):
    return "".join(R.choice(alpha) for _ in range(n))


def hx(n):
    return rs(n, HEX)


def pick(seq):
    return R.choice(seq)


def uuid4():
    h = hx(32)
    h = h[:12] + "4" + h[13:16] + pick("89ab") + h[17:]
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def b64bytes(n):
    return base64.b64encode(bytes(R.getrandbits(8) for _ in range(n))).decode()


def b64url_nopad(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


# ---------------------------------------------------------------- context pools
USERS = ["admin", "root", "deploy", "app", "svc_etl", "postgres", "ci-bot", "jenkins", "grafana",
         "backup", "wangwei", "li.na", "chen_hao", "alice", "bob.smith", "ops", "readonly", "sa",
         "zhangsan", "liuyang", "dev01", "analytics", "migrator", "builder"]
HOSTS = ["db.internal", "10.0.3.17", "pg-prod-1.c9xk2.eu-west-1.rds.amazonaws.com", "localhost",
         "mysql.staging.corp", "192.168.1.50", "redis-master.cache.svc.cluster.local",
         "mongo0.example.net", "rm-bp1x8k2a9c.mysql.rds.aliyuncs.com", "172.16.8.21",
         "sql-east.database.windows.net", "gitlab.company.cn", "nas.home.lan", "bastion.ops.io",
         "cdb-7k2j.sql.tencentcdb.com", "db-replica-02", "rabbit.mq.internal", "ftp.vendor.com"]
DBS = ["orders", "app_prod", "analytics", "billing", "users", "wiki", "crm", "shop", "metrics",
       "inventory", "payments", "erp"]
WORDS = ["Summer", "Winter", "Dragon", "Tiger", "Panda", "Falcon", "Orange", "Coffee", "Rocket",
         "Harbor", "Maple", "Shanghai", "Beijing", "Taipei", "Monkey", "Galaxy", "Sunrise", "Bamboo",
         "Lotus", "Thunder", "Qwerty", "Welcome", "Spring", "Autumn", "Pioneer", "Zhongguo"]
SYMS = "!@#%^*_-+=.?"


def pw(kind=None):
    """A synthetic password; no quotes, backslashes, spaces, '$', '`', '&', ';' or '|'."""
    k = kind or R.randint(0, 5)
    if k == 0:
        return pick(WORDS) + str(R.randint(1, 2026)) + pick("!@#*?")
    if k == 1:
        return rs(R.randint(14, 22), AN + "!@#%^*_-+=")
    if k == 2:
        return pick(WORDS).lower() + pick("._-") + pick(WORDS) + str(R.randint(10, 99)) + pick(SYMS)
    if k == 3:
        return rs(R.randint(20, 32), AN)
    if k == 4:
        return pick(WORDS) + "@" + str(R.randint(2015, 2026)) + rs(3, AN)
    return rs(4, UP) + rs(4, DG) + pick("!#%*") + rs(6, LO)


def pw_url():
    """URL-safe password (goes inside user:pass@host)."""
    k = R.randint(0, 2)
    if k == 0:
        return rs(R.randint(16, 28), AN)
    if k == 1:
        return pick(WORDS) + str(R.randint(100, 9999)) + rs(4, AN)
    return rs(8, AN) + pick("-_.~") + rs(10, AN)


# ---------------------------------------------------------------- vendor shapes
def gh_pat():
    return "ghp_" + rs(36)


def gh_fine():
    return "github_pat_11" + rs(20, UP + DG) + "_" + rs(59)


def gh_other():
    return pick(["gho_", "ghu_", "ghs_", "ghr_"]) + rs(36)


def gl_pat():
    return "glpat-" + rs(20, URL)


def aws_id():
    return pick(["AKIA", "ASIA"]) + rs(16, B32)


def aws_secret():
    return rs(40, AN + "/+")


def aws_session():
    return "IQoJb3JpZ2luX2VjE" + rs(R.randint(300, 380), AN + "/+") + "=="


def google_key():
    return "AIza" + rs(35, URL)


def openai_key():
    if R.random() < 0.6:
        return "sk-proj-" + rs(74, URL) + "T3BlbkFJ" + rs(74, URL)
    return "sk-" + rs(20) + "T3BlbkFJ" + rs(20)


def anthropic_key():
    return "sk-ant-" + pick(["api03", "api03", "admin01"]) + "-" + rs(93, URL) + "AA"


def stripe_key():
    return pick(["sk_live_", "rk_live_", "sk_test_"]) + rs(pick([24, 99]))


def stripe_whsec():
    return "whsec_" + rs(32)


def slack_bot():
    return "xoxb-%d-%d-%s" % (R.randint(10 ** 10, 10 ** 12), R.randint(10 ** 11, 10 ** 13), rs(24))


def slack_user():
    return "xoxp-%d-%d-%d-%s" % (R.randint(10 ** 10, 10 ** 12), R.randint(10 ** 10, 10 ** 12),
                                R.randint(10 ** 11, 10 ** 13), hx(32))


def slack_app():
    return "xapp-1-A%s-%d-%s" % (rs(10, UP + DG), R.randint(10 ** 12, 10 ** 13), hx(64))


def discord_bot():
    ident = str(R.randint(10 ** 17, 10 ** 18))
    return b64url_nopad(ident.encode()) + "." + rs(6, URL) + "." + rs(38, URL)


def telegram_bot():
    return "%d:AA%s" % (R.randint(10 ** 8, 10 ** 10), rs(33, URL))


def sendgrid():
    return "SG." + rs(22, URL) + "." + rs(43, URL)


def mailgun():
    return "key-" + hx(32)


def npm_tok():
    return "npm_" + rs(36)


def pypi_tok():
    return "pypi-AgEIcHlwaS5vcmc" + rs(R.randint(140, 170), URL)


def docker_pat():
    return "dckr_pat_" + rs(27, URL)


def hf_tok():
    return "hf_" + rs(34, UP + LO)


def grafana_sa():
    return "glsa_" + rs(32) + "_" + hx(8)


def shopify():
    return pick(["shpat_", "shpss_", "shpca_"]) + hx(32)


def do_tok():
    return "dop_v1_" + hx(64)


def supabase_pat():
    return "sbp_" + hx(40)


def linear_key():
    return "lin_api_" + rs(40)


def notion_key():
    return pick(["secret_" + rs(43), "ntn_" + rs(11, DG) + rs(35)])


def airtable_pat():
    return "pat" + rs(14) + "." + hx(64)


def postman_key():
    return "PMAK-" + hx(24) + "-" + hx(34)


def doppler_tok():
    return "dp.st." + pick(["prd", "dev", "stg"]) + "." + rs(40)


def pulumi_tok():
    return "pul-" + hx(40)


def tfc_tok():
    return rs(14) + ".atlasv1." + rs(67)


def vault_tok():
    return "hvs." + rs(R.choice([24, 91]), URL)


def buildkite_tok():
    return "bkua_" + hx(40)


def groq_key():
    return "gsk_" + rs(52)


def replicate_tok():
    return "r8_" + rs(37)


def pplx_key():
    return "pplx-" + rs(48)


def age_key():
    return "AGE-SECRET-KEY-1" + rs(58, BECH)


def rubygems_key():
    return "rubygems_" + hx(48)


def nuget_key():
    return "oy2" + rs(43, ANL)


def sentry_user():
    return "sntryu_" + hx(64)


def newrelic_key():
    return "NRAK-" + rs(27, UP + DG)


def atlassian_tok():
    return "ATATT3xFfGF0" + rs(170, URL) + "=" + hx(8).upper()


def databricks_tok():
    return "dapi" + hx(32)


def figma_tok():
    return "figd_" + rs(40, URL)


def circleci_tok():
    return "CCIPAT_" + rs(22) + "_" + hx(40)


def netlify_tok():
    return "nfp_" + rs(36)


def pscale_pw():
    return "pscale_pw_" + rs(43, URL)


def square_tok():
    return "EAAA" + rs(60, URL)


def braintree_tok():
    return "access_token$production$" + rs(16, ANL) + "$" + hx(32)


def okta_tok():
    return "00" + rs(40, URL)


def mapbox_sk():
    u = b64url_nopad(json.dumps({"u": pick(USERS).replace(".", ""), "a": "cl" + rs(23, ANL)},
                                separators=(",", ":")).encode())
    return "sk." + u + "." + rs(22, URL)


def azure_storage_key():
    return rs(86, AN + "+/") + "=="


def ali_ak():
    return "LTAI5t" + rs(18)


def ali_sk():
    return rs(30)


def tencent_id():
    return "AKID" + rs(32)


def tencent_sk():
    return rs(32)


def huawei_ak():
    return rs(20, UP + DG)


def huawei_sk():
    return rs(40)


def volc_ak():
    return "AKLT" + rs(43, AN)


def volc_sk():
    return rs(56, AN) + "=="


def qianfan_key():
    return "bce-v3/ALTAK-" + rs(21) + "/" + hx(40)


def deepseek_key():
    return "sk-" + hx(32)


def moonshot_key():
    return "sk-" + rs(48)


def zhipu_key():
    return hx(32) + "." + rs(16)


def jwt(claims=None, alg="HS256"):
    hdr = b64url_nopad(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    c = claims or {"sub": str(R.randint(1000, 99999)), "name": pick(USERS),
                   "iat": R.randint(1690000000, 1760000000)}
    pl = b64url_nopad(json.dumps(c, separators=(",", ":")).encode())
    sig_len = 43 if alg.startswith("HS") else 342
    return hdr + "." + pl + "." + rs(sig_len, URL)


def cf_token():
    return rs(40, URL)


def dd_api():
    return hx(32)


def dd_app():
    return hx(40)


def twilio_token():
    return hx(32)


def laravel_key():
    return "base64:" + b64bytes(32)


def django_key():
    return "django-insecure-" + rs(50, LO + DG + "!@#%^*(-_=+)")


def generic_hex(n=32):
    return hx(n)


# ---------------------------------------------------------------- private keys
def pem_lines(kind):
    if kind == "RSA PRIVATE KEY":
        head, nbytes = "MIIEpAIBAAKCAQEA", 1190
    elif kind == "PRIVATE KEY":
        head, nbytes = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 1210
    elif kind == "EC PRIVATE KEY":
        head, nbytes = "MHcCAQEEI", 110
    elif kind == "OPENSSH PRIVATE KEY":
        head, nbytes = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 300
    elif kind == "ENCRYPTED PRIVATE KEY":
        head, nbytes = "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 1250
    else:
        head, nbytes = "MIIEowIBAAKCAQEA", 1180
    body = head + b64bytes(nbytes)
    body = body.rstrip("=")
    pad = (-len(body)) % 4
    body += "=" * pad
    width = 70 if kind == "OPENSSH PRIVATE KEY" else 64
    lines = [body[i:i + width] for i in range(0, len(body), width)]
    return lines


def pem(kind=None):
    kind = kind or pick(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    lines = pem_lines(kind)
    text = "-----BEGIN %s-----\n%s\n-----END %s-----" % (kind, "\n".join(lines), kind)
    return text, [l for l in lines if len(l) >= 20], lines, kind


# ================================================================ secret generators
# Each generator returns dict(family, kind, body, secrets[, fname][, lang][, full]).
# kind: cmd | cfg | err | hdr | raw ; full=True means body is final text (lang given).
SG = []


def gen(fn):
    SG.append(fn)
    return fn


def host():
    return pick(HOSTS)


def user():
    return pick(USERS)


# ---- vendor tokens in env / config / commands ---------------------------------------
VENDOR_ENV = [
    ("github", "GITHUB_TOKEN", gh_pat), ("github", "GH_TOKEN", gh_fine), ("github", "GITHUB_PAT", gh_other),
    ("gitlab", "GITLAB_TOKEN", gl_pat), ("gitlab", "CI_JOB_TOKEN_OVERRIDE", gl_pat),
    ("openai", "OPENAI_API_KEY", openai_key), ("anthropic", "ANTHROPIC_API_KEY", anthropic_key),
    ("stripe", "STRIPE_SECRET_KEY", stripe_key), ("stripe", "STRIPE_WEBHOOK_SECRET", stripe_whsec),
    ("slack", "SLACK_BOT_TOKEN", slack_bot), ("slack", "SLACK_APP_TOKEN", slack_app),
    ("slack", "SLACK_USER_TOKEN", slack_user),
    ("discord", "DISCORD_TOKEN", discord_bot), ("telegram", "TELEGRAM_BOT_TOKEN", telegram_bot),
    ("sendgrid", "SENDGRID_API_KEY", sendgrid), ("mailgun", "MAILGUN_API_KEY", mailgun),
    ("npm", "NPM_TOKEN", npm_tok), ("pypi", "TWINE_PASSWORD", pypi_tok), ("docker", "DOCKERHUB_TOKEN", docker_pat),
    ("huggingface", "HF_TOKEN", hf_tok), ("grafana", "GRAFANA_SA_TOKEN", grafana_sa),
    ("shopify", "SHOPIFY_ACCESS_TOKEN", shopify), ("digitalocean", "DIGITALOCEAN_TOKEN", do_tok),
    ("supabase", "SUPABASE_ACCESS_TOKEN", supabase_pat), ("linear", "LINEAR_API_KEY", linear_key),
    ("notion", "NOTION_TOKEN", notion_key), ("airtable", "AIRTABLE_PAT", airtable_pat),
    ("postman", "POSTMAN_API_KEY", postman_key), ("doppler", "DOPPLER_TOKEN", doppler_tok),
    ("pulumi", "PULUMI_ACCESS_TOKEN", pulumi_tok), ("terraform", "TFE_TOKEN", tfc_tok),
    ("vault", "VAULT_TOKEN", vault_tok), ("buildkite", "BUILDKITE_API_TOKEN", buildkite_tok),
    ("groq", "GROQ_API_KEY", groq_key), ("replicate", "REPLICATE_API_TOKEN", replicate_tok),
    ("perplexity", "PPLX_API_KEY", pplx_key), ("age", "SOPS_AGE_KEY", age_key),
    ("rubygems", "GEM_HOST_API_KEY", rubygems_key), ("nuget", "NUGET_API_KEY", nuget_key),
    ("sentry", "SENTRY_AUTH_TOKEN", sentry_user), ("newrelic", "NEW_RELIC_API_KEY", newrelic_key),
    ("atlassian", "JIRA_API_TOKEN", atlassian_tok), ("databricks", "DATABRICKS_TOKEN", databricks_tok),
    ("figma", "FIGMA_TOKEN", figma_tok), ("circleci", "CIRCLECI_TOKEN", circleci_tok),
    ("netlify", "NETLIFY_AUTH_TOKEN", netlify_tok), ("planetscale", "PLANETSCALE_SERVICE_TOKEN", pscale_pw),
    ("square", "SQUARE_ACCESS_TOKEN", square_tok), ("braintree", "BRAINTREE_ACCESS_TOKEN", braintree_tok),
    ("okta", "OKTA_API_TOKEN", okta_tok), ("mapbox", "MAPBOX_SECRET_TOKEN", mapbox_sk),
    ("google", "GOOGLE_API_KEY", google_key), ("deepseek", "DEEPSEEK_API_KEY", deepseek_key),
    ("moonshot", "MOONSHOT_API_KEY", moonshot_key), ("zhipu", "ZHIPUAI_API_KEY", zhipu_key),
    ("dashscope", "DASHSCOPE_API_KEY", deepseek_key), ("qianfan", "QIANFAN_API_KEY", qianfan_key),
    ("cloudflare", "CLOUDFLARE_API_TOKEN", cf_token), ("datadog", "DD_API_KEY", dd_api),
    ("datadog", "DD_APP_KEY", dd_app), ("twilio", "TWILIO_AUTH_TOKEN", twilio_token),
    ("azure-openai", "AZURE_OPENAI_API_KEY", generic_hex),
]


@gen
def g_env_export():
    fam, var, f = deal("vendor", VENDOR_ENV)
    v = f()
    style = R.randint(0, 5)
    if style == 0:
        body = "export %s=%s" % (var, v)
    elif style == 1:
        body = "export %s=\"%s\"" % (var, v)
    elif style == 2:
        body = "%s=%s %s" % (var, v, pick(["python app.py", "npm run dev", "./deploy.sh", "uv run main.py",
                                           "go run ./cmd/server", "pytest -k integration"]))
    elif style == 3:
        body = "$env:%s = \"%s\"" % (var, v)
    elif style == 4:
        body = "set %s=%s" % (var, v)
    else:
        body = "echo 'export %s=%s' >> ~/.%s" % (var, v, pick(["bashrc", "zshrc", "profile"]))
    return dict(family=fam, kind="cmd", body=body, secrets=[v])


@gen
def g_dotenv():
    n = R.randint(3, 7)
    chosen = R.sample(VENDOR_ENV, 3)
    lines, secs, fams = [], [], []
    plain = [("NODE_ENV", pick(["production", "development"])), ("PORT", str(pick([3000, 8000, 8080]))),
             ("LOG_LEVEL", pick(["info", "debug"])), ("APP_NAME", pick(["shop-api", "worker", "ledger"])),
             ("REDIS_URL", "redis://localhost:6379/0"), ("TZ", "Asia/Shanghai"),
             ("DEBUG", "false"), ("FEATURE_FLAGS", "beta_search,new_checkout")]
    for k, v in R.sample(plain, n - 2):
        lines.append("%s=%s" % (k, v))
    for fam, var, f in chosen[:R.randint(1, 3)]:
        v = f()
        q = pick(["", "", "\"", "'"])
        lines.insert(R.randint(0, len(lines)), "%s=%s%s%s" % (var, q, v, q))
        secs.append(v)
        fams.append(fam)
    return dict(family="dotenv", kind="cfg", body="\n".join(lines), secrets=secs,
                fname=pick([".env", ".env.local", ".env.production", "backend/.env"]))


@gen
def g_docker_e():
    fam, var, f = pick(VENDOR_ENV)
    v = f()
    img = pick(["ghcr.io/acme/api:1.4.2", "myorg/worker:latest", "python:3.12-slim", "n8nio/n8n",
                "registry.cn-hangzhou.aliyuncs.com/team/bot:v2"])
    body = "docker run -d --name %s -p 8080:8080 -e %s=%s -e TZ=UTC %s" % (
        pick(["api", "bot", "worker", "agent"]), var, v, img)
    return dict(family="docker-env", kind="cmd", body=body, secrets=[v])


@gen
def g_gh_clone():
    t = pick([gh_pat, gh_fine, gl_pat])()
    hostn = "gitlab.com" if t.startswith("glpat") else "github.com"
    u = pick(["oauth2", "x-access-token", user(), "git"])
    repo = "%s/%s.git" % (pick(["acme", "my-org", "liwei-dev", "infra-team"]),
                          pick(["backend", "infra", "docs", "monorepo", "ml-pipeline"]))
    body = pick(["git clone https://%s:%s@%s/%s" % (u, t, hostn, repo),
                 "git remote set-url origin https://%s:%s@%s/%s" % (u, t, hostn, repo),
                 "git push https://%s@%s/%s HEAD:main" % (t, hostn, repo)])
    return dict(family="git-url-token", kind="cmd", body=body, secrets=[t])


@gen
def g_git_fatal():
    t = pick([gh_pat, gl_pat, gh_other])()
    u = user()
    hostn = "gitlab.com" if t.startswith("glpat") else "github.com"
    body = ("remote: Invalid username or password.\n"
            "fatal: Authentication failed for 'https://%s:%s@%s/%s/%s.git/'" % (
                u, t, hostn, pick(["acme", "team-x"]), pick(["api", "site", "tools"])))
    return dict(family="git-url-token", kind="err", body=body, secrets=[t])


@gen
def g_git_credentials():
    lines, secs = [], []
    for _ in range(R.randint(1, 3)):
        t = pick([gh_pat, gl_pat, pw_url])()
        hh = pick(["github.com", "gitlab.com", "git.company.cn", "bitbucket.org", "gitee.com"])
        lines.append("https://%s:%s@%s" % (user(), t, hh))
        secs.append(t)
    return dict(family="git-credentials", kind="cfg", body="\n".join(lines), secrets=secs,
                fname="~/.git-credentials")


@gen
def g_auth_bearer_curl():
    fam, var, f = pick(VENDOR_ENV[:40])
    v = f()
    url = pick(["https://api.openai.com/v1/chat/completions", "https://api.github.com/user/repos",
                "https://api.stripe.com/v1/charges", "https://slack.com/api/chat.postMessage",
                "https://api.example.com/v2/items?limit=50", "http://localhost:8000/admin/reindex",
                "https://api.deepseek.com/chat/completions", "https://open.bigmodel.cn/api/paas/v4/chat/completions"])
    body = "curl -sS %s \\\n  -H \"Authorization: Bearer %s\" \\\n  -H \"Content-Type: application/json\"" % (url, v)
    if R.random() < 0.5:
        body += " \\\n  -d '{\"model\": \"%s\", \"messages\": [{\"role\": \"user\", \"content\": \"ping\"}]}'" % pick(
            ["gpt-4o-mini", "deepseek-chat", "glm-4", "claude-3-5-sonnet"])
    return dict(family="auth-header", kind="cmd", body=body, secrets=[v])


@gen
def g_api_key_header():
    v, name = pick([(anthropic_key, "x-api-key"), (generic_hex, "api-key"), (dd_api, "DD-API-KEY"),
                    (newrelic_key, "Api-Key"), (lambda: rs(40), "X-API-Key"), (postman_key, "X-Api-Key"),
                    (lambda: rs(32, ANL), "X-Auth-Token"), (okta_tok, "Authorization: SSWS")])
    v = v()
    if name.startswith("Authorization"):
        h = "%s %s" % (name, v)
    else:
        h = "%s: %s" % (name, v)
    body = pick(["curl -X POST https://%s/v1/%s -H '%s' -d @payload.json" % (
        pick(["api.anthropic.com", "api.datadoghq.com", "api.vendor.io", "myorg.okta.com"]),
        pick(["messages", "series", "events", "users"]), h),
        "> POST /v1/events HTTP/1.1\n> Host: api.vendor.io\n> User-Agent: curl/8.5.0\n> %s\n> Content-Length: 412\n>\n< HTTP/1.1 401 Unauthorized" % h])
    return dict(family="api-key-header", kind="raw", body=body, secrets=[v])


@gen
def g_basic_auth_header():
    u, p = user(), pw()
    b = base64.b64encode(("%s:%s" % (u, p)).encode()).decode()
    body = pick(["Authorization: Basic %s" % b,
                 "curl -H 'Authorization: Basic %s' https://nexus.corp/service/rest/v1/repositories" % b,
                 "requests.get(url, headers={\"Authorization\": \"Basic %s\"})" % b])
    return dict(family="basic-auth", kind="raw", body=body, secrets=[b])


@gen
def g_curl_u():
    u, p = user(), pw()
    url = pick(["https://jenkins.corp/job/deploy/build", "https://nexus.internal/repository/raw/",
                "http://%s:9200/_cat/indices" % host(), "https://artifactory.acme.io/api/storage/libs",
                "https://api.mailgun.net/v3/mg.example.com/messages", "http://localhost:15672/api/queues"])
    if "mailgun" in url:
        u, p = "api", mailgun()
    q = pick(["", "'", "\""])
    body = "curl -u %s%s:%s%s %s" % (q, u, p, q, url)
    return dict(family="curl-basic", kind="cmd", body=body, secrets=[p])


@gen
def g_wget_pw():
    u, p = user(), pw()
    body = pick(["wget --user=%s --password=%s https://files.corp/backup/latest.tar.gz" % (u, p),
                 "wget --http-user=%s --http-password='%s' http://%s/export.csv" % (u, p, host()),
                 "wget ftp://%s:%s@ftp.vendor.com/pub/feed.xml" % (u, p.replace("@", "A").replace("#", "H").replace("?", "Q").replace("%", "P"))])
    s = p if "ftp://" not in body else p.replace("@", "A").replace("#", "H").replace("?", "Q").replace("%", "P")
    return dict(family="wget-password", kind="cmd", body=body, secrets=[s])


@gen
def g_dsn():
    p = pw_url()
    u = user()
    h = host()
    scheme = pick(["postgresql", "postgres", "mysql", "mysql+pymysql", "mongodb+srv", "mongodb", "redis",
                   "rediss", "amqp", "amqps", "postgresql+asyncpg", "mssql+pyodbc", "clickhouse"])
    if scheme.startswith("redis"):
        url = "%s://%s:%s@%s:6379/0" % (scheme, pick(["default", ""]), p, h)
    elif scheme.startswith("mongodb+srv"):
        url = "mongodb+srv://%s:%s@cluster0.%s.mongodb.net/%s?retryWrites=true&w=majority" % (u, p, rs(5, ANL), pick(DBS))
    elif scheme.startswith("amqp"):
        url = "%s://%s:%s@%s:5672/%s" % (scheme, u, p, h, pick(["", "vhost", "%2F"]))
    else:
        url = "%s://%s:%s@%s/%s" % (scheme, u, p, h, pick(DBS))
    var = pick(["DATABASE_URL", "SQLALCHEMY_DATABASE_URI", "MONGO_URI", "REDIS_URL", "BROKER_URL",
                "CELERY_BROKER_URL", "DB_DSN", "spring.datasource.url"])
    body = pick(["%s=%s" % (var, url), "%s: \"%s\"" % (var.lower(), url),
                 "engine = create_engine(\"%s\")" % url, "psql \"%s\"" % url if scheme.startswith("postg") else "url = '%s'" % url])
    return dict(family="dsn", kind="cfg", body=body, secrets=[p], fname=pick(["settings.py", ".env", "config.yaml", "app.env"]))


@gen
def g_jdbc():
    p = pw()
    u = user()
    style = R.randint(0, 2)
    if style == 0:
        body = ("spring.datasource.url=jdbc:mysql://%s:3306/%s?useSSL=false&serverTimezone=Asia/Shanghai\n"
                "spring.datasource.username=%s\nspring.datasource.password=%s\n"
                "spring.jpa.hibernate.ddl-auto=validate") % (host(), pick(DBS), u, p)
        fname = "application.properties"
    elif style == 1:
        body = "jdbc:postgresql://%s:5432/%s?user=%s&password=%s&ssl=true" % (host(), pick(DBS), u, p.replace("&", "A"))
        p = p.replace("&", "A")
        fname = None
    else:
        body = "jdbc:sqlserver://%s:1433;databaseName=%s;user=%s;password=%s;encrypt=true;" % (
            host(), pick(DBS), u, p.replace(";", "S"))
        p = p.replace(";", "S")
        fname = None
    return dict(family="jdbc", kind="cfg", body=body, secrets=[p], fname=fname or "application.properties")


@gen
def g_adonet():
    p = pw().replace(";", "x")
    srv = pick(["tcp:sql-east.database.windows.net,1433", "(localdb)\\MSSQLLocalDB", "10.1.4.20", "DBSRV01\\SQLEXPRESS"])
    body = "\"ConnectionStrings\": {\n    \"Default\": \"Server=%s;Database=%s;User Id=%s;Password=%s;TrustServerCertificate=True;\"\n  }" % (
        srv.replace("\\", "\\\\"), pick(DBS), user(), p)
    return dict(family="adonet", kind="cfg", body=body, secrets=[p], fname="appsettings.json")


@gen
def g_azure_storage():
    k = azure_storage_key()
    acct = pick(["prodassets", "mlartifacts01", "backupsacct", "webstatic"])
    body = "DefaultEndpointsProtocol=https;AccountName=%s;AccountKey=%s;EndpointSuffix=core.windows.net" % (acct, k)
    if R.random() < 0.5:
        body = "AZURE_STORAGE_CONNECTION_STRING=\"%s\"" % body
    return dict(family="azure-storage", kind="cfg", body=body, secrets=[k], fname="local.settings.json")


@gen
def g_azure_sas():
    sig = base64.b64encode(bytes(R.getrandbits(8) for _ in range(32))).decode()
    sig_enc = sig.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    body = "https://%s.blob.core.windows.net/%s/%s?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-31T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig=%s" % (
        pick(["prodassets", "exportsacct"]), pick(["reports", "dumps"]), pick(["q3.csv", "db.bak"]), sig_enc)
    return dict(family="azure-sas", kind="raw", body=body, secrets=[sig_enc])


@gen
def g_aws_pair():
    i, s = aws_id(), aws_secret()
    style = R.randint(0, 3)
    if style == 0:
        body = "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\nregion = %s" % (
            i, s, pick(["us-east-1", "ap-northeast-1", "eu-central-1", "cn-north-1"]))
        return dict(family="aws", kind="cfg", body=body, secrets=[s], fname="~/.aws/credentials")
    if style == 1:
        body = "export AWS_ACCESS_KEY_ID=%s\nexport AWS_SECRET_ACCESS_KEY=%s" % (i, s)
        secs = [s]
        if i.startswith("ASIA"):
            t = aws_session()
            body += "\nexport AWS_SESSION_TOKEN=%s" % t
            secs.append(t)
        return dict(family="aws", kind="cmd", body=body, secrets=secs)
    if style == 2:
        body = "s3 = boto3.client(\"s3\", aws_access_key_id=\"%s\", aws_secret_access_key=\"%s\")" % (i, s)
        return dict(family="aws", kind="cfg", body=body, secrets=[s], fname="upload.py")
    body = "aws configure set aws_secret_access_key %s --profile %s" % (s, pick(["prod", "ci", "default"]))
    return dict(family="aws", kind="cmd", body=body, secrets=[s])


@gen
def g_cn_cloud():
    c = R.randint(0, 4)
    if c == 0:
        i, s = ali_ak(), ali_sk()
        body = pick(["aliyun configure set --profile default --mode AK --access-key-id %s --access-key-secret %s --region cn-hangzhou" % (i, s),
                     "ALIBABA_CLOUD_ACCESS_KEY_ID=%s\nALIBABA_CLOUD_ACCESS_KEY_SECRET=%s" % (i, s),
                     "oss:\n  endpoint: oss-cn-shanghai.aliyuncs.com\n  accessKeyId: %s\n  accessKeySecret: %s\n  bucket: static-prod" % (i, s)])
        fam = "aliyun"
    elif c == 1:
        i, s = tencent_id(), tencent_sk()
        body = pick(["tccli configure set secretId %s secretKey %s region ap-guangzhou" % (i, s),
                     "TENCENTCLOUD_SECRET_ID=%s\nTENCENTCLOUD_SECRET_KEY=%s" % (i, s),
                     "cred = credential.Credential(\"%s\", \"%s\")" % (i, s)])
        fam = "tencentcloud"
    elif c == 2:
        i, s = huawei_ak(), huawei_sk()
        body = pick(["HUAWEICLOUD_SDK_AK=%s\nHUAWEICLOUD_SDK_SK=%s" % (i, s),
                     "obsutil config -i=%s -k=%s -e=obs.cn-north-4.myhuaweicloud.com" % (i, s)])
        fam = "huaweicloud"
    elif c == 3:
        i, s = volc_ak(), volc_sk()
        body = "VOLCENGINE_ACCESS_KEY=%s\nVOLCENGINE_SECRET_KEY=%s" % (i, s)
        fam = "volcengine"
    else:
        i, s = rs(24), rs(32)
        body = "BAIDU_API_KEY=%s\nBAIDU_SECRET_KEY=%s\n# 文心一言 access_token 通过 oauth/2.0/token 获取" % (i, s)
        fam = "baidu"
    kind = "cmd" if body.startswith(("aliyun", "tccli", "obsutil")) else "cfg"
    return dict(family=fam, kind=kind, body=body, secrets=[s], fname=pick([".env", "config.yaml", "deploy.env"]))


# ---- private keys ---------------------------------------------------------------------
@gen
def g_pem_plain():
    text, secs, _, kind = pem()
    fname = pick(["id_rsa", "deploy_key", "server.key", "tls.key", "id_ed25519", "jwt-signing.pem"])
    return dict(family="private-key", kind="cfg", body=text, secrets=secs, fname=fname)


@gen
def g_pem_json():
    text, secs, lines, kind = pem("PRIVATE KEY")
    proj = pick(["acme-prod", "ml-sandbox-4821", "data-platform-cn"])
    esc = text.replace("\n", "\\n") + "\\n"
    body = ("{\n  \"type\": \"service_account\",\n  \"project_id\": \"%s\",\n  \"private_key_id\": \"%s\",\n"
            "  \"private_key\": \"%s\",\n  \"client_email\": \"%s@%s.iam.gserviceaccount.com\",\n"
            "  \"client_id\": \"%d\",\n  \"token_uri\": \"https://oauth2.googleapis.com/token\"\n}") % (
        proj, hx(40), esc, pick(["terraform", "bq-loader", "ci-deployer"]), proj, R.randint(10 ** 20, 10 ** 21))
    return dict(family="private-key-json", kind="cfg", body=body, secrets=secs,
                fname=pick(["service-account.json", "gcp-key.json", "credentials.json"]))


@gen
def g_pem_yaml():
    text, secs, lines, kind = pem(pick(["RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"]))
    ind = "  " * R.randint(2, 3)
    body_lines = [ind + l for l in text.split("\n")]
    if R.random() < 0.5:
        head = "deploy:\n  ssh:\n    host: %s\n    user: %s\n    private_key: |\n" % (host(), user())
    else:
        head = "tls:\n  cert_file: /etc/ssl/certs/app.crt\n  key: |\n"
        ind2 = "    "
        body_lines = [ind2 + l for l in text.split("\n")]
    return dict(family="private-key-yaml", kind="cfg", body=head + "\n".join(body_lines), secrets=secs,
                fname=pick(["values.yaml", "deploy.yml", "config/prod.yaml"]))


@gen
def g_pem_env():
    text, secs, lines, kind = pem(pick(["RSA PRIVATE KEY", "PRIVATE KEY"]))
    esc = text.replace("\n", "\\n")
    body = "JWT_PRIVATE_KEY=\"%s\"" % esc
    return dict(family="private-key-env", kind="cfg", body=body, secrets=secs, fname=".env")


@gen
def g_age_gpg():
    if R.random() < 0.5:
        k = age_key()
        body = "# created: 2026-0%d-1%dT10:22:31+08:00\n# public key: age1%s\n%s" % (
            R.randint(1, 9), R.randint(0, 9), rs(58, BECH.lower()), k)
        return dict(family="age-key", kind="cfg", body=body, secrets=[k], fname="keys.txt")
    lines = [b64bytes(48) for _ in range(6)]
    body = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(lines) + "\n=" + rs(4, B64) + "\n-----END PGP PRIVATE KEY BLOCK-----"
    return dict(family="pgp-private-key", kind="cfg", body=body, secrets=lines, fname="secret.asc")


# ---- JWT / cookies / sessions -------------------------------------------------------------
@gen
def g_jwt():
    t = jwt(alg=pick(["HS256", "HS256", "RS256"]))
    body = pick(["Authorization: Bearer %s" % t,
                 "{\"access_token\": \"%s\", \"token_type\": \"Bearer\", \"expires_in\": 3600}" % t,
                 "localStorage.setItem('token', '%s')" % t,
                 "wscat -c 'wss://rt.example.com/socket?token=%s'" % t])
    return dict(family="jwt", kind="raw", body=body, secrets=[t])


@gen
def g_supabase_service():
    t = jwt({"iss": "supabase", "ref": rs(20, LO), "role": "service_role", "iat": 1700000000, "exp": 2015576000})
    body = "SUPABASE_URL=https://%s.supabase.co\nSUPABASE_SERVICE_ROLE_KEY=%s" % (rs(20, LO), t)
    return dict(family="supabase-jwt", kind="cfg", body=body, secrets=[t], fname=".env.local")


@gen
def g_cookie():
    c = R.randint(0, 4)
    if c == 0:
        v = rs(32, ANL)
        ck = "sessionid=%s; csrftoken=%s" % (v, rs(32))
        secs = [v]
    elif c == 1:
        v = "s%3A" + rs(32, URL) + "." + rs(43, AN + "%")
        ck = "connect.sid=%s" % v
        secs = [v]
    elif c == 2:
        v = rs(26, ANL)
        ck = "PHPSESSID=%s; lang=zh-CN" % v
        secs = [v]
    elif c == 3:
        v = b64url_nopad(bytes(R.getrandbits(8) for _ in range(120)))
        ck = "_gh_sess=%s; logged_in=yes" % v
        secs = [v]
    else:
        v = "eyJpdiI6I" + rs(180, AN) + "%3D%3D"
        ck = "laravel_session=%s" % v
        secs = [v]
    body = pick(["curl 'https://%s/api/me' -H 'Cookie: %s'" % (pick(["app.example.com", "admin.shop.cn", "intranet.corp"]), ck),
                 "Set-Cookie: %s; Path=/; HttpOnly; Secure" % ck.split(";")[0],
                 "Cookie: %s" % ck])
    if body.startswith("Set-Cookie"):
        secs = [secs[0]]
    return dict(family="session-cookie", kind="raw", body=body, secrets=secs)


# ---- webhooks ---------------------------------------------------------------------------
@gen
def g_webhook():
    c = R.randint(0, 6)
    if c == 0:
        s = rs(24)
        url = "https://hooks.slack.com/services/T%s/B%s/%s" % (rs(10, UP + DG), rs(10, UP + DG), s)
        fam = "slack-webhook"
    elif c == 1:
        s = rs(68, URL)
        url = "https://discord.com/api/webhooks/%d/%s" % (R.randint(10 ** 17, 10 ** 18), s)
        fam = "discord-webhook"
    elif c == 2:
        s = hx(64)
        url = "https://oapi.dingtalk.com/robot/send?access_token=%s" % s
        fam = "dingtalk-webhook"
    elif c == 3:
        s = uuid4()
        url = "https://open.feishu.cn/open-apis/bot/v2/hook/%s" % s
        fam = "feishu-webhook"
    elif c == 4:
        s = uuid4()
        url = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=%s" % s
        fam = "wecom-webhook"
    elif c == 5:
        s = hx(32)
        url = "https://acme.webhook.office.com/webhookb2/%s@%s/IncomingWebhook/%s/%s" % (uuid4(), uuid4(), s, uuid4())
        fam = "teams-webhook"
    else:
        k, t = google_key(), rs(43, URL) + "%3D"
        url = "https://chat.googleapis.com/v1/spaces/AAAA%s/messages?key=%s&token=%s" % (rs(7, URL), k, t)
        s = None
        fam = "gchat-webhook"
    secs = [s] if s else [k, t]
    body = pick(["curl -X POST -H 'Content-Type: application/json' -d '{\"text\":\"deploy finished\"}' %s" % url,
                 "WEBHOOK_URL=%s" % url, "notify:\n  webhook: %s\n  on_failure: true" % url,
                 "requests.post(\"%s\", json={\"msg_type\": \"text\", \"content\": {\"text\": \"告警：磁盘使用率 92%%\"}})" % url])
    return dict(family=fam, kind="raw", body=body, secrets=secs)


@gen
def g_url_creds():
    p = pw_url()
    u = user()
    url = pick(["https://%s:%s@registry.npmjs.company.cn/", "http://%s:%s@proxy.corp:3128",
                "https://%s:%s@nexus.internal/repository/pypi/simple", "ftp://%s:%s@ftp.vendor.com/in/",
                "https://%s:%s@es.logs.internal:9200", "socks5://%s:%s@47.96.12.8:1080",
                "smb://%s:%s@nas.home.lan/share"]) % (u, p)
    body = pick(["export HTTPS_PROXY=%s" % url, "pip install --index-url %s torch" % url,
                 "proxy = \"%s\"" % url, "rclone copy ./out remote: --webdav-url %s" % url, url])
    return dict(family="url-credentials", kind="raw", body=body, secrets=[p])


# ---- passwords as command arguments ---------------------------------------------------------
CLI_PW = [
    ("mysql", lambda u, p, h: "mysql -h %s -u %s -p%s %s" % (h, u, p, pick(DBS))),
    ("mysql", lambda u, p, h: "mysql --host=%s --user=%s --password='%s' -e 'SHOW DATABASES;'" % (h, u, p)),
    ("mysqldump", lambda u, p, h: "mysqldump -u%s -p'%s' --single-transaction %s > /tmp/dump.sql" % (u, p, pick(DBS))),
    ("mysqladmin", lambda u, p, h: "mysqladmin -u root -p%s password '%s'" % (pw(3), p)),
    ("psql", lambda u, p, h: "PGPASSWORD=%s psql -h %s -U %s -d %s -c '\\dt'" % (p, h, u, pick(DBS))),
    ("pg_dump", lambda u, p, h: "PGPASSWORD='%s' pg_dump -h %s -U %s -Fc %s -f backup.dump" % (p, h, u, pick(DBS))),
    ("sqlcmd", lambda u, p, h: "sqlcmd -S %s -U sa -P '%s' -Q \"SELECT name FROM sys.databases\"" % (h, p)),
    ("mongosh", lambda u, p, h: "mongosh \"mongodb://%s:27017\" --username %s --password '%s' --authenticationDatabase admin" % (h, u, p)),
    ("mongodump", lambda u, p, h: "mongodump -u %s -p %s --host %s --db %s --out /backup" % (u, p, h, pick(DBS))),
    ("redis-cli", lambda u, p, h: "redis-cli -h %s -p 6379 -a '%s' INFO replication" % (h, p)),
    ("redis-cli", lambda u, p, h: "redis-cli --user %s --pass %s -h %s KEYS 'session:*'" % (u, p, h)),
    ("influx", lambda u, p, h: "influx -host %s -username %s -password %s -database telegraf" % (h, u, p)),
    ("clickhouse", lambda u, p, h: "clickhouse-client --host %s --user %s --password %s --query 'SELECT 1'" % (h, u, p)),
    ("sshpass", lambda u, p, h: "sshpass -p '%s' ssh -o StrictHostKeyChecking=no %s@%s 'systemctl restart app'" % (p, u, h)),
    ("sshpass", lambda u, p, h: "sshpass -p %s scp ./release.tar.gz %s@%s:/opt/app/" % (p, u, h)),
    ("smbclient", lambda u, p, h: "smbclient //%s/share -U %s%%%s -c 'ls'" % (h, u, p)),
    ("mount-cifs", lambda u, p, h: "sudo mount -t cifs //%s/data /mnt/data -o username=%s,password=%s,vers=3.0" % (h, u, p.replace(",", "x"))),
    ("net-use", lambda u, p, h: "net use Z: \\\\%s\\public %s /user:CORP\\%s /persistent:yes" % (h, p, u)),
    ("xfreerdp", lambda u, p, h: "xfreerdp /v:%s /u:%s /p:%s /dynamic-resolution" % (h, u, p)),
    ("lftp", lambda u, p, h: "lftp -u %s,%s sftp://%s -e 'mirror -R ./dist /var/www; quit'" % (u, p.replace(",", "x"), h)),
    ("ldapsearch", lambda u, p, h: "ldapsearch -x -H ldap://%s -D 'cn=admin,dc=corp,dc=local' -w '%s' -b 'dc=corp,dc=local' '(uid=%s)'" % (h, p, u)),
    ("ipmitool", lambda u, p, h: "ipmitool -I lanplus -H %s -U ADMIN -P %s chassis power status" % (h, p)),
    ("mosquitto", lambda u, p, h: "mosquitto_pub -h %s -u %s -P '%s' -t sensors/temp -m 21.5" % (h, u, p)),
    ("rabbitmqctl", lambda u, p, h: "rabbitmqctl add_user %s '%s' && rabbitmqctl set_user_tags %s administrator" % (u, p, u)),
    ("rabbitmqctl", lambda u, p, h: "rabbitmqctl change_password guest %s" % p),
    ("htpasswd", lambda u, p, h: "htpasswd -b -c /etc/nginx/.htpasswd %s '%s'" % (u, p)),
    ("chpasswd", lambda u, p, h: "echo '%s:%s' | sudo chpasswd" % (u, p)),
    ("7z", lambda u, p, h: "7z a -p%s -mhe=on backup-%s.7z ./data" % (p, R.randint(20240101, 20261231))),
    ("zip", lambda u, p, h: "zip -r -P '%s' export.zip reports/" % p),
    ("unzip", lambda u, p, h: "unzip -P %s invoices_2025.zip -d ./invoices" % p),
    ("rar", lambda u, p, h: "rar a -hp%s archive.rar docs/" % p),
    ("openssl", lambda u, p, h: "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:%s" % p),
    ("openssl", lambda u, p, h: "openssl rsa -in encrypted.key -out plain.key -passin pass:'%s'" % p),
    ("openssl", lambda u, p, h: "openssl enc -aes-256-cbc -salt -pbkdf2 -in db.sql -out db.sql.enc -k %s" % p),
    ("keytool", lambda u, p, h: "keytool -genkeypair -alias server -keyalg RSA -keystore keystore.jks -storepass %s -keypass %s -dname 'CN=%s'" % (p, p, h)),
    ("keytool", lambda u, p, h: "keytool -importcert -file ca.crt -keystore truststore.jks -storepass '%s' -noprompt" % p),
    ("ssh-keygen", lambda u, p, h: "ssh-keygen -t ed25519 -C '%s@%s' -N '%s' -f ~/.ssh/id_deploy" % (u, h, p)),
    ("ssh-keygen", lambda u, p, h: "ssh-keygen -p -P '%s' -N '' -f ~/.ssh/id_rsa" % p),
    ("gpg", lambda u, p, h: "gpg --batch --yes --pinentry-mode loopback --passphrase '%s' -d secrets.tar.gpg | tar x" % p),
    ("docker-login", lambda u, p, h: "docker login -u %s -p %s registry.example.com" % (u, p)),
    ("docker-login", lambda u, p, h: "docker login --username %s --password %s ghcr.io" % (u, pick([gh_pat, pw])())),
    ("podman-login", lambda u, p, h: "podman login -u %s -p '%s' quay.io" % (u, p)),
    ("helm", lambda u, p, h: "helm repo add internal https://charts.corp/ --username %s --password %s" % (u, p)),
    ("helm", lambda u, p, h: "helm install pg bitnami/postgresql --set auth.postgresPassword=%s --set auth.database=%s" % (p, pick(DBS))),
    ("kubectl", lambda u, p, h: "kubectl create secret generic db-creds --from-literal=username=%s --from-literal=password='%s' -n prod" % (u, p)),
    ("kubectl", lambda u, p, h: "kubectl create secret docker-registry regcred --docker-server=harbor.corp --docker-username=%s --docker-password=%s" % (u, p)),
    ("nmcli", lambda u, p, h: "nmcli dev wifi connect '%s' password '%s'" % (pick(["Office-5G", "TP-LINK_8F2A", "CMCC-xk3P", "HomeNet"]), p)),
    ("wpa_passphrase", lambda u, p, h: "wpa_passphrase %s %s >> /etc/wpa_supplicant/wpa_supplicant.conf" % (pick(["Lab-WiFi", "ChinaNet-9Qz"]), p)),
    ("openconnect", lambda u, p, h: "echo '%s' | sudo openconnect --user=%s --passwd-on-stdin vpn.corp.com" % (p, u)),
    ("securestring", lambda u, p, h: "$pw = ConvertTo-SecureString '%s' -AsPlainText -Force; $cred = New-Object PSCredential('CORP\\%s', $pw)" % (p, u)),
    ("securestring", lambda u, p, h: "New-LocalUser -Name %s -Password (ConvertTo-SecureString \"%s\" -AsPlainText -Force)" % (u, p)),
    ("runas", lambda u, p, h: "psexec \\\\%s -u CORP\\%s -p %s cmd /c ipconfig" % (h, u, p)),
    ("az", lambda u, p, h: "az login --service-principal -u %s -p %s --tenant %s" % (uuid4(), rs(40, AN + "~._-"), uuid4())),
    ("az", lambda u, p, h: "az acr login --name acmeregistry --username %s --password %s" % (u, rs(52, AN + "+/"))),
    ("npm", lambda u, p, h: "npm config set //registry.npmjs.org/:_authToken %s" % npm_tok()),
    ("pip", lambda u, p, h: "pip config set global.index-url https://%s:%s@pypi.corp/simple" % (u, pw_url())),
    ("twine", lambda u, p, h: "twine upload -u __token__ -p %s dist/*" % pypi_tok()),
    ("gem", lambda u, p, h: "gem push pkg/mylib-1.2.0.gem --key %s" % rubygems_key()),
    ("dotnet-nuget", lambda u, p, h: "dotnet nuget push bin/Release/*.nupkg --api-key %s --source https://api.nuget.org/v3/index.json" % nuget_key()),
    ("cargo", lambda u, p, h: "cargo login cio%s" % rs(32)),
    ("vault", lambda u, p, h: "vault login %s" % vault_tok()),
    ("vault", lambda u, p, h: "vault login -method=userpass username=%s password=%s" % (u, p)),
    ("mc", lambda u, p, h: "mc alias set minio http://%s:9000 %s %s" % (h, rs(20, UP + DG), rs(40))),
    ("rsync", lambda u, p, h: "RSYNC_PASSWORD='%s' rsync -avz ./site/ rsync://%s@%s/www/" % (p, u, h)),
    ("java-props", lambda u, p, h: "java -Djavax.net.ssl.keyStorePassword=%s -Ddb.password=%s -jar app.jar" % (p, pw(3))),
    ("mvn", lambda u, p, h: "mvn deploy -Drepo.username=%s -Drepo.password=%s" % (u, p)),
    ("ansible", lambda u, p, h: "ansible-playbook site.yml -i hosts -e 'ansible_become_pass=%s ansible_user=%s'" % (p, u)),
    ("snmpwalk", lambda u, p, h: "snmpwalk -v3 -u %s -l authPriv -a SHA -A '%s' -x AES -X '%s' %s" % (u, p, pw(3), h)),
    ("winrm", lambda u, p, h: "evil-winrm -i %s -u Administrator -p '%s'" % (h, p)),
    ("ftp", lambda u, p, h: "curl -T report.csv ftp://%s/upload/ --user %s:%s" % (h, u, p)),
    ("wp-cli", lambda u, p, h: "wp user create %s %s@example.com --role=administrator --user_pass='%s'" % (u, u.replace(".", ""), p)),
    ("sqlplus", lambda u, p, h: "sqlplus system/%s@//%s:1521/ORCLPDB1" % (p.replace("@", "A").replace("/", "S"), h)),
    ("rclone", lambda u, p, h: "rclone config create mywebdav webdav url=https://dav.jianguoyun.com/dav/ user=%s pass=%s" % (u, p)),
    ("git-askpass", lambda u, p, h: "git -c credential.helper='!f() { echo username=%s; echo password=%s; }; f' fetch" % (u, p)),
]


_DECKS = {}


def deal(name, items):
    """Draw items in shuffled order, reshuffling when exhausted (even coverage)."""
    d = _DECKS.get(name)
    if not d:
        d = list(items)
        R.shuffle(d)
        _DECKS[name] = d
    return d.pop()


@gen
def g_cli_pw():
    tool, f = deal("cli", CLI_PW)
    u, h = user(), host()
    p = pw()
    if tool in ("sqlplus",):
        p = p.replace("@", "A").replace("/", "S")
    if tool == "mount-cifs":
        p = p.replace(",", "x")
    if tool == "lftp":
        p = p.replace(",", "x")
    body = f(u, p, h)
    secs = [p] if p in body else extract_tool_secret(tool, body)
    if tool == "mysqladmin":
        old = body.split("-p", 1)[1].split(" ", 1)[0]
        secs = [old, p]
    if tool in ("java-props", "snmpwalk"):
        secs = [p] + extract_tool_secret(tool, body)
    return dict(family="cli-" + tool, kind="cmd", body=body, secrets=secs)


def extract_tool_secret(tool, body):
    toks = body.replace("'", " ").split()
    if tool == "docker-login":
        return [toks[toks.index("--password") + 1]]
    if tool == "az":
        if "--password" in toks:
            return [toks[toks.index("--password") + 1]]
        return [toks[toks.index("-p") + 1]]
    if tool == "npm":
        return [toks[-1]]
    if tool == "pip":
        return [body.split("@")[0].rsplit(":", 1)[1]]
    if tool == "twine":
        return [toks[toks.index("-p") + 1]]
    if tool == "gem":
        return [toks[toks.index("--key") + 1]]
    if tool == "dotnet-nuget":
        return [toks[toks.index("--api-key") + 1]]
    if tool == "cargo":
        return [toks[-1]]
    if tool == "vault":
        return [toks[-1]]
    if tool == "mc":
        return [toks[-1]]
    if tool == "java-props":
        return [body.split("-Ddb.password=")[1].split(" ")[0]]
    if tool == "snmpwalk":
        return [toks[toks.index("-X") + 1]]
    raise ValueError(tool)


# ---- configuration files ------------------------------------------------------------------
@gen
def g_yaml_cfg():
    p = pw()
    t = pick(VENDOR_ENV)[2]()
    c = R.randint(0, 3)
    if c == 0:
        body = ("database:\n  host: %s\n  port: 5432\n  user: %s\n  password: \"%s\"\n  pool_size: 10\n"
                "integrations:\n  api_key: %s\n") % (host(), user(), p, t)
        secs = [p, t]
        fn = "config.yaml"
    elif c == 1:
        body = ("services:\n  db:\n    image: mysql:8.0\n    environment:\n      MYSQL_ROOT_PASSWORD: %s\n"
                "      MYSQL_DATABASE: %s\n    ports:\n      - \"3306:3306\"\n") % (p, pick(DBS))
        secs = [p]
        fn = "docker-compose.yml"
    elif c == 2:
        body = ("spring:\n  redis:\n    host: %s\n    port: 6379\n    password: %s\n  mail:\n    host: smtp.qq.com\n"
                "    username: %d@qq.com\n    password: %s\n") % (host(), p, R.randint(10 ** 8, 10 ** 10), rs(16, LO))
        secs = [p, body.split("password: ")[2].split("\n")[0]]
        fn = "application.yml"
    else:
        body = ("- name: Configure app\n  hosts: web\n  vars:\n    ansible_user: %s\n    ansible_password: %s\n"
                "    app_secret_key: %s\n") % (user(), p, hx(48))
        secs = [p, body.split("app_secret_key: ")[1].split("\n")[0]]
        fn = "playbook.yml"
    return dict(family="yaml-config", kind="cfg", body=body, secrets=secs, fname=fn)


@gen
def g_toml_ini():
    p = pw()
    c = R.randint(0, 3)
    if c == 0:
        t = pick([openai_key, anthropic_key, deepseek_key])()
        body = "[database]\nurl = \"postgres://%s@%s/%s\"\npassword = \"%s\"\n\n[llm]\nprovider = \"openai\"\napi_key = \"%s\"\n" % (
            user(), host(), pick(DBS), p, t)
        secs, fn = [p, t], "config.toml"
    elif c == 1:
        body = "[client]\nuser=%s\npassword=%s\nhost=%s\n" % (user(), p, host())
        secs, fn = [p], "~/.my.cnf"
    elif c == 2:
        t = pypi_tok()
        body = "[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\npassword = %s\n" % t
        secs, fn = [t], "~/.pypirc"
    else:
        body = "[mysqld]\nport=3306\n\n[replication]\nmaster_host=%s\nmaster_user=repl\nmaster_password=%s\n" % (host(), p)
        secs, fn = [p], "my.ini"
    return dict(family="toml-ini", kind="cfg", body=body, secrets=secs, fname=fn)


@gen
def g_json_cfg():
    p = pw()
    t = pick(VENDOR_ENV)[2]()
    c = R.randint(0, 2)
    if c == 0:
        body = json.dumps({"db": {"host": host(), "user": user(), "password": p}, "apiKey": t, "debug": False}, indent=2)
        secs, fn = [p, t], "config.json"
    elif c == 1:
        body = json.dumps({"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                                     "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": gh_pat()}}}}, indent=2)
        secs = [json.loads(body)["mcpServers"]["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"]]
        fn = "mcp.json"
    else:
        body = json.dumps({"type": "mysql", "host": host(), "port": 3306, "username": user(), "password": p,
                           "database": pick(DBS), "synchronize": False}, indent=2)
        secs, fn = [p], "ormconfig.json"
    return dict(family="json-config", kind="cfg", body=body, secrets=secs, fname=fn)


@gen
def g_xml_cfg():
    p = pw().replace("&", "x").replace("<", "x")
    c = R.randint(0, 2)
    if c == 0:
        body = ("<settings>\n  <servers>\n    <server>\n      <id>nexus-releases</id>\n      <username>%s</username>\n"
                "      <password>%s</password>\n    </server>\n  </servers>\n</settings>") % (user(), p)
        fn = "~/.m2/settings.xml"
    elif c == 1:
        body = ("<Resource name=\"jdbc/AppDB\" auth=\"Container\" type=\"javax.sql.DataSource\"\n"
                "          username=\"%s\" password=\"%s\"\n          driverClassName=\"com.mysql.cj.jdbc.Driver\"\n"
                "          url=\"jdbc:mysql://%s:3306/%s\"/>") % (user(), p, host(), pick(DBS))
        fn = "context.xml"
    else:
        body = ("<configuration>\n  <appSettings>\n    <add key=\"SmtpUser\" value=\"noreply@corp.com\" />\n"
                "    <add key=\"SmtpPassword\" value=\"%s\" />\n  </appSettings>\n</configuration>") % p
        fn = "Web.config"
    return dict(family="xml-config", kind="cfg", body=body, secrets=[p], fname=fn)


@gen
def g_hcl():
    p = pw()
    c = R.randint(0, 1)
    if c == 0:
        body = ("resource \"aws_db_instance\" \"main\" {\n  engine         = \"postgres\"\n  instance_class = \"db.t3.medium\"\n"
                "  username       = \"%s\"\n  password       = \"%s\"\n  skip_final_snapshot = true\n}") % (user(), p)
        secs, fn = [p], "main.tf"
    else:
        t = do_tok()
        k = cf_token()
        body = "do_token = \"%s\"\ncloudflare_api_token = \"%s\"\nregion = \"sgp1\"" % (t, k)
        secs, fn = [t, k], "terraform.tfvars"
    return dict(family="hcl", kind="cfg", body=body, secrets=secs, fname=fn)


@gen
def g_k8s_secret():
    u, p = user(), pw()
    bu = base64.b64encode(u.encode()).decode()
    bp = base64.b64encode(p.encode()).decode()
    extra = ""
    secs = [bp]
    if R.random() < 0.5:
        t = pick(VENDOR_ENV)[2]()
        bt = base64.b64encode(t.encode()).decode()
        extra = "  api-token: %s\n" % bt
        secs.append(bt)
    body = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\ntype: Opaque\ndata:\n"
            "  username: %s\n  password: %s\n%s") % (pick(["db-credentials", "app-secrets", "mysql-auth"]),
                                                     pick(["prod", "default", "payments"]), bu, bp, extra)
    if R.random() < 0.3:
        body = body.replace("data:\n  username: %s\n  password: %s\n" % (bu, bp),
                            "stringData:\n  username: %s\n  password: %s\n" % (u, p))
        secs = [p] + secs[1:]
    return dict(family="k8s-secret", kind="cfg", body=body.rstrip("\n"), secrets=secs, fname="secret.yaml")


@gen
def g_docker_config():
    u, p = user(), pick([pw, docker_pat])()
    a = base64.b64encode(("%s:%s" % (u, p)).encode()).decode()
    body = json.dumps({"auths": {pick(["https://index.docker.io/v1/", "registry.cn-hangzhou.aliyuncs.com", "harbor.corp.local"]):
                                 {"auth": a}}}, indent=2)
    return dict(family="docker-config", kind="cfg", body=body, secrets=[a], fname="~/.docker/config.json")


@gen
def g_npmrc_netrc():
    if R.random() < 0.5:
        t = npm_tok()
        body = "registry=https://registry.npmjs.org/\n@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken=%s\n" % gh_pat()
        body += "//registry.npmjs.org/:_authToken=%s" % t
        secs = [body.split("_authToken=")[1].split("\n")[0], t]
        return dict(family="npmrc", kind="cfg", body=body, secrets=secs, fname=".npmrc")
    p = pw()
    body = "machine %s\n  login %s\n  password %s" % (pick(["api.heroku.com", "github.com", "ftp.vendor.com", "git.corp"]), user(), p)
    return dict(family="netrc", kind="cfg", body=body, secrets=[p], fname="~/.netrc")


@gen
def g_framework_keys():
    c = R.randint(0, 4)
    if c == 0:
        k = django_key()
        body = "SECRET_KEY = '%s'\nDEBUG = False\nALLOWED_HOSTS = ['*']" % k
        fn = "settings.py"
    elif c == 1:
        k = laravel_key()
        body = "APP_NAME=Laravel\nAPP_ENV=production\nAPP_KEY=%s\nAPP_DEBUG=false" % k
        fn = ".env"
    elif c == 2:
        k = hx(128)
        body = "production:\n  secret_key_base: %s" % k
        fn = "config/secrets.yml"
    elif c == 3:
        k = pw()
        body = "define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp_%s' );\ndefine( 'DB_PASSWORD', '%s' );\ndefine( 'DB_HOST', 'localhost' );" % (rs(4, LO), k)
        fn = "wp-config.php"
    else:
        k = hx(64)
        body = "app = Flask(__name__)\napp.config['SECRET_KEY'] = '%s'" % k
        fn = "app.py"
    return dict(family="framework-secret", kind="cfg", body=body, secrets=[k], fname=fn)


@gen
def g_gha_inline():
    t = pick(VENDOR_ENV)[2]()
    var = pick(["NPM_TOKEN", "API_KEY", "DEPLOY_TOKEN", "SLACK_TOKEN"])
    body = ("jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      %s: %s\n      NODE_VERSION: 20\n"
            "    steps:\n      - uses: actions/checkout@v4\n      - run: ./scripts/deploy.sh") % (var, t)
    return dict(family="ci-inline-secret", kind="cfg", body=body, secrets=[t], fname=".github/workflows/deploy.yml")


@gen
def g_gitlab_ci():
    p = pw()
    body = ("deploy:\n  stage: deploy\n  script:\n    - docker login -u gitlab-ci-token -p %s $CI_REGISTRY\n"
            "    - docker push $CI_REGISTRY_IMAGE:$CI_COMMIT_SHORT_SHA") % p
    return dict(family="ci-inline-secret", kind="cfg", body=body, secrets=[p], fname=".gitlab-ci.yml")


# ---- tool errors and stack traces -----------------------------------------------------------
@gen
def g_err_trace():
    c = R.randint(0, 7)
    p = pw_url()
    h = host()
    u = user()
    if c == 0:
        body = ("Traceback (most recent call last):\n  File \"/app/db.py\", line 12, in <module>\n"
                "    conn = psycopg2.connect(\"host=%s dbname=%s user=%s password=%s\")\n"
                "psycopg2.OperationalError: connection to server at \"%s\", port 5432 failed: FATAL:  password authentication failed for user \"%s\"") % (
            h, pick(DBS), u, p, h, u)
        fam = "error-python"
    elif c == 1:
        body = ("sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (1045, \"Access denied for user '%s'@'172.17.0.1' (using password: YES)\")\n"
                "(Background on this error at: https://sqlalche.me/e/20/e3q8)\n"
                "[SQL: SELECT 1]\nengine url: mysql+pymysql://%s:%s@%s:3306/%s") % (u, u, p, h, pick(DBS))
        fam = "error-python"
    elif c == 2:
        body = ("Exception in thread \"main\" java.sql.SQLException: Access denied for user '%s'@'%%'\n"
                "\tat com.mysql.cj.jdbc.exceptions.SQLError.createSQLException(SQLError.java:129)\n"
                "\tat com.zaxxer.hikari.pool.PoolBase.newConnection(PoolBase.java:364)\n"
                "Caused by: datasource config {url=jdbc:mysql://%s:3306/%s, username=%s, password=%s}") % (u, h, pick(DBS), u, p)
        fam = "error-java"
    elif c == 3:
        t = pick([openai_key, gh_pat, stripe_key, slack_bot])()
        body = ("AxiosError: Request failed with status code 401\n    at settle (node_modules/axios/lib/core/settle.js:19:12)\n"
                "  config: {\n    url: 'https://api.vendor.io/v1/sync',\n    method: 'post',\n    headers: {\n"
                "      Accept: 'application/json, text/plain, */*',\n      Authorization: 'Bearer %s',\n"
                "      'User-Agent': 'axios/1.7.2'\n    }\n  }") % t
        p = t
        fam = "error-node"
    elif c == 4:
        t = openai_key()
        body = ("openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: %s. "
                "You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', "
                "'code': 'invalid_api_key'}}") % t
        p = t
        fam = "error-api"
    elif c == 5:
        body = ("Error response from daemon: Get \"https://%s/v2/\": unauthorized: incorrect username or password\n"
                "+ docker login -u %s -p %s harbor.corp.local\nexit status 1") % ("harbor.corp.local", u, p)
        fam = "error-shell"
    elif c == 6:
        body = ("redis.exceptions.AuthenticationError: invalid username-password pair or user is disabled.\n"
                "  while connecting with Redis<ConnectionPool<Connection<host=%s,port=6379,db=0,password=%s>>>") % (h, p)
        fam = "error-python"
    else:
        body = ("panic: dial tcp: lookup %s: no such host\n\ngoroutine 1 [running]:\nmain.mustConnect({0xc0000a2000, 0x5a})\n"
                "\t/src/cmd/api/main.go:41 +0x1a5\n\tdsn=\"%s:%s@tcp(%s:3306)/%s?parseTime=true\"") % (h, u, p, h, pick(DBS))
        fam = "error-go"
    return dict(family=fam, kind="err", body=body, secrets=[p])


@gen
def g_log_line():
    t = pick(VENDOR_ENV)[2]()
    ts = "2026-%02d-%02dT%02d:%02d:%02d.%03dZ" % (R.randint(1, 12), R.randint(1, 28), R.randint(0, 23),
                                                 R.randint(0, 59), R.randint(0, 59), R.randint(0, 999))
    body = pick(["%s DEBUG http.client send: b'GET /v1/me HTTP/1.1\\r\\nHost: api.vendor.io\\r\\nAuthorization: Bearer %s\\r\\n'" % (ts, t),
                 "%s INFO  config loaded: {\"env\": \"prod\", \"token\": \"%s\", \"retries\": 3}" % (ts, t),
                 "[%s] WARN  request to https://api.vendor.io/v1/export?api_key=%s&format=csv took 5321ms" % (ts, t),
                 "%s ERROR Settings(api_key='%s', timeout=30) validation failed: model not found" % (ts, t)])
    return dict(family="log-leak", kind="err", body=body, secrets=[t])


@gen
def g_query_param():
    c = R.randint(0, 3)
    if c == 0:
        k = google_key()
        body = "https://maps.googleapis.com/maps/api/geocode/json?address=Shenzhen&key=%s" % k
    elif c == 1:
        k = hx(32)
        body = "https://api.openweathermap.org/data/2.5/weather?q=Taipei&appid=%s" % k
    elif c == 2:
        k = rs(32)
        body = "GET /api/v1/export?access_token=%s&since=2026-01-01 HTTP/1.1" % k
    else:
        k = telegram_bot()
        body = "https://api.telegram.org/bot%s/sendMessage?chat_id=-100%d&text=build+ok" % (k, R.randint(10 ** 9, 10 ** 10))
    return dict(family="url-query-key", kind="raw", body=body, secrets=[k])


@gen
def g_sdk_code():
    c = R.randint(0, 4)
    if c == 0:
        k = openai_key()
        body = "from openai import OpenAI\nclient = OpenAI(api_key=\"%s\")" % k
    elif c == 1:
        k = anthropic_key()
        body = "const client = new Anthropic({ apiKey: '%s' });" % k
    elif c == 2:
        k = stripe_key()
        body = "Stripe.api_key = \"%s\"" % k
    elif c == 3:
        k = deepseek_key()
        body = "client = OpenAI(api_key=\"%s\", base_url=\"https://api.deepseek.com\")" % k
    else:
        k = slack_bot()
        body = "app = App(token=\"%s\", signing_secret=\"%s\")" % (k, hx(32))
        return dict(family="sdk-code", kind="cfg", body=body, secrets=[k, body.split("signing_secret=\"")[1][:32]], fname="bot.py")
    return dict(family="sdk-code", kind="cfg", body=body, secrets=[k], fname=pick(["main.py", "index.ts", "client.rb", "llm.py"]))


# ---- context-only secrets of unknown format --------------------------------------------------
@gen
def g_context_only():
    c = R.randint(0, 5)
    if c == 0:
        v = rs(R.randint(24, 40), URL)
        body = "license_key: %s" % v
    elif c == 1:
        v = hx(40)
        body = "INTERNAL_SIGNING_SECRET=%s" % v
    elif c == 2:
        v = rs(12, ANL) + "-" + rs(12, ANL)
        body = "\"client_secret\": \"%s\"," % v
    elif c == 3:
        v = b64bytes(24)
        body = "hmac_key = \"%s\"" % v
    elif c == 4:
        v = rs(6, UP + DG) + "-" + rs(6, UP + DG) + "-" + rs(6, UP + DG)
        body = "recovery code: %s" % v
    else:
        v = rs(32, ANL)
        body = "encryption_passphrase=%s" % v
    return dict(family="context-secret", kind="cfg", body=body, secrets=[v], fname=pick(["settings.ini", "app.conf", "secrets.txt", "local.yaml"]))


# ---- prose / chat / transcripts (final text, language given) ----------------------------------
def any_secret():
    c = R.randint(0, 3)
    if c == 0:
        return pw(), "password"
    fam, var, f = pick(VENDOR_ENV)
    return f(), fam


EN_PROSE = [
    "the password for the staging box is {s} — can you ssh in as {u} and check why nginx is down?",
    "Use this key for now: {s}. I'll rotate it after the demo.",
    "ok here's the token {s} just get the deploy working",
    "My db password is {s} and the user is {u}, the connection keeps timing out though.",
    "Login for the admin panel is {u} / {s}",
    "I set the root password to {s} during install, please don't change it.",
    "try with pass={s} instead, the old one expired",
    "FYI new VPN creds: user {u}, password {s} (valid until Friday)",
    "The wifi password in the lab is {s} if you need to download models.",
    "can you add {s} as the API key in the config and rerun the tests?",
    "Passphrase for the deploy key: {s}",
    "he pasted his token ({s}) in the channel, we need to revoke it",
]
ZH_PROSE = [
    "数据库密码是 {s}，用户名 {u}，帮我连一下看看表结构",
    "服务器 root 密码：{s}，你直接 ssh 上去排查一下",
    "这是我的 API key：{s}，帮我写个脚本调用一下",
    "新的密钥 {s} 已经生成了，替换一下配置文件里的旧的",
    "管理后台账号 {u}，密码 {s}，登录后把日志导出来",
    "我把 token 贴这里了 {s} 用完记得删",
    "测试环境的 redis 密码是{s}，不要用在生产",
    "VPN 账号是 {u}，口令是 {s}",
    "帮我把这个令牌配到 CI 里面：{s}",
    "压缩包的解压密码是 {s}",
]
HANT_PROSE = [
    "資料庫密碼是 {s}，帳號 {u}，幫我看一下為什麼連不上",
    "這是我的 API 金鑰：{s}，請幫我測試一下",
    "伺服器的 root 密碼：{s}，麻煩你登入檢查 nginx 設定",
    "新的權杖是 {s}，舊的已經撤銷了",
    "管理後台帳號 {u}，密碼 {s}",
    "壓縮檔密碼為 {s}，下載後記得刪除",
    "Wi-Fi 密碼是 {s}",
]
MIXED_PROSE = [
    "帮我 debug 一下，DB password 是 {s}，user 是 {u}",
    "这个 token {s} 是 staging 的，deploy 完就 revoke",
    "API key 给你：{s}，rate limit 有点低注意一下",
    "我的 GitHub PAT 是 {s}，push 的时候一直 403",
    "login 不上去，password 明明是 {s} 啊",
    "這個 secret {s} 要放進 GitHub Actions 的 repo secrets 裡",
    "export 了 {s} 之後還是 401, why?",
    "请用这个 key：{s} call 一下 /v1/models 看看",
]


@gen
def g_prose():
    lang = pick(["en", "en", "zh", "zh", "zh-Hant", "mixed", "mixed"])
    tpl = pick({"en": EN_PROSE, "zh": ZH_PROSE, "zh-Hant": HANT_PROSE, "mixed": MIXED_PROSE}[lang])
    tokenish = any(w in tpl for w in ("key", "token", "令牌", "金鑰", "權杖", "密钥", "PAT", "secret"))
    if tokenish:
        fam, var, f = pick(VENDOR_ENV)
        s = f()
    else:
        s, fam = pw(), "password"
    text = tpl.format(s=s, u=user())
    return dict(family="chat-" + ("password" if fam == "password" else "token"), lang=lang, full=True, body=text, secrets=[s])


@gen
def g_transcript():
    fam, var, f = pick(VENDOR_ENV)
    t = f()
    p = pw()
    lang = pick(["en", "en", "zh", "mixed"])
    um = {"en": "here is my key %s, set it up and run the smoke test" % t,
          "zh": "我的 key 是 %s，帮我配置好然后跑一下冒烟测试" % t,
          "mixed": "key 在这：%s，帮我 setup 一下然后 run smoke test" % t}[lang]
    cmd = "export %s=%s && ./scripts/smoke.sh" % (var, t)
    lines = [json.dumps({"role": "user", "content": um}, ensure_ascii=False),
             json.dumps({"role": "assistant", "tool_use": {"name": "Bash", "input": {"command": cmd}}}, ensure_ascii=False),
             json.dumps({"role": "tool", "content": "smoke: connecting to db with password=%s ... FAILED (timeout)" % p}, ensure_ascii=False)]
    return dict(family="agent-transcript", lang=lang, full=True, body="\n".join(lines), secrets=[t, p])


@gen
def g_env_dump():
    secs = []
    lines = ["HOME=/home/%s" % user().replace(".", ""), "SHELL=/bin/zsh", "LANG=zh_CN.UTF-8",
             "PATH=/usr/local/bin:/usr/bin:/bin", "PWD=/srv/app", "TERM=xterm-256color"]
    for fam, var, f in R.sample(VENDOR_ENV, R.randint(1, 3)):
        v = f()
        lines.insert(R.randint(0, len(lines)), "%s=%s" % (var, v))
        secs.append(v)
    head = pick(["$ env | sort", "$ printenv", "Output of `env`:", "[tool_result] env"])
    if R.random() < 0.5:
        lines.sort()
    return dict(family="env-dump", lang="en", full=True, body=head + "\n" + "\n".join(lines), secrets=secs)


@gen
def g_docker_inspect():
    p = pw()
    fam, var, f = pick(VENDOR_ENV)
    t = f()
    body = ("$ docker inspect api --format '{{json .Config.Env}}'\n"
            "[\"POSTGRES_PASSWORD=%s\",\"%s=%s\",\"PATH=/usr/local/sbin:/usr/local/bin\",\"LANG=C.UTF-8\"]") % (p, var, t)
    return dict(family="docker-inspect", lang="en", full=True, body=body, secrets=[p, t])


@gen
def g_history():
    u, h = user(), host()
    p = pw()
    p2 = pw(3)
    n = R.randint(200, 1900)
    body = "$ history | tail -5\n %d  cd /srv/app\n %d  git pull\n %d  mysql -u%s -p%s -h %s\n %d  sshpass -p '%s' ssh %s@%s\n %d  history | tail -5" % (
        n, n + 1, n + 2, u, p, h, n + 3, p2, u, h, n + 4)
    return dict(family="shell-history", lang="en", full=True, body=body, secrets=[p, p2])


@gen
def g_lesson_with_secret():
    s, fam = any_secret()
    lang = pick(["en", "zh"])
    text = pick({"en": ["Prefer: connect with `psql -U app` using password {s} on staging / Avoid: using the prod replica",
                        "Avoid: re-generating the key; the working one is {s}",
                        "Prefer: set OPENAI_API_KEY={s} before running the evals"],
                 "zh": ["优先：用账号 deploy 密码 {s} 登录跳板机 / 避免：直接连生产库",
                        "避免：重新申请 key，目前可用的是 {s}"]}[lang]).format(s=s)
    return dict(family="lesson-leak", lang=lang, full=True, body=text, secrets=[s])


# relative weights: command-line passwords and vendor tokens are the most common real pastes
SG += [g_cli_pw] * 14 + [g_env_export] * 5 + [g_prose] * 4 + [g_webhook, g_cn_cloud, g_dsn, g_err_trace,
                                                             g_auth_bearer_curl, g_transcript, g_cn_cloud]


# ================================================================ wrappers for core snippets
def jd(o):
    return json.dumps(o, ensure_ascii=False)


def fence(body, lang=""):
    return "```%s\n%s\n```" % (lang, body)


def wrap(d):
    kind = d["kind"]
    body = d["body"]
    fname = d.get("fname") or "config"
    r = R.random()
    if kind == "cmd":
        opts = [
            ("en", lambda: "$ " + body),
            ("en", lambda: jd({"type": "tool_use", "name": "Bash", "input": {"command": body,
                                                                                  "description": pick(["Run it", "Connect and check", "Deploy"])}})),
            ("en", lambda: "I ran this:\n" + fence(body, "bash") + "\nand it just hangs. Any idea?"),
            ("en", lambda: "Command failed with exit code %d:\n%s\n%s" % (pick([1, 2, 127, 255]), body,
                                                                         pick(["Permission denied (publickey,password).", "Connection refused",
                                                                               "ERROR 2003 (HY000): Can't connect to server", "error: unauthorized"]))),
            ("en", lambda: "RUN " + body if not body.startswith("$") else body),
            ("en", lambda: "      - run: " + body.replace("\n", " && ")),
            ("zh", lambda: "我执行了下面的命令，但是报错了：\n" + fence(body, "bash") + "\n帮我看看是什么问题"),
            ("zh", lambda: "运行 `%s` 之后没反应，怎么办？" % body.replace("\n", "; ")),
            ("zh-Hant", lambda: "我跑了這個指令：\n%s\n結果一直卡住，請問要怎麼處理？" % body),
            ("mixed", lambda: "这个 command 跑不通：\n%s\nerror 信息在下面，help" % body),
            ("en", lambda: body),
        ]
    elif kind == "cfg":
        opts = [
            ("en", lambda: "Here's my %s:\n%s" % (fname, fence(body))),
            ("en", lambda: "$ cat %s\n%s" % (fname, body)),
            ("en", lambda: jd({"type": "tool_result", "tool_use_id": "toolu_" + rs(24),
                                       "content": "File: %s\n%s" % (fname, body)})),
            ("en", lambda: "Why doesn't this %s work in prod?\n\n%s" % (fname, body)),
            ("zh", lambda: "这是我的配置文件 %s：\n%s\n启动的时候报认证失败" % (fname, fence(body))),
            ("zh-Hant", lambda: "以下是 %s 的內容，請幫我檢查：\n%s" % (fname, body)),
            ("mixed", lambda: "%s 如下，deploy 之后一直 401：\n%s" % (fname, fence(body))),
            ("en", lambda: body),
        ]
    elif kind == "err":
        opts = [
            ("en", lambda: body),
            ("en", lambda: "Tool error:\n" + body),
            ("en", lambda: jd({"type": "tool_result", "is_error": True, "content": body})),
            ("en", lambda: "Getting this when I start the service:\n" + fence(body, "text")),
            ("zh", lambda: "启动服务时报错：\n%s\n是哪里配置错了？" % body),
            ("zh-Hant", lambda: "服務啟動時出現錯誤：\n%s" % body),
            ("mixed", lambda: "CI log 里出现这个 error：\n%s" % body),
        ]
    else:
        opts = [
            ("en", lambda: body),
            ("en", lambda: "Request I'm sending:\n" + fence(body)),
            ("en", lambda: jd({"type": "tool_use", "name": "Bash", "input": {"command": body}})),
            ("zh", lambda: "下面这个请求返回 401：\n%s" % body),
            ("zh-Hant", lambda: "這個請求一直失敗：\n%s" % body),
            ("mixed", lambda: "抓包看到的 request 如下：\n%s" % body),
        ]
    lang, f = pick(opts)
    return lang, f()


# ================================================================ lookalikes (no credential)
LG = []


def lk(fn):
    LG.append(fn)
    return fn


ENV_NAMES = ["DB_PASSWORD", "OPENAI_API_KEY", "GITHUB_TOKEN", "STRIPE_SECRET_KEY", "REDIS_PASSWORD",
             "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY", "MYSQL_ROOT_PASSWORD",
             "DEEPSEEK_API_KEY", "JWT_SECRET", "SMTP_PASSWORD", "HF_TOKEN", "DOCKERHUB_TOKEN"]


@lk
def l_env_ref():
    v = pick(ENV_NAMES)
    return "env-reference", "en", pick([
        "export DATABASE_URL=\"postgres://%s:${DB_PASSWORD}@%s:5432/%s\"" % (user(), host(), pick(DBS)),
        "curl -H \"Authorization: Bearer $%s\" https://api.example.com/v1/me" % v,
        "docker run -e %s=\"$%s\" -e PORT=${PORT:-8080} myimage:latest" % (v, v),
        "password: ${%s}" % v,
        "api_key = os.environ[\"%s\"]" % v,
        "const key = process.env.%s ?? '';" % v,
        "String pw = System.getenv(\"%s\");" % v,
        "set PGPASSWORD=%%%s%% && psql -h %s -U %s" % (v, host(), user()),
        "$env:%s = (Get-Content -Raw $HOME\\.secrets\\%s.txt).Trim()" % (v, v.lower()),
        "REDIS_URL=redis://:${REDIS_PASSWORD:-}@redis:6379/0",
        "DB_USER=${DB_USER:-postgres}\nDB_PASSWORD=${DB_PASSWORD:?DB_PASSWORD must be set}",
        "token = ENV.fetch('%s') { raise 'missing %s' }" % (v, v),
    ])


@lk
def l_cmd_subst():
    return "command-substitution", "en", pick([
        "export GITHUB_TOKEN=$(gh auth token)",
        "PGPASSWORD=$(cat /run/secrets/db_password) psql -h %s -U %s %s" % (host(), user(), pick(DBS)),
        "export VAULT_TOKEN=$(vault print token)",
        "aws ecr get-login-password --region us-east-1 | docker login --username AWS --password-stdin %d.dkr.ecr.us-east-1.amazonaws.com" % R.randint(10 ** 11, 10 ** 12),
        "export OPENAI_API_KEY=\"$(op read 'op://Private/OpenAI/credential')\"",
        "DB_PASS=$(vault kv get -field=password secret/%s/db)" % pick(["prod", "staging"]),
        "echo \"$CR_PAT\" | docker login ghcr.io -u %s --password-stdin" % user(),
        "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d > /tmp/pw && chmod 600 /tmp/pw",
        "export NPM_TOKEN=$(security find-generic-password -s npm -w)",
        "TOKEN=$(gcloud auth print-access-token)\ncurl -H \"Authorization: Bearer ${TOKEN}\" https://storage.googleapis.com/storage/v1/b",
        "mysql --defaults-extra-file=<(printf '[client]\\npassword=%s\\n' \"$MYSQL_PWD\") -u root",
        "sshpass -f ~/.ssh/pass.txt ssh %s@%s" % (user(), host()),
        "sshpass -e ssh %s@%s   # reads SSHPASS from the environment" % (user(), host()),
        "openssl pkcs12 -export -in cert.pem -inkey key.pem -out out.p12 -passout env:P12_PASS",
        "keytool -list -keystore app.jks -storepass:env STOREPASS",
        "openssl rsa -in enc.key -out dec.key -passin file:/etc/ssl/private/pass.txt",
    ])


@lk
def l_template():
    return "template", pick(["en", "en", "mixed"]), pick([
        "      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
        "        with:\n          password: ${{ secrets.DOCKERHUB_TOKEN }}\n          username: ${{ vars.DOCKERHUB_USER }}",
        "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-credentials\n        key: password",
        "password: {{ .Values.postgresql.auth.password | quote }}",
        "db_password: \"{{ vault_db_password }}\"",
        "spring.datasource.password=${DB_PASS}",
        "<password>${env.NEXUS_PASSWORD}</password>",
        "password = var.db_password\napi_token = data.aws_secretsmanager_secret_version.api.secret_string",
        "url: <%= ENV['DATABASE_URL'] %>",
        "token: '{{ env \"CONSUL_HTTP_TOKEN\" }}'",
        "DATABASE_URL=postgres://{{user}}:{{password}}@{{host}}:5432/{{db}}",
        "Authorization: Bearer {{access_token}}",
        "docker login -u $CI_REGISTRY_USER -p $CI_REGISTRY_PASSWORD $CI_REGISTRY",
        "在 Actions 里用 ${{ secrets.DEPLOY_KEY }} 引用，不要写死在 workflow 里",
    ])


@lk
def l_placeholder():
    return "placeholder", pick(["en", "en", "zh"]), pick([
        "mysql -h <host> -u <user> -p<password> <database>",
        "export OPENAI_API_KEY=\"sk-...\"",
        "export OPENAI_API_KEY=<your-api-key>",
        "ANTHROPIC_API_KEY=your_api_key_here",
        "curl -u USERNAME:PASSWORD https://api.example.com/",
        "git clone https://<username>:<token>@github.com/org/repo.git",
        "postgresql://user:password@localhost:5432/mydb",
        "STRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
        "docker login -u <user> -p <password> registry.example.com",
        "aws_secret_access_key = YOUR_SECRET_ACCESS_KEY",
        "Authorization: Bearer <token>",
        "api_key: \"REPLACE_ME\"",
        "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "把 YOUR_API_KEY 替换成你自己的密钥",
        "password=\"<在这里填写密码>\"",
        "sshpass -p '<password>' ssh user@host",
        "7z a -p\"<passphrase>\" out.7z dir/",
        "DB_PASSWORD=   # fill in locally, never commit",
        "SECRET_KEY=change-me-in-production",
        "TOKEN=${TOKEN}  # injected by CI",
    ])


@lk
def l_secret_manager():
    return "secret-manager-ref", "en", pick([
        "arn:aws:secretsmanager:%s:%d:secret:prod/db/password-%s" % (pick(["us-east-1", "eu-west-1"]), R.randint(10 ** 11, 10 ** 12), rs(6)),
        "projects/%d/secrets/%s/versions/latest" % (R.randint(10 ** 11, 10 ** 12), pick(["db-password", "openai-key", "stripe-secret"])),
        "@Microsoft.KeyVault(SecretUri=https://%s.vault.azure.net/secrets/%s/)" % (pick(["kv-prod", "acme-kv"]), pick(["DbPassword", "ApiKey"])),
        "vault:secret/data/%s/db#password" % pick(["prod", "staging"]),
        "op://Engineering/%s/credential" % pick(["GitHub", "Stripe", "Postgres"]),
        "ssm:/app/%s/DB_PASSWORD (SecureString, version 7)" % pick(["prod", "dev"]),
        "gcloud secrets versions access latest --secret=%s" % pick(["db-pass", "api-key"]),
        "aws secretsmanager get-secret-value --secret-id prod/api-key --query SecretString --output text",
        "az keyvault secret show --vault-name kv-prod --name DbPassword --query value -o tsv",
        "kubectl create secret generic app --from-file=password=./secrets/db_password.txt",
        "docker secret create db_password ./db_password.txt",
        "acs:kms:cn-hangzhou:%d:secret/rds-password" % R.randint(10 ** 15, 10 ** 16),
    ])


@lk
def l_masked():
    return "masked", pick(["en", "en", "zh"]), pick([
        "OPENAI_API_KEY=sk-...%s" % rs(4),
        "Using token ghp_************************************",
        "Authorization: Bearer [REDACTED]",
        "password: ********",
        "aws_secret_access_key = ****************************************",
        "API key: sk-ant-...%s (created %s)" % (rs(4), pick(["Mar 3", "2026-02-11"])),
        "DATABASE_URL=postgres://app:***@%s:5432/%s" % (host(), pick(DBS)),
        "Masked value: ***\n##[group]Run ./deploy.sh\nDEPLOY_TOKEN: ***",
        "token=<redacted> user=%s" % user(),
        "密码：******（已隐藏）",
        "STRIPE_SECRET_KEY=sk_live_••••••••••••%s" % rs(4),
        "key ending in ...%s was revoked" % rs(4),
        "[redacted]",
        "Secret 'DB_PASSWORD' is set (value hidden).",
    ])


def ssh_pub(kind=None):
    kind = kind or pick(["ed25519", "rsa", "ecdsa"])
    if kind == "ed25519":
        return "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rs(43, B64)
    if kind == "rsa":
        return "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + rs(540, B64) + "="
    return "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB" + rs(87, B64) + "="


@lk
def l_public_key():
    c = R.randint(0, 6)
    if c == 0:
        return "ssh-public-key", "en", "%s %s@%s" % (ssh_pub(), user(), pick(["laptop", "ci", "MacBook-Pro.local"]))
    if c == 1:
        return "authorized-keys", "en", "$ cat ~/.ssh/authorized_keys\n%s deploy@ci\n%s %s@home" % (ssh_pub(), ssh_pub("ed25519"), user())
    if c == 2:
        return "known-hosts", "en", "github.com %s\n%s %s" % (ssh_pub("ed25519"), host(), ssh_pub("ecdsa"))
    if c == 3:
        lines = pem_lines("X")
        return "public-key-pem", "en", "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----" % "\n".join(lines[:6])
    if c == 4:
        lines = pem_lines("PRIVATE KEY")
        return "certificate", "en", "$ cat fullchain.pem\n-----BEGIN CERTIFICATE-----\nMIIF%s\n%s\n-----END CERTIFICATE-----" % (lines[1][4:], "\n".join(lines[2:14]))
    if c == 5:
        return "age-public", "en", "age -r age1%s -o secrets.enc secrets.yaml" % rs(58, BECH.lower())
    return "jwks", "en", jd({"keys": [{"kty": "RSA", "use": "sig", "kid": rs(16), "alg": "RS256", "e": "AQAB",
                                       "n": b64url_nopad(bytes(R.getrandbits(8) for _ in range(256)))}]})


@lk
def l_hashes():
    c = R.randint(0, 9)
    if c == 0:
        return "checksum", "en", "$ sha256sum dist/*.tar.gz\n%s  dist/app-1.%d.0.tar.gz\n%s  dist/app-1.%d.0-linux-amd64.tar.gz" % (
            hx(64), R.randint(0, 20), hx(64), R.randint(0, 20))
    if c == 1:
        s = [hx(40) for _ in range(3)]
        return "git-log", "en", "commit %s\nAuthor: %s <%s@example.com>\nDate:   Tue Mar 3 10:1%d:02 2026 +0800\n\n    fix: retry on 502\n\ncommit %s\nMerge: %s %s" % (
            s[0], user(), user().replace(".", ""), R.randint(0, 9), s[1], s[2][:7], hx(7))
    if c == 2:
        return "image-digest", "en", "docker pull nginx@sha256:%s" % hx(64)
    if c == 3:
        return "lockfile-integrity", "en", "\"node_modules/%s\": {\n  \"version\": \"%d.%d.%d\",\n  \"resolved\": \"https://registry.npmjs.org/%s/-/%s-%d.%d.%d.tgz\",\n  \"integrity\": \"sha512-%s==\"\n}" % (
            ("lodash",) + (4, 17, 21) + ("lodash", "lodash", 4, 17, 21) + (rs(86, B64),))
    if c == 4:
        return "go-sum", "en", "github.com/%s/%s v1.%d.0 h1:%s=\ngithub.com/%s/%s v1.%d.0/go.mod h1:%s=" % (
            "spf13", "cobra", 8, rs(43, B64), "spf13", "cobra", 8, rs(43, B64))
    if c == 5:
        return "pip-hash", "en", "requests==2.32.3 \\\n    --hash=sha256:%s \\\n    --hash=sha256:%s" % (hx(64), hx(64))
    if c == 6:
        return "cargo-lock", "en", "[[package]]\nname = \"serde\"\nversion = \"1.0.%d\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"%s\"" % (R.randint(150, 219), hx(64))
    if c == 7:
        return "git-sha", pick(["en", "zh"]), pick(["Reverted %s, the bisect points at %s." % (hx(40), hx(12)),
                                                   "回滚到 %s 之后问题消失了，怀疑是 %s 引入的" % (hx(40), hx(7))])
    if c == 8:
        return "etag", "en", "HTTP/2 200\ncontent-type: application/json\netag: W/\"%s\"\nx-request-id: %s\nx-amz-cf-id: %s==" % (hx(32), uuid4(), rs(54, URL))
    return "md5", "en", "md5: %s  sha1: %s  file: model.safetensors" % (hx(32), hx(40))


@lk
def l_ids():
    c = R.randint(0, 9)
    if c == 0:
        return "uuid", "en", "Created job %s (trace_id=%s, span_id=%s)" % (uuid4(), hx(32), hx(16))
    if c == 1:
        return "stripe-object-id", "en", "charge ch_%s for customer cus_%s via payment_intent pi_%s succeeded" % (rs(24), rs(14), rs(24))
    if c == 2:
        return "aws-arn", "en", "arn:aws:iam::%d:role/%s\narn:aws:s3:::%s/exports/*\ni-%s  subnet-%s  sg-%s" % (
            R.randint(10 ** 11, 10 ** 12), pick(["GitHubActionsDeploy", "LambdaExec"]), pick(["acme-logs", "data-lake-prod"]), hx(17), hx(17), hx(17))
    if c == 3:
        return "oauth-client-id", "en", "GOOGLE_CLIENT_ID=%d-%s.apps.googleusercontent.com" % (R.randint(10 ** 11, 10 ** 12), rs(32, ANL))
    if c == 4:
        return "publishable-key", "en", pick(["NEXT_PUBLIC_STRIPE_PUBLISHABLE_KEY=pk_live_%s" % rs(99),
                                              "mapboxgl.accessToken = 'pk.%s.%s'; // public token, URL-restricted" % (
                                                  b64url_nopad(jd({"u": "acme", "a": "cl" + rs(23, ANL)}).replace(" ", "").encode()), rs(22, URL))])
    if c == 5:
        return "slack-ids", "en", "Posting to channel C0%s (team T0%s, user U0%s), ts=%d.%06d" % (rs(9, UP + DG), rs(9, UP + DG), rs(9, UP + DG), R.randint(1.7e9, 1.8e9), R.randint(0, 999999))
    if c == 6:
        return "order-id", "zh", "订单号 %d%d，微信支付交易单号 4200%s，物流单号 SF%d" % (R.randint(2025, 2026), R.randint(10 ** 13, 10 ** 14), rs(24, DG), R.randint(10 ** 11, 10 ** 12))
    if c == 7:
        return "request-id", "en", "Error: 429 Too Many Requests (request id: req_%s)\nRetry-After: 20" % rs(24)
    if c == 8:
        return "twilio-sid", "en", "Message SM%s queued from Messaging Service MG%s on account AC%s" % (hx(32), hx(32), hx(32))
    return "k8s-uid", "en", "metadata:\n  name: api-7d9c%s-%s\n  uid: %s\n  resourceVersion: \"%d\"" % (rs(4, ANL), rs(5, ANL), uuid4(), R.randint(10 ** 6, 10 ** 8))


@lk
def l_doc_urls():
    return "share-url", pick(["en", "en", "zh", "mixed"]), pick([
        "Spec is here: https://docs.google.com/document/d/%s/edit?usp=sharing" % rs(44, URL),
        "https://drive.google.com/file/d/%s/view" % rs(33, URL),
        "Design: https://www.figma.com/design/%s/Checkout-v2?node-id=12-345" % rs(22),
        "https://www.notion.so/acme/Incident-postmortem-%s" % hx(32),
        "需求文档：https://%s.feishu.cn/docx/%s" % (rs(8, ANL), rs(27)),
        "腾讯文档 https://docs.qq.com/sheet/D%s?tab=BB08J2" % rs(20),
        "see https://gist.github.com/%s/%s" % (user().replace(".", ""), hx(32)),
        "视频教程 https://www.bilibili.com/video/BV1%s" % rs(9),
        "https://www.youtube.com/watch?v=%s&t=42s" % rs(11, URL),
        "Repro notebook: https://colab.research.google.com/drive/%s" % rs(33, URL),
        "https://github.com/acme/api/actions/runs/%d/job/%d" % (R.randint(10 ** 9, 10 ** 10), R.randint(10 ** 10, 10 ** 11)),
        "https://arxiv.org/abs/2%d.%05d" % (R.randint(301, 512), R.randint(0, 99999)),
        "S3 object: https://acme-public-assets.s3.amazonaws.com/img/%s.webp" % hx(32),
    ])


@lk
def l_base64_data():
    c = R.randint(0, 4)
    if c == 0:
        return "data-uri", "en", "background: url(data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ%s);" % rs(120, B64)
    if c == 1:
        cfg = base64.b64encode(jd({"theme": "dark", "lang": "zh-CN", "pageSize": 20}).encode()).decode()
        return "base64-config", "en", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ui-settings\nbinaryData:\n  settings.json: %s" % cfg
    if c == 2:
        return "mime-base64", "en", "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n%s" % base64.b64encode(
            pick(["Hi team, the release is scheduled for Friday.", "会议改到下午三点，请准时参加。"]).encode()).decode()
    if c == 3:
        return "protobuf-b64", "en", "grpcurl -d '{\"payload\": \"%s\"}' localhost:50051 events.v1.Ingest/Push" % b64bytes(30)
    return "pagination-token", "en", "{\"items\": [], \"nextPageToken\": \"%s\", \"totalSize\": %d}" % (b64url_nopad(jd({"offset": R.randint(20, 900)}).encode()), R.randint(900, 5000))


@lk
def l_protocol():
    return "protocol-constant", "en", pick([
        "GET /chat HTTP/1.1\nUpgrade: websocket\nConnection: Upgrade\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\nSec-WebSocket-Version: 13",
        "Sec-WebSocket-Accept is SHA-1 of the key + 258EAFA5-E914-47DA-95CA-C5AB0DC85B11, base64-encoded",
        "POST /oauth/token\ngrant_type=authorization_code&code_verifier=...&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb",
        "https://accounts.example.com/authorize?response_type=code&client_id=web-app&scope=openid%20profile&code_challenge_method=S256&state=xyz",
        "{\"token_type\": \"Bearer\", \"expires_in\": 3600, \"scope\": \"repo read:org\"}",
        "WWW-Authenticate: Bearer realm=\"api\", error=\"invalid_token\", error_description=\"The access token expired\"",
        "ACME directory: https://acme-v02.api.letsencrypt.org/directory",
        "Accept: application/vnd.github+json\nX-GitHub-Api-Version: 2022-11-28",
        "Content-Security-Policy: default-src 'self'; script-src 'self' 'nonce-{{nonce}}'",
        "ssh -o PreferredAuthentications=publickey -o PubkeyAuthentication=yes git@github.com",
        "TLS_AES_128_GCM_SHA256, TLS_CHACHA20_POLY1305_SHA256, ECDHE-RSA-AES256-GCM-SHA384",
    ])


@lk
def l_flags_no_value():
    return "flag-without-value", "en", pick([
        "docker run -d -p 8080:80 -p 8443:443 nginx",
        "ssh -p 2222 %s@%s" % (user(), host()),
        "redis-cli -h %s -p 6379 PING" % host(),
        "psql -h %s -p 5432 -U %s -W %s" % (host(), user(), pick(DBS)),
        "mysql -u root -p   # prompts for the password",
        "cat ~/token.txt | docker login --username %s --password-stdin" % user(),
        "gh auth login --with-token < token.txt",
        "npm login --auth-type=web",
        "mkdir -p /var/lib/app && zip -r -q out.zip build/",
        "scp -P 2200 -i ~/.ssh/id_ed25519 build.tgz %s@%s:/tmp/" % (user(), host()),
        "7z x -y -o./out archive.7z",
        "pg_dump --no-password -h %s -U %s %s" % (host(), user(), pick(DBS)),
        "openssl rand -hex 32 > .jwt_secret && chmod 600 .jwt_secret",
        "ssh-keygen -t ed25519 -C \"ci@acme\" -f ./deploy_key",
        "kubectl port-forward svc/grafana 3000:80 -n monitoring",
        "git push --force-with-lease origin feature/%s" % pick(["auth-refactor", "token-cache", "password-reset"]),
        "pip install --trusted-host pypi.corp --index-url https://pypi.corp/simple requests",
        "rsync -avzP --password-file=/etc/rsync.pass ./site/ backup@%s::www" % host(),
        "openconnect --user=%s --passwd-on-stdin vpn.corp.com < /dev/tty" % user(),
    ])


@lk
def l_policy():
    return "password-policy", pick(["en", "zh", "zh-Hant", "mixed"]), pick([
        "Password must be at least 12 characters and include an uppercase letter, a digit and a symbol.",
        "password: required\npassword_confirmation: required|same:password",
        "min_password_length = 14\npassword_reuse_prevention = 24\nmax_password_age = 90",
        "PasswordAuthentication no\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes",
        "密码长度至少 8 位，需同时包含大小写字母和数字",
        "密碼需包含至少一個特殊符號，且不可與前三次相同",
        "请输入密码：",
        "Token 已过期，请重新登录（错误码 40101）",
        "ERROR 1045 (28000): Access denied for user 'app'@'10.0.0.5' (using password: YES)",
        "FATAL:  password authentication failed for user \"postgres\"",
        "remote: Support for password authentication was removed on August 13, 2021.",
        "Error: Cannot perform an interactive login from a non TTY device",
        "新密码不能与旧密码相同",
        "API key 必须通过 header 传，不要放 query string 里",
        "passwd: all authentication tokens updated successfully.",
        "kubectl describe secret db-creds\nName:         db-creds\nType:  Opaque\n\nData\n====\npassword:  16 bytes\nusername:  8 bytes",
        "NAME              TYPE                                  DATA   AGE\ndb-creds          Opaque                                2      41d\nregcred           kubernetes.io/dockerconfigjson        1      120d",
        "\"max_tokens\": 4096, \"temperature\": 0.2",
        "Tokens used: 18,432 (prompt 15,210 / completion 3,222)",
        "tokenizer = AutoTokenizer.from_pretrained(\"Qwen/Qwen2.5-7B-Instruct\")",
        "def hash_password(raw: str) -> str:\n    return bcrypt.hashpw(raw.encode(), bcrypt.gensalt()).decode()",
        "/etc/passwd is world-readable; /etc/shadow is not.",
        "forgot password? https://app.example.com/account/password/reset",
        "CSRF token missing or incorrect.",
    ])


@lk
def l_misc_values():
    c = R.randint(0, 7)
    if c == 0:
        return "network-ids", "en", "eth0: mac %s  inet6 fe80::%s:%s:%s:%s/64" % (
            ":".join(hx(2) for _ in range(6)), hx(4), hx(4), hx(4), hx(4))
    if c == 1:
        return "version-strings", "en", "node v20.11.1 / npm 10.2.4 / build %s (%s)" % (hx(7), "2026-%02d-%02d" % (R.randint(1, 12), R.randint(1, 28)))
    if c == 2:
        return "css-colors", "en", ":root { --brand: #%s; --accent: #%s; --bg: #%s; }" % (hx(6), hx(6), hx(6))
    if c == 3:
        return "crypto-address", "en", "Send test funds to 0x%s on Sepolia" % hx(40)
    if c == 4:
        return "license-text", "en", "SPDX-License-Identifier: Apache-2.0\nCopyright 2026 Acme Inc."
    if c == 5:
        return "random-filename", "en", "Saved upload to /var/app/uploads/%s/%s.jpg" % (hx(2), hx(32))
    if c == 6:
        return "cache-key", "en", "Cache restored from key: node-cache-Linux-x64-npm-%s" % hx(64)
    return "container-id", "en", "CONTAINER ID   IMAGE          STATUS\n%s   postgres:16    Up 3 hours\n%s   redis:7        Up 3 hours" % (hx(12), hx(12))


@lk
def l_chat_about_secrets():
    return "chat-about-secrets", pick(["en", "zh", "zh-Hant", "mixed"]), pick([
        "I rotated the GitHub token this morning; the new one is in 1Password under \"CI deploy\".",
        "Don't paste the API key here, put it in .env and I'll read it from OPENAI_API_KEY.",
        "The DB password lives in AWS Secrets Manager at prod/db; the app fetches it at boot.",
        "密码我已经放在 Vault 的 secret/prod/db 下面了，你用 vault kv get 读一下",
        "token 过期了，我去控制台重新生成一个，你先等一下",
        "把 key 存到 GitHub 的 repo secrets 里，名字叫 DEEPSEEK_API_KEY",
        "金鑰已經輪換過，舊的權杖失效了，新的在密碼管理器裡",
        "不要把 .env commit 上去，加到 .gitignore",
        "I think the 401 is because the token has no `repo` scope, not because it's wrong.",
        "Is `--password-stdin` supported by podman login too?",
        "password 我用 keychain 存的，脚本里用 security find-generic-password 读",
        "The service account key was deleted; we use workload identity federation now.",
        "Ask Lisa for the staging password, it's not in the wiki on purpose.",
    ])


@lk
def l_hant():
    return pick(["placeholder", "password-policy", "env-reference", "checksum", "masked"]) , "zh-Hant", pick([
        "請把 <你的API金鑰> 換成自己的金鑰，再執行 `python main.py`",
        "密碼欄位不可空白，長度需介於 8 到 64 個字元",
        "金鑰請放在環境變數 OPENAI_API_KEY，不要寫在程式碼裡",
        "下載後請核對 SHA-256：%s" % hx(64),
        "權杖：ghp_****（已遮蔽）",
        "部署時用 ${{ secrets.DEPLOY_TOKEN }}，本機用 `.env`（不要提交）",
        "帳號密碼請向 IT 部門申請，這裡不提供",
        "連線字串格式：Server=<主機>;Database=<資料庫>;User Id=<帳號>;Password=<密碼>;",
        "提交紀錄 %s 修正了登入逾時的問題" % hx(40),
        "請使用 `docker login --password-stdin`，避免密碼留在指令歷史",
    ])


@lk
def l_zh():
    return pick(["placeholder", "env-reference", "chat-about-secrets", "checksum", "masked", "password-policy"]), "zh", pick([
        "请把 <你的密码> 替换成实际值后再执行 `mysql -u root -p`，回车后会提示输入",
        "配置里写 password: ${MYSQL_PASSWORD}，真实值由 K8s Secret 注入",
        "镜像校验值 sha256:%s，和官网一致" % hx(64),
        "密钥已打码：AKID********************（仅保留前四位）",
        "登录失败次数超过 5 次，账号锁定 30 分钟",
        "阿里云 AccessKey 请通过 RAM 控制台创建，不要用主账号",
        "本次提交 %s 只改了文档，没有涉及鉴权逻辑" % hx(40),
        "接口文档：https://%s.apifox.cn/doc-%d" % (rs(6, ANL), R.randint(10 ** 6, 10 ** 7)),
        "用户 ID：%s，请求 ID：%s" % (uuid4(), hx(32)),
        "验证码已发送到 138****%04d，5 分钟内有效" % R.randint(0, 9999),
        "公钥指纹 SHA256:%s 与服务器一致" % rs(43, B64),
        "钉钉机器人 webhook 地址在 Vault 的 secret/notify 里，代码里只读环境变量 DINGTALK_WEBHOOK",
    ])


@lk
def l_lookalike_tokens():
    c = R.randint(0, 5)
    if c == 0:
        return "example-doc-key", "en", "In the docs the sample key looks like `sk-proj-...` and the sample AWS id is written as `AKIA...`; replace both."
    if c == 1:
        return "semver-build", "en", "image: ghcr.io/acme/api:v2.%d.%d-%s" % (R.randint(0, 9), R.randint(0, 30), hx(7))
    if c == 2:
        return "function-names", "en", "def get_api_key(settings):\n    return settings.secret_key_name  # name of the key in Vault, not the key"
    if c == 3:
        return "test-vectors", "en", "assert hmac_sha256(b\"key\", b\"The quick brown fox jumps over the lazy dog\").hex() == \"f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8\""
    if c == 4:
        return "wifi-ssid", "zh", "连接 Wi-Fi：%s（密码见前台）" % pick(["Office-5G", "CMCC-Guest", "ChinaNet-Lab"])
    return "gpg-fingerprint", "en", "pub   ed25519 2025-06-01 [SC]\n      %s\nuid           [ultimate] %s <%s@example.com>" % (hx(40).upper(), user(), user().replace(".", ""))


# ================================================================ lessons (no credential)
LESSONS_EN = [
    ("pipe the token into `docker login --username ci --password-stdin`", "passing the registry password with `-p` on the command line"),
    ("read the API key from `OPENAI_API_KEY` via `os.environ`", "hard-coding the key in `client = OpenAI(api_key=...)`"),
    ("reference CI secrets as `${{ secrets.NPM_TOKEN }}` in the workflow env block", "echoing secrets in a `run:` step to debug them"),
    ("`gh auth login --with-token < token.txt` for non-interactive GitHub CLI auth", "pasting the PAT into the chat or the prompt"),
    ("`PGPASSFILE=~/.pgpass` with mode 0600 for psql", "`PGPASSWORD=...` inline in commands that end up in shell history"),
    ("`mysql --defaults-extra-file=~/.my.cnf`", "`mysql -p<password>` which shows up in `ps aux`"),
    ("`sshpass -e` with `SSHPASS` exported from a secret store", "`sshpass -p` with a literal password"),
    ("`openssl pkcs12 -passout env:P12_PASS`", "`-passout pass:` followed by a literal value"),
    ("`keytool -storepass:env STOREPASS`", "putting the keystore password in build.gradle"),
    ("`kubectl create secret generic --from-file=password=./pw.txt` and delete the file after", "`--from-literal=password=...` in scripts committed to git"),
    ("`valueFrom.secretKeyRef` in the pod spec", "plain `value:` entries for passwords in Deployment manifests"),
    ("`aws sso login --profile dev` and short-lived credentials", "long-lived access keys in `~/.aws/credentials` on shared machines"),
    ("OIDC federation (`permissions: id-token: write`) for cloud deploys from GitHub Actions", "storing `AWS_SECRET_ACCESS_KEY` as a repo secret when OIDC is available"),
    ("rotating the key immediately after it appears in a log, then auditing usage", "just deleting the log line and hoping nobody saw it"),
    ("`git filter-repo` plus key rotation when a secret was committed", "assuming a force-push removes the secret from forks and caches"),
    ("adding `.env` to `.gitignore` and shipping `.env.example` with placeholders", "committing `.env` \"just for the demo\""),
    ("`vault kv get -field=password secret/app/db` at runtime", "copying Vault values into config files"),
    ("`op read op://Vault/Item/field` inside `$( )`", "exporting secrets in `~/.zshrc`"),
    ("`gcloud auth application-default login` for local dev", "downloading service-account JSON keys to laptops"),
    ("`az login --identity` on Azure VMs", "`az login -u ... -p ...` in provisioning scripts"),
    ("`npm config set //registry.npmjs.org/:_authToken ${NPM_TOKEN}` in CI, with the variable injected", "a literal `_authToken` in a committed `.npmrc`"),
    ("`twine upload` with `TWINE_USERNAME=__token__` and `TWINE_PASSWORD` from the CI secret", "a `~/.pypirc` containing the token on a shared runner"),
    ("`ssh-agent` and `ssh-add` for key passphrases", "`ssh-keygen -N ''` for keys that reach production"),
    ("`git credential-manager` or `osxkeychain` helpers", "`credential.helper store`, which writes plaintext to `~/.git-credentials`"),
    ("`Read-Host -AsSecureString` for interactive PowerShell prompts", "`ConvertTo-SecureString '...' -AsPlainText -Force` with a literal"),
    ("`::add-mask::` for values computed at runtime in GitHub Actions", "`set -x` in steps that handle tokens"),
    ("fine-grained PATs scoped to one repository with an expiry", "classic PATs with `repo` and `admin:org` that never expire"),
    ("masking secrets in tool output before storing the trace", "saving raw `env` output in the agent memory"),
    ("`redis-cli --askpass` or `REDISCLI_AUTH` from the environment", "`redis-cli -a` with the password on the command line"),
    ("`docker secret` or BuildKit `--secret id=npm,src=$HOME/.npmrc`", "`ARG NPM_TOKEN` baked into image layers"),
    ("`RUN --mount=type=secret,id=pip_conf` in Dockerfiles", "`ENV API_KEY=...` in Dockerfiles"),
    ("checking `git diff --cached` with gitleaks or trufflehog before committing", "disabling the pre-commit secret scan because it is slow"),
    ("asking the user to set the variable themselves when a credential is missing", "asking the user to paste the password into the conversation"),
    ("treating `sk-...abcd` masked keys as already redacted", "\"unmasking\" values by guessing the missing characters"),
    ("`curl --netrc-file ~/.netrc-api` for basic auth", "`curl -u user:password` in scripts and READMEs"),
    ("`-H @headers.txt` with `curl` when the header holds a token", "putting `Authorization: Bearer` values into shared snippets"),
    ("short-lived `gh auth token` output piped directly into the consuming command", "writing tokens to /tmp files without cleanup"),
    ("`helm install --set-file` or `existingSecret` for chart passwords", "`--set auth.password=` with a literal on the CLI"),
    ("`ansible-vault encrypt_string` for vars", "plain `ansible_become_pass` in inventory files"),
    ("`sops -e` with age recipients for secrets in git", "keeping the age private key in the same repository"),
    ("checking the scope of a 403 (missing permission) before asking for a new token", "rotating a token just because a request returned 403"),
    ("`terraform` variables marked `sensitive = true` and supplied via `TF_VAR_db_password`", "defaults for passwords in `variables.tf`"),
    ("revoking the Slack webhook URL after it leaked in a screenshot", "only editing the message that contained it"),
    ("a `.dockerignore` that excludes `.env`, `*.pem` and `id_*`", "`COPY . .` from a directory holding credentials"),
    ("`pg_dump --no-password` with a `.pgpass` entry", "embedding the password in the `postgresql://` URL passed as an argument"),
    ("quoting `$PASSWORD` inside double quotes in scripts", "interpolating secrets into `eval` strings"),
    ("`7z a -p` with no value so 7-Zip prompts for the password", "`7z a -pSecret` in a cron job"),
    ("confirming the secret name with `gh secret list` (names only)", "trying to read secret values back via the API"),
    ("`kubectl get secret x -o jsonpath='{.data}' | wc -c` to check presence", "printing decoded secrets in the terminal during debugging"),
    ("`DATABASE_URL` assembled at runtime from `DB_USER` and a mounted secret file", "full DSNs with passwords in `docker-compose.yml`"),
]
EN_PLAIN = [
    "When a command needs a password, check whether the tool supports `--password-stdin`, `--password-file` or an env var before using a flag.",
    "If a secret appears in a tool error, stop, tell the user, and recommend rotation; do not repeat the value.",
    "`docker login` warns \"Using --password via the CLI is insecure\"; switch to `--password-stdin`.",
    "GitHub Actions masks registered secrets as `***`, but values derived from them (base64, substrings) are not masked automatically.",
    "The AWS access key ID (starts with AKIA or ASIA) identifies the key; the secret access key is the sensitive half.",
    "A Stripe `pk_live_` key is publishable; `sk_live_` and `rk_live_` keys must stay server-side.",
    "JWTs are only base64url-encoded, not encrypted; anyone holding the string can read the claims and replay it until `exp`.",
    "Kubernetes Secret `data:` values are base64, not encryption; treat them as plaintext.",
    "`git config --global credential.helper cache --timeout=3600` keeps credentials in memory only.",
    "Use `ssh -o BatchMode=yes` in automation so ssh fails instead of prompting for a password.",
    "`set +o history` before handling credentials interactively, `set -o history` afterwards.",
    "Public keys (`ssh-ed25519 AAAA...`, `BEGIN PUBLIC KEY`, certificates) are safe to share; private keys never are.",
    "Lockfile `integrity` and `sha256` hashes are not secrets; do not redact them.",
    "A `401` means the credential is missing or invalid; a `403` usually means it is valid but lacks scope.",
    "For MySQL, `-p` immediately followed by text is the password; `-P` is the port.",
    "For `redis-cli`, `-p` is the port and `-a` is the password.",
    "Rotating a leaked key means: create new key, deploy it, revoke old key, then check audit logs.",
    "Secret scanning alerts on a test key still need triage; `sk_test_` keys can read test-mode data.",
    "Prefer env var names like `DB_PASSWORD` in docs and examples over realistic-looking fake values.",
    "Use `<token>` or `${TOKEN}` as placeholders in lessons so nothing resembles a live credential.",
    "Before running a login command, check `--help` for `--password-stdin`, `--token-file` or `--with-token`.",
    "Pass database credentials to containers with `--env-file` pointing at a 0600 file, not `-e PASSWORD=` on the command line.",
    "`history -d <offset>` removes one line from bash history, but the credential should still be rotated.",
    "In agent traces, keep the variable name (`STRIPE_SECRET_KEY`) and drop only the value.",
    "`curl -v` prints request headers including `Authorization`; use `--trace-ascii` only on sanitized runs.",
    "Python `requests` debug logging (`http.client.HTTPConnection.debuglevel = 1`) dumps headers; turn it off before sharing logs.",
    "`printenv | cut -d= -f1` lists variable names without printing their values.",
    "A webhook URL is a credential: anyone with the full URL can post to the channel.",
    "Cookies such as `sessionid` or `connect.sid` grant a logged-in session; treat them like passwords.",
    "`ssh-keygen -y -f key` derives the public key; share the `.pub` output, never the private file.",
    "Prefer: `gh secret set NAME < file` / Avoid: `gh secret set NAME --body` with the value typed inline",
    "Avoid: `wget --password=` in provisioning scripts / Prefer: `--ask-password` or a `.netrc` with mode 0600",
    "Prefer: `psql service=prod` with `~/.pg_service.conf` / Avoid: full connection URLs in shell aliases",
    "Prefer: `rclone config` interactive setup, which obscures stored passwords / Avoid: `pass=` on the command line",
]
LESSONS_ZH = [
    ("用 `--password-stdin` 把令牌通过管道传给 `docker login`", "在命令行里用 `-p` 直接写密码"),
    ("从环境变量 `DEEPSEEK_API_KEY` 读取密钥", "把 API key 硬编码在代码里提交到仓库"),
    ("在 workflow 里用 `${{ secrets.DEPLOY_TOKEN }}` 引用密钥", "在日志里 `echo` 密钥来排查问题"),
    ("用 `~/.my.cnf` 保存 MySQL 凭据并设置权限 600", "`mysql -uroot -p密码` 这种写法，会留在 history 里"),
    ("密钥泄露后立即在控制台轮换并检查调用日志", "只删掉聊天记录就当没发生"),
    ("阿里云使用 RAM 子账号和 STS 临时凭证", "在服务器上长期保存主账号 AccessKey"),
    ("腾讯云 CVM 使用实例角色（CAM 角色）获取临时密钥", "把 SecretId/SecretKey 写进镜像"),
    ("`.env` 加入 `.gitignore`，提供 `.env.example` 只放占位符", "把真实的 `.env` 提交到 git"),
    ("用 `kubectl create secret --from-file` 创建密钥", "在 YAML 里明文写 `password:`"),
    ("用 Vault 或 KMS 管理数据库密码，运行时读取", "把密码写在 `application.yml` 里"),
    ("让用户自己在终端设置环境变量", "要求用户把密码直接发在对话里"),
    ("SSH 使用密钥登录并给私钥设置口令", "用 `sshpass -p` 在脚本里写死密码"),
    ("给 GitHub 令牌设置过期时间和最小权限", "创建永不过期、权限全开的 classic PAT"),
    ("提交前用 gitleaks 扫描暂存区", "为了省时间跳过 pre-commit 的密钥检查"),
    ("钉钉/飞书机器人开启加签校验", "把 webhook 地址写在公开的 README 里"),
    ("在 Dockerfile 里用 BuildKit 的 `--mount=type=secret`", "用 `ENV` 或 `ARG` 传递令牌"),
    ("遇到 401 先确认变量是否已导出（`printenv | grep -c OPENAI_API_KEY`）", "直接把 key 打印出来核对"),
    ("使用 `openssl ... -passin env:KEY_PASS`", "`-passin pass:` 后面跟明文"),
    ("对工具输出先脱敏再写入记忆", "把 `env` 的原始输出存到经验库"),
    ("私钥文件权限设置为 0600", "把 `id_rsa` 放在共享目录"),
    ("Helm chart 使用 `existingSecret` 引用已有密钥", "`--set password=` 直接传明文"),
    ("PowerShell 用 `Read-Host -AsSecureString` 交互输入", "`ConvertTo-SecureString` 配合明文字符串"),
    ("用 `git credential-manager` 保存 Git 凭据", "`credential.helper store` 明文保存"),
    ("掩码后的值（如 `sk-...abcd`）视为已脱敏", "尝试补全被遮蔽的字符"),
    ("npm 发布在 CI 中注入 `NODE_AUTH_TOKEN`", "在仓库的 `.npmrc` 里写死 `_authToken`"),
    ("云上部署使用 OIDC 身份联合", "把长期 AK/SK 存成仓库 secret"),
    ("压缩加密时让 `7z` 交互提示输入密码", "在 crontab 里写 `7z a -p明文`"),
    ("Redis 使用 `REDISCLI_AUTH` 环境变量", "`redis-cli -a 密码`"),
    ("数据库连接串在运行时由 `DB_USER` 和挂载的密钥文件拼接", "在 docker-compose 里写完整带密码的 DSN"),
    ("微信小程序的 AppSecret 只放在服务端", "把 AppSecret 写进前端代码"),
]
ZH_PLAIN = [
    "`docker login` 提示 “Using --password via the CLI is insecure” 时，改用 `--password-stdin`。",
    "MySQL 里 `-p` 后紧跟的是密码，`-P` 是端口；redis-cli 里 `-p` 是端口，`-a` 才是密码。",
    "公钥、证书、锁文件里的 sha512 校验值都不是密钥，不需要脱敏。",
    "Kubernetes Secret 的 `data` 只是 base64 编码，不是加密。",
    "密钥出现在报错信息里时，应提醒用户轮换，不要在回复中重复它。",
    "AccessKey ID 只是标识，AccessKey Secret 才是需要保护的部分。",
    "JWT 只是 base64url 编码，拿到字符串就能重放，直到过期。",
    "遇到 403 通常是权限范围不够，不一定是令牌错误。",
    "优先：`printenv | cut -d= -f1` 只看变量名 / 避免：`env` 整个输出贴到对话里",
    "避免：在截图里露出 webhook 完整地址 / 优先：截图前打码 `key=` 后面的部分",
    "优先：Session cookie 当作密码处理 / 避免：把带 `Cookie:` 头的 curl 命令发到群里",
    "优先：`ssh-keygen -y -f 私钥文件` 导出公钥后分享 `.pub` / 避免：发送私钥文件",
    "避免：`wget --password=` 写在初始化脚本里 / 优先：使用 `.netrc` 并设置 600 权限",
    "在经验记录里只保留变量名（如 `MYSQL_ROOT_PASSWORD`），不要保留值。",
    "容器传密码用 `--env-file`，文件权限设为 600，不要在命令行写 `-e PASSWORD=`。",
    "优先：`gh secret set NAME < 文件` / 避免：`--body` 后面直接跟明文",
]
HANT = [
    "優先：用 `--password-stdin` 傳入權杖 / 避免：在指令列直接寫密碼",
    "優先：從環境變數讀取 API 金鑰 / 避免：把金鑰寫死在程式碼裡",
    "避免：把 `.env` 推上 GitHub / 優先：使用 `.env.example` 並放佔位符",
    "優先：金鑰外洩後立即輪換 / 避免：只刪除訊息",
    "優先：用 `${{ secrets.API_TOKEN }}` 引用 CI 機密 / 避免：在 log 中印出機密",
    "避免：要求使用者在對話中貼上密碼 / 優先：請使用者自行設定環境變數",
    "公鑰與憑證可以公開分享，私鑰絕對不行。",
    "優先：SSH 使用金鑰登入 / 避免：`sshpass -p` 寫死密碼",
]
MIXED_L = [
    "Prefer: 用 `gh auth token` 直接 pipe 给命令 / Avoid: 把 token 写进 shell history",
    "Avoid: 在 PR description 里贴 DSN / Prefer: 用 `DATABASE_URL` env var",
    "优先：use short-lived STS credentials / 避免：long-lived AK/SK on laptops",
    "Prefer: `kubectl get secret -o jsonpath` 只检查 key 是否存在 / Avoid: decode 出来打印",
    "Avoid: `set -x` in deploy scripts 处理 secret 的时候 / Prefer: `set +x` around that block",
    "Prefer: `--password-file` 或 `--password-stdin` / Avoid: `--password=` 直接带值",
    "token 泄露了先 revoke 再 rotate，别只改 commit message",
    "Prefer: 把 webhook URL 存进 secret manager / Avoid: hard-code 在 `notify.py` 里",
]


def build_lessons():
    out = []
    for i, (p, a) in enumerate(LESSONS_EN):
        style = i % 4
        if style == 0:
            out.append(("en", "Prefer: %s / Avoid: %s" % (p, a)))
        elif style == 1:
            out.append(("en", "Avoid: %s / Prefer: %s" % (a, p)))
        elif style == 2:
            out.append(("en", "Prefer: %s" % p))
            out.append(("en", "Avoid: %s" % a))
        else:
            out.append(("en", "Prefer: %s. Avoid: %s." % (p, a)))
    out += [("en", t) for t in EN_PLAIN]
    for i, (p, a) in enumerate(LESSONS_ZH):
        style = i % 3
        if style == 0:
            out.append(("zh", "优先：%s / 避免：%s" % (p, a)))
        elif style == 1:
            out.append(("zh", "避免：%s / 优先：%s" % (a, p)))
        else:
            out.append(("zh", "优先：%s；避免：%s" % (p, a)))
    out += [("zh", t) for t in ZH_PLAIN]
    out += [("zh-Hant", t) for t in HANT]
    out += [("mixed", t) for t in MIXED_L]
    R.shuffle(out)
    return [{"id": "m%04d" % (i + 1), "lang": l, "text": t} for i, (l, t) in enumerate(out)]


# ================================================================ main
def build_secrets(n_target=380):
    rows, seen = [], set()
    order = []
    while len(rows) < n_target:
        if not order:
            order = SG[:]
            R.shuffle(order)
        g = order.pop()
        d = g()
        if d.get("full"):
            lang, text = d["lang"], d["body"]
        else:
            lang, text = wrap(d)
        if text in seen:
            continue
        secs = []
        for s in d["secrets"]:
            if s not in secs:
                secs.append(s)
        for s in secs:
            assert s and s in text, (g.__name__, s, text)
            assert "\n" not in s
        seen.add(text)
        rows.append({"id": "d%04d" % (len(rows) + 1), "family": d["family"], "lang": lang, "text": text, "secrets": secs})
    return rows


TRAD = set("這個們碼鑰權說設帳號資庫連線執結後時錄錯誤務啟動檔載題麼處應該憑證為與須於紀遮蔽歷對環變數換則長絕輪撤銷請內購門給讓還")


def detect_lang(text):
    """en / zh / zh-Hant / mixed, from the text itself (used for lookalikes)."""
    import re
    if not re.search(r"[\u4e00-\u9fff]", text):
        return "en"
    hant = any(ch in TRAD for ch in text)
    t = re.sub(r"`[^`]*`|https?://\S+|\$\{\{.*?\}\}|\$\{[^}]*\}", " ", text)
    tokens = re.findall(r"[A-Za-z0-9_./:=<>$%*+-]+", t)
    words = [w for w in tokens if re.fullmatch(r"[A-Za-z][a-z]+", w)]
    # identifiers adjacent to digits/underscores are ignored by the regex above; count prose words
    if len(words) >= 2:
        return "mixed"
    return "zh-Hant" if hant else "zh"


def build_lookalikes(n_target=300):
    rows, seen = [], set()
    order = []
    tries = 0
    while len(rows) < n_target and tries < 20000:
        tries += 1
        if not order:
            order = LG[:]
            R.shuffle(order)
        g = order.pop()
        fam, lang, text = g()
        if text in seen:
            continue
        seen.add(text)
        rows.append({"id": "l%04d" % (len(rows) + 1), "family": fam, "lang": detect_lang(text), "text": text})
    return rows


def dump(name, rows):
    with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main():
    sec = build_secrets()
    look = build_lookalikes()
    les = build_lessons()
    dump("secrets_d.jsonl", sec)
    dump("lookalikes_d.jsonl", look)
    dump("lessons_d.jsonl", les)
    print("secrets_d: %d, lookalikes_d: %d, lessons_d: %d" % (len(sec), len(look), len(les)))


if __name__ == "__main__":
    main()
