"""Look-alike templates (no secret). Each returns (family, lang, text)."""
import hashlib, json, struct
from gen_common import *

L = []


def look(fn):
    L.append(fn)
    return fn


def ssh_pub_ed():
    raw = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + rb(32)
    return "ssh-ed25519 " + b64(raw)


def ssh_pub_rsa():
    raw = struct.pack(">I", 7) + b"ssh-rsa" + struct.pack(">I", 3) + b"\x01\x00\x01" + struct.pack(">I", 257) + b"\x00" + bytes([0x80 | R.getrandbits(7)]) + rb(255)
    return "ssh-rsa " + b64(raw)


def cert_pem():
    body = "MIID" + r(B64, ri(1100, 1300))
    body = body[: len(body) - len(body) % 4]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(wrap(body, 64)) + "\n-----END CERTIFICATE-----"


def pub_pem():
    if R.random() < 0.5:
        body = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + r(B64, 344) + "IDAQAB"
    else:
        body = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE" + r(B64, 86) + "=="
    return "-----BEGIN PUBLIC KEY-----\n" + "\n".join(wrap(body, 64)) + "\n-----END PUBLIC KEY-----"


def short():
    return hexs(7)


# ------------------------------------------------------------------ VCS
@look
def git_log():
    lines = []
    for _ in range(ri(3, 6)):
        lines.append(f"{short()} {pick('fix: handle nil pointer in auth middleware', 'chore(deps): bump axios from 1.6.7 to 1.6.8', 'feat: add token refresh endpoint', 'refactor: rename SecretStore to KeyStore', 'docs: explain how to rotate API keys', 'Merge pull request #' + str(ri(100, 9999)) + ' from acme/feature/oauth')}")
    return "commit_hash", "en", "$ git log --oneline -n " + str(len(lines)) + "\n" + "\n".join(lines)


@look
def git_show():
    h = sha1()
    return "commit_hash", "en", (f"commit {h} (HEAD -> main, origin/main)\nMerge: {short()} {short()}\nAuthor: Li Wei <li.wei@acme.io>\nDate:   Tue May 14 10:21:33 2024 +0800\n\n    Remove hard-coded password from config; read DB_PASSWORD from env\n\n"
                                 f"diff --git a/config.py b/config.py\nindex {short()}..{short()} 100644")


@look
def git_rebase():
    a, b = sha1(), sha1()
    return "commit_hash", "en", f"$ git rebase -i {a[:12]}\nSuccessfully rebased and updated refs/heads/feature/token-rotation.\n$ git reflog -2\n{b[:7]} HEAD@{{0}}: rebase (finish): returning to refs/heads/feature/token-rotation\n{a[:7]} HEAD@{{1}}: rebase (start): checkout {a}"


@look
def gh_actions_sha_pin():
    return "commit_hash", "en", (f"steps:\n  - uses: actions/checkout@{sha1()} # v4.1.6\n  - uses: actions/setup-node@{sha1()} # v4.0.2\n    with:\n      node-version: 20\n      cache: npm\n"
                                 "  - run: npm ci\n  - run: npm publish\n    env:\n      NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}")


@look
def go_pseudo_version():
    return "version_string", "en", f"require (\n\tgithub.com/acme/kit v0.0.0-2024{ri(1, 12):02d}{ri(10, 28)}{ri(100000, 235959)}-{hexs(12)}\n\tgolang.org/x/crypto v0.23.0\n\tgoogle.golang.org/grpc v1.64.0\n)"


@look
def go_sum():
    lines = [f"golang.org/x/{pick('net', 'sys', 'text', 'crypto', 'oauth2')} v0.{ri(10, 30)}.0 h1:{b64(rb(32))}",
             f"golang.org/x/{pick('net', 'sys', 'text', 'crypto', 'oauth2')} v0.{ri(10, 30)}.0/go.mod h1:{b64(rb(32))}",
             f"github.com/golang-jwt/jwt/v5 v5.2.1 h1:{b64(rb(32))}"]
    return "checksum", "en", "\n".join(lines)


# ------------------------------------------------------------------ containers
@look
def docker_pull():
    lines = [f"{hexs(12)}: Pull complete" for _ in range(ri(3, 5))]
    return "image_digest", "en", (f"$ docker pull {pick('postgres:16.3-alpine', 'node:20-bookworm-slim', 'redis:7.2.5', 'python:3.12-slim')}\n" + "\n".join(lines)
                                  + f"\nDigest: sha256:{sha256()}\nStatus: Downloaded newer image")


