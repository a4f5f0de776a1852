#!/usr/bin/env python3
"""Generate the held-out secret-redaction corpus "C".

Deterministic: seeded RNG, no network, no external data.
Writes secrets_c.jsonl (texts containing labelled credentials) and
lookalikes_c.jsonl (texts with credential-looking but non-secret strings).
"""
import base64
import json
import os
import random
import string
import uuid

R = random.Random(0xC0FFEE + 2024)
HERE = os.path.dirname(os.path.abspath(__file__))

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
CROCK = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def rs(n, alpha=ALNUM):
    return "".join(R.choice(alpha) for _ in range(n))


def hx(n):
    return rs(n, HEX)


def rbytes(n):
    return bytes(R.getrandbits(8) for _ in range(n))


def b64(n, urlsafe=False, pad=True):
    s = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(rbytes(n)).decode()
    return s if pad else s.rstrip("=")


def uid():
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def pw(n=None, sym="!@#%^&*-_+=?"):
    n = n or R.randint(11, 18)
    while True:
        s = rs(n, ALNUM + sym)
        if (any(c.isdigit() for c in s) and any(c.isupper() for c in s)
                and any(c.islower() for c in s) and any(c in sym for c in s)):
            return s


def urlpw(n=None):
    return pw(n, sym="-_.~")


def jwt(payload):
    h = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode()).decode().rstrip("=")
    p = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")
    return f"{h}.{p}.{b64(32, True, False)}"


def b64lines(data, width=64):
    s = base64.b64encode(data).decode()
    return [s[i:i + width] for i in range(0, len(s), width)]


def long_lines(lines):
    return [l for l in lines if len(l) >= 20]


def rsa_pkcs1():
    data = bytes.fromhex("308204a40201000282010100") + rbytes(1180)
    return b64lines(data)


def pkcs8_rsa():
    data = bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8") + rbytes(1192)
    return b64lines(data)


def ec_sec1():
    data = (bytes.fromhex("30770201010420") + rbytes(32) + bytes.fromhex("a00a06082a8648ce3d030107a14403420004") + rbytes(64))
    return b64lines(data)


def openssh_ed25519():
    data = (b"openssh-key-v1\x00" + bytes.fromhex("000000046e6f6e65000000046e6f6e6500000000000000010000003300000b7373682d6564323535313900000020")
            + rbytes(32) + bytes.fromhex("00000088") + rbytes(136))
    return b64lines(data, 70)


def cert_lines(n=820):
    data = bytes.fromhex("308203") + bytes([R.randint(0x10, 0xf0)]) + bytes.fromhex("308202") + bytes([R.randint(0x10, 0xf0)]) + bytes.fromhex("a0030201020214") + rbytes(n)
    return b64lines(data)


BIP39 = ("abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve acid "
         "acoustic acquire across act action actor actress actual adapt add addict address adjust admit adult advance advice "
         "aerobic affair afford afraid again age agent agree ahead aim air airport aisle alarm album alcohol alert alien all "
         "alley allow almost alone alpha already also alter always amateur amazing among amount amused analyst anchor ancient "
         "anger angle angry animal ankle announce annual another answer antenna antique anxiety any apart apology appear apple "
         "approve april arch arctic area arena argue arm armed armor army around arrange arrest arrive arrow art artefact artist "
         "artwork ask aspect assault asset assist assume asthma athlete atom attack attend attitude attract auction audit august "
         "aunt author auto autumn average avocado avoid awake aware away awesome awful awkward axis baby bachelor bacon badge bag "
         "balance balcony ball bamboo banana banner bar barely bargain barrel base basic basket battle beach bean beauty because "
         "become beef before begin behave behind believe below belt bench benefit best betray better between beyond bicycle bid "
         "bike bind biology bird birth bitter black blade blame blanket blast bleak bless blind blood blossom blouse blue blur "
         "blush board boat body boil bomb bone bonus book boost border boring borrow boss bottom bounce box boy bracket brain "
         "brand brass brave bread breeze brick bridge brief bright bring brisk broccoli broken bronze broom brother brown brush "
         "bubble buddy budget buffalo build bulb bulk bullet bundle bunker burden burger burst bus business busy butter buyer "
         "buzz cabbage cabin cable").split()


def mnemonic(n=12):
    return " ".join(R.choice(BIP39) for _ in range(n))


SECRETS = []
LOOKS = []


def S(fam, lang, text, secrets):
    for s in secrets:
        assert s in text, (fam, s)
        assert len(s) >= 6, (fam, s)
    SECRETS.append({"family": fam, "lang": lang, "text": text, "secrets": list(secrets)})


def L(fam, lang, text):
    LOOKS.append({"family": fam, "lang": lang, "text": text})


