#!/usr/bin/env python3
"""Generate an independent, labelled corpus for scoring a secret redactor.

Writes, beside this script:
  secrets_independent.jsonl    texts that contain credentials + the exact substrings that must vanish
  lookalikes_independent.jsonl texts that contain NO credential but many high-entropy / token-ish things

All random bodies come from random.Random(SEED) so the output is reproducible.
Every credential here is synthetic (random bytes in the right shape); none is real.
"""
import base64
import hashlib
import json
import os
import random
import string
import struct
import uuid
import zlib

SEED = 20240611
r = random.Random(SEED)
HERE = os.path.dirname(os.path.abspath(__file__))

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LO + DIG
UPDIG = UP + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def rs(n, alphabet=ALNUM):
    return "".join(r.choice(alphabet) for _ in range(n))


def rbytes(n):
    return bytes(r.getrandbits(8) for _ in range(n))


def b64u(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


# ---------------------------------------------------------------- generators
def aws_akid(prefix=None):
    return (prefix or r.choice(["AKIA", "AKIA", "AKIA", "ASIA"])) + rs(16, UP + "234567")


def aws_secret():
    while True:
        s = rs(40, B64)
        if any(c in s for c in "+/") and any(c.isdigit() for c in s):
            return s


def aws_session_token():
    return "IQoJb3JpZ2luX2VjE" + rs(r.randint(300, 380), B64) + "=="


def gh(prefix):
    return prefix + rs(36)


def gh_fine():
    return "github_pat_11" + rs(20, UPDIG) + rs(2) + "_" + rs(59)


def glpat():
    return "glpat-" + rs(20, B64URL.replace("_", ""))


def slack(kind):
    if kind == "xoxb":
        return "xoxb-%d-%d-%s" % (r.randint(10**10, 10**13), r.randint(10**12, 10**13), rs(24))
    if kind == "xoxp":
        return "xoxp-%d-%d-%d-%s" % (r.randint(10**10, 10**12), r.randint(10**10, 10**12),
                                      r.randint(10**12, 10**13), rs(32, HEX))
    if kind == "xapp":
        return "xapp-1-A%s-%d-%s" % (rs(10, UPDIG), r.randint(10**12, 10**13), rs(64, HEX))
    raise ValueError(kind)


def slack_hook_path():
    return "T%s/B%s/%s" % (rs(8, UPDIG), rs(10, UPDIG), rs(24))


def discord_token():
    uid = str(r.randint(10**17, 10**19 - 1))
    first = base64.b64encode(uid.encode()).decode().rstrip("=")
    return "%s.%s.%s" % (first, rs(6, B64URL), rs(38, B64URL))


def discord_webhook_token():
    return rs(68, B64URL)


def stripe(prefix):
    if r.random() < 0.5:
        return prefix + "51" + rs(22, ALNUM) + rs(75, ALNUM)
    return prefix + rs(24)


def openai_key():
    c = r.random()
    if c < 0.35:
        return "sk-" + rs(20) + "T3BlbkFJ" + rs(20)
    if c < 0.8:
        return "sk-proj-" + rs(r.choice([74, 92, 124]), B64URL) + "T3BlbkFJ" + rs(r.choice([40, 60, 74]), B64URL)
    return "sk-svcacct-" + rs(64, B64URL) + "T3BlbkFJ" + rs(64, B64URL)


def anthropic_key(kind="api03"):
    return "sk-ant-%s-%sAA" % (kind, rs(93, B64URL))


def hf_token():
    return "hf_" + rs(34, UP + LO)


def npm_token():
    return "npm_" + rs(36)


def pypi_token():
    return "pypi-AgEIcHlwaS5vcmc" + rs(r.choice([134, 150, 166]), B64URL)


def twilio_sid():
    return "AC" + rs(32, HEX)


def twilio_auth():
    return rs(32, HEX)


def twilio_apikey():
    return "SK" + rs(32, HEX)


def sendgrid():
    return "SG." + rs(22, B64URL) + "." + rs(43, B64URL)


def jwt(alg="HS256", claims=None):
    header = b64u(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    if claims is None:
        claims = {"sub": str(r.randint(10000, 9999999)), "name": r.choice(["svc-deploy", "alice", "ci-runner", "王伟"]),
                  "iat": r.randint(1690000000, 1720000000)}
        claims["exp"] = claims["iat"] + 3600
        if r.random() < 0.5:
            claims["scope"] = r.choice(["read:all write:repo", "admin", "openid profile email"])
    payload = b64u(json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode())
    siglen = {"HS256": 32, "RS256": 256, "ES256": 64}[alg]
    return header + "." + payload + "." + b64u(rbytes(siglen))


def pem_body(kind):
    """Return (list_of_body_lines). Last line is always >= 20 chars."""
    if kind == "RSA":
        nbytes, prefix, width = 1192, "MIIEowIBAAKCAQEA", 64
    elif kind == "PKCS8":
        nbytes, prefix, width = 1218, "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ", 64
    elif kind == "EC":
        nbytes, prefix, width = 121, "MHcCAQEEI", 64
    elif kind == "OPENSSH":
        nbytes, prefix, width = 399, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 70
    else:
        raise ValueError(kind)
    s = base64.b64encode(rbytes(nbytes)).decode()
    s = prefix + s[len(prefix):]
    lines = [s[i:i + width] for i in range(0, len(s), width)]
    assert len(lines[-1]) >= 20, (kind, len(lines[-1]))
    return lines


def pem_block(kind):
    label = {"RSA": "RSA PRIVATE KEY", "PKCS8": "PRIVATE KEY", "EC": "EC PRIVATE KEY",
             "OPENSSH": "OPENSSH PRIVATE KEY"}[kind]
    lines = pem_body(kind)
    block = "-----BEGIN %s-----\n%s\n-----END %s-----" % (label, "\n".join(lines), label)
    return block, [lines[0], lines[-1]]


WORDS = ["Sunflower", "Kestrel", "Marble", "Orion", "Tangerine", "Harbor", "Velvet", "Granite", "Nimbus", "Cobalt"]


def password(url_safe=False, shell_safe=False):
    c = r.random()
    if c < 0.4:
        sym = "-_." if url_safe else ("#%^*-_+=." if shell_safe else "#%^*-_+=.!@&")
        return rs(r.randint(14, 24), ALNUM + sym * 2)
    if c < 0.7:
        sym = r.choice("-_." if url_safe else "#%*-_+.")
        return r.choice(WORDS) + sym + str(r.randint(1000, 99999)) + rs(3, LO + DIG)
    return rs(r.randint(20, 32), ALNUM)


def django_secret():
    return "django-insecure-" + rs(50, LO + DIG + "!@#%^&*(-_=+)") if r.random() < 0.3 else rs(50, LO + DIG + "#%^&*(-_=+)")


def opaque(n=None):
    return rs(n or r.choice([32, 40, 48, 64]), r.choice([ALNUM, HEX, B64URL]))


def basic(user, pw):
    return base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()


def azure_key():
    return base64.b64encode(rbytes(64)).decode()


def azure_sig():
    raw = base64.b64encode(rbytes(32)).decode()
    return raw.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")


USERS = ["app", "deploy", "admin", "svc_orders", "readonly", "root", "ci", "postgres", "liwei", "zhang.san"]
HOSTS = ["db-prod-1.internal", "10.0.3.17", "pg.acme-corp.net", "orders-db.cluster-c9x2k.us-east-1.rds.amazonaws.com",
         "mysql.staging.svc.cluster.local", "192.168.1.50", "cache-01.prod.example.com"]

# ------------------------------------------------------------------- records
SECRETS = []


def add(family, lang, text, secrets):
    for s in secrets:
        assert s in text, (family, s, text)
    SECRETS.append({"family": family, "lang": lang, "text": text, "secrets": list(secrets)})


def gen_aws():
    for i in range(12):
        a, s = aws_akid(), aws_secret()
        t = [
            ("en", "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\nregion = us-east-1\n" % (a, s)),
            ("en", "$ export AWS_ACCESS_KEY_ID=%s\n$ export AWS_SECRET_ACCESS_KEY=%s\n$ aws s3 ls s3://acme-backups/\nAn error occurred (AccessDenied) when calling the ListObjectsV2 operation: Access Denied" % (a, s)),
            ("en", 'docker run --rm -e AWS_ACCESS_KEY_ID=%s -e AWS_SECRET_ACCESS_KEY=%s -e AWS_DEFAULT_REGION=eu-west-1 amazon/aws-cli sts get-caller-identity' % (a, s)),
            ("en", '{\n  "AccessKey": {\n    "UserName": "ci-bot",\n    "AccessKeyId": "%s",\n    "Status": "Active",\n    "SecretAccessKey": "%s",\n    "CreateDate": "2024-03-14T09:21:44+00:00"\n  }\n}' % (a, s)),
            ("zh", "老板给的 AWS 凭证：AccessKeyId %s，SecretAccessKey %s，先用着，下周轮换" % (a, s)),
            ("mixed", "boto3 连不上，我是这样写的：\nclient = boto3.client('s3', aws_access_key_id='%s', aws_secret_access_key='%s')\n报错 SignatureDoesNotMatch" % (a, s)),
            ("en", "env:\n  - name: AWS_ACCESS_KEY_ID\n    value: %s\n  - name: AWS_SECRET_ACCESS_KEY\n    value: \"%s\"" % (a, s)),
            ("en", 'provider "aws" {\n  region     = "ap-southeast-1"\n  access_key = "%s"\n  secret_key = "%s"\n}' % (a, s)),
            ("en", "2024-05-02T11:03:17Z DEBUG botocore.credentials Found credentials in environment variables. key=%s secret=%s" % (a, s)),
            ("zh", "~/.aws/credentials 内容如下\n[prod]\naws_access_key_id=%s\naws_secret_access_key=%s" % (a, s)),
            ("en", "User,Access key ID,Secret access key\nterraform-runner,%s,%s" % (a, s)),
            ("mixed", "帮我看下为什么 `aws configure set aws_secret_access_key %s --profile dev` 之后还是 InvalidClientTokenId，key id 是 %s" % (s, a)),
        ][i]
        add("aws_keypair", t[0], t[1], [a, s])
    for i in range(5):
        a = aws_akid()
        t = [
            ("en", "Error: The security token included in the request is invalid. (Service: AmazonS3; AWS Access Key Id: %s)" % a),
            ("en", "AWS_ACCESS_KEY_ID=%s" % a),
            ("zh", "这个 access key id %s 是谁的？CloudTrail 里看到大量调用" % a),
            ("en", "aws iam delete-access-key --user-name old-ci --access-key-id %s" % a),
            ("mixed", "s3cmd 配置 access_key = %s 已经填了" % a),
        ][i]
        add("aws_access_key_id", t[0], t[1], [a])
    for i in range(5):
        s = aws_secret()
        t = [
            ("en", "AWS_SECRET_ACCESS_KEY=%s" % s),
            ("en", "  aws_secret_access_key: \"%s\"  # TODO move to vault" % s),
            ("zh", "secret key 是 %s ，别发群里" % s),
            ("en", "creds = {'secret_access_key': '%s', 'region': 'us-west-2'}" % s),
            ("mixed", "[ERROR] SignatureDoesNotMatch, 用的 SecretAccessKey=%s" % s),
        ][i]
        add("aws_secret_access_key", t[0], t[1], [s])
    for i in range(3):
        a, s, tok = aws_akid("ASIA"), aws_secret(), aws_session_token()
        t = [
            ("en", "export AWS_ACCESS_KEY_ID=%s\nexport AWS_SECRET_ACCESS_KEY=%s\nexport AWS_SESSION_TOKEN=%s" % (a, s, tok)),
            ("en", '{"Credentials": {"AccessKeyId": "%s", "SecretAccessKey": "%s", "SessionToken": "%s", "Expiration": "2024-06-01T12:00:00Z"}}' % (a, s, tok)),
            ("zh", "临时凭证：\nAccessKeyId: %s\nSecretAccessKey: %s\nSessionToken: %s" % (a, s, tok)),
        ][i]
        add("aws_session_credentials", t[0], t[1], [a, s, tok])


def gen_gcp():
    for i in range(7):
        lines = pem_body("PKCS8")
        pk = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(lines) + "\\n-----END PRIVATE KEY-----\\n"
        proj = r.choice(["acme-prod-4821", "data-pipeline-staging", "my-project-123456", "ml-infra-cn"])
        sa = r.choice(["deployer", "bq-reader", "terraform", "github-actions"])
        kid = rs(40, HEX)
        doc = ('{\n  "type": "service_account",\n  "project_id": "%s",\n  "private_key_id": "%s",\n'
               '  "private_key": "%s",\n  "client_email": "%s@%s.iam.gserviceaccount.com",\n'
               '  "client_id": "%d",\n  "auth_uri": "https://accounts.google.com/o/oauth2/auth",\n'
               '  "token_uri": "https://oauth2.googleapis.com/token"\n}') % (proj, kid, pk, sa, proj, r.randint(10**20, 10**21))
        t = [
            ("en", "$ cat key.json\n" + doc),
            ("en", doc),
            ("zh", "这是服务账号的 key 文件，帮我看看为什么 gcloud auth activate-service-account 失败：\n" + doc),
            ("mixed", "GOOGLE_APPLICATION_CREDENTIALS 指向的文件内容:\n" + doc + "\n报错 invalid_grant: Invalid JWT Signature."),
            ("en", "secrets:\n  GCP_SA_KEY: '" + doc.replace("\n", "") + "'"),
            ("en", 'Traceback (most recent call last):\n  File "upload.py", line 12, in <module>\n    creds = service_account.Credentials.from_service_account_info(json.loads(\'{"type": "service_account", "project_id": "%s", "private_key": "%s", "client_email": "%s@%s.iam.gserviceaccount.com"}\'))\nValueError: Could not deserialize key data.' % (proj, pk, sa, proj)),
            ("en", "echo '" + doc.replace("\n", " ") + "' | base64 -w0 > sa.b64"),
        ][i]
        add("gcp_service_account_key", t[0], t[1], [lines[0], lines[-1]])


def gen_azure():
    for i in range(7):
        acct = r.choice(["acmeprodstore", "stdatalake01", "logsarchivecn", "mediaassets"])
        k = azure_key()
        cs = "DefaultEndpointsProtocol=https;AccountName=%s;AccountKey=%s;EndpointSuffix=core.windows.net" % (acct, k)
        t = [
            ("en", 'AZURE_STORAGE_CONNECTION_STRING="%s"' % cs),
            ("en", '{\n  "IsEncrypted": false,\n  "Values": {\n    "AzureWebJobsStorage": "%s",\n    "FUNCTIONS_WORKER_RUNTIME": "python"\n  }\n}' % cs),
            ("zh", "连接字符串给你：%s" % cs),
            ("en", "az storage blob upload --account-name %s --account-key %s --container-name backups --file db.bak --name db.bak" % (acct, k)),
            ("mixed", "appsettings.json 里 \"StorageConnection\": \"%s\" 这样配对吗？" % cs),
            ("en", "Microsoft.Azure.Storage.StorageException: Server failed to authenticate the request. ConnectionString=%s" % cs),
            ("en", "  storage:\n    account: %s\n    key: %s" % (acct, k)),
        ][i]
        add("azure_storage_key", t[0], t[1], [k])
    for i in range(5):
        sig = azure_sig()
        acct = r.choice(["acmeprodstore", "stdatalake01", "mediaassets"])
        sas = "sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacupiytfx&se=2025-01-31T17:00:00Z&st=2024-01-31T09:00:00Z&spr=https&sig=%s" % sig
        t = [
            ("en", "curl -X PUT -T report.csv -H 'x-ms-blob-type: BlockBlob' 'https://%s.blob.core.windows.net/exports/report.csv?%s'" % (acct, sas)),
            ("en", "azcopy copy ./dist 'https://%s.blob.core.windows.net/$web?%s' --recursive" % (acct, sas)),
            ("zh", "SAS 链接：https://%s.blob.core.windows.net/share/a.zip?%s 有效期到月底" % (acct, sas)),
            ("en", "AZURE_SAS_TOKEN=?%s" % sas),
            ("mixed", "BlobEndpoint=https://%s.blob.core.windows.net/;SharedAccessSignature=%s 这个 SAS 过期了吗" % (acct, sas)),
        ][i]
        add("azure_sas_token", t[0], t[1], [sig])


def gen_github():
    for i in range(10):
        tok = gh("ghp_")
        t = [
            ("en", "git remote set-url origin https://%s@github.com/acme/payments-api.git" % tok),
            ("en", "export GITHUB_TOKEN=%s\ngh pr list --repo acme/web" % tok),
            ("en", "curl -H \"Authorization: token %s\" https://api.github.com/user/repos?per_page=100" % tok),
            ("zh", "用这个 token 试试：%s" % tok),
            ("en", "//npm.pkg.github.com/:_authToken=%s" % tok),
            ("mixed", "CI 里 clone 私有仓库失败，我用的是 https://x-access-token:%s@github.com/acme/infra.git" % tok),
            ("en", "fatal: Authentication failed for 'https://github.com/acme/ops.git/'\n(using GH_TOKEN=%s)" % tok),
            ("en", "[url \"https://%s:x-oauth-basic@github.com/\"]\n\tinsteadOf = https://github.com/" % tok),
            ("zh", "个人访问令牌：%s （scope: repo, workflow）" % tok),
            ("en", "- uses: actions/checkout@v4\n  with:\n    token: %s" % tok),
        ][i]
        add("github_classic_pat", t[0], t[1], [tok])
    for i in range(6):
        tok = gh_fine()
        t = [
            ("en", "GH_TOKEN=%s gh api /repos/acme/site/actions/runs" % tok),
            ("en", "git clone https://oauth2:%s@github.com/acme/private-models.git" % tok),
            ("zh", "新的 fine-grained token 是 %s，只给了 contents:read" % tok),
            ("en", 'headers = {"Authorization": "Bearer %s", "X-GitHub-Api-Version": "2022-11-28"}' % tok),
            ("mixed", "请把 .netrc 改成：machine github.com login bot password %s" % tok),
            ("en", "renovate:\n  token: \"%s\"" % tok),
        ][i]
        add("github_fine_grained_pat", t[0], t[1], [tok])
    for i, p in enumerate(["gho_", "ghs_", "ghu_", "ghs_", "gho_", "ghr_"]):
        tok = gh(p)
        t = [
            ("en", "oauth_token: %s\nuser: octo-dev\ngit_protocol: https" % tok),
            ("en", "remote: Invalid username or token. url=https://x-access-token:%s@github.com/acme/app.git" % tok),
            ("zh", "GitHub App 的安装令牌 %s 一小时后过期" % tok),
            ("en", "Authorization: token %s" % tok),
            ("mixed", "gh auth status 显示 Token: %s" % tok),
            ("en", "refresh_token=%s&grant_type=refresh_token&client_id=Iv1.8a61f9b3a7aba766" % tok),
        ][i]
        add("github_oauth_app_token", t[0], t[1], [tok])


def gen_gitlab():
    for i in range(8):
        tok = glpat()
        t = [
            ("en", "git clone https://oauth2:%s@gitlab.com/acme/backend.git" % tok),
            ("en", "curl --header \"PRIVATE-TOKEN: %s\" \"https://gitlab.example.com/api/v4/projects?membership=true\"" % tok),
            ("zh", "GitLab 令牌：%s" % tok),
            ("en", "variables:\n  GITLAB_TOKEN: \"%s\"" % tok),
            ("mixed", "runner 注册时报 403，token 用的 %s 是不是权限不够" % tok),
            ("en", "glab auth login --hostname gitlab.acme.io --token %s" % tok),
            ("en", "[gitlab]\nurl = https://gitlab.acme.io\nprivate_token = %s" % tok),
            ("en", "npm config set -- '//gitlab.acme.io/api/v4/projects/42/packages/npm/:_authToken' '%s'" % tok),
        ][i]
        add("gitlab_pat", t[0], t[1], [tok])


def gen_slack():
    for i in range(8):
        tok = slack("xoxb")
        t = [
            ("en", "SLACK_BOT_TOKEN=%s" % tok),
            ("en", "curl -X POST -H 'Authorization: Bearer %s' -H 'Content-type: application/json' --data '{\"channel\":\"C0123ABCD\",\"text\":\"deploy done\"}' https://slack.com/api/chat.postMessage" % tok),
            ("zh", "机器人 token 是 %s，发消息到 #ops 频道" % tok),
            ("en", "app = App(token=\"%s\", signing_secret=os.environ[\"SLACK_SIGNING_SECRET\"])" % tok),
            ("mixed", "slack_sdk.errors.SlackApiError: invalid_auth (token=%s)" % tok),
            ("en", "slack:\n  bot_token: %s\n  channel: \"#alerts\"" % tok),
            ("en", "{\"ok\":true,\"access_token\":\"%s\",\"token_type\":\"bot\",\"scope\":\"chat:write,channels:read\"}" % tok),
            ("zh", "把 xoxb 开头的那个给我就行：%s" % tok),
        ][i]
        add("slack_bot_token", t[0], t[1], [tok])
    for i in range(4):
        tok = slack("xoxp") if i < 3 else slack("xapp")
        t = [
            ("en", "SLACK_USER_TOKEN=\"%s\"" % tok),
            ("en", "curl -s \"https://slack.com/api/conversations.history?channel=C01AB2CD3EF&limit=50\" -H \"Authorization: Bearer %s\"" % tok),
            ("mixed", "用户 token %s 能读私有频道，注意保管" % tok),
            ("en", "SLACK_APP_TOKEN=%s  # socket mode" % tok),
        ][i]
        add("slack_user_token", t[0], t[1], [tok])
    for i in range(7):
        p = slack_hook_path()
        url = "https://hooks.slack.com/services/" + p
        t = [
            ("en", "curl -X POST -H 'Content-type: application/json' --data '{\"text\":\"Build #482 failed\"}' %s" % url),
            ("en", "alertmanager:\n  receivers:\n    - name: slack\n      slack_configs:\n        - api_url: '%s'\n          channel: '#oncall'" % url),
            ("zh", "Webhook 地址：%s 发测试消息看看" % url),
            ("en", "SLACK_WEBHOOK_URL=%s" % url),
            ("mixed", "requests.post(\"%s\", json={\"text\": \"夜间任务完成\"})" % url),
            ("en", "ERROR notify: POST %s returned 404 channel_not_found" % url),
            ("en", "webhook_url = \"%s\"" % url),
        ][i]
        add("slack_webhook", t[0], t[1], [p])


def gen_discord():
    for i in range(7):
        tok = discord_token()
        t = [
            ("en", "DISCORD_TOKEN=%s" % tok),
            ("en", "client.run('%s')" % tok),
            ("zh", "机器人 token：%s 邀请链接我另发" % tok),
            ("en", "curl -H \"Authorization: Bot %s\" https://discord.com/api/v10/users/@me" % tok),
            ("mixed", "discord.errors.LoginFailure: Improper token has been passed. 我用的是 %s" % tok),
            ("en", "{\n  \"prefix\": \"!\",\n  \"token\": \"%s\",\n  \"owner\": \"284719302837460992\"\n}" % tok),
            ("en", "bot:\n  discord_token: %s" % tok),
        ][i]
        add("discord_bot_token", t[0], t[1], [tok])
    for i in range(2):
        cid, wt = str(r.randint(10**17, 10**19 - 1)), discord_webhook_token()
        t = [
            ("en", "DISCORD_WEBHOOK=https://discord.com/api/webhooks/%s/%s" % (cid, wt)),
            ("zh", "告警推送到 https://discordapp.com/api/webhooks/%s/%s 这个频道" % (cid, wt)),
        ][i]
        add("discord_webhook", t[0], t[1], [wt])


def gen_stripe():
    for i in range(8):
        k = stripe("sk_live_")
        t = [
            ("en", "STRIPE_SECRET_KEY=%s" % k),
            ("en", "curl https://api.stripe.com/v1/charges -u %s: -d amount=2000 -d currency=usd -d source=tok_visa" % k),
            ("zh", "线上 Stripe 密钥：%s 千万别提交到 git" % k),
            ("en", "stripe.api_key = \"%s\"" % k),
            ("mixed", "Stripe webhook 一直 401，config 里 secret_key: %s" % k),
            ("en", "stripe:\n  publishable_key: ${STRIPE_PK}\n  secret_key: \"%s\"" % k),
            ("en", "const stripe = require('stripe')('%s');" % k),
            ("en", "Request req_8Hk2LmQ failed: Invalid API Key provided: %s" % k),
        ][i]
        add("stripe_secret_key", t[0], t[1], [k])
    for i in range(4):
        k = stripe("rk_live_")
        t = [
            ("en", "STRIPE_RESTRICTED_KEY=%s" % k),
            ("zh", "只读的 restricted key：%s" % k),
            ("en", "stripe listen --api-key %s --forward-to localhost:4242/webhook" % k),
            ("mixed", "Metabase 接 Stripe 用的 rk：%s" % k),
        ][i]
        add("stripe_restricted_key", t[0], t[1], [k])
    for i in range(2):
        k = "whsec_" + rs(32)
        t = [("en", "STRIPE_WEBHOOK_SECRET=%s" % k),
             ("zh", "webhook 签名密钥 %s" % k)][i]
        add("stripe_webhook_secret", t[0], t[1], [k])


def gen_openai():
    for i in range(10):
        k = openai_key()
        t = [
            ("en", "OPENAI_API_KEY=%s" % k),
            ("en", "curl https://api.openai.com/v1/chat/completions -H \"Content-Type: application/json\" -H \"Authorization: Bearer %s\" -d '{\"model\": \"gpt-4o-mini\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}'" % k),
            ("zh", "我的 key 是 %s ，帮我看看为什么一直 429" % k),
            ("en", "client = OpenAI(api_key=\"%s\")" % k),
            ("mixed", "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: %s.', 'type': 'invalid_request_error'}}" % k),
            ("en", "[openai]\napi_key = \"%s\"\nmodel = \"gpt-4.1\"" % k),
            ("zh", "把 .env 里的 OPENAI_API_KEY 换成 %s 再跑一次" % k),
            ("en", "export OPENAI_API_KEY='%s' && python agent.py --task summarize" % k),
            ("en", "llm:\n  provider: openai\n  api_key: %s" % k),
            ("mixed", "langchain 报错，代码：ChatOpenAI(openai_api_key=\"%s\", temperature=0)" % k),
        ][i]
        add("openai_api_key", t[0], t[1], [k])


def gen_anthropic():
    for i in range(8):
        k = anthropic_key("admin01" if i == 7 else "api03")
        t = [
            ("en", "ANTHROPIC_API_KEY=%s" % k),
            ("en", "curl https://api.anthropic.com/v1/messages -H \"x-api-key: %s\" -H \"anthropic-version: 2023-06-01\" -H \"content-type: application/json\" -d '{\"model\":\"claude-3-5-sonnet-latest\",\"max_tokens\":256,\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'" % k),
            ("zh", "Claude 的 key：%s 额度还剩不少" % k),
            ("en", "client = anthropic.Anthropic(api_key=\"%s\")" % k),
            ("mixed", "anthropic.AuthenticationError: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}} —— 用的 key 是 %s" % k),
            ("en", "{\n  \"env\": {\n    \"ANTHROPIC_API_KEY\": \"%s\"\n  }\n}" % k),
            ("en", "$ export ANTHROPIC_API_KEY=%s\n$ python -m evals.run --model claude-3-haiku" % k),
            ("zh", "组织管理员密钥 %s 用来查 usage" % k),
        ][i]
        add("anthropic_api_key", t[0], t[1], [k])


def gen_hf_npm_pypi():
    for i in range(7):
        k = hf_token()
        t = [
            ("en", "huggingface-cli login --token %s" % k),
            ("en", "HF_TOKEN=%s" % k),
            ("zh", "下载 gated 模型需要 token，用这个：%s" % k),
            ("en", "model = AutoModel.from_pretrained(\"meta-llama/Llama-3.1-8B\", token=\"%s\")" % k),
            ("mixed", "git clone https://user:%s@huggingface.co/datasets/acme/private-corpus 一直 401" % k),
            ("en", "curl -H \"Authorization: Bearer %s\" https://huggingface.co/api/whoami-v2" % k),
            ("en", "HUGGING_FACE_HUB_TOKEN: \"%s\"" % k),
        ][i]
        add("huggingface_token", t[0], t[1], [k])
    for i in range(7):
        k = npm_token()
        t = [
            ("en", "//registry.npmjs.org/:_authToken=%s" % k),
            ("en", "NPM_TOKEN=%s npm publish --access public" % k),
            ("zh", "发包用的 npm token：%s" % k),
            ("en", "echo \"//registry.npmjs.org/:_authToken=%s\" > ~/.npmrc" % k),
            ("mixed", "npm ERR! 403 Forbidden - PUT https://registry.npmjs.org/@acme%%2fui — token %s 可能没有 publish 权限" % k),
            ("en", "- run: npm ci\n  env:\n    NODE_AUTH_TOKEN: %s" % k),
            ("en", "npmAuthToken: \"%s\"\nnpmRegistryServer: \"https://registry.npmjs.org\"" % k),
        ][i]
        add("npm_token", t[0], t[1], [k])
    for i in range(6):
        k = pypi_token()
        t = [
            ("en", "[pypi]\n  username = __token__\n  password = %s" % k),
            ("en", "twine upload -u __token__ -p %s dist/*" % k),
            ("zh", "PyPI 上传令牌：%s" % k),
            ("en", "TWINE_PASSWORD=%s" % k),
            ("mixed", "poetry config pypi-token.pypi %s 之后 publish 还是 403" % k),
            ("en", "UV_PUBLISH_TOKEN=%s uv publish" % k),
        ][i]
        add("pypi_token", t[0], t[1], [k])


def gen_twilio_sendgrid():
    for i in range(7):
        sid, auth = twilio_sid(), twilio_auth()
        t = [
            ("en", "TWILIO_ACCOUNT_SID=%s\nTWILIO_AUTH_TOKEN=%s" % (sid, auth)),
            ("en", "curl -X POST https://api.twilio.com/2010-04-01/Accounts/%s/Messages.json --data-urlencode \"Body=Your code is 482913\" --data-urlencode \"To=+15558675310\" -u %s:%s" % (sid, sid, auth)),
            ("zh", "Twilio 的 auth token 是 %s，账号 SID %s" % (auth, sid)),
            ("en", "client = Client(\"%s\", \"%s\")" % (sid, auth)),
            ("mixed", "短信发不出去，twilio:\n  account_sid: %s\n  auth_token: %s" % (sid, auth)),
            ("en", "twilio_auth_token = \"%s\"" % auth),
            ("en", "TWILIO_API_KEY=%s\nTWILIO_API_SECRET=%s" % (twilio_apikey(), auth)),
        ][i]
        secrets = [auth]
        if i == 6:
            secrets = [t[1].split("TWILIO_API_KEY=")[1].split("\n")[0], auth]
        add("twilio", t[0], t[1], secrets)
    for i in range(7):
        k = sendgrid()
        t = [
            ("en", "SENDGRID_API_KEY=%s" % k),
            ("en", "curl --request POST --url https://api.sendgrid.com/v3/mail/send --header 'Authorization: Bearer %s' --header 'Content-Type: application/json'" % k),
            ("zh", "邮件服务的 key：%s" % k),
            ("en", "sg = SendGridAPIClient('%s')" % k),
            ("mixed", "smtp.sendgrid.net:587 用户名 apikey，密码 %s" % k),
            ("en", "EMAIL_HOST_USER = 'apikey'\nEMAIL_HOST_PASSWORD = '%s'" % k),
            ("en", "mail:\n  driver: sendgrid\n  key: %s" % k),
        ][i]
        add("sendgrid_api_key", t[0], t[1], [k])


def gen_jwt():
    for i in range(10):
        tok = jwt(r.choice(["HS256", "RS256", "ES256"]))
        t = [
            ("en", "curl -H \"Authorization: Bearer %s\" https://api.acme.io/v2/orders?status=open" % tok),
            ("en", "Set-Cookie: session=%s; Path=/; HttpOnly; Secure; SameSite=Lax" % tok),
            ("zh", "登录后拿到的 token：%s 过期时间一小时" % tok),
            ("en", "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":3600}" % tok),
            ("mixed", "jwt.exceptions.ExpiredSignatureError: Signature has expired —— token=%s" % tok),
            ("en", "GET /api/me HTTP/1.1\nHost: app.acme.io\nAuthorization: Bearer %s\nAccept: application/json" % tok),
            ("en", "localStorage.setItem('id_token', '%s');" % tok),
            ("en", "2024-04-18 08:12:55,301 INFO auth: issued token for user=1042 jwt=%s" % tok),
            ("zh", "用这个 JWT 调接口：%s" % tok),
            ("en", "wscat -c 'wss://realtime.acme.io/socket?token=%s'" % tok),
        ][i]
        add("jwt", t[0], t[1], [tok])


def gen_pem():
    kinds = [("RSA", "pem_rsa_private_key"), ("EC", "pem_ec_private_key"), ("OPENSSH", "pem_openssh_private_key"),
             ("PKCS8", "pem_pkcs8_private_key")]
    ctx = [
        ("en", "$ cat ~/.ssh/id_deploy\n{B}\n$ ssh -i ~/.ssh/id_deploy ubuntu@10.0.4.21"),
        ("en", "tls:\n  key: |\n{I}"),
        ("zh", "这是服务器的私钥，帮我转成 pkcs8：\n{B}"),
        ("mixed", "部署 key 如下，放到 GitHub Secrets 里 (SSH_PRIVATE_KEY)：\n{B}\n记得别 commit"),
        ("en", "Error: error:1E08010C:DECODER routines::unsupported while loading key:\n{B}"),
    ]
    for kind, fam in kinds:
        n = 5 if kind != "PKCS8" else 3
        for j in range(n):
            block, secs = pem_block(kind)
            lang, tmpl = ctx[j]
            if "{I}" in tmpl:
                text = tmpl.replace("{I}", "\n".join("    " + ln for ln in block.split("\n")))
            else:
                text = tmpl.replace("{B}", block)
            add(fam, lang, text, secs)
    # JSON-escaped PEM (e.g. in a secrets manager dump)
    for j in range(2):
        lines = pem_body("RSA")
        esc = "-----BEGIN RSA PRIVATE KEY-----\\n" + "\\n".join(lines) + "\\n-----END RSA PRIVATE KEY-----"
        text = ['{"SecretString": "{\\"ssh_key\\": \\"%s\\"}", "Name": "prod/bastion"}' % esc,
                'JWT_PRIVATE_KEY="%s"' % esc][j]
        add("pem_rsa_private_key", "en", text, [lines[0], lines[-1]])


def gen_url_passwords():
    schemes = [
        ("postgres", "postgres://{u}:{p}@{h}:5432/orders?sslmode=require"),
        ("postgresql", "postgresql://{u}:{p}@{h}/analytics"),
        ("mysql", "mysql://{u}:{p}@{h}:3306/shop"),
        ("mongodb+srv", "mongodb+srv://{u}:{p}@cluster0.ab1cd.mongodb.net/app?retryWrites=true&w=majority"),
        ("redis", "redis://:{p}@{h}:6379/0"),
        ("rediss", "rediss://default:{p}@{h}:6380"),
        ("amqp", "amqp://{u}:{p}@{h}:5672/%2F"),
        ("https", "https://{u}:{p}@nexus.acme.io/repository/pypi-internal/simple"),
        ("mssql", "sqlserver://{u}:{p}@{h}:1433?database=erp"),
        ("ftp", "ftp://{u}:{p}@files.acme-corp.net/incoming/"),
    ]
    ctx = [
        ("en", "DATABASE_URL={url}"),
        ("en", "Traceback (most recent call last):\n  File \"/app/worker.py\", line 31, in connect\n    conn = connect(\"{url}\")\nConnectionError: connection refused"),
        ("zh", "数据库连接串：{url}"),
        ("en", "spring:\n  datasource:\n    url: {url}"),
        ("mixed", "本地连不上，帮我看看这个 URI 对不对：{url}"),
        ("en", "$ ./healthcheck --dsn \"{url}\"\nerror: dial tcp 10.0.3.17: i/o timeout after 5s"),
        ("en", "{{\"name\": \"primary\", \"dsn\": \"{url}\", \"pool_size\": 10}}"),
        ("en", "2024-05-21 14:02:11 ERROR [main] Failed to connect to {url}"),
    ]
    n = 0
    for k in range(4):
        for sname, pat in schemes:
            p = password(url_safe=True)
            u = r.choice(USERS)
            h = r.choice(HOSTS)
            url = pat.format(u=u, p=p, h=h)
            lang, tmpl = ctx[n % len(ctx)]
            n += 1
            add("url_password_" + sname.replace("+", "_"), lang, tmpl.format(url=url), [p])
    # git remotes / pip index with creds
    for i in range(5):
        p = password(url_safe=True)
        t = [
            ("en", "git remote add origin https://jenkins:%s@git.acme-corp.net/scm/plat/core.git" % p),
            ("en", "pip install --index-url https://build:%s@pypi.acme.io/simple/ acme-sdk==2.3.1" % p),
            ("zh", "代理地址 http://proxyuser:%s@10.10.0.1:3128 配到 HTTPS_PROXY 里" % p),
            ("en", "[[tool.poetry.source]]\nname = \"internal\"\nurl = \"https://ci:%s@artifactory.acme.io/api/pypi/pypi/simple\"" % p),
            ("mixed", "docker pull 走代理 export http_proxy=http://wangfang:%s@proxy.corp.cn:8080" % p),
        ][i]
        add("url_password_https", t[0], t[1], [p])


def gen_auth_headers():
    for i in range(10):
        tok = opaque()
        t = [
            ("en", "curl -H 'Authorization: Bearer %s' https://api.internal.acme.io/v1/metrics" % tok),
            ("en", "> GET /v1/jobs HTTP/2\n> Host: api.acme.io\n> Authorization: Bearer %s\n> User-Agent: curl/8.5.0\n< HTTP/2 403" % tok),
            ("zh", "请求头加上 Authorization: Bearer %s 就能访问了" % tok),
            ("en", "fetch('/api/v2/export', { headers: { Authorization: `Bearer %s` } })" % tok),
            ("mixed", "http GET https://api.acme.io/users 'Authorization:Bearer %s' 返回 401" % tok),
            ("en", "requests.get(url, headers={\"Authorization\": \"Bearer %s\"}, timeout=10)" % tok),
            ("en", "2024-06-03T10:44:02.118Z WARN  http: request headers={\"authorization\":\"Bearer %s\",\"accept\":\"*/*\"}" % tok),
            ("en", "X-Api-Key: %s" % tok),
            ("zh", "接口鉴权失败，header 里 authorization: Bearer %s" % tok),
            ("en", "proxy_set_header Authorization \"Bearer %s\";" % tok),
        ][i]
        add("auth_bearer", t[0], t[1], [tok])
    for i in range(7):
        u = r.choice(USERS)
        p = password(shell_safe=True)
        b = basic(u, p)
        t = [
            ("en", "curl -H \"Authorization: Basic %s\" https://jenkins.acme.io/api/json" % b),
            ("en", "GET /metrics HTTP/1.1\nHost: prometheus.internal:9090\nAuthorization: Basic %s" % b),
            ("zh", "Basic 认证头：Authorization: Basic %s" % b),
            ("en", "auths:\n  registry.acme.io:\n    auth: %s" % b),
            ("mixed", "{\"auths\": {\"harbor.corp.cn\": {\"auth\": \"%s\"}}} 是 ~/.docker/config.json 的内容" % b),
            ("en", "headers:\n  Authorization: \"Basic %s\"" % b),
            ("en", "  -H 'authorization: basic %s' \\\n  --compressed" % b),
        ][i]
        add("auth_basic", t[0], t[1], [b])
    for i in range(4):
        u = r.choice(USERS)
        p = password(shell_safe=True)
        t = [
            ("en", "curl -u %s:%s https://artifactory.acme.io/api/storage/libs-release" % (u, p)),
            ("en", "curl --user '%s:%s' -X POST https://es.internal:9200/_snapshot/backup" % (u, p)),
            ("zh", "wget --user=%s --password=%s https://files.acme.cn/dump.sql.gz" % (u, p)),
            ("en", "http -a %s:%s POST https://ci.acme.io/job/deploy/build" % (u, p)),
        ][i]
        add("cli_user_password", t[0], t[1], [p])


def gen_env():
    pairs = [
        ("DB_PASSWORD", lambda: password(shell_safe=True)),
        ("API_KEY", lambda: opaque()),
        ("SECRET_KEY", django_secret),
        ("JWT_SECRET", lambda: rs(64, HEX)),
        ("POSTGRES_PASSWORD", lambda: password(shell_safe=True)),
        ("REDIS_PASSWORD", lambda: password(shell_safe=True)),
        ("MYSQL_ROOT_PASSWORD", lambda: password(shell_safe=True)),
        ("CLIENT_SECRET", lambda: rs(40, B64URL)),
        ("ENCRYPTION_KEY", lambda: base64.b64encode(rbytes(32)).decode()),
        ("SESSION_SECRET", lambda: rs(48)),
        ("MAILGUN_API_KEY", lambda: "key-" + rs(32, HEX)),
        ("DATADOG_API_KEY", lambda: rs(32, HEX)),
        ("SENTRY_AUTH_TOKEN", lambda: "sntrys_" + rs(120, B64URL)),
        ("APP_KEY", lambda: "base64:" + base64.b64encode(rbytes(32)).decode()),
        ("ADMIN_PASSWORD", lambda: password(shell_safe=True)),
        ("OAUTH_CLIENT_SECRET", lambda: "GOCSPX-" + rs(28, B64URL)),
    ]
    styles = [
        ("en", lambda k, v: "%s=%s" % (k, v)),
        ("en", lambda k, v: "%s=\"%s\"" % (k, v)),
        ("en", lambda k, v: "%s: %s" % (k.lower(), v)),
        ("en", lambda k, v: "export %s='%s'" % (k, v)),
        ("en", lambda k, v: "# .env.production\nNODE_ENV=production\nPORT=8080\n%s=%s\nLOG_LEVEL=info" % (k, v)),
        ("en", lambda k, v: "  \"%s\": \"%s\"," % (k.lower(), v)),
        ("en", lambda k, v: "%s = \"%s\"" % (k.lower(), v)),
        ("en", lambda k, v: "environment:\n  - %s=%s\n  - TZ=UTC" % (k, v)),
        ("zh", lambda k, v: "生产环境变量：\n%s=%s" % (k, v)),
        ("mixed", lambda k, v: "我在 docker-compose.yml 里写了 %s: \"%s\"，容器起不来" % (k, v)),
        ("en", lambda k, v: "[settings]\n%s = '%s'" % (k.lower(), v)),
        ("en", lambda k, v: "kubectl create secret generic app-secrets --from-literal=%s='%s' -n prod" % (k.lower(), v)),
        ("en", lambda k, v: "$ env | grep -i secret\n%s=%s" % (k, v)),
        ("mixed", lambda k, v: "heroku config:set %s=%s -a acme-api  # 已设置" % (k, v)),
    ]
    i = 0
    for rep in range(2):
        for k, gen in pairs:
            v = gen()
            lang, fmt = styles[i % len(styles)]
            i += 1
            add("env_assignment", lang, fmt(k, v), [v])
    for j in range(4):
        v = password(shell_safe=True)
        t = [
            ("en", "Settings(database_password='%s', debug=False)" % v),
            ("en", "<add key=\"SmtpPassword\" value=\"%s\" />" % v),
            ("en", "<property name=\"hibernate.connection.password\">%s</property>" % v),
            ("en", "spring.datasource.password=%s" % v),
        ][j]
        add("config_password", t[0], t[1], [v])


def gen_cli():
    for i in range(14):
        p = password(shell_safe=True)
        h = r.choice(HOSTS)
        t = [
            ("en", "mysql -h %s -u root -p%s -e 'SHOW DATABASES;'" % (h, p)),
            ("en", "mysqldump --user=backup --password=%s --single-transaction shop > shop.sql" % p),
            ("en", "docker login registry.acme.io -u ci-bot -p %s" % p),
            ("en", "PGPASSWORD=%s psql -h %s -U app -d orders -c 'select 1'" % (p, h)),
            ("en", "redis-cli -h %s -p 6379 -a %s ping" % (h, p)),
            ("zh", "执行 mongosh --host %s -u admin --password %s --authenticationDatabase admin 报认证失败" % (h, p)),
            ("en", "helm install kafka bitnami/kafka --set auth.sasl.jaas.clientPasswords[0]=%s" % p),
            ("en", "sshpass -p '%s' ssh deploy@%s 'sudo systemctl restart api'" % (p, h)),
            ("mixed", "./bin/migrate --db-host %s --db-user app --db-password=%s --dry-run 跑完没报错" % (h, p)),
            ("en", "kubectl create secret docker-registry regcred --docker-server=harbor.acme.io --docker-username=robot --docker-password=%s" % p),
            ("en", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:%s" % p),
            ("en", "keytool -importkeystore -srckeystore app.p12 -srcstorepass %s -destkeystore app.jks" % p),
            ("en", "vault login -method=userpass username=ops password=%s" % p),
            ("en", "rabbitmqctl add_user metrics %s" % p),
        ][i]
        add("cli_password_flag", t[0], t[1], [p])
    for i in range(9):
        tok = opaque()
        t = [
            ("en", "terraform login app.terraform.io --token=%s" % tok),
            ("en", "./deploy.sh --token=%s --env prod" % tok),
            ("en", "vault login token=hvs.%s" % tok),
            ("zh", "运行 gitlab-runner register --url https://gitlab.acme.cn --registration-token %s" % tok),
            ("en", "npx vercel deploy --prod --token %s" % tok),
            ("mixed", "cloudflared tunnel run --token %s 启动后马上退出" % tok),
            ("en", "kubectl --server=https://10.0.0.1:6443 --token=%s get pods -A" % tok),
            ("en", "codecov -t %s -f coverage.xml" % tok),
            ("en", "flyctl deploy --access-token %s" % tok),
        ][i]
        secret = tok if i != 2 else "hvs." + tok
        add("cli_token_flag", t[0], t[1], [secret])


def gen_zh_keynames():
    for i in range(14):
        p = password(shell_safe=True)
        t = [
            ("zh", "密码=%s" % p),
            ("zh", "令牌：%s" % opaque()),
            ("zh", "测试环境的数据库密码是 %s，别外传" % p),
            ("zh", "服务器信息\n地址：10.20.3.4\n用户名：root\n密码：%s" % p),
            ("zh", "密钥: %s" % opaque(40)),
            ("mixed", "VPN 账号 zhangsan，口令 %s，明天失效" % p),
            ("zh", "管理员账户 admin / %s" % p),
            ("zh", "WiFi 名称：ACME-Office，WiFi 密码：%s" % p),
            ("mixed", "Jenkins 登录：用户 ops，密码是 %s" % p),
            ("zh", "访问令牌=%s" % opaque(48)),
            ("zh", "API密钥：%s" % opaque(32)),
            ("mixed", "Redis 密码 %s ，端口 6379" % p),
            ("zh", "私钥口令：%s" % p),
            ("zh", "【运维通知】新堡垒机密码：%s 请妥善保管" % p),
        ][i]
        text = t[1]
        # secret is whatever we put in: recover it
        sec = None
        for cand in [p]:
            if cand in text:
                sec = cand
        if sec is None:
            sec = text.split("：")[-1].split(": ")[-1].split("=")[-1].strip()
        add("zh_key_name", t[0], text, [sec])


def gen_misc():
    # Mixed multi-secret blobs typical of agent transcripts
    for i in range(6):
        a, s = aws_akid(), aws_secret()
        gk, ok = gh("ghp_"), openai_key()
        p = password(url_safe=True)
        t = [
            ("en", "# .env\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nGITHUB_TOKEN=%s\nOPENAI_API_KEY=%s\nDATABASE_URL=postgres://app:%s@db:5432/app" % (a, s, gk, ok, p), [a, s, gk, ok, p]),
            ("mixed", "tool_call: run_shell({\"cmd\": \"GITHUB_TOKEN=%s OPENAI_API_KEY=%s python scripts/triage.py\"})\n结果: exit 0" % (gk, ok), [gk, ok]),
            ("en", "Step 4/9 : ENV AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s\n ---> Running in 3f9c2a1b7d4e" % (a, s), [a, s]),
            ("zh", "所有配置都在这了：\nGITHUB_TOKEN=%s\nDB 连接 mysql://root:%s@127.0.0.1:3306/app" % (gk, p), [gk, p]),
            ("en", "[2024-06-10 09:15:33] ERROR Deploy failed: git push https://%s@github.com/acme/site.git rejected; retrying with OPENAI_API_KEY=%s set" % (gk, ok), [gk, ok]),
            ("en", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  DATABASE_URL: \"postgresql://svc:%s@pg.prod:5432/core\"\n  AWS_SECRET_ACCESS_KEY: \"%s\"" % (p, s), [p, s]),
        ][i]
        add("multi_secret", t[0], t[1], t[2])
    # Other known token shapes
    others = [
        ("hashicorp_vault_token", lambda: "hvs." + rs(24), "VAULT_TOKEN=%s"),
        ("digitalocean_token", lambda: "dop_v1_" + rs(64, HEX), "export DIGITALOCEAN_ACCESS_TOKEN=%s"),
        ("shopify_token", lambda: "shpat_" + rs(32, HEX), "SHOPIFY_ADMIN_TOKEN=%s"),
        ("google_api_key", lambda: "AIza" + rs(35, B64URL), "https://maps.googleapis.com/maps/api/geocode/json?address=Beijing&key=%s"),
        ("telegram_bot_token", lambda: "%d:AA%s" % (r.randint(10**9, 10**10 - 1), rs(33, B64URL)), "curl https://api.telegram.org/bot%s/getUpdates"),
        ("mailchimp_api_key", lambda: rs(32, HEX) + "-us21", "MAILCHIMP_API_KEY=%s"),
        ("gitlab_runner_token", lambda: "glrt-" + rs(20, B64URL.replace("_", "")), "gitlab-runner register --token %s"),
        ("databricks_token", lambda: "dapi" + rs(32, HEX), "DATABRICKS_TOKEN=%s"),
        ("groq_api_key", lambda: "gsk_" + rs(52), "GROQ_API_KEY=%s"),
        ("replicate_token", lambda: "r8_" + rs(37), "REPLICATE_API_TOKEN=%s"),
    ]
    for fam, gen, tmpl in others:
        v = gen()
        add(fam, "en", tmpl % v, [v])
        v2 = gen()
        add(fam, "zh" if fam != "telegram_bot_token" else "mixed",
            ("这个 token 是测试用的：%s" if fam != "telegram_bot_token" else "Telegram 机器人 token %s 发给你了") % v2, [v2])


# --------------------------------------------------------------- lookalikes
LOOK = []


def addl(family, lang, text):
    LOOK.append({"family": family, "lang": lang, "text": text})


def sha40():
    return rs(40, HEX)


def png_data_uri():
    w, h = 2, 2
    raw = b"".join(b"\x00" + bytes([r.randint(0, 255) for _ in range(w * 3)]) for _ in range(h))

    def chunk(t, d):
        c = struct.pack(">I", len(d)) + t + d
        return c + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode()


def gen_lookalikes():
    # git hashes
    for i in range(14):
        h = sha40()
        t = [
            ("en", "commit %s\nAuthor: Jane Doe <jane@example.com>\nDate:   Tue Apr 2 14:11:09 2024 +0200\n\n    fix: handle empty cart" % h),
            ("en", "$ git log --oneline -3\n%s (HEAD -> main) bump deps\n%s refactor router\n%s initial import" % (h[:7], rs(7, HEX), rs(7, HEX))),
            ("en", "git cherry-pick %s" % h),
            ("zh", "回滚到 %s 这个提交就好了" % h[:8]),
            ("en", "HEAD is now at %s Merge pull request #1423 from acme/feature/retry" % h[:7]),
            ("mixed", "这个 bug 是 %s 引入的，见 https://github.com/acme/api/commit/%s" % (h[:10], h)),
            ("en", "  - uses: actions/checkout@%s # v4.1.1" % h),
            ("en", "error: pathspec '%s' did not match any file(s) known to git" % h[:12]),
            ("en", "[main %s] docs: update README\n 1 file changed, 4 insertions(+), 1 deletion(-)" % h[:7]),
            ("en", "Bisecting: 12 revisions left to test after this (roughly 4 steps)\n[%s] perf: cache compiled templates" % h),
            ("en", "go: downloading github.com/acme/lib v0.0.0-20240312091544-%s" % h[:12]),
            ("zh", "请 review 一下 PR，最新 commit 是 %s" % h[:7]),
            ("en", "diff --git a/src/app.ts b/src/app.ts\nindex %s..%s 100644" % (h[:7], rs(7, HEX))),
            ("en", "Cloning into 'vendor/lib'...\nSubmodule path 'vendor/lib': checked out '%s'" % h),
        ][i]
        addl("git_commit_sha", t[0], t[1])
    # UUIDs
    for i in range(10):
        u = str(uuid.UUID(int=r.getrandbits(128), version=4))
        t = [
            ("en", "X-Request-Id: %s" % u),
            ("en", "2024-05-11T03:22:10Z INFO order created id=%s status=pending" % u),
            ("zh", "订单号 %s 一直卡在处理中" % u),
            ("en", "{\"trace_id\": \"%s\", \"span_id\": \"%s\"}" % (u.replace("-", ""), rs(16, HEX))),
            ("en", "Subscription ID: %s\nTenant ID: %s" % (u, uuid.UUID(int=r.getrandbits(128), version=4))),
            ("mixed", "Azure 订阅 %s 下面的资源组 rg-prod-eastasia" % u),
            ("en", "DELETE /api/v1/users/%s HTTP/1.1" % u),
            ("en", "Created volume pvc-%s" % u),
            ("en", "Project GUID = \"{%s}\"" % u.upper()),
            ("en", "client_id: %s   # public OAuth client id, not secret" % u),
        ][i]
        addl("uuid", t[0], t[1])
    # checksums
    for i in range(14):
        s256 = hashlib.sha256(rbytes(32)).hexdigest()
        m5 = hashlib.md5(rbytes(16)).hexdigest()
        t = [
            ("en", "%s  node-v20.12.2-linux-x64.tar.xz" % s256),
            ("en", "$ md5sum backup-2024-05-01.tar.gz\n%s  backup-2024-05-01.tar.gz" % m5),
            ("en", "[[package]]\nname = \"serde\"\nversion = \"1.0.197\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"%s\"" % s256),
            ("en", "requests==2.31.0 \\\n    --hash=sha256:%s" % s256),
            ("zh", "下载后校验 SHA256：%s" % s256),
            ("en", "ETag: \"%s\"" % m5),
            ("en", "sha256sum: WARNING: 1 computed checksum did NOT match\nexpected %s" % s256),
            ("mixed", "文件 MD5 %s 和官网一致" % m5),
            ("en", "Content-MD5: %s" % base64.b64encode(bytes.fromhex(m5)).decode()),
            ("en", "golang.org/x/net v0.24.0 h1:%s" % base64.b64encode(hashlib.sha256(rbytes(8)).digest()).decode()),
            ("en", "integrity_sha1 = %s" % hashlib.sha1(rbytes(8)).hexdigest()),
            ("en", "  url \"https://github.com/acme/cli/releases/download/v2.4.0/cli-darwin-arm64.tar.gz\"\n  sha256 \"%s\"" % s256),
            ("en", "SHA512 (release.zip) = %s" % hashlib.sha512(rbytes(8)).hexdigest()),
            ("en", "Build cache key: node-modules-%s" % s256[:32]),
        ][i]
        addl("checksum", t[0], t[1])
    # docker digests
    for i in range(8):
        d = hashlib.sha256(rbytes(16)).hexdigest()
        t = [
            ("en", "FROM python:3.12-slim@sha256:%s" % d),
            ("en", "latest: digest: sha256:%s size: 2841" % d),
            ("en", "image: ghcr.io/acme/api@sha256:%s" % d),
            ("zh", "镜像 digest 是 sha256:%s，生产就用这个" % d),
            ("en", "Status: Downloaded newer image for nginx:1.25\nDigest: sha256:%s" % d),
            ("en", "Successfully built %s\nSuccessfully tagged acme/worker:1.8.3" % d[:12]),
            ("en", "CONTAINER ID   IMAGE          COMMAND\n%s   redis:7.2     \"docker-entrypoint.s…\"" % d[:12]),
            ("mixed", "docker inspect 显示 Id: sha256:%s" % d),
        ][i]
        addl("docker_digest", t[0], t[1])
    # npm integrity
    for i in range(7):
        integ = "sha512-" + base64.b64encode(hashlib.sha512(rbytes(8)).digest()).decode()
        t = [
            ("en", "    \"node_modules/lodash\": {\n      \"version\": \"4.17.21\",\n      \"resolved\": \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\",\n      \"integrity\": \"%s\"\n    }" % integ),
            ("en", "lodash@^4.17.21:\n  version \"4.17.21\"\n  resolved \"https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz\"\n  integrity %s" % integ),
            ("en", "<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js\" integrity=\"sha384-%s\" crossorigin=\"anonymous\"></script>" % base64.b64encode(hashlib.sha384(rbytes(8)).digest()).decode()),
            ("zh", "package-lock 里 integrity 变了：%s，是正常的吗" % integ),
            ("en", "npm WARN tarball tarball data for react@18.3.1 (%s) seems to be corrupted." % integ),
            ("en", "  /@babel/core@7.24.5:\n    resolution: {integrity: %s}" % integ),
            ("mixed", "pnpm-lock.yaml 冲突，integrity 一个是 %s" % integ),
        ][i]
        addl("npm_integrity", t[0], t[1])
    # base64 of ordinary data
    for i in range(10):
        payload = json.dumps({"page": r.randint(2, 40), "sort": "created_at", "dir": "desc"}, separators=(",", ":"))
        b = base64.b64encode(payload.encode()).decode()
        t = [
            ("en", "<img src=\"%s\" alt=\"dot\">" % png_data_uri()),
            ("en", "GET /api/items?cursor=%s" % base64.urlsafe_b64encode(payload.encode()).decode()),
            ("en", "$ echo '%s' | base64 -d\n%s" % (b, payload)),
            ("zh", "分页游标 next_cursor 是 %s，解码出来就是页码" % b),
            ("en", "background-image: url(%s);" % png_data_uri()),
            ("en", "Content-Transfer-Encoding: base64\n\n%s" % base64.b64encode("Hello team,\nthe quarterly report is attached.\nThanks".encode()).decode()),
            ("en", "\"icon\": \"%s\"" % png_data_uri()),
            ("mixed", "这段 base64 是配置的 JSON：%s" % base64.b64encode(json.dumps({"theme": "dark", "lang": "zh-CN", "fontSize": 14}).encode()).decode()),
            ("en", "apiVersion: v1\nkind: ConfigMap\nbinaryData:\n  logo.png: %s" % png_data_uri().split(",", 1)[1]),
            ("en", "state=%s&code_challenge_method=S256" % base64.urlsafe_b64encode(json.dumps({"return_to": "/dashboard"}).encode()).decode().rstrip("=")),
        ][i]
        addl("base64_data", t[0], t[1])
    # semver / build ids
    for i in range(10):
        t = [
            ("en", "Successfully installed fastapi-0.111.0 pydantic-2.7.1 starlette-0.37.2 uvicorn-0.29.0"),
            ("en", "Version: 3.14.0-rc.2+build.20240511.a1b2c3d"),
            ("en", "Build ID: %s-%d" % (rs(8, HEX), r.randint(1000, 9999))),
            ("zh", "升级到 v2.8.1 之后就好了，之前是 2.7.0-beta.3"),
            ("en", "Android build fingerprint: google/oriole/oriole:14/AP1A.240405.002/11480754:user/release-keys"),
            ("en", "GitHub Actions run #%d (attempt 2) — workflow ci.yml@refs/heads/main" % r.randint(5000, 90000)),
            ("en", "Chrome/124.0.6367.119 Safari/537.36 Edg/124.0.2478.80"),
            ("mixed", "Jenkins 构建号 #%d 失败，job=acme-api-release" % r.randint(100, 3000)),
            ("en", "linux-image-6.5.0-35-generic (6.5.0-35.35~22.04.1) jammy-updates"),
            ("en", "CodeBuild build id: acme-api:%s" % uuid.UUID(int=r.getrandbits(128), version=4)),
        ][i]
        addl("version_build_id", t[0], t[1])
    # file paths
    for i in range(8):
        t = [
            ("en", "/home/runner/work/acme-api/acme-api/node_modules/.pnpm/@babel+core@7.24.5/node_modules/@babel/core/lib/index.js"),
            ("en", "File \"/usr/local/lib/python3.11/site-packages/django/db/backends/postgresql/base.py\", line 269, in get_new_connection"),
            ("en", "C:\\Users\\wang.li\\AppData\\Local\\Programs\\Microsoft VS Code\\resources\\app\\out\\vs\\workbench\\workbench.desktop.main.js"),
            ("zh", "配置文件在 /etc/acme/conf.d/secrets.yaml.example，只是模板"),
            ("en", "/var/lib/docker/overlay2/%s/merged/usr/share/nginx/html" % hashlib.sha256(rbytes(8)).hexdigest()),
            ("en", "~/.cache/huggingface/hub/models--bert-base-uncased/snapshots/%s/config.json" % sha40()),
            ("en", "src/main/java/com/acme/auth/token/TokenRefreshService.java:118"),
            ("mixed", "日志在 /var/log/acme/password-reset-worker/2024-06-01.log 里"),
        ][i]
        addl("file_path", t[0], t[1])
    # URLs without credentials
    for i in range(14):
        t = [
            ("en", "https://grafana.internal.acme.io:8443/d/abc123/api-latency?orgId=1&from=now-6h&to=now"),
            ("en", "GET https://api.acme.io/v2/products?page=2&sort=desc&limit=50 200 OK (143ms)"),
            ("en", "git remote add origin git@github.com:acme/payments-api.git"),
            ("en", "git clone https://github.com/torvalds/linux.git"),
            ("zh", "文档地址：https://docs.acme.cn/zh/guide/getting-started#install"),
            ("en", "Visit http://localhost:3000/auth/callback?state=xyz&redirect=%2Fhome to finish login"),
            ("en", "https://s3.us-west-2.amazonaws.com/acme-public-assets/logos/logo-v3.svg"),
            ("en", "postgres://localhost:5432/devdb"),
            ("mixed", "打开 https://console.cloud.google.com/iam-admin/serviceaccounts?project=acme-prod 看一下权限"),
            ("en", "redis://redis-master.cache.svc.cluster.local:6379/0"),
            ("en", "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s"),
            ("en", "ssh://git@gitlab.acme.io:2222/platform/infra.git"),
            ("en", "https://github.com/acme/web/pull/1423/files#diff-7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b"),
            ("en", "mongodb://mongo-0.mongo,mongo-1.mongo,mongo-2.mongo:27017/app?replicaSet=rs0"),
        ][i]
        addl("url_no_credentials", t[0], t[1])
    # emails
    for i in range(6):
        t = [
            ("en", "Signed-off-by: Li Wei <li.wei@acme-corp.com>"),
            ("en", "Please contact security@example.org to report vulnerabilities."),
            ("zh", "有问题发邮件到 support@acme.cn"),
            ("en", "From: \"Build Bot\" <noreply+ci@builds.acme.io>\nTo: dev-team@acme.io"),
            ("mixed", "账号 zhang.san+test@gmail.com 收不到验证码"),
            ("en", "git config user.email \"41898282+github-actions[bot]@users.noreply.github.com\""),
        ][i]
        addl("email", t[0], t[1])
    # IPs
    for i in range(7):
        t = [
            ("en", "Connection refused: 10.0.3.17:5432"),
            ("en", "inet6 fe80::1c2b:3ff:fe4d:5e6f/64 scope link"),
            ("en", "listen [2001:db8:85a3::8a2e:370:7334]:443 ssl;"),
            ("zh", "服务器 IP 是 172.16.8.45，端口 22"),
            ("en", "X-Forwarded-For: 203.0.113.42, 198.51.100.7"),
            ("en", "192.168.1.1 - - [10/Jun/2024:13:55:36 +0000] \"GET /healthz HTTP/1.1\" 200 2 \"-\" \"kube-probe/1.29\""),
            ("mixed", "VPC CIDR 10.20.0.0/16，子网 10.20.1.0/24"),
        ][i]
        addl("ip_address", t[0], t[1])
    # k8s pods
    for i in range(8):
        rsid = rs(10, LO + DIG)
        t = [
            ("en", "NAME                              READY   STATUS    RESTARTS   AGE\napi-%s-%s       1/1     Running   0          3d\nworker-%s-%s    0/1     CrashLoopBackOff   12   1h" % (rsid, rs(5, LO + DIG), rs(9, LO + DIG), rs(5, LO + DIG))),
            ("en", "kubectl logs -f payments-%s-%s -n prod" % (rsid, rs(5, LO + DIG))),
            ("zh", "pod web-%s-%s 一直重启" % (rsid, rs(5, LO + DIG))),
            ("en", "Successfully assigned default/cron-report-28599120-%s to ip-10-0-2-33.ec2.internal" % rs(5, LO + DIG)),
            ("en", "replicaset.apps/frontend-%s scaled to 3" % rsid),
            ("mixed", "kubectl exec -it redis-%s-%s -- redis-cli 进去看看 key" % (rsid, rs(5, LO + DIG))),
            ("en", "Events:\n  Warning  BackOff  2m (x14 over 10m)  kubelet  Back-off restarting failed container in pod auth-%s-%s" % (rsid, rs(5, LO + DIG))),
            ("en", "node/gke-prod-pool-1-%s-%s Ready" % (rs(8, LO + DIG), rs(4, LO + DIG))),
        ][i]
        addl("k8s_pod_name", t[0], t[1])
    # AWS ARNs / regions
    for i in range(9):
        acct = str(r.randint(10**11, 10**12 - 1))
        t = [
            ("en", "arn:aws:iam::%s:role/github-actions-deploy" % acct),
            ("en", "arn:aws:s3:::acme-prod-logs/alb/AWSLogs/%s/" % acct),
            ("en", "User: arn:aws:sts::%s:assumed-role/ReadOnly/ci-session is not authorized to perform: s3:PutObject" % acct),
            ("zh", "部署到 ap-northeast-1 和 cn-north-1 两个区域"),
            ("en", "arn:aws:lambda:eu-central-1:%s:function:thumbnail-resizer:7" % acct),
            ("en", "arn:aws:secretsmanager:us-east-1:%s:secret:prod/db/password-AbCdEf" % acct),
            ("mixed", "KMS key arn:aws:kms:us-west-2:%s:key/%s 用于加密 EBS" % (acct, uuid.UUID(int=r.getrandbits(128), version=4))),
            ("en", "Instance i-0%s (t3.medium) in subnet-0%s, sg-0%s" % (rs(16, HEX), rs(16, HEX), rs(16, HEX))),
            ("en", "Account: %s  Region: us-east-2  VPC: vpc-0%s" % (acct, rs(16, HEX))),
        ][i]
        addl("aws_arn_region", t[0], t[1])
    # placeholders
    for i in range(16):
        t = [
            ("en", "API_KEY=<your-key-here>"),
            ("en", "password: ********"),
            ("en", "OPENAI_API_KEY=sk-...your-key..."),
            ("en", "DB_PASSWORD=${DB_PASSWORD}"),
            ("en", "token: {{ .Values.github.token }}"),
            ("zh", "密码：******（已隐藏）"),
            ("en", "export AWS_SECRET_ACCESS_KEY=\"$(aws configure get aws_secret_access_key --profile prod)\""),
            ("en", "Authorization: Bearer <token>"),
            ("en", "postgres://USER:PASSWORD@HOST:5432/DBNAME"),
            ("mixed", "把 API_KEY 换成你自己的 key，比如 API_KEY=YOUR_API_KEY"),
            ("en", "password = os.environ[\"DB_PASSWORD\"]"),
            ("en", "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}"),
            ("en", "secret_key = \"[redacted]\""),
            ("en", "aws_secret_access_key = REPLACE_ME"),
            ("zh", "令牌：<在控制台生成后填写>"),
            ("en", "curl -H \"Authorization: Bearer $API_TOKEN\" https://api.acme.io/v1/me"),
        ][i]
        addl("placeholder", t[0], t[1])
    # variable names / code
    for i in range(10):
        t = [
            ("en", "password_field = forms.CharField(widget=forms.PasswordInput, min_length=12)"),
            ("en", "def refresh_access_token(self, refresh_token: str) -> TokenPair:"),
            ("en", "const SECRET_KEY_ENV_VAR = 'APP_SECRET_KEY';"),
            ("en", "if (!user.passwordHash || !(await bcrypt.compare(input.password, user.passwordHash))) {"),
            ("zh", "把 get_token() 的返回值缓存起来，避免每次都请求"),
            ("en", "ALTER TABLE users ADD COLUMN password_reset_token_expires_at TIMESTAMPTZ;"),
            ("en", "    api_key: Optional[str] = Field(default=None, description=\"API key; read from env if unset\")"),
            ("mixed", "`TokenBucketRateLimiter` 里的 max_tokens 参数调大一点"),
            ("en", "grep -rn \"AWS_SECRET_ACCESS_KEY\" .github/workflows/"),
            ("en", "tokenizer = AutoTokenizer.from_pretrained(\"bert-base-uncased\"); tokens = tokenizer(text)[\"input_ids\"]"),
        ][i]
        addl("variable_name", t[0], t[1])
    # discussion
    for i in range(12):
        t = [
            ("en", "Rotate the GitHub token before Friday; the old one expires on the 14th."),
            ("en", "We should never log the Authorization header. Let's add a middleware that strips it."),
            ("zh", "周五之前把 Slack 机器人的 token 轮换一下"),
            ("zh", "密码长度至少 12 位，必须包含大小写字母和数字"),
            ("mixed", "这次泄露的是 staging 的 AWS key，已经在 IAM 里禁用了"),
            ("en", "The JWT is signed with RS256, and the public key is published at /.well-known/jwks.json."),
            ("en", "Error: token expired. Please run `gh auth login` again."),
            ("zh", "忘记密码？点击这里重置"),
            ("en", "Stripe keys that start with sk_live_ must only live in the vault, not in .env files."),
            ("mixed", "OpenAI 的 API key 前缀一般是 sk-proj-，别贴到 issue 里"),
            ("en", "401 Unauthorized: invalid or missing API key"),
            ("en", "Tokens used: 1,532 prompt + 418 completion = 1,950 total"),
        ][i]
        addl("token_discussion", t[0], t[1])
    # public keys / certs / fingerprints
    for i in range(6):
        t = [
            ("en", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s deploy@ci" % rs(43, B64)),
            ("en", "The key fingerprint is:\nSHA256:%s jane@laptop" % rs(43, B64)),
            ("en", "-----BEGIN CERTIFICATE-----\nMIID%s\n%s\n-----END CERTIFICATE-----" % (rs(60, B64), rs(40, B64))),
            ("zh", "公钥发我就行：ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ%s wang@mbp" % rs(120, B64)),
            ("en", "github.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB%s" % rs(90, B64)),
            ("en", "gpg: Signature made Mon 10 Jun 2024 09:12:33 AM UTC\ngpg:                using RSA key %s" % rs(40, HEX).upper()),
        ][i]
        addl("public_key_fingerprint", t[0], t[1])
    # misc high-entropy but non-secret
    for i in range(8):
        t = [
            ("en", "color: #3b82f6; border-color: #1e40af;"),
            ("en", "Stack trace ID 0x7ffd5e8c9a10 at libc.so.6+0x29d90"),
            ("en", "YouTube video id dQw4w9WgXcQ, playlist PLrAXtmErZgOeiKm4sgNOknGvNjby9efdf"),
            ("en", "Tracking number 1Z999AA10123456784"),
            ("zh", "快递单号 SF1234567890123，预计明天到"),
            ("en", "Correlation: ab12cd34ef56ab12cd34ef56ab12cd34"),
            ("mixed", "Sentry event %s 对应的就是这个报错" % rs(32, HEX)),
            ("en", "CloudFront distribution E2QWRUHAPOMQZL invalidation I2J0I21PCUYOIK created"),
        ][i]
        addl("misc_identifier", t[0], t[1])


def gen_lookalikes_more():
    # config keys that mention secrets but hold no secret value
    for i in range(14):
        t = [
            ("en", "auth:\n  password_min_length: 12\n  token_ttl_seconds: 3600\n  refresh_token_rotation: true"),
            ("en", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-credentials\n        key: password"),
            ("en", "max_tokens=4096, temperature=0.2, top_p=0.95"),
            ("zh", "配置项 secret_name: prod-db-secret，具体值在 Vault 里"),
            ("en", "SECRET_KEY_FILE=/run/secrets/django_secret_key"),
            ("en", "password_hash_algorithm = \"argon2id\"\npassword_hash_iterations = 3"),
            ("mixed", "GITHUB_TOKEN 的 scope 只需要 repo 和 read:org"),
            ("en", "aws_region = \"us-east-1\"\naws_profile = \"prod-readonly\""),
            ("en", "token_endpoint: https://login.microsoftonline.com/common/oauth2/v2.0/token"),
            ("en", "PASSWORD_RESET_TIMEOUT=259200  # 3 days"),
            ("zh", "密码有效期：90 天；令牌有效期：30 分钟"),
            ("en", "api_key_header_name: X-API-Key"),
            ("en", "credential_process = /usr/local/bin/aws-vault exec prod --json"),
            ("mixed", "ssh-agent 已加载 key，ssh-add -l 显示 256 SHA256 指纹"),
        ][i]
        addl("config_non_secret", t[0], t[1])
    # cloud/service request ids and similar opaque-but-public ids
    for i in range(10):
        t = [
            ("en", "x-amz-request-id: %s\nx-amz-id-2: %s" % (rs(16, UPDIG), rs(76, B64))),
            ("en", "cf-ray: %s-SJC" % rs(16, HEX)),
            ("en", "RequestId: %s Duration: 183.21 ms Billed Duration: 184 ms" % uuid.UUID(int=r.getrandbits(128), version=4)),
            ("zh", "阿里云请求 ID：%s" % str(uuid.UUID(int=r.getrandbits(128), version=4)).upper()),
            ("en", "Stripe request id req_%s failed with card_declined" % rs(14)),
            ("en", "Payment intent pi_%s succeeded for customer cus_%s" % (rs(24), rs(14))),
            ("en", "Slack channel C%s, user U%s, team T%s" % (rs(10, UPDIG), rs(10, UPDIG), rs(8, UPDIG))),
            ("mixed", "Discord 频道 ID %d，服务器 ID %d" % (r.randint(10**17, 10**18), r.randint(10**17, 10**18))),
            ("en", "Google Analytics measurement ID G-%s, property 3%s" % (rs(10, UPDIG), rs(8, DIG))),
            ("en", "ami-0%s (ubuntu-jammy-22.04-amd64-server-20240501)" % rs(16, HEX)),
        ][i]
        addl("service_request_id", t[0], t[1])
    # misc log lines full of hex/timestamps
    for i in range(8):
        t = [
            ("en", "2024-06-11T08:31:07.552918Z pid=4812 tid=0x7f3a9c1fe700 level=info msg=\"cache warm\" keys=18342"),
            ("en", "terraform.tfstate: \"lineage\": \"%s\", \"serial\": 412" % uuid.UUID(int=r.getrandbits(128), version=4)),
            ("en", "Trace started: span %s (sampled)" % rs(8, HEX)),
            ("zh", "第 %s 次构建，产物 hash %s" % (r.randint(10, 999), rs(20, HEX))),
            ("en", "webpack 5.91.0 compiled successfully: main.%s.js 243 KiB, vendor.%s.js 1.1 MiB" % (rs(20, HEX), rs(8, HEX))),
            ("en", "Alembic revision %s -> %s, add orders index" % (rs(12, HEX), rs(12, HEX))),
            ("mixed", "Flyway 迁移 V20240611__add_password_reset_table.sql 已应用"),
            ("en", "ULID 01HZX%s assigned to job" % rs(21, "0123456789ABCDEFGHJKMNPQRSTVWXYZ")),
        ][i]
        addl("log_identifier", t[0], t[1])


def main():
    for g in [gen_aws, gen_gcp, gen_azure, gen_github, gen_gitlab, gen_slack, gen_discord, gen_stripe, gen_openai,
              gen_anthropic, gen_hf_npm_pypi, gen_twilio_sendgrid, gen_jwt, gen_pem, gen_url_passwords,
              gen_auth_headers, gen_env, gen_cli, gen_zh_keynames, gen_misc]:
        g()
    gen_lookalikes()
    gen_lookalikes_more()
    with open(os.path.join(HERE, "secrets_independent.jsonl"), "w", encoding="utf-8") as f:
        for i, rec in enumerate(SECRETS, 1):
            rec = {"id": "x%04d" % i, **rec}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "lookalikes_independent.jsonl"), "w", encoding="utf-8") as f:
        for i, rec in enumerate(LOOK, 1):
            rec = {"id": "y%04d" % i, **rec}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(len(SECRETS), "secret records;", len(LOOK), "lookalike records")


if __name__ == "__main__":
    main()