@look
def docker_ps():
    rows = [f"{hexs(12)}   ghcr.io/acme/api:1.{ri(0, 30)}.{ri(0, 9)}-{short()}   \"/entrypoint.sh\"   {ri(2, 50)} minutes ago   Up {ri(2, 50)} minutes   0.0.0.0:8080->8080/tcp   api-{ri(1, 3)}" for _ in range(3)]
    return "container_id", "en", "$ docker ps\nCONTAINER ID   IMAGE   COMMAND   CREATED   STATUS   PORTS   NAMES\n" + "\n".join(rows)


@look
def k8s_pod_images():
    return "image_digest", "en", (f"$ kubectl get pods -n prod\nNAME                           READY   STATUS    RESTARTS   AGE\napi-{hexs(10)}-{r(LO + DG, 5)}     1/1     Running   0          3d\nworker-{hexs(9)}-{r(LO + DG, 5)}  1/1     Running   2          3d\n"
                                  f"$ kubectl get pod api-x -o jsonpath='{{.status.containerStatuses[0].imageID}}'\nghcr.io/acme/api@sha256:{sha256()}")


@look
def docker_tag_semver():
    return "version_string", "en", f"Successfully built {hexs(12)}\nSuccessfully tagged acme/web:2.{ri(0, 19)}.{ri(0, 9)}-rc.{ri(1, 5)}+build.{ri(1000, 9999)}\nSuccessfully tagged acme/web:sha-{short()}\nBuild #{ri(1000, 20000)} (release/2024.{ri(10, 52)})"


@look
def oci_manifest():
    return "image_digest", "en", json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                             "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + sha256(), "size": ri(1000, 9000)},
                                             "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:" + sha256(), "size": ri(10**6, 10**8)} for _ in range(2)]}, indent=2)


# ------------------------------------------------------------------ package integrity / checksums
@look
def npm_lock_integrity():
    name = pick("lodash", "react-dom", "axios", "jsonwebtoken", "dotenv", "bcryptjs")
    return "sri_integrity", "en", ("\"node_modules/" + name + "\": {\n  \"version\": \"" + f"{ri(1, 18)}.{ri(0, 20)}.{ri(0, 9)}" + "\",\n  \"resolved\": \"https://registry.npmjs.org/" + name + "/-/" + name + "-4.17.21.tgz\",\n"
                                   f"  \"integrity\": \"sha512-{b64(rb(64))}\",\n  \"license\": \"MIT\"\n}}")


@look
def sri_script_tag():
    return "sri_integrity", "en", (f"<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js\" integrity=\"sha384-{b64(rb(48))}\" crossorigin=\"anonymous\"></script>\n"
                                   f"<link rel=\"stylesheet\" href=\"https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.5.2/css/all.min.css\" integrity=\"sha512-{b64(rb(64))}\" crossorigin=\"anonymous\" referrerpolicy=\"no-referrer\" />")


@look
def sha256sum_out():
    return "checksum", "en", "$ sha256sum dist/*\n" + "\n".join(f"{sha256()}  dist/acme-cli_{v}" for v in ["linux_amd64.tar.gz", "darwin_arm64.tar.gz", "windows_amd64.zip"])


@look
def md5_sha1_out():
    return "checksum", "en", f"$ md5sum backup.sql.gz\n{hexs(32)}  backup.sql.gz\n$ shasum -a 1 installer.pkg\n{sha1()}  installer.pkg\n$ b2sum -l 256 model.safetensors\n{sha256()}  model.safetensors"


@look
def pip_hashes():
    return "checksum", "en", (f"# requirements.txt (pip-compile --generate-hashes)\nrequests==2.32.3 \\\n    --hash=sha256:{sha256()} \\\n    --hash=sha256:{sha256()}\ncryptography==42.0.7 \\\n    --hash=sha256:{sha256()}")


@look
def poetry_lock():
    return "checksum", "en", f"[[package]]\nname = \"pyjwt\"\nversion = \"2.8.0\"\ndescription = \"JSON Web Token implementation in Python\"\nfiles = [\n    {{file = \"PyJWT-2.8.0-py3-none-any.whl\", hash = \"sha256:{sha256()}\"}},\n    {{file = \"PyJWT-2.8.0.tar.gz\", hash = \"sha256:{sha256()}\"}},\n]"


@look
def cargo_lock():
    return "checksum", "en", f"[[package]]\nname = \"ring\"\nversion = \"0.17.8\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{sha256()}\""


@look
def git_lfs_pointer():
    return "checksum", "en", f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256()}\nsize {ri(10**5, 10**9)}"


@look
def nix_store():
    return "file_path", "en", f"/nix/store/{r('0123456789abcdfghijklmnpqrsvwxyz', 32)}-openssl-3.0.13/lib/libssl.so.3\n/nix/store/{r('0123456789abcdfghijklmnpqrsvwxyz', 32)}-python3-3.11.9-env/bin/python"


