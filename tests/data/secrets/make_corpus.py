"""Write the secret-detection corpus: ``secrets.jsonl`` and ``lookalikes.jsonl``.

Each secret case is a realistic line or snippet an agent might see (a shell
command, a config file, an error, a chat message in English or Chinese)
with one or more credentials in a documented provider format, generated
from a fixed seed; ``secrets`` lists the exact strings that must not
survive. Each look-alike is text that must come back unchanged: commit
hashes, UUIDs, checksums, digests, base64 of ordinary data, CamelCase
paths, settings whose names merely mention tokens or passwords.

The credentials are random and belong to nobody. Run from the repository
root: ``python tests/data/secrets/make_corpus.py`` (deterministic).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"

rng = random.Random(20261204)


def r(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# -- secret generators: (family, value) ---------------------------------------


def aws_key_id() -> str:
    return rng.choice(["AKIA", "ASIA"]) + r(string.ascii_uppercase + "234567", 16)


def aws_secret() -> str:
    return r(B64, 40)


def github() -> str:
    kind = rng.choice(["ghp_", "gho_", "ghs_", "ghu_", "github_pat_"])
    if kind == "github_pat_":
        return kind + r(ALNUM, 22) + "_" + r(ALNUM, 59)
    return kind + r(ALNUM, 36)


def gitlab() -> str:
    return "glpat-" + r(URLSAFE, 20)


def slack() -> str:
    return (
        rng.choice(["xoxb-", "xoxp-"])
        + f"{rng.randrange(10**11, 10**12)}-{rng.randrange(10**11, 10**12)}-"
        + r(ALNUM, 24)
    )


def slack_webhook_path() -> str:
    upper = string.ascii_uppercase + string.digits
    return f"T{r(upper, 10)}/B{r(upper, 10)}/{r(ALNUM, 24)}"


def openai() -> str:
    return rng.choice(["sk-proj-", "sk-", "sk-ant-api03-"]) + r(URLSAFE, 48)


def stripe() -> str:
    return rng.choice(["sk_live_", "rk_live_", "sk_test_"]) + r(ALNUM, 24)


def google() -> str:
    return "AIza" + r(URLSAFE, 35)


def npm() -> str:
    return "npm_" + r(ALNUM, 36)


def hf() -> str:
    return "hf_" + r(ALNUM, 34)


def sendgrid() -> str:
    return "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43)


def telegram() -> str:
    return f"{rng.randrange(10**8, 10**9)}:AA" + r(URLSAFE, 33)


def jwt() -> str:
    head = b64url(json.dumps({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}).encode())
    body = b64url(
        json.dumps(
            {
                "sub": str(rng.randrange(10**6)),
                "name": rng.choice(["Ann", "李雷"]),
                "iat": rng.randrange(1_600_000_000, 1_800_000_000),
            }
        ).encode()
    )
    return f"{head}.{body}.{b64url(rng.randbytes(32))}"


def private_key() -> str:
    kind = rng.choice(["RSA ", "OPENSSH ", "EC ", ""])
    body = base64.b64encode(rng.randbytes(rng.choice([120, 240, 360]))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{lines}\n-----END {kind}PRIVATE KEY-----"


def password() -> str:
    words = ["summer", "Dragon", "blue", "Tiger", "coffee", "Pass", "admin", "river", "Moon"]
    style = rng.randrange(4)
    if style == 0:
        return rng.choice(words) + str(rng.randrange(10, 9999)) + rng.choice("!#$%*")
    if style == 1:
        return r(ALNUM + "!#%^*", rng.randrange(10, 24))
    if style == 2:
        return "-".join(rng.choice(words).lower() for _ in range(3)) + str(rng.randrange(10))
    return r(ALNUM, 16)


def basic_auth() -> str:
    return base64.b64encode(f"{rng.choice(['admin', 'deploy', 'ci'])}:{password()}".encode()).decode()


def random_bearer() -> str:
    return r(URLSAFE, rng.choice([32, 40, 64]))


TOKENS: dict[str, Callable[[], str]] = {
    "aws_key_id": aws_key_id,
    "github": github,
    "gitlab": gitlab,
    "slack": slack,
    "openai": openai,
    "stripe": stripe,
    "google": google,
    "npm": npm,
    "huggingface": hf,
    "sendgrid": sendgrid,
    "telegram": telegram,
    "jwt": jwt,
}

EN_WRAP = [
    "{x}",
    "I ran this and it failed: {x}",
    "Tool output:\n{x}\nError: exit status 1",
    "can you check why `{x}` gives 403?",
    "here is the config I used\n\n{x}\n\nit still times out",
    'Traceback (most recent call last):\n  File "deploy.py", line 12\n{x}\nPermissionError',
]
ZH_WRAP = [
    "我执行了 {x}，结果报错了",
    "帮我看看这个配置：\n{x}\n为什么连不上？",
    "部署的时候用的是 {x}，一直返回 401",
    "日志里是这样的：{x}。请修一下",
    "用户说：{x} 这个不行，换一个",
]


def wrap(x: str) -> tuple[str, str]:
    lang = rng.choice(["en", "zh"])
    return lang, rng.choice(EN_WRAP if lang == "en" else ZH_WRAP).format(x=x)


def token_contexts(family: str, tok: str) -> str:
    name = {
        "aws_key_id": "AWS_ACCESS_KEY_ID",
        "github": "GITHUB_TOKEN",
        "gitlab": "GITLAB_TOKEN",
        "slack": "SLACK_BOT_TOKEN",
        "openai": "OPENAI_API_KEY",
        "stripe": "STRIPE_KEY",
        "google": "GOOGLE_API_KEY",
        "npm": "NPM_TOKEN",
        "huggingface": "HF_TOKEN",
        "sendgrid": "SENDGRID_API_KEY",
        "telegram": "BOT_TOKEN",
        "jwt": "JWT",
    }[family]
    shapes = [
        f"export {name}={tok}",
        f"{name}={tok} npm publish",
        f"curl -H 'X-Api: {tok}' https://api.example.com/v1/items",
        f'client = Client("{tok}")',
        f"the key is {tok}",
        f"{tok}",
        f'{{"credentials": {{"value": "{tok}"}}}}',
        f"found {tok} in .env.production",
        f"我的令牌是{tok}，能用吗",
    ]
    if family == "github":
        shapes.append(f"git push https://x-access-token:{tok}@github.com/acme/app.git main")
    if family == "jwt":
        shapes.append(f"Cookie: session={tok}; Path=/")
    return rng.choice(shapes)


def secret_cases() -> list[dict[str, object]]:
    cases: list[dict[str, object]] = []

    def add(family: str, text: str, secrets: list[str], lang: str | None = None) -> None:
        if lang is None:
            lang, text = wrap(text)
        cases.append(
            {"id": f"s{len(cases):04d}", "family": family, "lang": lang, "text": text, "secrets": secrets}
        )

    for family, make in TOKENS.items():
        for _ in range(16):
            tok = make()
            add(family, token_contexts(family, tok), [tok])
    for _ in range(20):
        kid, sec = aws_key_id(), aws_secret()
        add(
            "aws_pair",
            rng.choice(
                [
                    f"export AWS_ACCESS_KEY_ID={kid}\nexport AWS_SECRET_ACCESS_KEY={sec}",
                    f"[default]\naws_access_key_id = {kid}\naws_secret_access_key = {sec}",
                    f"aws configure set aws_secret_access_key {sec}",
                    f"credentials: {kid} / {sec}",
                ]
            ),
            [kid, sec],
        )
    for _ in range(16):
        key = private_key()
        body = key.splitlines()[1]
        add("private_key", rng.choice([key, f"cat ~/.ssh/id_rsa\n{key}", f"key: |\n{key}"]), [body])
    for _ in range(30):
        pw = password()
        host = rng.choice(["db.internal", "10.0.3.7", "pg.acme.io", "localhost"])
        user = rng.choice(["app", "postgres", "admin", "x"])
        url = rng.choice(
            [
                f"postgresql://{user}:{pw}@{host}:5432/orders",
                f"mysql://{user}:{pw}@{host}/shop",
                f"redis://:{pw}@{host}:6379/0",
                f"https://{user}:{pw}@git.acme.io/team/repo.git",
                f"amqp://{user}:{pw}@{host}:5672/",
                f"mongodb+srv://{user}:{pw}@cluster0.{host}/test",
            ]
        )
        pw_url = quote(pw, safe="!*^-")
        add(
            "url_password",
            rng.choice([url, f"DATABASE_URL={url}", f"psql {url}"]).replace(pw, pw_url),
            [pw_url],
        )
    for _ in range(24):
        style = rng.randrange(4)
        if style == 0:
            tok = basic_auth()
            add("authorization", f"Authorization: Basic {tok}", [tok])
        elif style == 1:
            tok = random_bearer()
            add(
                "authorization",
                rng.choice(
                    [
                        f"Authorization: Bearer {tok}",
                        f'-H "Authorization: Bearer {tok}"',
                        f"headers = {{'Authorization': 'Bearer {tok}'}}",
                    ]
                ),
                [tok],
            )
        elif style == 2:
            tok = random_bearer()
            add("authorization", f"curl -H 'authorization: token {tok}' https://api.github.com/user", [tok])
        else:
            tok = password()
            add("authorization", f"proxy-authorization: {tok}", [tok])
    names = [
        "DB_PASSWORD",
        "SECRET_KEY",
        "api_key",
        "client_secret",
        "REDIS_PASSWORD",
        "JWT_SECRET",
        "spring.datasource.password",
        "MYSQL_ROOT_PASSWORD",
        "auth_token",
        "PRIVATE_KEY_PASSPHRASE",
        "encryption_key",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "refresh_token",
        "webhookSecret",
    ]
    for _ in range(50):
        name, pw = rng.choice(names), password()
        line = rng.choice(
            [
                f"{name}={pw}",
                f"{name}: {pw}",
                f'"{name}": "{pw}"',
                f"{name} = '{pw}'",
                f'export {name}="{pw}"',
                f"  {name}: {pw}  # prod",
            ]
        )
        add("assignment", line, [pw])
    for _ in range(16):
        pw = password()
        add(
            "cli_flag",
            rng.choice(
                [
                    f"mysql -uroot -p{pw} shop",
                    f"psql --password {pw}",
                    f"curl -u admin:{pw} https://ci.acme.io/api",
                    f"tool login --token {pw}",
                    f"docker login -u bot --password {pw} registry.acme.io",
                ]
            ),
            [pw],
        )
    for _ in range(24):
        pw = password()
        line = rng.choice(
            [
                f"数据库密码：{pw}",
                f"密码是 {pw}",
                f"服务器的登录密码为{pw}，记得改掉",
                f"密钥={pw}",
                f"把令牌 {pw} 配到环境变量里",
                f"口令：{pw}，用户名 admin",
            ]
        )
        cases.append(
            {
                "id": f"s{len(cases):04d}",
                "family": "zh_assignment",
                "lang": "zh",
                "text": line,
                "secrets": [pw],
            }
        )
    for _ in range(10):
        p = slack_webhook_path()
        add(
            "webhook",
            f'curl -X POST https://hooks.slack.com/services/{p} -d \'{{"text":"deploy ok"}}\'',
            [p.split("/")[-1]],
        )
    for _ in range(12):
        sec = aws_secret()
        add("bare_blob", rng.choice([f"{sec}", f"use {sec} for the signer", f"签名用的是 {sec}"]), [sec])
    for _ in range(8):
        pw = password() + "7!"
        add("prose", rng.choice([f"the password is {pw}", f"my passphrase was {pw} before the reset"]), [pw])
    return cases


# -- look-alikes --------------------------------------------------------------

SENTENCES = [
    "The quick brown fox jumps over the lazy dog again and again",
    "user=alice&role=viewer&page=2&sort=created_at",
    '{"event": "deploy", "service": "billing", "region": "eu-west-1"}',
    "今天的部署计划：先升级数据库，再切换流量",
    "Hello, world! This is ordinary base64 data, nothing secret here.",
    "name,qty,price\nwidget,4,9.99\ngadget,1,24.50",
]


def lookalike_cases() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []

    def add(family: str, text: str, lang: str = "en") -> None:
        out.append({"id": f"l{len(out):04d}", "family": family, "lang": lang, "text": text})

    for _ in range(30):
        sha = r(HEX, 40)
        add(
            "commit",
            rng.choice(
                [
                    f"commit {sha}",
                    f"git checkout {sha[:12]}",
                    f"revert {sha} (bad merge)",
                    f"Merge {sha[:7]} into {r(HEX, 40)}",
                ]
            ),
        )
        add("commit", rng.choice([f"提交 {sha} 引入了回归", f"回滚到 {sha[:10]} 之后就好了"]), "zh")
    for _ in range(30):
        u = str(uuid.UUID(bytes=rng.randbytes(16), version=4))
        add(
            "uuid",
            rng.choice(
                [f"request id {u}", f"GET /api/orders/{u.upper()}", f"trace_id={u}", f"订单号 {u} 没找到"]
            ),
        )
    for _ in range(30):
        data = rng.randbytes(32)
        hx = hashlib.sha256(data).hexdigest()
        b = base64.b64encode(hashlib.sha512(data).digest()).decode()
        add(
            "checksum",
            rng.choice(
                [
                    f"sha256sum: {hx}  dist/app.tar.gz",
                    f"image@sha256:{hx}",
                    f'"integrity": "sha512-{b}"',
                    f"md5 {hashlib.md5(data).hexdigest()}",
                    f"x-amz-checksum-sha256: {base64.b64encode(hashlib.sha256(data).digest()).decode()}",
                    f"expected checksum {hx.upper()}",
                ]
            ),
        )
    for _ in range(40):
        text = rng.choice(SENTENCES) + " " + str(rng.randrange(1000))
        enc = base64.b64encode(text.encode()).decode()
        add(
            "base64_data",
            rng.choice(
                [
                    f"payload {enc}",
                    f"echo {enc} | base64 -d",
                    f"body: {enc}",
                    f"消息体是 {enc}",
                    f"data:text/plain;base64,{enc}",
                ]
            ),
        )
    paths = [
        "src/main/java/com/acme/Service2Impl/OrderRepository3.java",
        "packages/ui/src/components/Button/Button2.stories.tsx",
        "/Users/Ann/Library/Caches/pip/wheels/9a/Py3Crypto",
        "test_handles_utf8_input_with_BOM2_and_CRLF_line_endings",
        "HTTPServerErrorHandler2FactoryBean",
        "deployment-7d4b9c8f6-x2k9p-canary2-rollout",
        "aws-sdk-java-v2/services/s3/src/main/S3Client",
        "node_modules/@Types/react-dom/v18/index.d.ts",
    ]
    for _ in range(30):
        add("identifier", rng.choice(paths) + rng.choice(["", " not found", " failed to compile"]))
    settings = [
        "max_tokens=4096",
        "token_count: 512",
        "password_min_length=12",
        "tokens: 1500",
        "secret_name: prod-db-credentials",
        "password: ${DB_PASSWORD}",
        "token=$GITHUB_TOKEN",
        "api_key=None",
        "def login(user: str, password: str) -> bool:",
        "reset your password via the link",
        "the password is incorrect",
        "passwordless login is enabled",
        "token = get_token()",
        "use_auth_token: true",
        "key_id: 3",
        "http://localhost:8080/a@b",
        "https://pypi.org/simple/requests/",
        "Authorization header missing",
        "Bearer auth is configured",
        "密码长度：12 位",
        "令牌数量：4096",
        "请输入密码",
        "密码错误，请重试",
        "secret rotation every 90 days",
        "--password-stdin < pw.txt",
        "alice@example.com wrote: ok",
        "pip install numpy==1.26.4",
        "SELECT token_id FROM sessions",
        "sk-learn is not a package, use scikit-learn",
        "key-value store",
        "ghp_ tokens are deprecated",
    ]
    for s in settings:
        add("setting", s, "zh" if not s.isascii() else "en")
    for _ in range(20):
        n = rng.randrange(4)
        add(
            "misc",
            [
                f"2026-12-04T03:{rng.randrange(60):02d}:11.123456Z",
                f"fe80::{r(HEX, 4)}:{r(HEX, 4)}:1",
                f"v{rng.randrange(9)}.{rng.randrange(30)}.{rng.randrange(99)}-rc.{rng.randrange(9)}",
                f"port {rng.randrange(1024, 65535)} already in use",
            ][n],
        )
    return out


def main() -> None:
    for name, rows in (("secrets.jsonl", secret_cases()), ("lookalikes.jsonl", lookalike_cases())):
        with open(HERE / name, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(name, len(rows))


if __name__ == "__main__":
    main()