# ---------------------------------------------------------------- secrets
def gen_secrets():
    # --- Windows / PowerShell
    k = "sk-proj-" + rs(48, URLSAFE) + "T3BlbkFJ" + rs(48, URLSAFE)
    S("powershell_env", "en", f'PS C:\\Users\\dev\\src\\agent> $env:OPENAI_API_KEY = "{k}"\nPS C:\\Users\\dev\\src\\agent> python .\\run.py --model gpt-4o', [k])
    k = "sk-ant-api03-" + rs(93, URLSAFE) + "AA"
    S("powershell_env", "mixed", f"在 PowerShell 里这样设置就行：\n[Environment]::SetEnvironmentVariable('ANTHROPIC_API_KEY', '{k}', 'User')\n然后重开终端。", [k])
    k = "ghp_" + rs(36)
    S("powershell_env", "en", f"PS> $Env:GITHUB_TOKEN='{k}'; gh auth status\ngithub.com\n  ✓ Logged in to github.com account octo-dev (GITHUB_TOKEN)", [k])
    p = pw()
    S("powershell_securestring", "en", f'$secpass = ConvertTo-SecureString "{p}" -AsPlainText -Force\n$cred = New-Object System.Management.Automation.PSCredential ("CORP\\svc_deploy", $secpass)\nInvoke-Command -ComputerName app01 -Credential $cred -ScriptBlock {{ iisreset }}', [p])
    p = pw()
    S("powershell_securestring", "zh", f"脚本第 12 行报错，麻烦看看：\n$pwd = ConvertTo-SecureString -String '{p}' -AsPlainText -Force\nNew-LocalUser -Name backup -Password $pwd\n错误：New-LocalUser : 密码不符合密码策略的要求。", [p])
    p = pw()
    S("powershell_securestring", "en", f'PS C:\\> net use Z: \\\\fs01\\share /user:CONTOSO\\jdoe {p} /persistent:no\nThe command completed successfully.', [p])
    p = pw()
    S("windows_cmd", "en", f'C:\\deploy> set DB_PASSWORD={p}\nC:\\deploy> set DB_USER=app\nC:\\deploy> dotnet run --project Api', [p])
    p = pw()
    S("windows_cmd", "zh-Hant", f"我用 runas 不行，指令如下：\ncmdkey /generic:TERMSRV/rdp-gw01 /user:ops\\admin /pass:{p}\n執行後還是跳出輸入密碼的視窗。", [p])

    # --- Java
    p = pw()
    p2 = pw()
    S("java_properties", "en", f"# application.properties\nspring.datasource.url=jdbc:postgresql://db.internal:5432/orders\nspring.datasource.username=orders_app\nspring.datasource.password={p}\nspring.mail.host=smtp.office365.com\nspring.mail.password={p2}\n", [p, p2])
    p = pw()
    S("java_properties", "zh", f"生产环境的 application-prod.yml 配置如下，启动时连接 Redis 失败：\nspring:\n  redis:\n    host: 10.20.1.15\n    port: 6379\n    password: {p}\n  datasource:\n    username: root", [p])
    p = pw()
    S("java_properties", "en", f"jasypt is not set up yet so for now gradle.properties has:\nsigningKeyId=4F2A91C0\nsigning.password={p}\nossrhUsername=acme-release\nossrhPassword={p[::-1]}\n", [p, p[::-1]])
    p = pw()
    S("java_keystore", "en", f"$ keytool -importkeystore -srckeystore server.p12 -srcstoretype PKCS12 -srcstorepass {p} -destkeystore server.jks -deststorepass {p} -noprompt\nImporting keystore server.p12 to server.jks...\nEntry for alias 1 successfully imported.", [p])
    p = pw()
    p2 = pw()
    S("java_keystore", "en", f"server.ssl.key-store=classpath:keystore.p12\nserver.ssl.key-store-password={p}\nserver.ssl.key-store-type=PKCS12\nserver.ssl.key-alias=tomcat\nserver.ssl.key-password={p2}", [p, p2])
    p = pw()
    S("java_keystore", "zh", f"签名 APK 的命令，storePassword 是 {p}，记得别提交：\n./gradlew assembleRelease -Pandroid.injected.signing.store.file=release.jks -Pandroid.injected.signing.store.password={p} -Pandroid.injected.signing.key.alias=upload", [p])

    # --- .NET
    p = pw(sym="!@#%^*-_+=?")
    S("dotnet_connstr", "en", '{\n  "ConnectionStrings": {\n    "Default": "Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=Shop;User ID=shopadmin;Password=' + p + ';Encrypt=True;TrustServerCertificate=False;"\n  },\n  "Logging": { "LogLevel": { "Default": "Information" } }\n}', [p])
    p = pw(sym="!@#%^*-_+=?")
    S("dotnet_connstr", "zh", f"appsettings.Development.json 里面的连接串，本地能连上服务器上连不上：\n\"MySql\": \"Server=192.168.3.20;Port=3306;Database=erp;Uid=erp_rw;Pwd={p};SslMode=None\"", [p])
    k = b64(64)
    S("dotnet_connstr", "en", f'"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=funcstore7731;AccountKey={k};EndpointSuffix=core.windows.net"', [k])
    p = pw()
    S("dotnet_user_secrets", "en", f'PS> dotnet user-secrets set "Smtp:Password" "{p}"\nSuccessfully saved Smtp:Password = {p} to the secret store.', [p])

    # --- Rails / Django / Laravel
    k = hx(128)
    S("rails_secret_key_base", "en", f"# config/credentials.yml.enc (decrypted with bin/rails credentials:edit)\nsecret_key_base: {k}\naws:\n  access_key_id: AKIA{rs(16, UPPER_ALNUM)}\n", [k])
    k = hx(32)
    S("rails_master_key", "en", f"$ cat config/master.key\n{k}\n$ RAILS_MASTER_KEY={k} bin/rails assets:precompile", [k])
    k = hx(128)
    S("rails_secret_key_base", "zh", f"Heroku 上部署报 Missing secret_key_base，我手动设了：\nheroku config:set SECRET_KEY_BASE={k} -a shop-prod", [k])
    k = "django-insecure-" + rs(50, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)")
    S("django_secret_key", "en", f"# settings.py\nSECRET_KEY = '{k}'\nDEBUG = True\nALLOWED_HOSTS = ['*']", [k])
    k = rs(50, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)")
    S("django_secret_key", "zh", f"上线前把 settings 改成读环境变量了，之前写死在代码里的是：\nSECRET_KEY = \"{k}\"\n这个要不要换？", [k])
    k = rs(50, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)")
    S("django_secret_key", "en", f"DJANGO_SECRET_KEY={k}\nDJANGO_SETTINGS_MODULE=config.settings.production\nDATABASE_URL=postgres://app@db:5432/app", [k])
    k = "base64:" + b64(32)
    S("laravel_app_key", "en", f"APP_NAME=Laravel\nAPP_ENV=production\nAPP_KEY={k}\nAPP_DEBUG=false\nAPP_URL=https://portal.example.com", [k[7:]])
    k = "base64:" + b64(32)
    S("laravel_app_key", "zh-Hant", f"php artisan key:generate --show\n{k}\n把這串貼到 .env 的 APP_KEY 就好，舊的先不要刪。", [k[7:]])
    p = pw()
    S("laravel_app_key", "en", f"DB_CONNECTION=mysql\nDB_HOST=127.0.0.1\nDB_DATABASE=forge\nDB_USERNAME=forge\nDB_PASSWORD={p}\nMAIL_MAILER=smtp", [p])

    # --- Firebase / Google
    k = "AIza" + rs(35, URLSAFE)
    S("firebase_config", "en", "const firebaseConfig = {\n  apiKey: \"" + k + "\",\n  authDomain: \"chatapp-3f1c2.firebaseapp.com\",\n  projectId: \"chatapp-3f1c2\",\n  storageBucket: \"chatapp-3f1c2.appspot.com\",\n  messagingSenderId: \"84123377190\",\n  appId: \"1:84123377190:web:" + hx(22) + "\"\n};", [k])
    k = "1//0" + rs(99, URLSAFE)
    S("firebase_token", "en", f"$ firebase login:ci\n✔  Success! Use this token to login on a CI server:\n\n{k}\n\nExample: firebase deploy --token \"$FIREBASE_TOKEN\"", [k])
    lines = pkcs8_rsa()
    body = "\\n".join(lines)
    S("gcp_service_account", "en", '{\n  "type": "service_account",\n  "project_id": "analytics-prod-2231",\n  "private_key_id": "' + hx(40) + '",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\n' + body + '\\n-----END PRIVATE KEY-----\\n",\n  "client_email": "etl@analytics-prod-2231.iam.gserviceaccount.com",\n  "client_id": "1' + rs(20, string.digits) + '"\n}', long_lines(lines))
    k = "GOCSPX-" + rs(28, URLSAFE)
    S("google_oauth", "zh", f"OAuth 客户端建好了：\n客户端 ID：{rs(12, string.digits)}-{rs(32, LOWER_ALNUM)}.apps.googleusercontent.com\n客户端密钥：{k}\n回调地址填 http://localhost:3000/api/auth/callback/google", [k])
    k = "ya29." + rs(150, URLSAFE)
    S("google_oauth", "en", f"curl -H \"Authorization: Bearer {k}\" https://www.googleapis.com/drive/v3/files?pageSize=10", [k])

    # --- Supabase / Neon / PlanetScale
    t = jwt({"iss": "supabase", "ref": rs(20, string.ascii_lowercase), "role": "service_role", "iat": 1712000000, "exp": 2027576000})
    S("supabase", "en", f"NEXT_PUBLIC_SUPABASE_URL=https://{rs(20, string.ascii_lowercase)}.supabase.co\nSUPABASE_SERVICE_ROLE_KEY={t}", [t])
    p = urlpw()
    S("supabase", "zh", f"Supabase 直连串：postgresql://postgres.{rs(20, string.ascii_lowercase)}:{p}@aws-0-ap-southeast-1.pooler.supabase.com:6543/postgres  prisma migrate 一直超时", [p])
    k = "sbp_" + hx(40)
    S("supabase", "en", f"$ supabase login --token {k}\nYou are now logged in. Happy coding!", [k])
    p = "npg_" + rs(12)
    S("neon", "en", f"DATABASE_URL=\"postgresql://neondb_owner:{p}@ep-cool-darkness-{rs(8, LOWER_ALNUM)}.us-east-2.aws.neon.tech/neondb?sslmode=require\"", [p])
    p = rs(12)
    S("neon", "mixed", f"neon 的连接串给你：postgres://alex:{p}@ep-rough-sun-{rs(6, LOWER_ALNUM)}-pooler.eu-central-1.aws.neon.tech/main?sslmode=require 用完告诉我我去 reset", [p])
    p = "pscale_pw_" + rs(43, URLSAFE)
    S("planetscale", "en", f"DATABASE_HOST=aws.connect.psdb.cloud\nDATABASE_USERNAME={rs(12, LOWER_ALNUM)}\nDATABASE_PASSWORD={p}", [p])
    p = "pscale_tkn_" + rs(43, URLSAFE)
    S("planetscale", "en", f"- name: Deploy request\n  run: pscale deploy-request create shop main --org acme\n  env:\n    PLANETSCALE_SERVICE_TOKEN_ID: {rs(12, LOWER_ALNUM)}\n    PLANETSCALE_SERVICE_TOKEN: {p}", [p])

    # --- Cloudflare
    k = rs(40, URLSAFE)
    S("cloudflare", "en", f"curl -X GET \"https://api.cloudflare.com/client/v4/user/tokens/verify\" \\\n     -H \"Authorization: Bearer {k}\" \\\n     -H \"Content-Type:application/json\"", [k])
    k = hx(37)
    S("cloudflare", "en", f"export CF_API_EMAIL=ops@example.org\nexport CF_API_KEY={k}\ncertbot certonly --dns-cloudflare -d '*.example.org'", [k])
    k = rs(40, URLSAFE)
    S("cloudflare", "zh", f"# certbot 的 cloudflare.ini\ndns_cloudflare_api_token = {k}\n权限只给了 Zone:DNS:Edit，够用吗？", [k])
    k = "eyJhIjoi" + rs(140, ALNUM) + "=="
    S("cloudflare", "en", f"docker run -d cloudflare/cloudflared:latest tunnel --no-autoupdate run --token {k}", [k])

    # --- Datadog / New Relic / Sentry
    k, a = hx(32), hx(40)
    S("datadog", "en", f"DD_API_KEY={k}\nDD_APP_KEY={a}\nDD_SITE=datadoghq.eu\nDD_ENV=staging", [k, a])
    k = hx(32)
    S("datadog", "zh", f"helm install datadog-agent datadog/datadog --set datadog.apiKey={k} --set datadog.site=datadoghq.com\n装完以后 agent 一直报 403，key 是不是填错了？", [k])
    k = "NRAK-" + rs(27, UPPER_ALNUM)
    S("newrelic", "en", f"curl https://api.newrelic.com/graphql -H 'Content-Type: application/json' -H 'API-Key: {k}' --data-binary '{{\"query\":\"{{ actor {{ user {{ name }} }} }}\"}}'", [k])
    k = hx(36) + "NRAL"
    S("newrelic", "en", f"# newrelic.yml\ncommon: &default_settings\n  license_key: '{k}'\n  app_name: checkout-service", [k])
    k = "sntryu_" + hx(64)
    S("sentry", "en", f"$ export SENTRY_AUTH_TOKEN={k}\n$ sentry-cli releases new -p web-frontend 2.14.0", [k])
    k = "sntrys_" + base64.b64encode(json.dumps({"iat": 1716000000.1, "url": "https://sentry.io", "region_url": "https://us.sentry.io", "org": "acme"}).encode()).decode().rstrip("=") + "_" + rs(43, URLSAFE)
    S("sentry", "zh", f"在 .sentryclirc 里写了：\n[auth]\ntoken={k}\n上传 sourcemap 依然报 401。", [k])

    # --- PagerDuty / Okta / Auth0 / OIDC / SAML
    k = rs(20, ALNUM + "_+-")
    S("pagerduty", "en", f"curl -H \"Authorization: Token token={k}\" -H \"Accept: application/vnd.pagerduty+json;version=2\" https://api.pagerduty.com/incidents", [k])
    k = hx(32)
    S("pagerduty", "en", "alertmanager.yml:\nreceivers:\n- name: pagerduty-critical\n  pagerduty_configs:\n  - routing_key: " + k + "\n    severity: critical", [k])
    k = "00" + rs(40, URLSAFE)
    S("okta", "en", f"GET /api/v1/users?limit=25 HTTP/1.1\nHost: acme.okta.com\nAccept: application/json\nAuthorization: SSWS {k}", [k])
    k = rs(64, URLSAFE)
    S("auth0", "en", f"AUTH0_DOMAIN=acme.eu.auth0.com\nAUTH0_CLIENT_ID={rs(32)}\nAUTH0_CLIENT_SECRET={k}\nAUTH0_SECRET={hx(64)}", [k])
    cs = rs(64, URLSAFE)
    S("oidc_yaml", "en", f"# dex config\nconnectors:\n- type: oidc\n  id: okta\n  name: Okta\n  config:\n    issuer: https://acme.okta.com\n    clientID: 0oa{rs(17)}\n    clientSecret: {cs}\n    redirectURI: https://dex.acme.io/callback", [cs])
    cs = rs(40, URLSAFE)
    S("oidc_yaml", "zh", f"Grafana 接 Keycloak 的配置：\n[auth.generic_oauth]\nenabled = true\nclient_id = grafana\nclient_secret = {cs}\nauth_url = https://sso.example.cn/realms/ops/protocol/openid-connect/auth", [cs])
    cs = uid()
    az = rs(3) + "8Q~" + rs(34, ALNUM + "_-.~")
    S("oidc_yaml", "en", f"spring:\n  security:\n    oauth2:\n      client:\n        registration:\n          azure:\n            client-id: {cs}\n            client-secret: {az}\n            scope: openid,profile", [az])
    p = pw()
    S("saml", "en", f"# SimpleSAMLphp config/config.php\n'auth.adminpassword' => '{p}',\n'secretsalt' => '{rs(32, LOWER_ALNUM)}',\n'technicalcontact_email' => 'it@example.edu',", [p])

    # --- Heroku / Vercel / Netlify / Docker Hub / Atlassian
    k = uid()
    S("heroku", "en", f"$ heroku auth:token\n›   Warning: token will expire 06/30/2025\n{k}\n$ export HEROKU_API_KEY={k}", [k])
    k = "HRKU-AA" + rs(58, URLSAFE)
    S("heroku", "en", f"machine api.heroku.com\n  login deploy@example.com\n  password {k}\nmachine git.heroku.com\n  login deploy@example.com\n  password {k}", [k])
    k = rs(24)
    S("vercel", "en", f"$ vercel deploy --prod --token {k} --scope acme\nVercel CLI 33.5.0\n🔍  Inspect: https://vercel.com/acme/web/6Y1v", [k])
    k = rs(24)
    S("vercel", "zh", f"GitHub Actions 里 VERCEL_TOKEN 我先直接写死了：\n  env:\n    VERCEL_TOKEN: {k}\n    VERCEL_ORG_ID: team_{rs(24)}", [k])
    k = "nfp_" + rs(36)
    S("netlify", "en", f"NETLIFY_AUTH_TOKEN={k} netlify deploy --dir=dist --prod --site {uid()}", [k])
    k = "dckr_pat_" + rs(27, URLSAFE)
    S("dockerhub_pat", "en", f"$ echo {k} | docker login -u acmebot --password-stdin\nLogin Succeeded", [k])
    k = "dckr_pat_" + rs(27, URLSAFE)
    S("dockerhub_pat", "zh-Hant", f"Docker Hub 的存取權杖我建好了，權限是 Read & Write：{k}\n請放到 Jenkins 的 credentials 裡。", [k])
    auth = base64.b64encode(f"acmebot:{pw()}".encode()).decode()
    S("docker_config_auth", "en", '$ cat ~/.docker/config.json\n{\n  "auths": {\n    "registry.gitlab.com": {\n      "auth": "' + auth + '"\n    }\n  }\n}', [auth])
    k = "ATATT3xFfGF0" + rs(170, URLSAFE) + "=" + rs(8, UPPER_ALNUM)
    S("atlassian", "en", f"curl -u alice@acme.io:{k} -H 'Accept: application/json' 'https://acme.atlassian.net/rest/api/3/search?jql=project=OPS'", [k])
    k = "ATATT3xFfGF0" + rs(170, URLSAFE) + "=" + rs(8, UPPER_ALNUM)
    S("atlassian", "zh", f"jira-cli 初始化时让输入 API token，我填的是 {k} ，但是 jira init 还是说 401 Unauthorized", [k])
    k = "ATBB" + rs(28) + hx(8).upper()
    S("atlassian", "en", f"git clone https://x-token-auth:{k}@bitbucket.org/acme/infra.git", [k])

    # --- Linear / Notion / Airtable / Slack / Figma / Postman
    k = "lin_api_" + rs(40)
    S("linear", "en", f"curl https://api.linear.app/graphql -H 'Content-Type: application/json' -H 'Authorization: {k}' -d '{{\"query\":\"{{ viewer {{ id name }} }}\"}}'", [k])
    k = "lin_api_" + rs(40)
    S("linear", "mixed", f"Linear 的 key 是 {k}，MCP server 里配置 LINEAR_API_KEY 就行", [k])
    k = "secret_" + rs(43)
    S("notion", "en", f"from notion_client import Client\nnotion = Client(auth=\"{k}\")\nprint(notion.databases.query(database_id=\"{hx(32)}\"))", [k])
    k = "ntn_" + rs(11, string.digits) + rs(35)
    S("notion", "zh", f"Notion integration 的内部令牌：{k}\n记得把数据库 share 给这个 integration。", [k])
    k = "pat" + rs(14) + "." + hx(64)
    S("airtable", "en", f"AIRTABLE_TOKEN={k}\nAIRTABLE_BASE=app{rs(14)}", [k])
    k = "pat" + rs(14) + "." + hx(64)
    S("airtable", "en", f"curl \"https://api.airtable.com/v0/app{rs(14)}/Tasks?maxRecords=3\" -H \"Authorization: Bearer {k}\"", [k])
    k = "xoxb-" + rs(13, string.digits) + "-" + rs(13, string.digits) + "-" + rs(24)
    S("slack", "en", f"SLACK_BOT_TOKEN={k}\nSLACK_SIGNING_SECRET={hx(32)}", [k])
    SECRETS[-1]["secrets"].append(SECRETS[-1]["text"].split("SLACK_SIGNING_SECRET=")[1])
    k = "https://hooks.slack.com/services/T" + rs(10, UPPER_ALNUM) + "/B" + rs(10, UPPER_ALNUM) + "/" + rs(24)
    S("slack", "zh", f"告警 webhook 地址：{k}\n别外传，直接能往 #prod-alerts 发消息。", [k.rsplit('/', 1)[1]])
    k = "figd_" + rs(40, URLSAFE)
    S("figma", "en", f"curl -H 'X-Figma-Token: {k}' https://api.figma.com/v1/files/{rs(22)}", [k])
    k = "PMAK-" + hx(24) + "-" + hx(34)
    S("postman", "en", f"newman run collection.json --env-var \"apiKey={k}\" --reporters cli", [k])

    # --- Chat / messaging webhooks
    k = rs(10, string.digits) + ":AA" + rs(33, URLSAFE)
    S("telegram_bot", "en", f"import telebot\nbot = telebot.TeleBot(\"{k}\")\nbot.send_message(-1001234567890, 'deploy finished')", [k])
    k = rs(10, string.digits) + ":AA" + rs(33, URLSAFE)
    S("telegram_bot", "zh", f"curl \"https://api.telegram.org/bot{k}/getUpdates\" 返回 {{\"ok\":true,\"result\":[]}}，机器人收不到群消息是为什么？", [k])
    k = uid()
    S("wecom_webhook", "zh", f"企业微信群机器人：\ncurl 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={k}' -H 'Content-Type: application/json' -d '{{\"msgtype\":\"text\",\"text\":{{\"content\":\"发布完成\"}}}}'", [k])
    k = hx(32)
    S("wechat_appsecret", "zh", f"公众号后台重置了 AppSecret：\nAppID: wx{hx(16)}\nAppSecret: {k}\n服务器 IP 白名单已经加了 47.96.x.x", [k])
    k = hx(32)
    S("wechat_appsecret", "en", f"GET https://api.weixin.qq.com/cgi-bin/token?grant_type=client_credential&appid=wx{hx(16)}&secret={k}", [k])
    t, s = hx(64), "SEC" + hx(64)
    S("dingtalk_webhook", "zh", f"钉钉机器人加签配置：\nwebhook = https://oapi.dingtalk.com/robot/send?access_token={t}\nsecret = {s}\n签名算法用 HmacSHA256，timestamp+\"\\n\"+secret。", [t, s])
    t = hx(64)
    S("dingtalk_webhook", "zh-Hant", f"釘釘通知一直失敗：POST https://oapi.dingtalk.com/robot/send?access_token={t} 回傳 errcode 310000 keywords not in content", [t])
    h, s = uid(), rs(22)
    S("feishu_webhook", "zh", f"飞书自定义机器人：https://open.feishu.cn/open-apis/bot/v2/hook/{h}\n签名校验密钥：{s}", [h, s])
    a = rs(32)
    S("feishu_app", "zh", f"飞书开放平台应用凭证\nApp ID: cli_{hx(16)}\nApp Secret: {a}\n用来获取 tenant_access_token。", [a])
    a = rs(32)
    S("feishu_app", "en", f"curl -X POST https://open.larksuite.com/open-apis/auth/v3/tenant_access_token/internal -d '{{\"app_id\":\"cli_{hx(16)}\",\"app_secret\":\"{a}\"}}'", [a])
    k = "MT" + rs(22) + "." + rs(6, URLSAFE) + "." + rs(38, URLSAFE)
    S("discord_bot", "en", f"client.login('{k}');\n// TODO move to env before pushing", [k])
    k = "https://discord.com/api/webhooks/" + rs(19, string.digits) + "/" + rs(68, URLSAFE)
    S("discord_bot", "en", f"DISCORD_WEBHOOK_URL={k}", [k.rsplit('/', 1)[1]])

    # --- Chinese clouds
    ak, sk = "LTAI5t" + rs(18), rs(30)
    S("aliyun_aksk", "zh", f"阿里云 OSS 配置：\naccessKeyId: {ak}\naccessKeySecret: {sk}\nendpoint: oss-cn-hangzhou.aliyuncs.com\nbucket: prod-assets", [sk])
    ak, sk = "LTAI5t" + rs(18), rs(30)
    S("aliyun_aksk", "en", f"$ aliyun configure set --profile default --mode AK --region cn-shanghai --access-key-id {ak} --access-key-secret {sk}\nConfigure Done!!!", [sk])
    ak, sk = "LTAI5t" + rs(18), rs(30)
    S("aliyun_aksk", "zh-Hant", f"阿里雲的 RAM 子帳號：\nAccessKey ID：{ak}\nAccessKey Secret：{sk}\n只給了 AliyunOSSReadOnlyAccess。", [sk])
    sid, skk = "AKID" + rs(32), rs(32)
    S("tencent_cloud", "zh", f"腾讯云 COS 上传脚本：\nexport TENCENTCLOUD_SECRET_ID={sid}\nexport TENCENTCLOUD_SECRET_KEY={skk}\ncoscli cp ./dist cos://web-125000{rs(4, string.digits)}/ -r", [skk])
    sid, skk = "AKID" + rs(32), rs(32)
    S("tencent_cloud", "en", f"[default]\nsecretId = {sid}\nsecretKey = {skk}\nregion = ap-guangzhou", [skk])
    ak, sk = rs(24), rs(32)
    S("baidu_cloud", "zh", f"百度智能云 OCR：\nAPI_KEY = '{ak}'\nSECRET_KEY = '{sk}'\n先调 https://aip.baidubce.com/oauth/2.0/token 拿 access_token", [ak, sk])
    sk = rs(32)
    S("baidu_cloud", "en", f"curl -X POST 'https://aip.baidubce.com/oauth/2.0/token?grant_type=client_credentials&client_id={rs(24)}&client_secret={sk}'", [sk])
    sk = rs(40)
    S("huawei_cloud", "zh", f"华为云 OBS：AK={rs(20, UPPER_ALNUM)}  SK={sk}  obsutil config -i=AK -k=SK -e=obs.cn-north-4.myhuaweicloud.com", [sk])

    # --- AWS / Azure / GCP / Vault
    ak, sk = "AKIA" + rs(16, UPPER_ALNUM), rs(40, ALNUM + "+/")
    S("aws", "en", f"[default]\naws_access_key_id = {ak}\naws_secret_access_key = {sk}\nregion = us-west-2", [sk])
    ak, sk = "ASIA" + rs(16, UPPER_ALNUM), rs(40, ALNUM + "+/")
    tok = "IQoJb3JpZ2luX2Vj" + rs(300, ALNUM + "+/") + "="
    S("aws", "en", f'$ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deploy --role-session-name ci\n{{\n    "Credentials": {{\n        "AccessKeyId": "{ak}",\n        "SecretAccessKey": "{sk}",\n        "SessionToken": "{tok}",\n        "Expiration": "2025-03-14T11:02:31+00:00"\n    }}\n}}', [sk, tok])
    sk = rs(40, ALNUM + "+/")
    S("aws", "zh", f"S3 传不上去，我的配置：\nAWS_ACCESS_KEY_ID=AKIA{rs(16, UPPER_ALNUM)}\nAWS_SECRET_ACCESS_KEY={sk}\n报错 SignatureDoesNotMatch", [sk])
    sig = base64.b64encode(rbytes(32)).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    S("azure_sas", "en", f"azcopy copy ./backup.tar 'https://bkpstore01.blob.core.windows.net/nightly/backup.tar?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2025-12-31T23:59:59Z&st=2025-01-01T00:00:00Z&spr=https&sig={sig}'", [sig])
    cs = rs(3) + "8Q~" + rs(34, ALNUM + "_-.~")
    S("azure_sp", "en", f"$ az login --service-principal -u {uid()} -p '{cs}' --tenant {uid()}", [cs])
    k = b64(64)
    S("azure_storage", "zh", f"存储账户访问密钥（key1）：{k}\n连接串直接用 portal 里复制的那条。", [k])
    k = "hvs." + rs(24)
    S("vault", "en", f"$ vault login {k}\nSuccess! You are now authenticated.\nKey                  Value\n---                  -----\ntoken                {k}\ntoken_policies       [\"default\" \"ops\"]", [k])
    k = "hvs.CAESI" + rs(80, URLSAFE)
    S("vault", "en", f"export VAULT_ADDR=https://vault.acme.internal:8200\nexport VAULT_TOKEN={k}", [k])
    k = "dp.st.prd." + rs(43)
    S("doppler", "en", f"DOPPLER_TOKEN={k} doppler run -- npm start", [k])

    # --- Jupyter
    t = hx(48)
    S("jupyter_token", "en", f"[I 2025-02-11 09:14:22.531 ServerApp] Jupyter Server 2.12.5 is running at:\n[I 2025-02-11 09:14:22.531 ServerApp] http://gpu-node-3:8888/lab?token={t}\n[I 2025-02-11 09:14:22.531 ServerApp]     http://127.0.0.1:8888/lab?token={t}", [t])
    t = hx(48)
    S("jupyter_token", "zh", f"服务器上开了 jupyter，用这个地址访问：http://10.8.0.12:8890/tree?token={t} 需要先连 VPN", [t])
    t = hx(48)
    S("jupyter_token", "en", f"c.ServerApp.token = '{t}'\nc.ServerApp.ip = '0.0.0.0'\nc.ServerApp.open_browser = False", [t])

    # --- SMTP / LDAP / databases
    p = pw()
    S("smtp_password", "en", f"EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend\nEMAIL_HOST=smtp.sendgrid.net\nEMAIL_HOST_USER=apikey\nEMAIL_HOST_PASSWORD={p}\nEMAIL_PORT=587", [p])
    p = rs(16, string.ascii_lowercase)
    p = " ".join(p[i:i + 4] for i in range(0, 16, 4))
    S("smtp_password", "zh", f"Gmail 要用应用专用密码，我生成的是「{p}」，填到 Thunderbird 的 SMTP 里还是失败。", [p])
    p = rs(16, UPPER_ALNUM)
    S("smtp_password", "zh", f"QQ 邮箱 SMTP 授权码：{p}\nsmtp.qq.com 端口 465 SSL", [p])
    k = "SG." + rs(22, URLSAFE) + "." + rs(43, URLSAFE)
    S("smtp_password", "en", f"relayhost = [smtp.sendgrid.net]:587\n# /etc/postfix/sasl_passwd\n[smtp.sendgrid.net]:587 apikey:{k}", [k])
    p = pw()
    S("ldap_bind", "en", f"$ ldapsearch -x -H ldaps://dc01.corp.example.com -D 'CN=svc_ldap,OU=Service,DC=corp,DC=example,DC=com' -w '{p}' -b 'DC=corp,DC=example,DC=com' '(sAMAccountName=jdoe)'", [p])
    p = pw()
    S("ldap_bind", "en", f"# sssd.conf\n[domain/corp]\nldap_uri = ldaps://ldap.corp.lan\nldap_default_bind_dn = cn=readonly,dc=corp,dc=lan\nldap_default_authtok_type = password\nldap_default_authtok = {p}", [p])
    p = pw()
    S("ldap_bind", "zh", f"GitLab 的 LDAP 配置：\n  main:\n    host: 'ad.corp.cn'\n    bind_dn: 'CN=gitlab,OU=服务账号,DC=corp,DC=cn'\n    password: '{p}'\n同步用户一直失败。", [p])
    p = pw()
    S("mysql_cli", "en", f"$ mysql -h 10.0.4.12 -u root -p'{p}' -e 'SHOW DATABASES;'\nmysql: [Warning] Using a password on the command line interface can be insecure.", [p])
    p = pw()
    S("mysql_cli", "en", f"$ PGPASSWORD='{p}' pg_dump -h db.prod -U reporting analytics > dump.sql", [p])
    p = urlpw()
    S("db_url", "en", f"2025-01-07 12:00:03,441 ERROR sqlalchemy.pool: could not connect to mysql+pymysql://app:{p}@mysql-primary:3306/shop (timeout)", [p])
    p = urlpw()
    S("db_url", "zh", f"MONGO_URI=mongodb+srv://admin:{p}@cluster0.{rs(5, LOWER_ALNUM)}.mongodb.net/prod?retryWrites=true  连接时报 bad auth", [p])
    p = urlpw(24)
    S("redis", "en", f"# redis.conf\nbind 0.0.0.0\nprotected-mode yes\nrequirepass {p}\nmasterauth {p}", [p])
    p = urlpw()
    S("redis", "en", f"$ redis-cli -h cache.internal -a {p} --no-auth-warning INFO replication", [p])

    # --- WireGuard / age / minisign / SSH / PGP
    k = b64(32)
    S("wireguard_private", "en", f"[Interface]\nPrivateKey = {k}\nAddress = 10.66.0.2/32\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {b64(32)}\nEndpoint = vpn.example.net:51820\nAllowedIPs = 0.0.0.0/0", [k])
    k = b64(32)
    S("wireguard_private", "zh", f"wg0.conf 贴一下，手机连上了但是没网：\n[Interface]\nAddress = 10.0.0.3/24\nPrivateKey = {k}\nListenPort = 51820", [k])
    k = b64(32)
    S("wireguard_private", "en", f"$ wg genkey | tee privatekey | wg pubkey > publickey\n$ cat privatekey\n{k}", [k])
    k = "AGE-SECRET-KEY-1" + rs(58, BECH32.upper())
    S("age_secret", "en", f"# created: 2025-02-02T10:11:12Z\n# public key: age1{rs(58, BECH32)}\n{k}", [k])
    k = "AGE-SECRET-KEY-1" + rs(58, BECH32.upper())
    S("age_secret", "zh", f"sops 解密要用的 age 私钥，放到 ~/.config/sops/age/keys.txt：\n{k}", [k])
    k = "RWRTY0Iy" + b64(152)[:204]
    S("minisign_secret", "en", f"$ cat ~/.minisign/minisign.key\nuntrusted comment: minisign encrypted secret key\n{k}", [k])
    lines = openssh_ed25519()
    S("ssh_private_key", "en", "$ cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----", long_lines(lines))
    lines = rsa_pkcs1()
    S("ssh_private_key", "zh", "部署用的 deploy key（先临时贴这，回头删）：\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----", long_lines(lines))
    lines = ec_sec1()
    S("tls_private_key", "en", "# /etc/nginx/ssl/api.key\n-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END EC PRIVATE KEY-----", long_lines(lines))
    lines = ec_sec1()
    S("tls_private_key", "en", "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nstringData:\n  tls.key: |\n    -----BEGIN EC PRIVATE KEY-----\n" + "\n".join("    " + l for l in lines) + "\n    -----END EC PRIVATE KEY-----", long_lines(lines))
    p = pw()
    S("pgp_passphrase", "en", f"$ echo '{p}' | gpg --batch --yes --passphrase-fd 0 --pinentry-mode loopback -d secrets.tar.gpg | tar x", [p])

    # --- OTP seeds
    s = rs(32, B32)
    S("totp_seed", "en", f"otpauth://totp/GitHub:octo-dev?secret={s}&issuer=GitHub&algorithm=SHA1&digits=6&period=30", [s])
    s = rs(16, B32)
    S("totp_seed", "zh", f"二维码扫不了的话手动输入密钥：{' '.join(s[i:i+4] for i in range(0,16,4))}\n（就是 otpauth://totp/AWS:root?secret={s}）", [' '.join(s[i:i+4] for i in range(0,16,4)), s])
    s = rs(32, B32)
    S("totp_seed", "en", f"import pyotp\ntotp = pyotp.TOTP(\"{s}\")\nprint(totp.now())", [s])

    # --- Crypto wallets
    m = mnemonic(12)
    S("wallet_mnemonic", "en", f"MNEMONIC=\"{m}\"\nRPC_URL=https://mainnet.infura.io/v3/{hx(32)}", [m])
    SECRETS[-1]["secrets"].append(SECRETS[-1]["text"].split("/v3/")[1])
    m = mnemonic(24)
    S("wallet_mnemonic", "zh", f"我的助记词是：{m}\n导入 MetaMask 后余额显示为 0，是不是链选错了？", [m])
    m = mnemonic(12)
    S("wallet_mnemonic", "zh-Hant", f"錢包備份的註記詞：\n{m}\n請幫我確認順序有沒有寫錯。", [m])
    k = hx(64)
    S("eth_private_key", "en", f"// hardhat.config.js\nnetworks: {{\n  sepolia: {{\n    url: process.env.SEPOLIA_RPC,\n    accounts: [\"0x{k}\"]\n  }}\n}}", [k])
    k = hx(64)
    S("eth_private_key", "en", f"PRIVATE_KEY=0x{k}\nETHERSCAN_API_KEY={rs(34, UPPER_ALNUM)}", [k])
    SECRETS[-1]["secrets"].append(SECRETS[-1]["text"].split("ETHERSCAN_API_KEY=")[1])
    k = R.choice("KL") + rs(51, B58)
    S("btc_wif", "zh", f"bitcoin-cli importprivkey {k} \"cold-1\" false  导入的私钥是 WIF 格式", [k])
    k = rs(88, B58)
    S("solana_key", "en", f"const payer = Keypair.fromSecretKey(bs58.decode(\"{k}\"));", [k])

    # --- Cookies / session tokens
    s1 = rs(32, LOWER_ALNUM)
    S("session_cookie", "en", f"curl 'https://admin.example.com/api/orders?page=2' -H 'Cookie: csrftoken={rs(32)}; sessionid={s1}' -H 'Accept: application/json'", [s1])
    s1 = "s%3A" + rs(32, URLSAFE) + "." + rs(43, ALNUM + "%")
    S("session_cookie", "en", f"GET /dashboard HTTP/1.1\nHost: app.internal\nCookie: connect.sid={s1}; theme=dark", [s1])
    s1 = b64(150, pad=False) + "--" + hx(40)
    S("session_cookie", "zh", f"Rails 的 session cookie 抓下来是这样的：_shop_session={s1}; path=/; secure; HttpOnly\n能不能解出来看看里面存了什么？", [s1])
    s1 = hx(26)
    S("session_cookie", "en", f"Set-Cookie: PHPSESSID={s1}; path=/; HttpOnly\nSet-Cookie: lang=en; path=/", [s1])
    t = jwt({"sub": "u_" + rs(10, string.digits), "email": "li.wei@example.cn", "role": "admin", "iat": 1736000000, "exp": 1736086400})
    S("session_cookie", "zh", f"前端 localStorage 里的 access_token：{t}\n过期时间一天，能不能改长点", [t])
    t = jwt({"sub": rs(24, LOWER_ALNUM), "scope": "read write", "iat": 1736100000})
    S("bearer_jwt", "en", f"> GET /v1/me HTTP/2\n> Host: api.example.io\n> authorization: Bearer {t}\n> user-agent: curl/8.5.0", [t])
    auth = base64.b64encode(f"admin:{pw()}".encode()).decode()
    S("basic_auth", "en", f"  -H 'Authorization: Basic {auth}' \\\n  https://jenkins.acme.io/job/release/buildWithParameters", [auth])

    # --- Chinese chat passwords
    p = pw()
    S("chat_password", "zh", f"服务器密码我改成了 {p} 了，你那边重新登录一下试试。", [p])
    p = pw()
    S("chat_password", "zh-Hant", f"測試機帳號 admin 密碼 {p} ，用完記得登出。", [p])
    p = pw()
    S("chat_password", "zh", f"wifi：ACME-5G\n密码：{p}", [p])
    p = pw()
    S("chat_password", "zh", f"root / {p}   这是跳板机的，别发到群里了", [p])
    p = pw()
    S("chat_password", "zh-Hant", f"NAS 的管理員密碼是「{p}」，IP 是 192.168.1.50:5001", [p])
    p = pw()
    S("chat_password", "mixed", f"VPN 账号 zhangsan，pwd: {p}，OTP 用 Google Authenticator", [p])
    p = pw()
    S("chat_password", "en", f"hey, the staging admin login is ops@acme.io / {p} — please don't share it outside the team", [p])
    p = pw()
    S("chat_password", "en", f"User: ssh keeps asking me for a password\nUser: it's {p} btw, can you just run the command for me?", [p])
    p = pw()
    S("chat_password", "zh", f"数据库新密码：{p}（旧的已经作废）", [p])
    p = pw()
    S("chat_password", "zh-Hant", f"請幫我登入後台，帳號：service@shop.tw，密碼：{p}", [p])

    # --- Misc developer tokens
    for fam, lang, mk, tmpl in [
        ("github_pat", "en", lambda: "github_pat_11" + rs(20, UPPER_ALNUM) + "_" + rs(59), "git remote set-url origin https://octo-dev:{k}@github.com/acme/web.git"),
        ("github_pat", "zh", lambda: "ghp_" + rs(36), "GitHub token 过期了，新的是 {k} ，权限勾了 repo 和 workflow"),
        ("github_pat", "en", lambda: "gho_" + rs(36), "    oauth_token: {k}\n    user: octo-dev\n    git_protocol: https"),
        ("gitlab_pat", "en", lambda: "glpat-" + rs(20, URLSAFE), "$ curl --header \"PRIVATE-TOKEN: {k}\" \"https://gitlab.example.com/api/v4/projects?owned=true\""),
        ("gitlab_pat", "zh", lambda: "glrt-" + rs(20, URLSAFE), "gitlab-runner register --url https://gitlab.corp.cn --token {k} --executor docker  注册完 runner 一直 offline"),
        ("npm_token", "en", lambda: "npm_" + rs(36), "//registry.npmjs.org/:_authToken={k}\n@acme:registry=https://registry.npmjs.org/"),
        ("npm_token", "zh", lambda: "npm_" + rs(36), "发布包的时候 .npmrc 是这么写的：//registry.npmjs.org/:_authToken={k}  但是 npm publish 报 E403"),
        ("pypi_token", "en", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(150, URLSAFE), "[pypi]\n  username = __token__\n  password = {k}"),
        ("pypi_token", "en", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(150, URLSAFE), "$ twine upload dist/* -u __token__ -p {k}"),
        ("huggingface", "en", lambda: "hf_" + rs(34), "from huggingface_hub import login\nlogin(token=\"{k}\")"),
        ("huggingface", "zh", lambda: "hf_" + rs(34), "下载 llama 权重要 token：huggingface-cli login --token {k}"),
        ("openai", "en", lambda: "sk-proj-" + rs(48, URLSAFE) + "T3BlbkFJ" + rs(48, URLSAFE), "client = OpenAI(api_key=\"{k}\")"),
        ("openai", "zh", lambda: "sk-" + rs(48), "这个中转站给的 key：{k}，base_url 填 https://api.example-proxy.cn/v1"),
        ("anthropic", "en", lambda: "sk-ant-api03-" + rs(93, URLSAFE) + "AA", "export ANTHROPIC_API_KEY={k}\nclaude --model claude-sonnet-4"),
        ("anthropic", "mixed", lambda: "sk-ant-api03-" + rs(93, URLSAFE) + "AA", "帮我看看为什么 401：\nanthropic.AuthenticationError: invalid x-api-key\n我用的 key 是 {k}"),
        ("stripe", "en", lambda: "sk_live_" + rs(99), "STRIPE_SECRET_KEY={k}\nSTRIPE_PUBLISHABLE_KEY=pk_live_" + rs(99)),
        ("stripe", "en", lambda: "whsec_" + rs(32), "stripe listen --forward-to localhost:4242/webhook\n> Ready! Your webhook signing secret is {k} (^C to quit)"),
        ("stripe", "zh", lambda: "rk_live_" + rs(99), "受限密钥 {k} 只开了 Charges 读权限"),
        ("twilio", "en", lambda: hx(32), "TWILIO_ACCOUNT_SID=AC" + hx(32) + "\nTWILIO_AUTH_TOKEN={k}"),
        ("mailgun", "en", lambda: hx(32) + "-" + hx(8) + "-" + hx(8), "curl -s --user 'api:{k}' https://api.eu.mailgun.net/v3/mg.example.com/messages -F from='noreply@mg.example.com'"),
        ("shopify", "en", lambda: "shpat_" + hx(32), "X-Shopify-Access-Token: {k}"),
        ("databricks", "en", lambda: "dapi" + hx(32), "[DEFAULT]\nhost = https://adb-" + rs(16, string.digits) + ".7.azuredatabricks.net\ntoken = {k}"),
        ("grafana", "en", lambda: "glsa_" + rs(32) + "_" + hx(8), "GF_API_TOKEN={k} grafana-backup save"),
        ("grafana", "en", lambda: "glc_" + rs(100, ALNUM) + "==", "grafana-agent: remote_write basic_auth password: {k}"),
        ("pulumi", "en", lambda: "pul-" + hx(40), "PULUMI_ACCESS_TOKEN={k} pulumi up --stack prod --yes"),
        ("terraform_cloud", "en", lambda: rs(14) + ".atlasv1." + rs(67), "credentials \"app.terraform.io\" {{\n  token = \"{k}\"\n}}"),
        ("mapbox", "en", lambda: "sk.eyJ1Ijoi" + rs(60) + "." + rs(22, URLSAFE), "MAPBOX_DOWNLOADS_TOKEN={k}"),
        ("algolia", "zh", lambda: hx(32), "Algolia Admin API Key：{k}（不要放到前端，前端用 Search-Only key）"),
        ("kube_token", "en", lambda: jwt({"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ci", "sub": "system:serviceaccount:ci:deployer"}), "users:\n- name: deployer\n  user:\n    token: {k}"),
        ("kube_token", "zh", lambda: rs(6, LOWER_ALNUM) + "." + rs(16, LOWER_ALNUM), "kubeadm join 10.0.0.10:6443 --token {k} --discovery-token-ca-cert-hash sha256:" + hx(64) + "\n新节点加入集群用这个命令"),
        ("netrc", "en", lambda: pw(), "machine artifactory.acme.io\nlogin ci-bot\npassword {k}"),
        ("git_credentials", "en", lambda: urlpw(), "$ cat ~/.git-credentials\nhttps://jenkins:{k}@git.acme.internal"),
        ("htpasswd_plain", "zh", lambda: pw(), "htpasswd -b -c /etc/nginx/.htpasswd monitor {k}  给 prometheus 页面加了个 basic auth"),
        ("tfvars", "en", lambda: pw(), "# terraform.tfvars\nregion      = \"eu-west-1\"\ndb_username = \"master\"\ndb_password = \"{k}\""),
        ("ansible_vault", "en", lambda: pw(), "$ echo '{k}' > ~/.vault_pass\n$ ansible-playbook site.yml --vault-password-file ~/.vault_pass"),
        ("rabbitmq", "en", lambda: urlpw(), "CELERY_BROKER_URL=amqp://celery:{k}@rabbitmq:5672/prod"),
        ("ftp_password", "zh", lambda: pw(), "FileZilla 站点：主机 ftp.example.cn  用户 upload  密码 {k}  端口 21"),
        ("snmp_community", "en", lambda: pw(), "snmp-server community {k} RO 10\nsnmp-server location DC1-rack12"),
        ("router_config", "en", lambda: pw(), "interface Tunnel0\n crypto isakmp key {k} address 203.0.113.7\n!"),
        ("wifi_psk", "en", lambda: pw(), "network={{\n    ssid=\"Office-5G\"\n    psk=\"{k}\"\n    key_mgmt=WPA-PSK\n}}"),
        ("jenkins", "en", lambda: "11" + hx(32), "$ java -jar jenkins-cli.jar -s https://ci.acme.io -auth admin:{k} build release -p VERSION=2.3.1"),
        ("sonarqube", "en", lambda: "squ_" + hx(40), "mvn sonar:sonar -Dsonar.host.url=https://sonar.acme.io -Dsonar.token={k}"),
        ("circleci", "en", lambda: "CCIPAT_" + rs(22) + "_" + hx(40), "curl -H \"Circle-Token: {k}\" https://circleci.com/api/v2/me"),
        ("buildkite", "en", lambda: "bkua_" + hx(40), "export BUILDKITE_API_TOKEN={k}"),
        ("fly_io", "en", lambda: "FlyV1 fm2_" + rs(180, URLSAFE), "FLY_API_TOKEN=\"{k}\" flyctl deploy"),
        ("railway", "zh", lambda: uid(), "Railway 的项目 token：RAILWAY_TOKEN={k}  railway up 部署"),
        ("digitalocean", "en", lambda: "dop_v1_" + hx(64), "$ doctl auth init --access-token {k}\nValidating token... OK"),
        ("linode", "en", lambda: hx(64), "linode-cli configure --token {k}"),
        ("hetzner", "en", lambda: rs(64), "hcloud context create prod  # Token: {k}"),
        ("cohere_mistral", "en", lambda: rs(32), "MISTRAL_API_KEY={k}\nMODEL=mistral-large-latest"),
        ("groq", "en", lambda: "gsk_" + rs(52), "GROQ_API_KEY={k}"),
        ("deepseek", "zh", lambda: "sk-" + hx(32), "DeepSeek 的 key：{k}，模型名 deepseek-chat"),
        ("moonshot_zhipu", "zh", lambda: hx(32) + "." + rs(16), "智谱 API Key：{k}  调用 glm-4 报余额不足"),
        ("replicate", "en", lambda: "r8_" + rs(37), "REPLICATE_API_TOKEN={k} python generate.py"),
        ("langsmith", "en", lambda: "lsv2_pt_" + hx(32) + "_" + hx(10), "LANGCHAIN_TRACING_V2=true\nLANGCHAIN_API_KEY={k}"),
        ("pinecone", "en", lambda: "pcsk_" + rs(5) + "_" + rs(60), "pc = Pinecone(api_key=\"{k}\")"),
        ("tailscale", "en", lambda: "tskey-auth-" + rs(12) + "CNTRL-" + rs(33), "sudo tailscale up --authkey={k} --advertise-exit-node"),
        ("ngrok", "en", lambda: rs(27) + "_" + rs(21), "$ ngrok config add-authtoken {k}\nAuthtoken saved to configuration file: /home/dev/.config/ngrok/ngrok.yml"),
        ("expo", "en", lambda: rs(40, URLSAFE), "EXPO_TOKEN={k} eas build --platform ios --non-interactive"),
        ("apple_app_password", "en", lambda: "-".join(rs(4, string.ascii_lowercase) for _ in range(4)), "xcrun altool --upload-app -f App.ipa -u ios@acme.io -p {k}"),
        ("onepassword", "en", lambda: "ops_eyJ" + rs(300, ALNUM), "export OP_SERVICE_ACCOUNT_TOKEN={k}\nop read op://Prod/db/password"),
        ("sendgrid", "zh", lambda: "SG." + rs(22, URLSAFE) + "." + rs(43, URLSAFE), "SendGrid 的 key 我放到 k8s secret 里了，原值是 {k}"),
        ("mailchimp", "en", lambda: hx(32) + "-us21", "MAILCHIMP_API_KEY={k}"),
        ("segment", "en", lambda: rs(32), "analytics.write_key = '{k}'  # server-side source, do not expose"),
        ("contentful", "en", lambda: "CFPAT-" + rs(43, URLSAFE), "contentful login --management-token {k}"),
        ("asana", "en", lambda: "2/" + rs(16, string.digits) + "/" + rs(16, string.digits) + ":" + hx(32), "curl https://app.asana.com/api/1.0/users/me -H \"Authorization: Bearer {k}\""),
        ("clickup", "en", lambda: "pk_" + rs(8, string.digits) + "_" + rs(32, UPPER_ALNUM), "CLICKUP_TOKEN={k}"),
        ("zoom", "en", lambda: rs(32), "ZOOM_CLIENT_ID=" + rs(22) + "\nZOOM_CLIENT_SECRET={k}"),
    ]:
        k = mk()
        S(fam, lang, tmpl.format(k=k), [k])

    for fam, lang, mk, tmpl in [
        ("maven_settings", "en", lambda: pw(), "<server>\n  <id>nexus-releases</id>\n  <username>deployer</username>\n  <password>{k}</password>\n</server>"),
        ("nuget", "en", lambda: "oy2" + rs(43, string.ascii_lowercase + string.digits), "PS> dotnet nuget push .\\bin\\Release\\Acme.Core.3.1.0.nupkg --api-key {k} --source https://api.nuget.org/v3/index.json"),
        ("nuget", "en", lambda: pw(), "<packageSourceCredentials>\n  <AcmeFeed>\n    <add key=\"Username\" value=\"ci\" />\n    <add key=\"ClearTextPassword\" value=\"{k}\" />\n  </AcmeFeed>\n</packageSourceCredentials>"),
        ("pgpass", "en", lambda: urlpw(), "$ cat ~/.pgpass\ndb.prod.internal:5432:*:reporting:{k}"),
        ("powershell_env", "zh", lambda: hx(32), "PowerShell 里临时设置：$env:DD_API_KEY=\"{k}\"; .\\install-agent.ps1  安装完 agent 状态还是 unhealthy"),
        ("powershell_env", "en", lambda: "dckr_pat_" + rs(27, URLSAFE), "PS> $env:DOCKER_PAT = '{k}'\nPS> $env:DOCKER_PAT | docker login -u acmebot --password-stdin"),
        ("powershell_securestring", "zh-Hant", lambda: pw(), "$password = ConvertTo-SecureString '{k}' -AsPlainText -Force\nSet-ADAccountPassword -Identity chen.yu -NewPassword $password -Reset\n幫同事重設 AD 密碼用的"),
        ("pagerduty", "zh", lambda: hx(32), "PagerDuty 的 Integration Key：{k}，接到 Prometheus Alertmanager 的 service_key 里"),
        ("okta", "zh", lambda: "00" + rs(40, URLSAFE), "Okta 的 API Token（管理员权限）：{k} 用 terraform okta provider 的 api_token 字段"),
        ("auth0", "zh", lambda: rs(64, URLSAFE), "Auth0 Machine-to-Machine 应用：client_secret = {k}，用来调 Management API"),
        ("sentry", "en", lambda: hx(64), "sentry-cli login --auth-token {k}"),
        ("newrelic", "zh", lambda: "NRAK-" + rs(27, UPPER_ALNUM), "New Relic 用户密钥 {k}，用于 newrelic-cli profile add"),
        ("cloudflare", "zh-Hant", lambda: rs(40, URLSAFE), "Cloudflare API 權杖（Zone.DNS 編輯）：{k}，給 external-dns 用"),
        ("heroku", "zh", lambda: uid(), "heroku 的 API Key 在 Account settings 里可以看到，我的是 {k}，CI 里设成 HEROKU_API_KEY"),
        ("netlify", "zh", lambda: "nfp_" + rs(36), "Netlify 个人访问令牌：{k}（90 天后过期）"),
        ("vercel", "en", lambda: rs(24), "curl -H \"Authorization: Bearer {k}\" \"https://api.vercel.com/v9/projects\""),
        ("telegram_bot", "zh-Hant", lambda: rs(10, string.digits) + ":AA" + rs(33, URLSAFE), "BotFather 給的 token：{k}\n群組 chat_id 是 -1001987654321"),
        ("wecom_webhook", "zh", lambda: rs(43, ALNUM), "企业微信自建应用 Secret：{k}\nCorpID: ww" + hx(16) + "  AgentId: 1000005"),
        ("feishu_webhook", "mixed", lambda: uid(), "Feishu bot webhook: https://open.feishu.cn/open-apis/bot/v2/hook/{k} 发告警用的，别泄露"),
        ("aliyun_aksk", "mixed", lambda: rs(30), "OSS_ACCESS_KEY_ID=LTAI5t" + rs(18) + "\nOSS_ACCESS_KEY_SECRET={k}\n# 上海 region"),
        ("tencent_cloud", "zh-Hant", lambda: rs(32), "騰訊雲 SecretKey：{k}（SecretId 另外私訊給你）"),
        ("jupyter_token", "mixed", lambda: hx(48), "Colab 连不上本地 runtime，我填的是 http://localhost:8888/?token={k}"),
        ("smtp_password", "en", lambda: pw(), "spring.mail.host=smtp.exmail.qq.com\nspring.mail.username=noreply@example.cn\nspring.mail.password={k}\nspring.mail.port=465"),
        ("ldap_bind", "zh-Hant", lambda: pw(), "Jenkins LDAP 設定：Manager DN = cn=admin,dc=corp,dc=tw，Manager Password = {k}"),
        ("wireguard_private", "zh-Hant", lambda: b64(32), "路由器的 WireGuard 私鑰：{k}（不要外流）"),
        ("totp_seed", "zh-Hant", lambda: rs(32, B32), "MFA 的種子密鑰：{k}，可以匯入到 1Password 的一次性密碼欄位"),
        ("eth_private_key", "zh", lambda: hx(64), "测试网钱包私钥 {k} ，里面只有 sepolia 的测试币"),
        ("session_cookie", "en", lambda: rs(40, URLSAFE), "document.cookie: \"_ga=GA1.1.12345.67890; __Secure-next-auth.session-token={k}\""),
        ("session_cookie", "zh-Hant", lambda: hx(64), "抓包看到 Cookie: JSESSIONID=" + hx(32).upper() + "; remember_token={k}"),
        ("chat_password", "mixed", lambda: pw(), "Jenkins admin 的初始 password 是 {k}，登进去之后自己改一下"),
        ("chat_password", "zh", lambda: pw(), "老板，邮箱密码重置好了：{k}，第一次登录会要求修改。"),
        ("chat_password", "zh-Hant", lambda: pw(), "路由器後台 192.168.0.1，帳號 admin，密碼改成 {k} 了"),
        ("django_secret_key", "zh-Hant", lambda: rs(50, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"), "Django 正式環境的 SECRET_KEY：{k}"),
        ("laravel_app_key", "zh", lambda: b64(32), "Laravel 的 .env：APP_KEY=base64:{k}  换服务器要保持一致，不然 session 全失效"),
        ("rails_secret_key_base", "en", lambda: hx(128), "production:\n  secret_key_base: {k}"),
    ]:
        k = mk()
        S(fam, lang, tmpl.format(k=k), [k])

    # A few more composite, realistic logs
    p, tok = pw(), "ghp_" + rs(36)
    S("agent_transcript", "en", f"Assistant: I'll set up the environment.\n$ cat >> .env <<'EOF'\nPOSTGRES_PASSWORD={p}\nGITHUB_TOKEN={tok}\nEOF\n$ docker compose up -d", [p, tok])
    p = pw()
    S("agent_transcript", "zh", f"助手：我先帮你创建数据库用户。\n$ psql -c \"CREATE USER report WITH PASSWORD '{p}';\"\nCREATE ROLE", [p])
    p = pw()
    S("docker_compose", "en", f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: {p}\n    ports: [\"5432:5432\"]", [p])
    p = pw()
    S("docker_run", "en", f"docker run -d --name mssql -e 'ACCEPT_EULA=Y' -e 'MSSQL_SA_PASSWORD={p}' -p 1433:1433 mcr.microsoft.com/mssql/server:2022-latest", [p])
    vals = [b64(R.randint(12, 20)) for _ in range(2)]
    S("k8s_secret_data", "en", f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\ndata:\n  username: YXBw\n  password: {vals[0]}\n  api-key: {vals[1]}", vals)
    p = pw()
    S("helm_values", "zh", f"helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword={p} -n data  装完之后密码不对？", [p])


# ---------------------------------------------------------------- lookalikes
def gen_lookalikes():
    L("sha256sum", "en", f"$ sha256sum ubuntu-24.04-live-server-amd64.iso\n{hx(64)}  ubuntu-24.04-live-server-amd64.iso")
    L("sha256sum", "zh", f"下载完请校验一下 SHA256：{hx(64)}，和官网一致才能装。")
    L("sha256sum", "en", f"{hx(64)}  node-v20.11.1-linux-x64.tar.xz\n{hx(64)}  node-v20.11.1-darwin-arm64.tar.gz")
    L("md5sum", "en", f"$ md5sum backup-2025-01-09.tar.gz\n{hx(32)}  backup-2025-01-09.tar.gz")
    L("md5sum", "zh-Hant", f"檔案 MD5：{hx(32)}，SHA1：{hx(40)}，上傳前後比對一致。")
    L("git_sha", "en", f"$ git log --oneline -5\n{hx(7)} fix(auth): handle expired refresh tokens\n{hx(7)} chore: bump deps\n{hx(7)} feat: add password reset flow\n{hx(7)} docs: explain API key rotation\n{hx(7)} Merge pull request #412 from acme/secret-scan")
    L("git_sha", "en", f"commit {hx(40)}\nAuthor: Jane Doe <jane@example.com>\nDate:   Tue Feb 4 10:21:07 2025 +0100\n\n    Remove hard-coded token from config loader")
    L("git_sha", "zh", f"这个 bug 是 {hx(40)} 引入的，revert 掉就行：git revert {hx(12)}")
    L("git_sha", "en", f"https://github.com/acme/web/commit/{hx(40)}#diff-{hx(64)}")
    L("git_sha", "en", f"$ git rev-parse HEAD\n{hx(40)}\n$ git describe --tags\nv2.8.1-14-g{hx(7)}")
    L("docker_digest", "en", f"$ docker pull nginx:1.27-alpine\n1.27-alpine: Pulling from library/nginx\nDigest: sha256:{hx(64)}\nStatus: Downloaded newer image for nginx:1.27-alpine")
    L("docker_digest", "en", f"image: ghcr.io/acme/api@sha256:{hx(64)}\nimagePullPolicy: IfNotPresent")
    L("docker_digest", "zh", f"镜像 ID 是 {hx(12)}，完整 digest：sha256:{hx(64)}，请用 digest 固定版本。")
    L("container_id", "en", f"$ docker ps\nCONTAINER ID   IMAGE         COMMAND                  STATUS\n{hx(12)}   redis:7       \"docker-entrypoint.s…\"   Up 3 hours\n{hx(12)}   postgres:16   \"docker-entrypoint.s…\"   Up 3 hours")
    L("container_id", "en", f"containerd: starting container {hx(64)} in pod default/web-7d9c5b")
    for lang, t in [("en", "request_id={u} status=200 latency_ms=41 path=/api/v1/orders"),
                    ("en", "{{\"level\":\"info\",\"msg\":\"job finished\",\"job_id\":\"{u}\",\"tenant\":\"{u2}\"}}"),
                    ("zh", "订单 {u} 支付回调已处理，退款单号 {u2}"),
                    ("zh-Hant", "工單編號 {u} 已經結案，相關裝置 ID：{u2}")]:
        L("uuid", lang, t.format(u=uid(), u2=uid()))
    L("uuid", "en", f"Loaded realm 'ops' (id={uid()}); client 'grafana' internal id {uid()}")
    ulid = lambda: rs(1, "01") + rs(25, CROCK)
    L("ulid", "en", f"INSERT INTO events (id, kind) VALUES ('{ulid()}', 'signup'), ('{ulid()}', 'login');")
    L("ulid", "en", f"GET /v1/messages/{ulid()} 200 12ms")
    L("ulid", "zh", f"消息 ID 用的是 ULID，比如 {ulid()}，按时间排序很方便。")
    L("ksuid", "en", f"segment event messageId=ajs-{hx(32)} ksuid={rs(27)} received")
    L("ksuid", "en", f"$ ksuid -n 3\n{rs(27)}\n{rs(27)}\n{rs(27)}")
    L("k8s_uid", "en", f"metadata:\n  name: web-6b7f9d8c4d-x2lqz\n  namespace: default\n  uid: {uid()}\n  resourceVersion: \"{rs(8, string.digits)}\"\n  ownerReferences:\n  - kind: ReplicaSet\n    name: web-6b7f9d8c4d\n    uid: {uid()}")
    L("k8s_uid", "zh", f"kubectl get pod web-0 -o jsonpath='{{.metadata.uid}}' 输出 {uid()}，和事件里的对不上。")
    L("k8s_uid", "en", f"Events:\n  Normal  Pulled  3m  kubelet  Container image \"registry.k8s.io/pause:3.9\" already present\n  pod uid {uid()} sandbox {hx(64)}")
    L("trace_id", "en", f"traceparent: 00-{hx(32)}-{hx(16)}-01")
    L("trace_id", "en", f"2025-02-11T09:14:22.531Z INFO checkout trace_id={hx(32)} span_id={hx(16)} parent_span_id={hx(16)} msg=\"payment authorized\"")
    L("trace_id", "zh", f"Jaeger 里搜 trace ID {hx(32)} 可以看到慢在 redis 调用。")
    L("trace_id", "en", f"X-Amzn-Trace-Id: Root=1-{hx(8)}-{hx(24)};Parent={hx(16)};Sampled=1")
    L("trace_id", "en", f"x-request-id: {uid()}\nx-b3-traceid: {hx(32)}\nx-b3-spanid: {hx(16)}")
    mac = lambda: ":".join(hx(2) for _ in range(6))
    L("mac_address", "en", f"2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500\n    link/ether {mac()} brd ff:ff:ff:ff:ff:ff")
    L("mac_address", "zh", f"DHCP 保留地址：{mac().upper()} -> 192.168.1.20，{mac().upper()} -> 192.168.1.21")
    L("mac_address", "en", f"Bluetooth device {mac().upper()} connected (AirPods Pro)")
    L("order_number", "en", f"Invoice INV-2025-{rs(6, string.digits)} for order ORD-{rs(4, UPPER_ALNUM)}-{rs(4, UPPER_ALNUM)}-{rs(4, UPPER_ALNUM)} has been paid.")
    L("order_number", "zh", f"您的订单号 {rs(19, string.digits)} 已发货，运单号 SF{rs(13, string.digits)}。")
    L("order_number", "en", f"Payment reference: DE{rs(2, string.digits)}{rs(18, string.digits)} / tracking 1Z{rs(16, UPPER_ALNUM)}")
    L("order_number", "zh-Hant", f"訂單編號 TW{rs(14, string.digits)}，統一編號 {rs(8, string.digits)}，發票號碼 {rs(2, string.ascii_uppercase)}-{rs(8, string.digits)}。")
    L("hex_color", "en", f".btn-primary {{ background: #{hx(6)}; border-color: #{hx(6)}; color: #fff; }}\n.alert {{ box-shadow: 0 0 0 1px #{hx(8)}; }}")
    L("hex_color", "en", "{\n  \"colors\": { \"brand\": \"#" + hx(6) + "\", \"accent\": \"#" + hx(6) + "\", \"muted\": \"#" + hx(6) + "\" }\n}")
    L("hex_color", "zh", f"设计稿的主色是 #{hx(6).upper()}，辅助色 #{hx(6).upper()}，圆角 8px。")
    L("css_hash", "en", f"<div class=\"css-{rs(6, LOWER_ALNUM)} e1{rs(6, LOWER_ALNUM)}0\"><span class=\"_{rs(6, URLSAFE)}_{hx(5)}\">Sign in</span></div>")
    L("css_hash", "en", f".Button_primary__{rs(5, URLSAFE)} {{ padding: 4px 8px }}\n/* generated by css-modules, hash {hx(8)} */")
    L("webpack_chunk", "en", f"asset main.{hx(20)}.js 412 KiB [emitted] [immutable] [minimized] (name: main)\nasset 721.{hx(20)}.js 38 KiB [emitted] [immutable]\nasset styles.{hx(8)}.css 22 KiB [emitted]")
    L("webpack_chunk", "en", f"<script src=\"/_next/static/chunks/pages/_app-{hx(16)}.js\" defer></script>\n<script src=\"/_next/static/{rs(21, URLSAFE)}/_buildManifest.js\" defer></script>")
    L("webpack_chunk", "zh", f"vite 打包产物：dist/assets/index-{rs(8, URLSAFE)}.js  dist/assets/index-{rs(8, URLSAFE)}.css  部署后 CDN 缓存没刷新。")
    L("npm_integrity", "en", '"node_modules/lodash": {\n  "version": "4.17.21",\n  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",\n  "integrity": "sha512-' + b64(64) + '"\n}')
    L("npm_integrity", "en", f"lodash@^4.17.21:\n  version \"4.17.21\"\n  resolved \"https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{hx(40)}\"\n  integrity sha512-{b64(64)}")
    L("npm_integrity", "en", f"  /react@18.3.1:\n    resolution: {{integrity: sha512-{b64(64)}}}\n    engines: {{node: '>=0.10.0'}}")
    L("npm_integrity", "zh", f"package-lock 冲突了，两边的 integrity 不一样：sha512-{b64(64)} vs sha512-{b64(64)}，重新 npm install 就好。")
    L("go_sum", "en", f"github.com/stretchr/testify v1.9.0 h1:{b64(32)}\ngithub.com/stretchr/testify v1.9.0/go.mod h1:{b64(32)}")
    L("go_sum", "en", f"verifying golang.org/x/net@v0.24.0: checksum mismatch\n\tdownloaded: h1:{b64(32)}\n\tgo.sum:     h1:{b64(32)}")
    L("cargo_lock", "en", f"[[package]]\nname = \"serde\"\nversion = \"1.0.197\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{hx(64)}\"")
    L("pip_hash", "en", f"requests==2.31.0 \\\n    --hash=sha256:{hx(64)} \\\n    --hash=sha256:{hx(64)}")
    L("pip_hash", "en", f"[[package]]\nname = \"urllib3\"\nversion = \"2.2.1\"\nfiles = [\n    {{file = \"urllib3-2.2.1-py3-none-any.whl\", hash = \"sha256:{hx(64)}\"}},\n]")
    L("sri_integrity", "en", f"<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js\" integrity=\"sha384-{b64(48)}\" crossorigin=\"anonymous\"></script>")
    L("sri_integrity", "zh", f"CDN 引用记得带 SRI：integrity=\"sha384-{b64(48)}\"，否则 CSP 报警。")
    L("wireguard_public", "en", f"[Peer]\n# laptop\nPublicKey = {b64(32)}\nAllowedIPs = 10.66.0.5/32\n\n[Peer]\n# phone\nPublicKey = {b64(32)}\nAllowedIPs = 10.66.0.6/32")
    L("wireguard_public", "en", f"$ sudo wg show\ninterface: wg0\n  public key: {b64(32)}\n  private key: (hidden)\n  listening port: 51820\n\npeer: {b64(32)}\n  endpoint: 198.51.100.23:40211\n  allowed ips: 10.66.0.2/32\n  latest handshake: 38 seconds ago")
    L("wireguard_public", "zh", f"把这个公钥加到服务器的 [Peer] 里：PublicKey = {b64(32)}，私钥我自己留着没发。")
    L("wireguard_public", "zh-Hant", f"新裝置的 WireGuard 公鑰：{b64(32)}，IP 分配 10.8.0.14。")
    ed = lambda: "AAAAC3NzaC1lZDI1NTE5AAAAI" + b64(32)[:43]
    L("ssh_pubkey", "en", f"$ cat ~/.ssh/id_ed25519.pub\nssh-ed25519 {ed()} jane@laptop")
    L("ssh_pubkey", "en", f"ssh_authorized_keys:\n  - ssh-ed25519 {ed()} deploy@ci\n  - ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{b64(380)[:510]} ops@bastion")
    L("ssh_pubkey", "zh", f"请把我的公钥加到 authorized_keys：ssh-ed25519 {ed()} wangfang@mbp")
    L("ssh_pubkey", "en", f"resource \"aws_key_pair\" \"deployer\" {{\n  key_name   = \"deployer-key\"\n  public_key = \"ssh-ed25519 {ed()} deployer\"\n}}")
    L("known_hosts", "en", f"|1|{b64(20)}|{b64(20)} ssh-ed25519 {ed()}\ngithub.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{b64(64)[:87]}=")
    L("known_hosts", "en", f"The authenticity of host 'git.acme.io (10.1.2.3)' can't be established.\nED25519 key fingerprint is SHA256:{b64(32, pad=False)}.\nThis key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])?")
    L("known_hosts", "zh", f"服务器重装后 host key 变了：\nWARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!\nThe fingerprint for the ED25519 key sent by the remote host is\nSHA256:{b64(32, pad=False)}.\n执行 ssh-keygen -R 10.0.0.8 就好。")
    L("ssh_fingerprint", "en", f"$ ssh-keygen -lf ~/.ssh/id_ed25519.pub\n256 SHA256:{b64(32, pad=False)} jane@laptop (ED25519)")
    L("gpg_fingerprint", "en", f"pub   ed25519 2023-06-01 [SC]\n      {hx(40).upper()}\nuid           [ultimate] Jane Doe <jane@example.com>\nsub   cv25519 2023-06-01 [E]")
    L("gpg_fingerprint", "zh-Hant", f"發布檔已用 GPG 簽章，公鑰指紋：{' '.join(hx(4).upper() for _ in range(10))}，請先驗證。")
    for lang, head in [("en", "$ openssl s_client -connect api.example.com:443 -showcerts </dev/null\n"),
                       ("zh", "这是网关的公网证书（公开的，不是私钥）：\n"),
                       ("en", "# ca-bundle.crt\n"),
                       ("zh-Hant", "中繼憑證如下，請加到信任清單：\n")]:
        lines = cert_lines()
        L("x509_cert", lang, head + "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----")
    lines = b64lines(bytes.fromhex("308202") + rbytes(1) + bytes.fromhex("308201") + rbytes(600))
    L("csr", "en", "$ openssl req -new -key api.key -subj '/CN=api.example.com' -out api.csr && cat api.csr\n-----BEGIN CERTIFICATE REQUEST-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE REQUEST-----")
    lines = b64lines(bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d03010703420004") + rbytes(64))
    L("public_key_pem", "en", "JWT verification key (public):\n-----BEGIN PUBLIC KEY-----\n" + "\n".join(lines) + "\n-----END PUBLIC KEY-----")
    lines = b64lines(bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d03010703420004") + rbytes(64))
    L("public_key_pem", "zh", "回调验签用的平台公钥：\n-----BEGIN PUBLIC KEY-----\n" + "\n".join(lines) + "\n-----END PUBLIC KEY-----")
    L("pgp_public_block", "en", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(b64lines(b"\x98\x33\x04" + rbytes(300))) + "\n=" + b64(3) + "\n-----END PGP PUBLIC KEY BLOCK-----")
    _h = base64.b64encode(b"hello world\n").decode()
    _j = base64.b64encode(b'{"theme":"dark","lang":"en"}').decode()
    L("base64_data", "en", "$ echo 'hello world' | base64\n" + _h + "\n$ echo " + _j + " | base64 -d\n{\"theme\":\"dark\",\"lang\":\"en\"}")
    L("base64_data", "en", "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rbytes(90)).decode())
    L("base64_data", "en", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: banner\nbinaryData:\n  motd.txt: " + base64.b64encode("Welcome to the staging cluster. Be nice.\n".encode()).decode())
    L("base64_data", "zh", "接口返回的 payload 是 base64 编码的 JSON：" + base64.b64encode(json.dumps({"page": 2, "size": 20, "sort": "created_at"}).encode()).decode() + "，解码就是分页参数。")
    L("base64_data", "zh-Hant", "Email 標頭：Subject: =?UTF-8?B?" + base64.b64encode("您的訂單已出貨".encode()).decode() + "?=")
    L("base64_data", "en", "Content-Transfer-Encoding: base64\n\n" + "\n".join(b64lines(("Hi team,\nThe quarterly report is attached. Numbers look good this time around; see slide 4 for churn.\nThanks, Dana\n" * 2).encode(), 76)))
    L("s3_key", "en", f"upload: ./report.pdf to s3://acme-reports/2025/02/{hx(32)}/report.pdf\nupload: ./thumb.png to s3://acme-media/u/{uid()}/{rs(22, URLSAFE)}.png")
    L("s3_key", "zh", f"OSS 对象路径：oss://prod-assets/avatar/{hx(2)}/{hx(32)}.jpg，CDN 地址 https://cdn.example.cn/avatar/{hx(2)}/{hx(32)}.jpg")
    L("s3_key", "en", f"https://acme-uploads.s3.eu-west-1.amazonaws.com/tmp/{rs(40, LOWER_ALNUM)}.csv")
    L("cache_key", "en", f"- uses: actions/cache@v4\n  with:\n    path: ~/.npm\n    key: Linux-node-{hx(64)}\n# Cache restored from key: Linux-node-{hx(64)}")
    L("cache_key", "en", f"redis> KEYS session_meta:*\n1) \"cache:v2:user:{rs(24, LOWER_ALNUM)}:profile\"\n2) \"cache:v2:feed:{hx(40)}\"")
    L("cache_key", "zh", f"Bazel 远程缓存命中：action key {hx(64)}，输出 digest {hx(64)}/1432")
    L("nix_store", "en", f"/nix/store/{rs(32, '0123456789abcdfghijklmnpqrsvwxyz')}-python3-3.11.9/bin/python3\n/nix/store/{rs(32, '0123456789abcdfghijklmnpqrsvwxyz')}-openssl-3.0.13")
    L("ipfs_cid", "en", f"ipfs add report.pdf\nadded bafybei{rs(52, BECH32.replace('1',''))} report.pdf\nQm{rs(44, B58)}")
    L("etag", "en", f"HTTP/2 200\ncontent-type: application/json\netag: W/\"{hx(32)}\"\nx-cache: HIT\nage: 312")
    L("etag", "en", f"ETag: \"{hx(32)}-12\"\nx-amz-version-id: {rs(32, URLSAFE)}")
    L("btc_address", "en", f"Donations welcome: BTC bc1q{rs(38, BECH32)}  ·  ETH 0x{hx(40)}")
    L("btc_address", "zh", f"充值地址（公开地址，可以分享）：bc1q{rs(38, BECH32)}，到账需要 3 个确认。")
    L("eth_tx_hash", "en", f"Transaction submitted: https://etherscan.io/tx/0x{hx(64)}\nblock 19283746, gas used 51,233")
    L("eth_tx_hash", "zh", f"交易哈希 0x{hx(64)} 已上链，合约地址 0x{hx(40)}。")
    L("eth_tx_hash", "en", f"event Transfer(from=0x{hx(40)}, to=0x{hx(40)}, value=1000000) topics[0]=0x{hx(64)}")
    L("age_recipient", "en", f"# .sops.yaml\ncreation_rules:\n  - path_regex: secrets/.*\\.yaml$\n    age: age1{rs(58, BECH32)}")
    L("age_recipient", "zh", f"加密时用我的 age 公钥就行：age1{rs(58, BECH32)}（私钥只在我电脑上）。")
    L("minisign_public", "en", f"$ minisign -Vm release.tar.gz -P RWQ{b64(39)[:53]}\nSignature and comment signature verified\nTrusted comment: timestamp:1718000000\tfile:release.tar.gz")
    L("signature", "en", f"untrusted comment: signature from minisign secret key\nRUQ{b64(71)[:93]}\ntrusted comment: timestamp:1718000000\tfile:app-1.4.2.tar.gz\t hashed\n{b64(64)}")
    L("signature", "en", f"x-hub-signature-256: sha256={hx(64)}\nx-github-event: push\nx-github-delivery: {uid()}")
    L("signature", "zh", f"回调请求头里的签名：X-Signature: {hx(64)}，时间戳 1736312345，验签通过。")
    L("arn", "en", f"arn:aws:iam::{rs(12, string.digits)}:role/github-actions-deploy\narn:aws:kms:eu-west-1:{rs(12, string.digits)}:key/{uid()}\narn:aws:secretsmanager:eu-west-1:{rs(12, string.digits)}:secret:prod/db-{rs(6)}")
    L("arn", "zh", f"Secrets Manager 里的密钥 ARN：arn:aws:secretsmanager:ap-northeast-1:{rs(12, string.digits)}:secret:prod/mysql-{rs(6)}，应用通过 IAM 角色读取。")
    L("build_id", "en", f"Build #4812 ({uid()}) succeeded in 3m12s\nArtifact: app-release-{hx(8)}.apk  sha1={hx(40)}")
    L("build_id", "en", f"GitHub Actions run {rs(10, string.digits)} · job {rs(11, string.digits)} · runner {rs(20, URLSAFE)}")
    L("sourcemap", "en", f"//# sourceMappingURL=main.{hx(8)}.js.map\n//# debugId={uid()}")
    L("license_text", "en", "SPDX-License-Identifier: Apache-2.0\nCopyright 2025 The Authors. Licensed under the Apache License, Version 2.0")
    L("oid_asn1", "en", "Signature Algorithm: ecdsa-with-SHA256 (1.2.840.10045.4.3.2)\nSubject Key Identifier: " + ":".join(hx(2).upper() for _ in range(20)) + "\nAuthority Key Identifier: " + ":".join(hx(2).upper() for _ in range(20)))

    # --- placeholders and references
    for lang, t in [
        ("en", "DB_PASSWORD=<password>\nAPI_KEY=<your-api-key>\nSECRET_KEY=<generate with `openssl rand -hex 32`>"),
        ("en", "set DB_PASS=%DB_PASS%\nsqlcmd -S %SQL_HOST% -U sa -P %DB_PASS% -Q \"SELECT 1\""),
        ("en", "export DB_PASSWORD=\"$(cat /run/secrets/db_password)\"\nexport GITHUB_TOKEN=\"$(gh auth token)\""),
        ("en", "env:\n  - name: DB_PASSWORD\n    value: {{ .Values.postgresql.auth.password | quote }}\n  - name: API_KEY\n    value: {{ required \"apiKey is required\" .Values.apiKey }}"),
        ("en", "- name: Deploy\n  env:\n    NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n    AWS_SECRET_ACCESS_KEY: ${{ secrets.AWS_SECRET_ACCESS_KEY }}\n  run: npm publish"),
        ("en", "password: ${DB_PASSWORD:?must be set}\nusername: ${DB_USER:-app}"),
        ("en", "$env:OPENAI_API_KEY = (Get-Secret -Name OpenAIKey -AsPlainText)\n$cred = Get-Credential -UserName 'CORP\\svc_deploy' -Message 'Enter password'"),
        ("en", "spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}\nserver.ssl.key-store-password=${KEYSTORE_PASSWORD}"),
        ("en", "\"ConnectionStrings\": {\n  \"Default\": \"Server=tcp:acme-sql.database.windows.net;Database=Shop;Authentication=Active Directory Managed Identity;\"\n}"),
        ("en", "api_key = os.environ[\"OPENAI_API_KEY\"]\ntoken = os.getenv(\"GITHUB_TOKEN\")\nsecret = settings.SECRET_KEY"),
        ("en", "valueFrom:\n  secretKeyRef:\n    name: db-creds\n    key: password"),
        ("en", "db_password = data.aws_secretsmanager_secret_version.db.secret_string\nvault_token = var.vault_token"),
        ("en", "OPENAI_API_KEY=sk-...\nANTHROPIC_API_KEY=sk-ant-...\nSTRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx"),
        ("en", "ANSIBLE_VAULT_PASSWORD_FILE=~/.vault_pass\nansible_become_password: \"{{ vault_become_password }}\""),
        ("en", "PrivateKey = <contents of /etc/wireguard/privatekey>\nPostUp = wg set %i private-key /etc/wireguard/privatekey"),
        ("en", "APP_KEY=\nDB_PASSWORD=\nMAIL_PASSWORD=null"),
        ("en", "password = op://Production/Postgres/password\ntoken = vault:secret/data/ci#github_token"),
        ("en", "curl -H \"Authorization: Bearer $TOKEN\" -H \"X-API-Key: ${API_KEY}\" https://api.example.com/v1/me"),
        ("en", "mysql -u root -p\nEnter password: ********"),
        ("en", "client_secret: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  # encrypted blob lives in group_vars/all/vault.yml"),
        ("zh", "数据库密码：<在此填写>\nAPI Key：请向运维申请，不要写进代码"),
        ("zh", "把 .env.example 复制成 .env，然后把 YOUR_API_KEY_HERE 换成你自己的 key。"),
        ("zh", "密码在 1Password 的「生产环境 / MySQL」条目里，自己去看，不要在群里发。"),
        ("zh-Hant", "密碼請見 Bitwarden 的「客服後台」項目；帳號是 admin。"),
        ("zh-Hant", "DB_PASSWORD 請用 {{ secrets.DB_PASSWORD }} 注入，不要寫死在 docker-compose.yml。"),
        ("mixed", "CI 里用 ${{ secrets.DOCKERHUB_TOKEN }} 登录 Docker Hub，token 本身存在 repo settings 里"),
        ("mixed", "kubectl create secret generic db --from-literal=password=\"$DB_PASSWORD\"  密码从环境变量读"),
        ("zh", "application.yml 里写 password: ${MYSQL_PASSWORD}，启动时通过 -DMYSQL_PASSWORD 传进来。"),
    ]:
        L("placeholder", lang, t)

    # --- masked values
    for lang, t in [
        ("en", f"Using API key sk-…{rs(4)} (project: default)"),
        ("en", f"Card ending ****{rs(4, string.digits)} was charged $49.00"),
        ("en", "GITHUB_TOKEN: ***\nNPM_TOKEN: ***\nRun npm publish"),
        ("en", f"Your token ghp_****************************{rs(4)} was revoked by GitHub secret scanning."),
        ("en", f"AWS_SECRET_ACCESS_KEY=****************{rs(4, ALNUM)}  (set 3 days ago)"),
        ("en", "{\"password\": \"[REDACTED]\", \"username\": \"alice\", \"api_key\": \"[FILTERED]\"}"),
        ("en", f"Key created: {rs(8)}…{rs(4)} — copy it now, you won't be able to see it again."),
        ("en", "Authorization: Bearer <redacted>\nCookie: session=<redacted>"),
        ("zh", f"已为您生成 API Key：sk-****{rs(4)}（完整值只显示一次）"),
        ("zh", f"银行卡尾号 {rs(4, string.digits)}，手机号 138****{rs(4, string.digits)}"),
        ("zh-Hant", "密碼：●●●●●●●●　（已隱藏）"),
        ("mixed", f"Stripe key sk_live_…{rs(4)} 已经在 dashboard 里 roll 掉了"),
        ("en", f"AccessKey ID: LTAI****{rs(4)}  Secret: ******"),
    ]:
        L("masked_value", lang, t)

    # --- prose about credentials
    for lang, t in [
        ("en", "We rotate the database password every 90 days. After rotation, restart the API pods so they pick up the new secret from Vault."),
        ("en", "If you accidentally commit an API key, revoke it first, then rewrite history with git filter-repo. Removing the line in a new commit is not enough."),
        ("en", "The password must be at least 12 characters and contain an uppercase letter, a digit and a symbol."),
        ("en", "Tip: generate a Django SECRET_KEY with `python -c 'from django.core.management.utils import get_random_secret_key; print(get_random_secret_key())'` and store it in your secret manager."),
        ("en", "GitHub personal access tokens start with ghp_, fine-grained ones with github_pat_. Slack bot tokens start with xoxb-. None of these should ever be logged."),
        ("en", "The WireGuard private key stays on the device; only the public key is shared with the server."),
        ("en", "Laravel's APP_KEY is generated by `php artisan key:generate`. Changing it invalidates existing encrypted cookies."),
        ("en", "Error: invalid_client — the client secret is incorrect or has expired. Create a new secret in the app registration and update the config."),
        ("en", "401 Unauthorized: the provided API key is invalid. Check that it has not been revoked."),
        ("en", "Use `ConvertTo-SecureString -AsPlainText` only in tests; in production read the credential with Get-Credential or from the SecretManagement module."),
        ("zh", "密钥每 90 天轮换一次，轮换后请重启服务让新的配置生效。"),
        ("zh", "如果不小心把 AccessKey 提交到了 GitHub，要先在控制台禁用它，再清理提交历史。"),
        ("zh", "密码长度至少 12 位，需要包含大小写字母、数字和特殊符号。"),
        ("zh", "钉钉机器人的加签密钥以 SEC 开头，请不要放在前端代码里。"),
        ("zh", "飞书应用的 App Secret 泄露后要立刻在开放平台重置，并更新所有服务。"),
        ("zh-Hant", "請勿在群組中張貼密碼或 Token，若已外洩請立即更換。"),
        ("zh-Hant", "憑證到期前 30 天系統會寄信提醒，請記得更新私鑰與憑證。"),
        ("mixed", "token 过期了就去 Settings → Developer settings → Personal access tokens 重新生成一个，scope 选 repo 就够"),
        ("mixed", "SECRET_KEY 不要用默认的 django-insecure 开头那个，上线前一定要换"),
        ("en", "Jupyter prints a URL containing ?token=… when it starts; anyone with that URL can run code, so don't paste it in public channels."),
        ("en", "An Ethereum address is 0x followed by 40 hex characters; a private key is 64 hex characters. Never share the latter."),
        ("zh", "助记词一般是 12 或 24 个英文单词，千万不要截图或发给任何人。"),
    ]:
        L("prose", lang, t)

    # --- config files with only non-secret values
    L("config_nonsecret", "en", f"[Interface]\nAddress = 10.66.0.1/24\nListenPort = 51820\nPostUp = iptables -A FORWARD -i %i -j ACCEPT\n\n[Peer]\nPublicKey = {b64(32)}\nPresharedKey = (see vault)\nAllowedIPs = 10.66.0.2/32")
    L("config_nonsecret", "en", f"spring.application.name=orders\nspring.datasource.url=jdbc:postgresql://db.internal:5432/orders\nspring.datasource.hikari.maximum-pool-size=20\nmanagement.tracing.sampling.probability=0.1\ninstance.id={uid()}")
    L("config_nonsecret", "en", "{\n  \"Logging\": { \"LogLevel\": { \"Default\": \"Information\" } },\n  \"AllowedHosts\": \"*\",\n  \"FeatureFlags\": { \"NewCheckout\": true },\n  \"ApplicationInsights\": { \"SamplingPercentage\": 25 }\n}")
    L("config_nonsecret", "zh", f"飞书机器人配置（只有名称和群 ID）：\nname: 发布通知\nchat_id: oc_{hx(32)}\nopen_id: ou_{hx(32)}")
    L("config_nonsecret", "zh", f"企业微信应用 AgentId：1000002，CorpID：ww{hx(16)}（CorpID 是公开信息）")
    L("config_nonsecret", "en", f"const firebaseConfig = {{\n  authDomain: \"chatapp-3f1c2.firebaseapp.com\",\n  projectId: \"chatapp-3f1c2\",\n  messagingSenderId: \"{rs(11, string.digits)}\",\n  measurementId: \"G-{rs(10, UPPER_ALNUM)}\"\n}};")
    L("config_nonsecret", "en", f"[default]\nregion = us-west-2\noutput = json\nsso_start_url = https://acme.awsapps.com/start\nsso_account_id = {rs(12, string.digits)}\nsso_role_name = ReadOnly")
    L("config_nonsecret", "zh-Hant", f"Jupyter 設定：c.ServerApp.port = 8888\nc.ServerApp.ip = '127.0.0.1'\nc.ServerApp.root_dir = '/home/lin/notebooks'\nkernel id: {uid()}")
    L("config_nonsecret", "en", f"otpauth URI format: otpauth://totp/LABEL?secret=BASE32SECRET&issuer=ISSUER (see RFC 6238)\nrecovery codes were printed on {rs(1, '12')}/{rs(1, '1234')}/2025 and stored offline")
    L("config_nonsecret", "en", f"$ jupyter server list\nCurrently running servers:\nhttp://localhost:8888/ :: /home/dev/notebooks\n$ jupyter kernelspec list\n  python3  /usr/local/share/jupyter/kernels/python3")
    L("config_nonsecret", "en", f"sentry:\n  environment: production\n  release: web@{hx(12)}\n  traces_sample_rate: 0.2")
    L("config_nonsecret", "en", f"user = \"ci-bot\"\nhost = \"db.internal\"\nport = 5432\nsslmode = \"verify-full\"\nsslrootcert = \"/etc/ssl/certs/rds-ca-2019.pem\"")

    # --- more hash/id variety, mixed languages
    L("hash_mixed", "mixed", f"这个文件的 sha1 是 {hx(40)}，blake2b 是 {hx(128)}")
    L("hash_mixed", "en", f"$ b3sum target/release/app\n{hx(64)}  target/release/app")
    L("hash_mixed", "en", f"Verified OK: dist/app.tar.gz sha512={hx(128)}")
    L("hash_mixed", "zh-Hant", f"SHA-256 雜湊：{hx(64).upper()}（與官方公佈一致）")
    L("hash_mixed", "en", f"CREATE INDEX idx_users_email_hash ON users (email_sha256);\n-- sample: {hx(64)}")
    L("hash_mixed", "en", f"bcrypt cost=12 benchmark: 250ms per hash; argon2id m=65536 t=3 p=4 salt_len=16 output {hx(64)}")
    L("hash_mixed", "en", f"terraform.tfstate serial=42 lineage=\"{uid()}\"")
    L("device_id", "en", f"Android build fingerprint: google/oriole/oriole:14/AP1A.240305.019.A1/{rs(8, string.digits)}:user/release-keys")
    L("device_id", "en", f"Device ID: {hx(16)}  Installation ID: {uid().upper()}")
    L("device_id", "zh", f"设备号 IMEI {rs(15, string.digits)}，序列号 {rs(12, UPPER_ALNUM)}，都不是敏感凭证。")
    L("vendor_id", "en", f"Stripe object ids: cus_{rs(14)}, pi_{rs(24)}, ch_{rs(24)}, evt_{rs(24)}")
    L("vendor_id", "en", f"Slack channel C{rs(10, UPPER_ALNUM)}, user U{rs(10, UPPER_ALNUM)}, team T{rs(10, UPPER_ALNUM)}, message ts 1736312345.{rs(6, string.digits)}")
    L("vendor_id", "en", f"OpenAI response id chatcmpl-{rs(29)}; file id file-{rs(22)}; batch id batch_{hx(32)}")
    L("vendor_id", "en", f"Anthropic message id msg_01{rs(22)}; request-id: req_01{rs(22)}")
    L("vendor_id", "en", f"Google Analytics: G-{rs(10, UPPER_ALNUM)}, GTM-{rs(7, UPPER_ALNUM)}; Stripe publishable key pk_test_{rs(99)} (publishable keys are meant for the browser)")
    L("vendor_id", "zh", f"腾讯云 APPID 1250{rs(6, string.digits)}，存储桶 web-1250{rs(6, string.digits)}，地域 ap-shanghai")
    L("vendor_id", "en", f"Azure tenant: {uid()}\nsubscription: {uid()}\nresource group: rg-prod-weu")
    L("vendor_id", "en", f"Kafka consumer group lag: partition 3 offset {rs(9, string.digits)} leaderEpoch 17 clusterId {rs(22, URLSAFE)}")
    L("vendor_id", "zh", f"Redis 集群节点 ID：{hx(40)} 10.0.0.5:6379@16379 master - 0 1736312345000 3 connected 5461-10922")
    L("build_id", "en", f"Random seed for this run: {rs(10, string.digits)}; wandb run id {rs(8, LOWER_ALNUM)}; checkpoint step_{rs(5, string.digits)}-{hx(8)}.safetensors")
    L("build_id", "en", f"Go build ID: {rs(20, URLSAFE)}/{rs(20, URLSAFE)}/{rs(20, URLSAFE)}/{rs(20, URLSAFE)}")
    L("build_id", "en", f"ELF BuildID[sha1]={hx(40)}, for GNU/Linux 3.2.0, stripped")
    L("vendor_id", "zh-Hant", f"交易序號 {rs(20, string.digits)}，授權碼 {rs(6, string.digits)}（刷卡授權碼，非密碼）")
    L("vendor_id", "en", f"Cloudflare Ray ID: {hx(16)}-SJC\nzone id: {hx(32)}\naccount id: {hx(32)}")
    L("vendor_id", "en", f"Datadog trace: dd.trace_id={rs(19, string.digits)} dd.span_id={rs(19, string.digits)} dd.service=checkout")
    L("vendor_id", "en", f"Sentry event {hx(32)} (issue WEB-{rs(3, UPPER_ALNUM)}) first seen 2 hours ago")
    L("vendor_id", "en", f"PagerDuty incident Q{rs(13, UPPER_ALNUM)} triggered on service P{rs(6, UPPER_ALNUM)}")
    L("vendor_id", "en", f"Okta app id 0oa{rs(17)} / user id 00u{rs(17)} / group 00g{rs(17)}")
    L("vendor_id", "en", f"Auth0 client ID (public, used by the SPA): {rs(32)}")
    L("vendor_id", "en", f"Heroku release v217 · slug {uid()} · dyno web.1 up")
    L("vendor_id", "en", f"Vercel deployment dpl_{rs(28)} ready at https://web-{rs(9, LOWER_ALNUM)}-acme.vercel.app")
    L("vendor_id", "en", f"Netlify deploy id {hx(24)} published; site id {uid()}")
    L("vendor_id", "en", f"Notion page https://www.notion.so/acme/Runbook-{hx(32)}")
    L("vendor_id", "en", f"Airtable base app{rs(14)}, table tbl{rs(14)}, record rec{rs(14)}")
    L("vendor_id", "en", f"Linear issue ENG-1423 ({uid()}) moved to Done")
    L("vendor_id", "en", f"Telegram chat_id -100{rs(10, string.digits)}, message_id {rs(5, string.digits)}, bot username @acme_deploy_bot")
    L("vendor_id", "zh", f"钉钉群 chatid：chat{hx(32)}，机器人名称「发布助手」")
    L("vendor_id", "en", f"Docker Hub image acme/api:1.8.2@sha256:{hx(64)} pushed by acmebot")
    L("vendor_id", "en", f"Atlassian account id 5f{hx(22)}, Jira issue ID 10{rs(3, string.digits)}")
    L("vendor_id", "zh", f"阿里云账号 UID：{rs(16, string.digits)}，RAM 用户 ID：{rs(16, string.digits)}")
    L("vendor_id", "en", f"minisign key id: {hx(16).upper()}\nage recipient fingerprint: {hx(8)}")
    L("windows_java_hash_ids", "en", f"PS C:\\> Get-FileHash .\\setup.exe -Algorithm SHA256\n\nAlgorithm       Hash                                                                   Path\n---------       ----                                                                   ----\nSHA256          {hx(64).upper()}       C:\\setup.exe")
    L("windows_java_hash_ids", "en", f"PS C:\\> [guid]::NewGuid()\n\nGuid\n----\n{uid()}")
    L("windows_java_hash_ids", "en", f"PS C:\\> Get-AuthenticodeSignature .\\tool.exe | fl\nSignerCertificate : [Subject] CN=Acme Corp  [Thumbprint] {hx(40).upper()}\nStatus            : Valid")
    L("windows_java_hash_ids", "en", f"keytool -list -v -keystore truststore.jks\nAlias name: rootca\nCertificate fingerprints:\n\t SHA1: {':'.join(hx(2).upper() for _ in range(20))}\n\t SHA256: {':'.join(hx(2).upper() for _ in range(32))}")
    L("windows_java_hash_ids", "en", f"Rails: Started GET \"/orders/{uid()}\" for 10.0.0.1\n  Parameters: {{\"id\"=>\"{uid()}\", \"authenticity_token\"=>\"[FILTERED]\"}}")
    L("windows_java_hash_ids", "en", f"django.contrib.sessions: Session {{key: <hidden>}} expired; migration 0023_auto_{rs(8, string.digits)}_{rs(4, string.digits)} applied")


def main():
    gen_secrets()
    gen_lookalikes()
    for i, o in enumerate(SECRETS, 1):
        o["id"] = f"c{i:04d}"
    for i, o in enumerate(LOOKS, 1):
        o["id"] = f"d{i:04d}"
    with open(os.path.join(HERE, "secrets_c.jsonl"), "w", encoding="utf-8") as f:
        for o in SECRETS:
            f.write(json.dumps({"id": o["id"], "family": o["family"], "lang": o["lang"], "text": o["text"], "secrets": o["secrets"]}, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "lookalikes_c.jsonl"), "w", encoding="utf-8") as f:
        for o in LOOKS:
            f.write(json.dumps({"id": o["id"], "family": o["family"], "lang": o["lang"], "text": o["text"]}, ensure_ascii=False) + "\n")
    print(len(SECRETS), len(LOOKS))


if __name__ == "__main__":
    main()