@look
def terraform_lock():
    return "checksum", "en", (f"provider \"registry.terraform.io/hashicorp/aws\" {{\n  version     = \"5.50.0\"\n  constraints = \"~> 5.0\"\n  hashes = [\n    \"h1:{b64(rb(32))}\",\n    \"zh:{sha256()}\",\n    \"zh:{sha256()}\",\n  ]\n}}")


# ------------------------------------------------------------------ ids
@look
def request_ids():
    return "request_id", "en", (f"{ts()} INFO  request completed method=POST path=/v1/payments status=201 request_id={uid()} trace_id={hexs(32)} span_id={hexs(16)} duration_ms={ri(5, 900)}")


@look
def traceparent():
    return "request_id", "en", f"traceparent: 00-{hexs(32)}-{hexs(16)}-01\ntracestate: rojo=00f067aa0ba902b7\nX-Request-ID: {uid()}\nX-Amzn-Trace-Id: Root=1-{hexs(8)}-{hexs(24)}"


@look
def s3_error():
    return "request_id", "en", (f"An error occurred (AccessDenied) when calling the PutObject operation: Access Denied\nx-amz-request-id: {r(UP + DG, 16)}\nx-amz-id-2: {b64(rb(57))}")


@look
def s3_keys():
    keys = [f"s3://acme-prod-uploads/users/{uid()}/avatar/{hexs(32)}.webp",
            f"s3://acme-data-lake/raw/events/dt=2024-05-{ri(10, 28)}/part-00000-{uid()}-c000.snappy.parquet",
            f"s3://acme-artifacts/builds/{sha1()}/app-{short()}.zip"]
    return "object_key", "en", "$ aws s3 ls --recursive | head\n" + "\n".join(f"2024-05-{ri(10, 28)} 10:{ri(10, 59)}:{ri(10, 59)}  {ri(1000, 10**7):>9} {k.split('/', 3)[3]}" for k in keys) + "\n" + keys[0]


@look
def cache_keys():
    return "cache_key", "en", (f"Cache restored from key: Linux-node-modules-{sha256()}\nCache saved with key: pip-{hexs(64)}\nRestore keys: Linux-gradle-\n"
                               f"{ts()} Received 184549376 of 184549376 (100.0%), 62.1 MBs/sec")


@look
def build_chunks():
    return "file_path", "en", "\n".join(f"dist/assets/{n}-{r(URLS, 8)}.js   {ri(1, 400)}.{ri(10, 99)} kB │ gzip: {ri(1, 120)}.{ri(10, 99)} kB" for n in ["index", "vendor", "Login", "Settings", "charts"]) + "\n✓ built in 4.21s"


@look
def mongo_ids():
    return "request_id", "en", json.dumps({"_id": {"$oid": hexs(24)}, "orderId": "ORD-" + str(ri(10**9, 10**10)), "userId": hexs(24), "createdAt": {"$date": "2024-05-12T03:22:11.000Z"}, "status": "PAID"}, indent=2)


@look
def ulid_snowflake():
    return "request_id", "en", f"event_id={r('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)} message_id={ri(10**17, 10**18)} guild_id={ri(10**17, 10**18)} correlation={uid()}"


@look
def terraform_state():
    return "request_id", "en", json.dumps({"version": 4, "terraform_version": "1.8.3", "serial": ri(10, 900), "lineage": uid(), "outputs": {"vpc_id": {"value": "vpc-" + hexs(17), "type": "string"}, "db_password": {"value": None, "type": "string", "sensitive": True}}}, indent=2)


@look
def aws_resource_ids():
    return "resource_id", "en", (f"Instance i-{hexs(17)} in subnet subnet-{hexs(17)} (sg-{hexs(17)}) launched from ami-{hexs(17)}\n"
                                 f"Secret ARN: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db/password-{r(B62, 6)}\nKMS key: arn:aws:kms:us-east-1:123456789012:key/{uid()}")


@look
def stripe_object_ids():
    return "resource_id", "en", f"payment_intent.succeeded pi_{r(B62, 24)} customer=cus_{r(B62, 14)} charge=ch_{r(B62, 24)} event=evt_{r(B62, 24)} idempotency_key={uid()}"


@look
def ip_mac_uuid():
    return "network_id", "en", f"eth0: link/ether {':'.join(hexs(2) for _ in range(6))} brd ff:ff:ff:ff:ff:ff\n    inet6 fe80::{hexs(4)}:{hexs(4)}:{hexs(4)}:{hexs(4)}/64 scope link\nBoot ID: {hexs(32)}\nMachine ID: {hexs(32)}"


@look
def ipfs_cid():
    return "content_id", "en", f"Pinned: bafybei{r('abcdefghijklmnopqrstuvwxyz234567', 52)}\nLegacy CID: Qm{r('123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz', 44)}"


# ------------------------------------------------------------------ public keys / certs
@look
def ssh_pub_lines():
    return "public_key", "en", f"$ cat ~/.ssh/id_ed25519.pub\n{ssh_pub_ed()} li.wei@acme-mbp\n$ cat ~/.ssh/authorized_keys\n{ssh_pub_rsa()} deploy@ci"


@look
def known_hosts():
    return "public_key", "en", (f"github.com {ssh_pub_ed()}\n|1|{b64(rb(20))}|{b64(rb(20))} ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{r(B64, 87)}=")


@look
def ssh_fingerprints():
    return "fingerprint", "en", (f"The authenticity of host 'bastion.acme.io ({ip()})' can't be established.\nED25519 key fingerprint is SHA256:{b64(rb(32)).rstrip('=')}.\nThis key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])?")


@look
def pem_public():
    return "public_key", "en", "JWT verification key (public, safe to share):\n" + pub_pem()


@look
def pem_cert():
    return "certificate", "en", pick("$ openssl s_client -connect api.acme.io:443 -showcerts </dev/null\n", "ca.crt:\n", "") + cert_pem()


@look
def jwks():
    return "public_key", "en", json.dumps({"keys": [{"kty": "RSA", "use": "sig", "kid": hexs(40), "alg": "RS256", "n": b64u(rb(256)), "e": "AQAB"}]}, indent=2)


@look
def pgp_public():
    body = "mDMEZ" + r(B64, 350)
    body = body[: len(body) - len(body) % 4]
    return "public_key", "en", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(wrap(body, 64)) + "\n=" + r(B64, 4) + "\n-----END PGP PUBLIC KEY BLOCK-----"


@look
def gpg_fingerprint():
    fp = r(HEX.upper(), 40)
    return "fingerprint", "en", f"$ gpg --list-keys\npub   ed25519 2024-01-08 [SC] [expires: 2026-01-07]\n      {fp}\nuid           [ultimate] Li Wei <li.wei@acme.io>\nsub   cv25519 2024-01-08 [E]"


@look
def wg_public_only():
    return "public_key", "en", f"[Peer]\n# laptop-mwang\nPublicKey = {wg_key()}\nAllowedIPs = 10.8.0.7/32\nPersistentKeepalive = 25"


@look
def age_recipient():
    return "public_key", "en", f"# .sops.yaml\ncreation_rules:\n  - path_regex: secrets/.*\\.yaml$\n    age: age1{r(BECH.lower(), 58)}"


@look
def kube_ca_data():
    return "certificate", "en", f"clusters:\n- cluster:\n    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM{r(B64, 400)}\n    server: https://{ip()}:6443\n  name: kind-dev"


@look
def tls_fingerprint():
    return "fingerprint", "en", f"SHA256 Fingerprint={':'.join(r(HEX.upper(), 2) for _ in range(32))}\nserial={r(HEX.upper(), 32)}\nnotAfter=Aug 12 23:59:59 2025 GMT"


# ------------------------------------------------------------------ base64 of ordinary data
@look
def b64_plain():
    s = pick("hello world\n", "{\"env\":\"staging\",\"replicas\":3}", "Lorem ipsum dolor sit amet, consectetur adipiscing elit.", "apiVersion: v1\nkind: ConfigMap\n")
    return "base64_data", "en", f"$ echo '{s.strip()}' | base64\n{b64(s.encode())}"


@look
def data_uri():
    png = b"\x89PNG\r\n\x1a\n" + rb(90)
    return "base64_data", "en", f".icon {{ background-image: url(\"data:image/png;base64,{b64(png)}\"); width: 16px; }}"


@look
def k8s_configmap_binary():
    return "base64_data", "en", f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\nbinaryData:\n  logo.ico: {b64(rb(120))}\ndata:\n  LOG_LEVEL: info\n  FEATURE_FLAGS: \"new-checkout,dark-mode\""


@look
def email_mime():
    return "base64_data", "en", f"Content-Type: application/pdf; name=\"invoice-2024-05.pdf\"\nContent-Transfer-Encoding: base64\n\n{chr(10).join(wrap(b64(b'%PDF-1.7' + rb(200)), 76))}"


@look
def etag_headers():
    return "checksum", "en", f"HTTP/2 200\netag: \"{hexs(32)}\"\nx-goog-hash: crc32c={b64(rb(4))}\nx-goog-hash: md5={b64(rb(16))}\ncontent-md5: {b64(rb(16))}\ncache-control: public, max-age=31536000, immutable"


@look
def csp_nonce():
    return "nonce", "en", f"Content-Security-Policy: default-src 'self'; script-src 'self' 'nonce-{b64(rb(16))}' 'sha256-{b64(rb(32))}'; object-src 'none'"


# ------------------------------------------------------------------ placeholders / refs
@look
def env_example():
    return "placeholder", "en", pick(
        "# .env.example — copy to .env and fill in\nOPENAI_API_KEY=your-api-key-here\nDATABASE_URL=postgres://user:password@localhost:5432/dbname\nSTRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx\nJWT_SECRET=<generate with: openssl rand -hex 32>",
        "GITHUB_TOKEN=\nNPM_TOKEN=\nAWS_ACCESS_KEY_ID=<your-access-key-id>\nAWS_SECRET_ACCESS_KEY=<your-secret-access-key>",
        "ANTHROPIC_API_KEY=sk-ant-...\nHF_TOKEN=hf_...\nSLACK_BOT_TOKEN=xoxb-your-token\nSENTRY_DSN=",
        "DB_PASSWORD=********\nREDIS_PASSWORD=********\nSMTP_PASSWORD=<redacted>")


@look
def shell_var_refs():
    return "placeholder", "en", pick(
        "docker login -u \"$DOCKER_USER\" --password-stdin <<< \"$DOCKER_PASSWORD\"",
        "psql \"postgresql://$PGUSER:$PGPASSWORD@$PGHOST:5432/$PGDATABASE\"",
        "curl -H \"Authorization: Bearer ${GITHUB_TOKEN}\" https://api.github.com/repos/acme/web/releases",
        "mysql -u root -p\"${MYSQL_ROOT_PASSWORD}\" -h 127.0.0.1",
        "git remote set-url origin https://x-access-token:${GH_TOKEN}@github.com/acme/web.git",
        "echo \"//registry.npmjs.org/:_authToken=${NPM_TOKEN}\" > ~/.npmrc")


@look
def gha_secret_refs():
    return "secret_reference", "en", ("env:\n  AWS_ACCESS_KEY_ID: ${{ secrets.AWS_ACCESS_KEY_ID }}\n  AWS_SECRET_ACCESS_KEY: ${{ secrets.AWS_SECRET_ACCESS_KEY }}\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n"
                                      f"steps:\n  - uses: docker/login-action@v3\n    with:\n      username: ${{{{ vars.DOCKERHUB_USER }}}}\n      password: ${{{{ secrets.DOCKERHUB_TOKEN }}}}\n  # run {ri(1000, 9999)} sha {short()}")


@look
def gitlab_ci_refs():
    return "secret_reference", "en", "deploy:\n  script:\n    - echo \"$CI_REGISTRY_PASSWORD\" | docker login -u \"$CI_REGISTRY_USER\" --password-stdin $CI_REGISTRY\n    - helm upgrade app ./chart --set db.password=$DB_PASSWORD\n  only:\n    - main"


@look
def vault_refs():
    return "secret_reference", "en", pick(
        "database:\n  password: vault:secret/data/app#password\n  username: vault:secret/data/app#username",
        "DB_PASSWORD=@Microsoft.KeyVault(SecretUri=https://acme-kv.vault.azure.net/secrets/db-password/)",
        "password: '{{ lookup(\"community.hashi_vault.hashi_vault\", \"secret=secret/data/prod/db:password\") }}'",
        "spring.datasource.password=${sm://projects/acme-prod/secrets/db-password/versions/latest}",
        "valueFrom:\n  secretKeyRef:\n    name: postgres-credentials\n    key: password",
        "api_key: ref+awsssm://prod/payments/stripe_key\ndb_password: ref+vault://secret/prod#/db/password")


@look
def helm_placeholders():
    return "placeholder", "en", "# values.yaml (defaults)\nauth:\n  existingSecret: \"\"\n  password: \"\"  # set via --set auth.password or existingSecret\n  postgresPassword: \"\"\nredis:\n  password: \"${REDIS_PASSWORD}\"  # injected from sealed secret"


@look
def tfvars_example():
    return "placeholder", "en", "# terraform.tfvars.example\ndb_password     = \"REPLACE_ME\"\ndatadog_api_key = \"<datadog-api-key>\"\ncloudflare_api_token = var.cloudflare_api_token\nssh_public_key  = file(\"~/.ssh/id_ed25519.pub\")"


@look
def masked_ci_log():
    return "masked_secret", "en", (f"{ts()} Run docker login -u acmebot -p ***\n{ts()} WARNING! Using --password via the CLI is insecure. Use --password-stdin.\n{ts()} Login Succeeded\n"
                                   f"{ts()} NPM_TOKEN: ***\n{ts()} Cache key: npm-{sha256()}")


@look
def masked_dsn():
    return "masked_secret", "en", pick(
        "Connecting to mongodb+srv://<credentials>@cluster0.abcde.mongodb.net/production",
        "consumer: Cannot connect to amqp://guest:**@127.0.0.1:5672//: [Errno 111] Connection refused.",
        "sqlalchemy.engine.Engine: postgresql://app:***@db:5432/app",
        "INFO  Using DSN postgres://app:[REDACTED]@db.internal:5432/app",
        "Authorization: Bearer [redacted]\nX-Api-Key: [redacted]")


@look
def partial_token():
    return "masked_secret", "en", pick(
        f"GitHub: token ghp_************************{r(B62, 4)} was revoked because it was found in a public repository.",
        f"Stripe key sk_live_...{r(B62, 4)} rolled on 2024-05-10 by admin@acme.io",
        f"OpenAI: API key ending in ...{r(B62, 4)} was disabled for policy reasons.",
        f"AWS: Access key AKIA************{r(UP + '234567', 4)} deactivated.")


@look
def docs_prose():
    return "prose", "en", pick(
        "GitHub personal access tokens start with ghp_ and fine-grained ones with github_pat_; if you see one in a log, revoke it at Settings → Developer settings.",
        "Never pass the password on the command line (mysql -p<password>): it shows up in `ps` and in shell history. Use ~/.my.cnf or mysql_config_editor instead.",
        "A JWT has three base64url parts separated by dots: header.payload.signature. The payload is only encoded, not encrypted.",
        "Stripe uses sk_live_ for secret keys and pk_live_ for publishable keys; only the publishable key may ship in frontend code.",
        "AWS access key IDs begin with AKIA (long-term) or ASIA (temporary STS credentials).",
        "Set the token with `export HF_TOKEN=<your token>` or run `huggingface-cli login` and paste it when prompted.",
        "Rotate the webhook signing secret under Developers → Webhooks; old events will still verify for 24h.")


@look
def cli_prompts():
    return "prose", "en", pick(
        "$ gh auth login\n? What account do you want to log into? GitHub.com\n? How would you like to authenticate GitHub CLI? Paste an authentication token\nTip: you can generate a Personal Access Token here https://github.com/settings/tokens\n? Paste your authentication token: ****************************************",
        "$ npm login\nnpm notice Log in on https://registry.npmjs.org/\nLogin at:\nhttps://www.npmjs.com/login?next=/login/cli/" + uid() + "\nPress ENTER to open in the browser...",
        "$ aws configure\nAWS Access Key ID [****************7QXA]: \nAWS Secret Access Key [****************kP2e]: \nDefault region name [us-east-1]: \nDefault output format [json]:",
        "$ docker login\nUsername: acmebot\nPassword:\nLogin Succeeded")


@look
def error_messages():
    return "prose", "en", pick(
        "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}",
        "fatal: Authentication failed for 'https://github.com/acme/web.git/'",
        "psql: error: connection to server at \"localhost\" (::1), port 5432 failed: FATAL:  password authentication failed for user \"postgres\"",
        "botocore.exceptions.NoCredentialsError: Unable to locate credentials",
        "Error: getaddrinfo ENOTFOUND registry.npmjs.org\nnpm ERR! code E401\nnpm ERR! Unable to authenticate, your authentication token seems to be invalid.",
        f"jwt.exceptions.ExpiredSignatureError: Signature has expired (exp={ri(1.7e9, 1.8e9) if False else ri(1700000000, 1800000000)})")


@look
def urls_no_creds():
    return "url", "en", "\n".join([
        f"https://github.com/acme/web/pull/{ri(100, 9000)}/files#diff-{sha256()}",
        f"https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logsV2:log-groups/log-group/$252Faws$252Flambda$252Fapi/log-events/2024$252F05$252F12$252F$255B$2524LATEST$255D{hexs(32)}",
        f"https://www.youtube.com/watch?v={r(URLS, 11)}&t=42s",
        f"https://docs.google.com/document/d/{r(URLS, 44)}/edit",
        f"postgres://db.internal:5432/app?sslmode=verify-full"])


@look
def file_names():
    return "file_path", "en", pick(
        f"Saved to ~/Downloads/IMG_{ri(1000, 9999)}-{uid().upper()}.HEIC",
        f"/var/lib/docker/overlay2/{sha256()}/merged",
        f"~/Library/Developer/Xcode/DerivedData/Acme-{r(LO, 28)}/Build/Products",
        f"/tmp/pytest-of-runner/pytest-{ri(1, 99)}/test_upload0/{hexs(32)}.bin",
        f"node_modules/.cache/babel-loader/{hexs(32)}.json",
        f"~/.cache/huggingface/hub/models--bert-base-uncased/snapshots/{sha1()}/config.json")


@look
def cookies_nonsecret():
    return "cookie", "en", f"Cookie: _ga=GA1.1.{ri(10**8, 10**9)}.{ri(10**9, 2 * 10**9)}; _gid=GA1.2.{ri(10**8, 10**9)}.{ri(10**9, 2 * 10**9)}; theme=dark; lang=en-US; cookie_consent=accepted; ab_variant=B"


@look
def publishable_keys():
    return "public_identifier", "en", pick(
        f"const stripe = Stripe('pk_live_{r(B62, 99)}');  // publishable key — meant for the browser",
        f"<script src=\"https://js.stripe.com/v3/\"></script>\n<script>const stripe = Stripe('pk_test_{r(B62, 99)}');</script>",
        f"TWILIO_ACCOUNT_SID={twilio_ac()}\nGOOGLE_OAUTH_CLIENT_ID={ri(10**11, 10**12)}-{r(LO + DG, 32)}.apps.googleusercontent.com\nALGOLIA_APP_ID={r(UP + DG, 10)}")


@look
def uuid_table():
    rows = "\n".join(f"| {uid()} | {pick('alice', 'bob', 'carol', 'dave')} | {pick('active', 'suspended')} | 2024-0{ri(1, 9)}-{ri(10, 28)} |" for _ in range(4))
    return "uuid", "en", "| id | user | status | created |\n|---|---|---|---|\n" + rows


@look
def hashed_passwords_schema():
    return "prose", "en", "CREATE TABLE users (\n  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),\n  email citext UNIQUE NOT NULL,\n  password_hash text NOT NULL,  -- argon2id\n  api_token_last4 char(4),\n  created_at timestamptz DEFAULT now()\n);"


@look
def code_reading_env():
    return "placeholder", "en", pick(
        "client = OpenAI(api_key=os.environ[\"OPENAI_API_KEY\"])",
        "const token = process.env.GITHUB_TOKEN;\nif (!token) throw new Error('GITHUB_TOKEN is not set');",
        "password := os.Getenv(\"DB_PASSWORD\")\nif password == \"\" {\n\tlog.Fatal(\"DB_PASSWORD required\")\n}",
        "stripe.api_key = settings.STRIPE_SECRET_KEY  # loaded from AWS Secrets Manager at boot",
        "db_url = f\"postgresql://{user}:{password}@{host}:{port}/{name}\"")


@look
def random_cli_output():
    return "random_output", "en", pick(
        f"$ openssl rand -hex 4\n{hexs(8)}",
        f"$ uuidgen\n{uid().upper()}",
        f"Build ID: {hexs(40)}\nGo version: go1.22.3\nBuilt: 2024-05-10T08:00:00Z",
        f"$ node -e \"console.log(require('crypto').createHash('sha256').update('hello').digest('hex'))\"\n{hashlib.sha256(b'hello').hexdigest()}")


@look
def semver_changelog():
    return "version_string", "en", f"## [3.{ri(0, 9)}.{ri(0, 20)}] - 2024-05-{ri(10, 28)}\n### Security\n- Tokens are no longer written to debug logs (#{ri(1000, 5000)})\n- Bump jsonwebtoken to 9.0.2\n\nFull diff: v3.4.0...v3.5.0 ({short()})"


# ------------------------------------------------------------------ Chinese / Traditional / mixed
@look
def zh_prose():
    return "prose", "zh", pick(
        "密码不要写在代码里，统一用环境变量 $DB_PASSWORD，从 Vault 里注入。",
        "token 已经失效了，我去后台重新生成一个再发你（私聊）。",
        "请把 API Key 配到 CI 的 Secret 里，名字叫 OPENAI_API_KEY，不要贴在群里。",
        "GitHub 的 token 以 ghp_ 开头，泄露后要马上在 Settings 里撤销。",
        "这次发版的 commit 是 " + sha1()[:10] + "，镜像 tag 是 v2.3.1，回滚就用上一个 tag。",
        "数据库密码已经轮换，新密码在 1Password 的「生产-数据库」条目里。")


@look
def zh_logs():
    return "request_id", "zh", pick(
        f"[{ts()}] 支付回调成功 订单号={ri(10**17, 10**18)} 交易流水号={hexs(32)} 请求ID={uid()}",
        f"上传完成：文件 MD5={hexs(32)}，对象存储路径 oss://acme-prod/uploads/2024/05/{uid()}.jpg",
        f"构建 #{ri(1000, 9999)} 成功，镜像 registry.cn-hangzhou.aliyuncs.com/acme/api@sha256:{sha256()}",
        f"链路追踪 traceId={hexs(32)} spanId={hexs(16)}，耗时 {ri(10, 999)}ms")


@look
def hant_prose():
    return "prose", "zh-Hant", pick(
        "請不要把金鑰貼在聊天室，改用密碼管理器分享。",
        "密碼欄位請填 ********，實際值由部署流程自動帶入。",
        "這個 PR 的 commit 是 " + sha1()[:12] + "，麻煩幫忙 review。",
        "權杖過期了，請到後台重新產生，然後更新 ${API_TOKEN} 這個環境變數。",
        f"憑證指紋 SHA256:{b64(rb(32)).rstrip('=')}，與伺服器上的一致。")


@look
def mixed_prose():
    return "prose", "mixed", pick(
        "CI 里的 NPM_TOKEN 用 ${{ secrets.NPM_TOKEN }} 注入就好，不用 hardcode。",
        "这个 SHA " + sha256() + " 是 release tarball 的 checksum, 不是 key 哈。",
        "request_id " + uid() + " 这条请求 timeout 了，帮忙查下 log",
        "password 字段我改成 <your-password> 了，README 里也 update 了",
        "把 ssh public key 发我就行（ssh-ed25519 开头那行），私钥千万别发。",
        "docker image 用 acme/api:1.8.2-" + short() + " 這個 tag，digest 在 release note 裡。")


@look
def zh_placeholder_config():
    return "placeholder", "zh", "# 配置示例（请替换为自己的值）\napp_key: 你的AppKey\napp_secret: <在控制台获取>\naccess_key_id: ${ALIYUN_AK}\naccess_key_secret: ${ALIYUN_SK}\nwebhook: https://open.feishu.cn/open-apis/bot/v2/hook/xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"


@look
def zh_public_key_share():
    return "public_key", "zh", f"这是我的公钥，加到服务器 authorized_keys 里吧：\n{ssh_pub_ed()} zhang@laptop"


@look
def hant_cert_share():
    return "certificate", "zh-Hant", "這是公開的 CA 憑證，可以直接放到信任清單：\n" + cert_pem()


@look
def mixed_hash_chat():
    return "checksum", "mixed", f"下载完记得校验一下 sha256：{sha256()}  ollama-linux-amd64.tgz，对不上就重新 download"


@look
def zh_git_log():
    msgs = ["修复登录 token 过期后无限重试的问题", "移除配置文件中的明文密码，改为读取环境变量", "升级 jsonwebtoken 到 9.0.2", "feat: 支持阿里云 OSS 上传", "文档：如何轮换 API 密钥"]
    return "commit_hash", pick("zh", "mixed"), "$ git log --oneline\n" + "\n".join(f"{short()} {m}" for m in R.sample(msgs, 4))


@look
def hant_logs():
    return "request_id", "zh-Hant", pick(
        f"[{ts()}] 付款完成 訂單編號={ri(10**11, 10**12)} 交易序號={uid()}",
        f"部署成功，映像檔 ghcr.io/acme/web@sha256:{sha256()}",
        f"檔案 SHA-256：{sha256()}，請核對後再安裝",
        f"追蹤代碼 trace_id={hexs(32)}，請附在問題回報中")


@look
def mixed_env_example():
    return "placeholder", pick("zh", "mixed"), pick(
        "# 复制为 .env 后填写\nOPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxx\nDB_PASSWORD=<数据库密码>\nREDIS_URL=redis://:<密码>@localhost:6379/0",
        "ALIYUN_ACCESS_KEY_ID=你的AccessKeyId\nALIYUN_ACCESS_KEY_SECRET=你的AccessKeySecret\n# 不要提交真实的值！",
        "token: ${{ secrets.DEPLOY_TOKEN }}  # 在仓库 Settings → Secrets 里配置",
        "password: \"******\"  # 真实密码在 K8s Secret 里")


@look
def zh_masked():
    return "masked_secret", pick("zh", "zh-Hant"), pick(
        "日志里的密码已脱敏：password=***，authorization=Bearer ***",
        "已撤銷權杖 ghp_************************" + r(B62, 4) + "，新的會私訊給你",
        "AccessKey ID: LTAI****************，Secret 已隐藏",
        "連線字串：postgresql://app:********@db.internal:5432/app")


@look
def zh_pub_cert():
    return "public_key", pick("zh", "zh-Hant"), pick(
        "JWT 验签用的公钥如下（可以公开）：\n" + pub_pem(),
        "WireGuard 對端公鑰：" + wg_key() + "，私鑰不要傳給我",
        "GPG 指纹 " + " ".join(r(HEX.upper(), 4) for _ in range(10)) + "，请核对")


@look
def zh_uuid_config():
    return "uuid", pick("zh", "mixed"), f"租户 ID：{uid()}\n订阅 ID：{uid()}\n应用（客户端）ID：{uid()}\n这几个都不是密钥，可以放配置里"
