"""Secret-bearing templates. Each returns (family, lang, text, [secrets])."""
import json
from gen_common import *

T = []


def sec(fn):
    T.append(fn)
    return fn


# ------------------------------------------------------------------ VCS / git
@sec
def git_push_url():
    org, repo = pick(*ORGS), pick(*REPOS)
    v = ri(0, 4)
    if v == 0:
        t = ghp(); url = f"https://{pick('jdoe', 'ci-bot', 'mwang')}:{t}@github.com/{org}/{repo}.git"
        msg = "remote: Invalid username or password.\nfatal: Authentication failed for '" + url + "/'"
    elif v == 1:
        t = glpat(); url = f"https://oauth2:{t}@gitlab.com/{org}/{repo}.git"
        msg = ("remote: HTTP Basic: Access denied. The provided password or token is incorrect or your account has 2FA enabled and you must use a personal access token instead of a password. See https://gitlab.com/help/topics/git/troubleshooting_git#error-on-git-fetch-http-basic-access-denied\n"
               f"fatal: Authentication failed for '{url}/'")
    elif v == 2:
        t = bb_app(); url = f"https://x-token-auth:{t}@bitbucket.org/{org}/{repo}.git"
        msg = f"remote: Your credentials lack one or more required privilege scopes.\nfatal: unable to access '{url}/': The requested URL returned error: 403"
    elif v == 3:
        t = azdo_pat(); url = f"https://{org}:{t}@dev.azure.com/{org}/Platform/_git/{repo}"
        msg = f"remote: TF401019: The Git repository with name or identifier {repo} does not exist or you do not have permissions for the operation you are attempting.\nfatal: repository '{url}/' not found"
    else:
        t = github_pat(); url = f"https://{t}@github.com/{org}/{repo}.git"
        msg = f"remote: Permission to {org}/{repo}.git denied to deploy-bot.\nfatal: unable to access '{url}/': The requested URL returned error: 403"
    text = f"$ git push origin {pick('main', 'master', 'feature/login-fix')}\n{msg}"
    return "git_remote_url", "en", text, [t]


@sec
def git_remote_v():
    org, repo = pick(*ORGS), pick(*REPOS)
    t = pick(ghs, ghp, gho)()
    url = f"https://x-access-token:{t}@github.com/{org}/{repo}"
    text = (f"why does CI keep pushing to the wrong fork?\n\n$ git remote -v\norigin\t{url} (fetch)\norigin\t{url} (push)\n"
            f"upstream\thttps://github.com/{pick(*ORGS)}/{repo}.git (fetch)\nupstream\thttps://github.com/{pick(*ORGS)}/{repo}.git (push)")
    return "git_remote_url", "en", text, [t]


@sec
def git_config_file():
    t = pick(glpat, ghp, gitea)()
    host = pick("gitlab.internal.acme.io", "github.com", "git.tiangong.cn")
    text = (f"# .git/config\n[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
            f"[remote \"origin\"]\n\turl = https://{pick('deploy', 'gitlab-ci-token', 'bot')}:{t}@{host}/{pick(*ORGS)}/{pick(*REPOS)}.git\n"
            f"\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main")
    return "git_remote_url", "en", text, [t]


@sec
def git_credentials_store():
    t1, t2 = ghp(), glpat()
    text = (f"$ cat ~/.git-credentials\nhttps://{pick('mwang', 'jdoe')}:{t1}@github.com\nhttps://oauth2:{t2}@gitlab.com\n"
            "$ git config --global credential.helper\nstore")
    return "git_credentials", "en", text, [t1, t2]


# ------------------------------------------------------------------ docker / registries
@sec
def docker_login():
    v = ri(0, 3)
    if v == 0:
        t = dckr(); cmd = f"docker login -u {pick('acmebot', 'lwei', 'deploy')} -p {t}"
    elif v == 1:
        t = ghp(); cmd = f"docker login ghcr.io -u {pick('octo-ci', 'mwang')} -p {t}"
    elif v == 2:
        t = glpat(); cmd = f"docker login registry.gitlab.com -u gitlab-ci-token -p {t}"
    else:
        t = pw_u(); cmd = f"docker login harbor.{pick('acme.io', 'corp.cn')} --username robot$ci --password '{t}'"
    res = pick('Login Succeeded', 'Error response from daemon: Get "https://registry-1.docker.io/v2/": unauthorized: incorrect username or password')
    text = f"$ {cmd}\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\n{res}"
    return "docker_login", "en", text, [t]


@sec
def docker_ecr_login():
    t = ecr_pw()
    acct = ri(10**11, 10**12 - 1)
    text = (f"+ aws ecr get-login-password --region us-east-1\n{t}\n"
            f"+ docker login --username AWS --password-stdin {acct}.dkr.ecr.us-east-1.amazonaws.com\nLogin Succeeded")
    return "docker_login", "en", text, [t]


@sec
def docker_config_json():
    user, p = pick("acmebot", "ci", "robot$deployer"), pw_u()
    a = b64(f"{user}:{p}".encode())
    text = ("$ cat ~/.docker/config.json\n" + json.dumps({"auths": {pick("https://index.docker.io/v1/", "harbor.acme.io", "registry.cn-hangzhou.aliyuncs.com"): {"auth": a}}, "currentContext": "desktop-linux"}, indent=2))
    return "docker_config", "en", text, [a]


@sec
def docker_compose_env():
    p1, p2 = pw(), pw_strong(32, B62)
    text = (f"version: \"3.9\"\nservices:\n  db:\n    image: postgres:16-alpine\n    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: {p1}\n      POSTGRES_DB: app\n"
            f"    ports:\n      - \"5432:5432\"\n  minio:\n    image: minio/minio:RELEASE.2024-05-10T01-41-38Z\n    environment:\n      MINIO_ROOT_USER: minioadmin\n      MINIO_ROOT_PASSWORD: {p2}\n    command: server /data --console-address :9001")
    return "docker_compose", "en", text, [p1, p2]


# ------------------------------------------------------------------ databases
@sec
def psql_dsn():
    u, h, p = pick(*USERS), pick(*HOSTS), pw_u()
    db = pick("app", "warehouse", "billing", "postgres")
    text = (f"$ psql \"postgresql://{u}:{p}@{h}:5432/{db}?sslmode=require\"\n"
            f"psql: error: connection to server at \"{h}\" ({ip()}), port 5432 failed: FATAL:  password authentication failed for user \"{u}\"")
    return "postgres_dsn", "en", text, [p]


@sec
def pgpassword_env():
    p = pw_u()
    h = pick(*HOSTS)
    text = (f"PGPASSWORD='{p}' pg_dump -h {h} -U postgres -d app -Fc -f /backups/app_$(date +%F).dump\n"
            "pg_dump: error: connection to server at \"" + h + "\" failed: timeout expired")
    return "postgres_dsn", "en", text, [p]


@sec
def pgpass_file():
    p1, p2 = pw(), pw()
    text = (f"$ cat ~/.pgpass\n{pick(*HOSTS)}:5432:app:app_user:{p1}\nlocalhost:5432:*:postgres:{p2}\n$ ls -l ~/.pgpass\n-rw------- 1 dev dev 96 Mar  2 10:11 /home/dev/.pgpass")
    return "postgres_dsn", "en", text, [p1, p2]


@sec
def mysql_cli():
    p = pick(pw_u, pw_weak)()
    if "@" in p:
        p = pw_u()
    h = pick(*HOSTS)
    text = (f"$ mysql -u root -p{p} -h {h} shop_prod\nmysql: [Warning] Using a password on the command line interface can be insecure.\n"
            f"ERROR 1045 (28000): Access denied for user 'root'@'{ip()}' (using password: YES)")
    return "mysql_cli", "en", text, [p]


@sec
def mysqldump():
    p = pw_u()
    text = (f"0 3 * * * /usr/bin/mysqldump --single-transaction -u backup --password={p} --all-databases | gzip > /var/backups/mysql-$(date +\\%F).sql.gz")
    return "mysql_cli", "en", text, [p]


@sec
def mongodb_uri():
    u, p = pick("admin", "appUser", "analytics"), pw_u()
    cl = f"cluster0.{r(LO + DG, 5)}.mongodb.net"
    text = (f"$ mongosh \"mongodb+srv://{u}:{p}@{cl}/production?retryWrites=true&w=majority\"\nCurrent Mongosh Log ID:\t{hexs(24)}\n"
            f"Connecting to:\t\tmongodb+srv://<credentials>@{cl}/production?retryWrites=true&w=majority&appName=mongosh+2.2.5\nMongoServerError: bad auth : authentication failed")
    return "mongodb_uri", "en", text, [p]


@sec
def redis_cli():
    p = pw_strong(32, B62)
    v = ri(0, 1)
    if v == 0:
        text = (f"$ redis-cli -h redis-master.cache.svc -p 6379 -a {p} info replication\nWarning: Using a password with '-a' or '-u' option on the command line interface may not be safe.\n# Replication\nrole:master\nconnected_slaves:2")
    else:
        text = (f"redis.exceptions.AuthenticationError: invalid username-password pair or user is disabled.\n\nDuring handling, REDIS_URL was rediss://default:{p}@{pick('redis-12345.c1.us-east-1-2.ec2.cloud.redislabs.com', 'cache.internal')}:6380/0")
    return "redis_url", "en", text, [p]


@sec
def amqp_celery():
    p = pw_u()
    text = (f"# settings/production.py\nCELERY_BROKER_URL = \"amqp://svc_worker:{p}@rabbitmq.internal:5672/prod\"\nCELERY_RESULT_BACKEND = \"redis://redis.internal:6379/1\"\n"
            "CELERY_TASK_ACKS_LATE = True")
    return "amqp_url", "en", text, [p]


@sec
def kafka_jaas():
    k, s = r(UP + DG, 16), confluent_secret()
    text = (f"bootstrap.servers=pkc-{r(LO + DG, 5)}.us-west-2.aws.confluent.cloud:9092\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{k}\" password=\"{s}\";\nsession.timeout.ms=45000")
    return "kafka_sasl", "en", text, [s]


@sec
def jdbc_url():
    p = pw_u()
    v = ri(0, 2)
    if v == 0:
        url = f"jdbc:postgresql://{pick(*HOSTS)}:5432/orders?user=orders_svc&password={p}&ssl=true"
    elif v == 1:
        url = f"jdbc:sqlserver://sql01.corp.local:1433;databaseName=ERP;user=sa;password={p};encrypt=true;trustServerCertificate=true"
    else:
        url = f"jdbc:mysql://orders_svc:{p}@{pick(*HOSTS)}:3306/orders?useSSL=false"
    text = (f"Caused by: java.sql.SQLException: Cannot create PoolableConnectionFactory (Connection refused)\n\tat org.apache.commons.dbcp2.BasicDataSource.createPoolableConnectionFactory(BasicDataSource.java:669)\n"
            f"2024-05-02 11:23:45.120 ERROR 1 --- [main] o.s.b.SpringApplication : Application run failed, url={url}")
    return "jdbc_url", "en", text, [p]


@sec
def spring_yaml():
    p = pw()
    text = (f"spring:\n  datasource:\n    url: jdbc:postgresql://{pick(*HOSTS)}:5432/inventory\n    username: inventory\n    password: {p}\n  jpa:\n    hibernate:\n      ddl-auto: validate\n"
            f"  mail:\n    host: smtp.office365.com\n    username: noreply@acme.com\n    password: {(p2 := pw_human())}")
    return "spring_config", "en", text, [p, p2]


@sec
def sqlalchemy_traceback():
    p, h = pw_u(), pick(*HOSTS)
    text = (f"Traceback (most recent call last):\n  File \"/app/etl/load.py\", line 14, in <module>\n    engine = create_engine(\"postgresql+psycopg2://etl:{p}@{h}:5432/warehouse\", pool_pre_ping=True)\n"
            f"  File \"/usr/local/lib/python3.11/site-packages/sqlalchemy/engine/create.py\", line 552, in create_engine\n    dbapi = dbapi_meth(**dbapi_args)\n"
            f"sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) could not translate host name \"{h}\" to address: Name or service not known\n\n(Background on this error at: https://sqlalche.me/e/20/e3q8)")
    return "python_traceback_dsn", "en", text, [p]


@sec
def django_db_traceback():
    p = pw()
    text = (f"  File \"/srv/app/config/settings.py\", line 88, in <module>\n    'PASSWORD': '{p}',\n"
            "django.db.utils.OperationalError: connection to server at \"db\" (172.20.0.3), port 5432 failed: FATAL:  password authentication failed for user \"django\"")
    return "python_traceback_dsn", "en", text, [p]


@sec
def pymongo_traceback():
    p = pw_u()
    text = (f">>> client = MongoClient('mongodb://root:{p}@mongo-0.mongo:27017,mongo-1.mongo:27017/?replicaSet=rs0&authSource=admin')\n>>> client.admin.command('ping')\n"
            "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\npymongo.errors.OperationFailure: Authentication failed., full error: {'ok': 0.0, 'errmsg': 'Authentication failed.', 'code': 18, 'codeName': 'AuthenticationFailed'}")
    return "python_traceback_dsn", "en", text, [p]


@sec
def snowflake_conn():
    p = pw()
    text = (f"import snowflake.connector\nconn = snowflake.connector.connect(\n    user=\"ANALYTICS_SVC\",\n    password=\"{p}\",\n    account=\"xy12345.eu-central-1\",\n    warehouse=\"COMPUTE_WH\",\n)\n"
            "# snowflake.connector.errors.DatabaseError: 250001 (08001): Failed to connect to DB: Incorrect username or password was specified.")
    return "python_code", "en", text, [p]


# ------------------------------------------------------------------ kubernetes / IaC
@sec
def kubectl_decoded():
    p = pw()
    text = (f"$ kubectl get secret postgres-credentials -n {pick('prod', 'payments', 'default')} -o jsonpath='{{.data.password}}' | base64 -d\n{p}\n$ ")
    return "k8s_secret", "en", text, [p]


@sec
def kubectl_yaml():
    p, k = pw(), pick(stripe_sk, sendgrid, openai_key)()
    text = (f"$ kubectl get secret app-env -o yaml\napiVersion: v1\ndata:\n  DB_PASSWORD: {b64(p.encode())}\n  API_KEY: {b64(k.encode())}\n  DB_USER: {b64(b'app')}\nkind: Secret\n"
            f"metadata:\n  creationTimestamp: \"2024-04-11T08:21:37Z\"\n  name: app-env\n  namespace: prod\n  resourceVersion: \"{ri(10**6, 10**8)}\"\n  uid: {uid()}\ntype: Opaque")
    return "k8s_secret", "en", text, [b64(p.encode()), b64(k.encode())]


@sec
def kubectl_jq_decoded():
    a, s = akia(), aws_secret()
    text = ("$ kubectl get secret aws-creds -o json | jq '.data | map_values(@base64d)'\n" + json.dumps({"AWS_ACCESS_KEY_ID": a, "AWS_SECRET_ACCESS_KEY": s, "AWS_REGION": "eu-central-1"}, indent=2))
    return "k8s_secret", "en", text, [a, s]


@sec
def k8s_manifest_stringdata():
    t, p = pick(slack_wh, lambda: xoxb())(), pw()
    if "/" in t:
        val = "https://hooks.slack.com/services/" + t
        lab = t.split("/")[-1]
    else:
        val = lab = t
    text = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: alertmanager-secrets\n  namespace: monitoring\ntype: Opaque\nstringData:\n  slack_url: \"{val}\"\n  smtp_auth_password: \"{p}\"")
    return "k8s_secret", "en", text, [lab, p]


@sec
def kubeconfig_token():
    v = ri(0, 1)
    if v == 0:
        t = jwt({"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "kube-system", "kubernetes.io/serviceaccount/service-account.name": "ci-deployer", "sub": "system:serviceaccount:kube-system:ci-deployer"}, alg="RS256", kid=r(URLS, 43))
        user = f"- name: ci-deployer\n  user:\n    token: {t}"
        lab = [t]
    else:
        _, ls = rsa_pem()
        full = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(ls) + "\n-----END RSA PRIVATE KEY-----\n"
        t = b64(full.encode())
        user = f"- name: kubernetes-admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURJVENDQWdtZ0F3SUJBZ0lJ{r(B64, 60)}\n    client-key-data: {t}"
        lab = [t]
    text = (f"apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM1ekNDQWMrZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKY201bGRHVnpNQjRYRFRJ{r(B64, 40)}\n"
            f"    server: https://{ip()}:6443\n  name: prod\ncontexts:\n- context:\n    cluster: prod\n    user: {user.split(chr(10))[0][8:]}\n  name: prod\ncurrent-context: prod\nkind: Config\nusers:\n{user}")
    return "kubeconfig", "en", text, lab


@sec
def terraform_tfvars():
    p, d, c = pw(), dd_api(), cf_tok()
    text = (f"# terraform.tfvars  (accidentally committed)\nproject_id      = \"acme-prod-{ri(1000, 9999)}\"\nregion          = \"eu-west-1\"\ninstance_count  = 3\n"
            f"db_password     = \"{p}\"\ndatadog_api_key = \"{d}\"\ncloudflare_api_token = \"{c}\"")
    return "terraform", "en", text, [p, d, c]


@sec
def terraform_provider():
    v = ri(0, 2)
    if v == 0:
        t = do_tok(); blk = f"provider \"digitalocean\" {{\n  token = \"{t}\"\n}}"
    elif v == 1:
        t = tfc(); blk = f"credentials \"app.terraform.io\" {{\n  token = \"{t}\"\n}}"
    else:
        t = aws_secret(); a = akia(); blk = f"provider \"aws\" {{\n  region     = \"ap-southeast-1\"\n  access_key = \"{a}\"\n  secret_key = \"{t}\"\n}}"
        return "terraform", "en", blk + "\n\n│ Error: configuring Terraform AWS Provider: validating provider credentials", [a, t]
    text = blk + "\n\n$ terraform plan\n╷\n│ Error: Unauthorized\n│ \n│   with provider[\"registry.terraform.io/...\"],\n╵"
    return "terraform", "en", text, [t]


@sec
def tf_var_env():
    p, t = pw_u(), pick(pulumi, tfc, do_tok)()
    text = f"$ export TF_VAR_db_admin_password='{p}'\n$ export TF_TOKEN_app_terraform_io={t}\n$ terraform apply -auto-approve -var-file=prod.tfvars"
    return "terraform", "en", text, [p, t]


@sec
def ansible_vars():
    p1, p2, p3 = pw(), pw(), pw_strong(40, B62)
    text = (f"# inventories/prod/group_vars/all.yml\nansible_user: deploy\nansible_become_password: \"{p1}\"\npostgres_replication_password: {p2}\n"
            f"app_secret_key: {p3}\nntp_servers:\n  - 0.pool.ntp.org\n  - 1.pool.ntp.org")
    return "ansible", "en", text, [p1, p2, p3]


@sec
def ansible_cmdline():
    p = pw_u()
    text = (f"$ ansible-playbook -i hosts.ini site.yml -e \"ansible_ssh_pass={p} ansible_become_pass={p}\" --limit web\n\nPLAY [web] ************************************************************\n\nTASK [Gathering Facts] ************************************************\nok: [web01]")
    return "ansible", "en", text, [p]


@sec
def helm_set():
    p1, p2 = pw_u(), pw_u()
    text = (f"$ helm upgrade --install pg bitnami/postgresql -n data --create-namespace \\\n    --set auth.postgresPassword='{p1}' \\\n    --set auth.username=app --set auth.password='{p2}' \\\n    --set primary.persistence.size=50Gi\n"
            "Release \"pg\" has been upgraded. Happy Helming!\nNAME: pg\nLAST DEPLOYED: Thu May 16 09:41:12 2024\nNAMESPACE: data\nSTATUS: deployed\nREVISION: 4")
    return "helm", "en", text, [p1, p2]


@sec
def helm_values():
    p, s = pw(), sendgrid()
    text = (f"# values-prod.yaml\nreplicaCount: 3\nimage:\n  repository: ghcr.io/acme/api\n  tag: \"1.14.2\"\nredis:\n  auth:\n    enabled: true\n    password: \"{p}\"\n"
            f"smtp:\n  host: smtp.sendgrid.net\n  port: 587\n  username: apikey\n  password: {s}")
    return "helm", "en", text, [p, s]


# ------------------------------------------------------------------ CI logs / env dumps
ENV_POOL = [
    ("GITHUB_TOKEN", ghs), ("NPM_TOKEN", npm_tok), ("AWS_SECRET_ACCESS_KEY", aws_secret), ("AWS_ACCESS_KEY_ID", akia),
    ("OPENAI_API_KEY", openai_key), ("STRIPE_SECRET_KEY", stripe_sk), ("SENTRY_AUTH_TOKEN", sentry_auth),
    ("DATABASE_URL", None), ("SLACK_BOT_TOKEN", xoxb), ("DOCKERHUB_TOKEN", dckr), ("CODECOV_TOKEN", uid),
    ("HF_TOKEN", hf), ("ANTHROPIC_API_KEY", anthropic_key), ("SONAR_TOKEN", sonar), ("VERCEL_TOKEN", vercel),
    ("DD_API_KEY", dd_api), ("PYPI_API_TOKEN", pypi_tok), ("X_API_KEY", lambda: r(B62, 40)), ("REDIS_PASSWORD", pw_url),
    ("NETLIFY_AUTH_TOKEN", netlify), ("CIRCLE_TOKEN", circleci), ("BUILDKITE_AGENT_TOKEN", lambda: r(HEX, 50)),
    ("CI_JOB_TOKEN", lambda: "glcbt-" + r(URLS, 20)), ("FIGMA_TOKEN", figma), ("GROQ_API_KEY", groq),
    ("LANGCHAIN_API_KEY", langsmith), ("PINECONE_API_KEY", pinecone), ("JWT_SECRET", lambda: r(B62, 48)),
]
ENV_PLAIN = ["HOME=/home/runner", "HOSTNAME=runner-7f9c-" + "x2k9p", "LANG=C.UTF-8", "NODE_ENV=production", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "PWD=/home/runner/work/app/app", "RUNNER_OS=Linux", "SHLVL=1", "TERM=xterm-256color", "TZ=UTC", "CI=true", "GITHUB_REF=refs/heads/main",
             "GITHUB_REPOSITORY=acme/web", "GITHUB_RUN_ID=8911234567", "JAVA_HOME=/usr/lib/jvm/temurin-17-jdk-amd64", "PYTHONUNBUFFERED=1"]


def env_secret(name, fn):
    if fn is None:
        p = pw_u()
        return f"postgres://app:{p}@{pick(*HOSTS)}:5432/app", p
    v = fn()
    return v, v


@sec
def env_sort_dump():
    items = R.sample(ENV_POOL, ri(3, 5))
    lines, labs = list(R.sample(ENV_PLAIN, 6)), []
    lines.append(f"GITHUB_SHA={sha1()}")
    for n, f in items:
        v, lab = env_secret(n, f)
        lines.append(f"{n}={v}")
        labs.append(lab)
    lines.sort()
    text = pick("$ env | sort\n", "+ printenv | sort\n", "debug step output:\n") + "\n".join(lines)
    return "ci_env_dump", "en", text, labs


@sec
def gha_log_curl():
    t = pick(vercel, netlify, do_tok, cf_tok)()
    text = (f"{ts()} ##[group]Run ./scripts/deploy.sh\n{ts()} ./scripts/deploy.sh\n{ts()} shell: /usr/bin/bash -e {{0}}\n{ts()} ##[endgroup]\n"
            f"{ts()} + curl -sSf -X POST -H 'Authorization: Bearer {t}' -H 'Content-Type: application/json' https://api.{pick('vercel.com/v13/deployments', 'netlify.com/api/v1/sites', 'digitalocean.com/v2/apps', 'cloudflare.com/client/v4/zones')}\n"
            f"{ts()} curl: (22) The requested URL returned error: 403\n{ts()} ##[error]Process completed with exit code 22.")
    return "gha_log", "en", text, [t]


@sec
def gha_log_npmrc():
    t = npm_tok()
    text = (f"{ts()} Run cat .npmrc\n{ts()} //registry.npmjs.org/:_authToken={t}\n{ts()} always-auth=true\n{ts()} Run npm publish --access public\n"
            f"{ts()} npm notice Publishing to https://registry.npmjs.org/ with tag latest and public access\n{ts()} npm ERR! code E403")
    return "gha_log", "en", text, [t]


@sec
def gitlab_ci_log():
    p = pw_u(); t = glpat()
    text = (f"Running with gitlab-runner 16.11.0 (91a27b2a)\n  on docker-runner-03 {r(LO + DG, 8)}, system ID: s_{hexs(12)}\n$ echo \"Deploying with DEPLOY_TOKEN=$DEPLOY_TOKEN\"\nDeploying with DEPLOY_TOKEN={t}\n"
            f"$ mysql -h $DB_HOST -u deploy --password=\"{p}\" -e 'SELECT 1'\nmysql: [Warning] Using a password on the command line interface can be insecure.\nERROR: Job failed: exit code 1")
    return "gitlab_ci_log", "en", text, [t, p]


@sec
def jenkins_console():
    p = pw_u()
    t = jenkins_tok()
    text = (f"[Pipeline] sh\n+ curl -s -u ci-admin:{t} https://jenkins.acme.io/job/release/buildWithParameters?VERSION=2.3.1\n[Pipeline] sh\n+ sshpass -p {p} scp build/app.tar.gz deploy@{ip()}:/opt/app/\n"
            "Warning: Permanently added '10.1.4.22' (ED25519) to the list of known hosts.\n[Pipeline] }\nFinished: SUCCESS")
    return "jenkins_log", "en", text, [t, p]


# ------------------------------------------------------------------ HTTP debug
@sec
def requests_debug():
    v = ri(0, 3)
    host, path, tok = [("api.openai.com", "/v1/chat/completions", openai_key), ("api.anthropic.com", "/v1/messages", anthropic_key),
                       ("api.groq.com", "/openai/v1/chat/completions", groq), ("api.mistral.ai", "/v1/chat/completions", mistral)][v]
    t = tok()
    hdr = f"x-api-key: {t}" if "anthropic" in host else f"Authorization: Bearer {t}"
    text = (f"DEBUG:urllib3.connectionpool:Starting new HTTPS connection (1): {host}:443\n"
            f"send: b'POST {path} HTTP/1.1\\r\\nHost: {host}\\r\\nUser-Agent: python-requests/2.31.0\\r\\nAccept-Encoding: gzip, deflate\\r\\nAccept: */*\\r\\nConnection: keep-alive\\r\\n{hdr}\\r\\nContent-Length: {ri(90, 400)}\\r\\nContent-Type: application/json\\r\\n\\r\\n'\n"
            f"reply: 'HTTP/1.1 401 Unauthorized\\r\\n'\nDEBUG:urllib3.connectionpool:https://{host}:443 \"POST {path} HTTP/1.1\" 401 {ri(100, 300)}")
    return "http_debug_log", "en", text, [t]


@sec
def httpx_headers_dump():
    t = pick(hf, replicate, pplx, xai)()
    text = (">>> r = httpx.get(url, headers=headers)\n>>> r.request.headers\n"
            f"Headers({{'host': 'api.example-inference.com', 'accept': '*/*', 'accept-encoding': 'gzip, deflate', 'connection': 'keep-alive', 'user-agent': 'python-httpx/0.27.0', 'authorization': 'Bearer {t}'}})\n>>> r.status_code\n401")
    return "http_debug_log", "en", text, [t]


@sec
def axios_error():
    t = pick(stripe_sk, lambda: "Bearer " + square())()
    lab = t.replace("Bearer ", "")
    text = ("AxiosError: Request failed with status code 401\n    at settle (/app/node_modules/axios/lib/core/settle.js:19:12)\n  config: {\n    url: 'https://api.stripe.com/v1/charges',\n    method: 'post',\n"
            f"    headers: AxiosHeaders {{\n      Accept: 'application/json, text/plain, */*',\n      'Content-Type': 'application/x-www-form-urlencoded',\n      Authorization: 'Bearer {lab}',\n      'User-Agent': 'axios/1.6.8'\n    }},\n  }},")
    return "http_debug_log", "en", text, [lab]


@sec
def curl_api_key():
    v = ri(0, 6)
    if v == 0:
        k = r(B62, 40); c = f"curl -s -H 'X-Api-Key: {k}' https://api.{pick('shipengine.com/v1/labels', 'acme-saas.io/v2/reports', 'weatherstack.com/current')}"
    elif v == 1:
        k = dd_api(); k2 = dd_app(); c = f"curl -X GET \"https://api.datadoghq.eu/api/v1/monitor\" -H \"DD-API-KEY: {k}\" -H \"DD-APPLICATION-KEY: {k2}\""
        return "curl_api_key", "en", "$ " + c + "\n{\"errors\":[\"Forbidden\"]}", [k, k2]
    elif v == 2:
        k = algolia_admin(); c = f"curl -X POST -H \"X-Algolia-API-Key: {k}\" -H \"X-Algolia-Application-Id: {r(UP + DG, 10)}\" --data '{{\"query\":\"shoes\"}}' https://{r(UP + DG, 10)}-dsn.algolia.net/1/indexes/products/query"
    elif v == 3:
        k = uid(); c = f"curl \"https://api.postmarkapp.com/email\" -X POST -H \"Accept: application/json\" -H \"X-Postmark-Server-Token: {k}\" -d @mail.json"
    elif v == 4:
        k = pinecone(); c = f"curl -X GET \"https://api.pinecone.io/indexes\" -H \"Api-Key: {k}\" -H \"X-Pinecone-API-Version: 2024-07\""
    elif v == 5:
        k = anthropic_key(); c = f"curl https://api.anthropic.com/v1/messages -H \"x-api-key: {k}\" -H \"anthropic-version: 2023-06-01\" -H \"content-type: application/json\" -d '{{\"model\":\"claude-3-5-sonnet-latest\",\"max_tokens\":64,\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}]}}'"
    else:
        k = aiza(); c = f"curl \"https://generativelanguage.googleapis.com/v1beta/models/gemini-1.5-flash:generateContent?key={k}\" -H 'Content-Type: application/json' -d @req.json"
    return "curl_api_key", "en", "$ " + c, [k]


@sec
def curl_verbose():
    t = pick(glpat, lambda: "token " + ghp())()
    lab = t.replace("token ", "")
    hname = "private-token" if t.startswith("glpat") else "authorization"
    text = (f"$ curl -v https://{'gitlab.example.com/api/v4/projects' if hname == 'private-token' else 'api.github.com/user/repos'} -H '{hname}: {t}'\n*   Trying {ip()}:443...\n* Connected to host port 443\n* using HTTP/2\n"
            f"> GET /api/v4/projects HTTP/2\n> Host: gitlab.example.com\n> user-agent: curl/8.5.0\n> accept: */*\n> {hname}: {t}\n>\n< HTTP/2 401\n< content-type: application/json")
    return "curl_verbose", "en", text, [lab]


@sec
def curl_basic():
    u, p = pick("admin", "elastic", "jenkins", "ci"), pw_u()
    text = f"$ curl -u {u}:{p} -XGET 'https://es.{pick('acme.io', 'logs.internal')}:9200/_cluster/health?pretty'\n{{\n  \"cluster_name\" : \"logs\",\n  \"status\" : \"yellow\"\n}}"
    return "curl_basic_auth", "en", text, [p]


@sec
def basic_auth_header():
    u, p = pick("admin", "api", "svc-reporting"), pw()
    a = b64(f"{u}:{p}".encode())
    text = (f"GET /api/v1/reports HTTP/1.1\nHost: internal.acme.io\nAuthorization: Basic {a}\nAccept: application/json\nUser-Agent: PostmanRuntime/7.37.3\n\nHTTP/1.1 200 OK")
    return "http_basic_auth", "en", text, [a]


@sec
def elastic_apikey_header():
    k = elastic_apikey()
    text = f"curl -H \"Authorization: ApiKey {k}\" \"https://my-deployment.es.us-central1.gcp.cloud.es.io/_search?q=level:error\""
    return "curl_api_key", "en", text, [k]


@sec
def splunk_hec():
    k = uid()
    text = f"curl -k https://splunk.acme.io:8088/services/collector/event -H \"Authorization: Splunk {k}\" -d '{{\"event\": \"deploy finished\", \"sourcetype\": \"ci\"}}'\n{{\"text\":\"Success\",\"code\":0}}"
    return "curl_api_key", "en", text, [k]


@sec
def cookie_jwt():
    j = user_jwt()
    v = ri(0, 2)
    if v == 0:
        text = (f"GET /dashboard HTTP/2\nHost: app.acme.io\nCookie: _ga=GA1.1.{ri(10**8, 10**9)}.{ri(10**9, 2 * 10**9)}; theme=dark; session={j}\nUser-Agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)")
    elif v == 1:
        text = f"HTTP/1.1 200 OK\nContent-Type: application/json\nSet-Cookie: access_token={j}; Path=/; HttpOnly; Secure; SameSite=Lax\nX-Request-Id: {uid()}"
    else:
        text = (f"curl 'https://api.acme.io/v2/me' \\\n  -H 'accept: application/json' \\\n  -H 'authorization: Bearer {j}' \\\n  -H 'origin: https://app.acme.io' \\\n  --compressed")
    return "jwt", "en", text, [j]


@sec
def supabase_keys():
    ref = r(LO, 20)
    k = supabase_service(ref)
    text = f"NEXT_PUBLIC_SUPABASE_URL=https://{ref}.supabase.co\nSUPABASE_SERVICE_ROLE_KEY={k}"
    return "jwt", "en", text, [k]


# ------------------------------------------------------------------ package registries
@sec
def npmrc():
    v = ri(0, 2)
    if v == 0:
        t = npm_tok(); text = f"$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken={t}\ninit-author-name=Li Wei\nsave-exact=true"
        return "npmrc", "en", text, [t]
    if v == 1:
        t = ghp(); text = f"# .npmrc\n@{pick(*ORGS)}:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={t}"
        return "npmrc", "en", text, [t]
    p = pw_u(); a = b64(f"ci-reader:{p}".encode())
    text = f"registry=https://nexus.acme.io/repository/npm-group/\n_auth={a}\nalways-auth=true\nemail=ci@acme.io"
    return "npmrc", "en", text, [a]


@sec
def yarnrc():
    t = npm_tok()
    text = f"# .yarnrc.yml\nnodeLinker: node-modules\nnpmScopes:\n  acme:\n    npmRegistryServer: \"https://registry.npmjs.org\"\n    npmAuthToken: \"{t}\"\n    npmAlwaysAuth: true"
    return "npmrc", "en", text, [t]


@sec
def pypirc():
    t, t2 = pypi_tok(), pypi_tok()
    text = f"$ cat ~/.pypirc\n[distutils]\nindex-servers =\n    pypi\n    testpypi\n\n[pypi]\nusername = __token__\npassword = {t}\n\n[testpypi]\nrepository = https://test.pypi.org/legacy/\nusername = __token__\npassword = {t2}"
    return "pypirc", "en", text, [t, t2]


@sec
def pip_conf():
    p = pw_u()
    text = f"# /etc/pip.conf\n[global]\nindex-url = https://ci-reader:{p}@nexus.acme.io/repository/pypi-all/simple\ntrusted-host = nexus.acme.io\ntimeout = 60"
    return "pip_index_url", "en", text, [p]


@sec
def poetry_config():
    p = pw_u()
    text = f"$ poetry config http-basic.private ci-bot {p}\n$ poetry install\nInstalling dependencies from lock file\n\n  - Installing acme-utils (2.4.0)"
    return "pip_index_url", "en", text, [p]


@sec
def twine_upload():
    t = pypi_tok()
    text = f"$ twine upload -u __token__ -p {t} dist/*\nUploading distributions to https://upload.pypi.org/legacy/\nUploading acme_sdk-0.9.1-py3-none-any.whl\n100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━ 24.1/24.1 kB • 00:00"
    return "pypirc", "en", text, [t]


@sec
def maven_settings():
    p = pw()
    text = (f"<settings>\n  <servers>\n    <server>\n      <id>acme-releases</id>\n      <username>deployer</username>\n      <password>{p}</password>\n    </server>\n  </servers>\n</settings>")
    return "maven_settings", "en", text, [p]


@sec
def gradle_props():
    p, k = pw(), pw_strong(24, B62)
    text = f"# ~/.gradle/gradle.properties\norg.gradle.jvmargs=-Xmx4g\nossrhUsername=acme-release\nossrhPassword={p}\nsigning.keyId=9F3A21C7\nsigning.password={k}\nsigning.secretKeyRingFile=/home/ci/.gnupg/secring.gpg"
    return "gradle_properties", "en", text, [p, k]


@sec
def nuget_push():
    k = nuget()
    text = f"$ dotnet nuget push bin/Release/Acme.Core.3.2.0.nupkg --api-key {k} --source https://api.nuget.org/v3/index.json\nPushing Acme.Core.3.2.0.nupkg to 'https://www.nuget.org/api/v2/package'...\n  PUT https://www.nuget.org/api/v2/package/\n  Created https://www.nuget.org/api/v2/package/ 1203ms"
    return "package_registry", "en", text, [k]


@sec
def gem_credentials():
    k = rubygems()
    text = f"$ cat ~/.gem/credentials\n---\n:rubygems_api_key: {k}"
    return "package_registry", "en", text, [k]


@sec
def cargo_credentials():
    k = cargo()
    text = f"# ~/.cargo/credentials.toml\n[registry]\ntoken = \"{k}\""
    return "package_registry", "en", text, [k]


@sec
def composer_auth():
    t = ghp()
    p = pw_u()
    text = "$ cat auth.json\n" + json.dumps({"github-oauth": {"github.com": t}, "http-basic": {"repo.packagist.com": {"username": "token", "password": p}}}, indent=4)
    return "package_registry", "en", text, [t, p]


# ------------------------------------------------------------------ cloud credential files
@sec
def aws_credentials_ini():
    a, s = akia(), aws_secret()
    a2, s2, st = asia(), aws_secret(), aws_session()
    text = (f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {a}\naws_secret_access_key = {s}\n\n[prod-admin]\naws_access_key_id = {a2}\naws_secret_access_key = {s2}\naws_session_token = {st}\nregion = us-east-1")
    return "aws_credentials", "en", text, [a, s, a2, s2, st]


@sec
def aws_export():
    a, s = akia(), aws_secret()
    text = f"export AWS_ACCESS_KEY_ID={a}\nexport AWS_SECRET_ACCESS_KEY={s}\nexport AWS_DEFAULT_REGION=eu-west-2\naws s3 ls s3://acme-prod-backups/"
    return "aws_credentials", "en", text, [a, s]


@sec
def aws_sts_output():
    a, s, st = asia(), aws_secret(), aws_session()
    text = ("$ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/Deploy --role-session-name ci\n" +
            json.dumps({"Credentials": {"AccessKeyId": a, "SecretAccessKey": s, "SessionToken": st, "Expiration": "2024-06-01T12:00:00+00:00"},
                        "AssumedRoleUser": {"AssumedRoleId": "AROA" + r(UP + "234567", 17) + ":ci", "Arn": "arn:aws:sts::123456789012:assumed-role/Deploy/ci"}}, indent=4))
    return "aws_credentials", "en", text, [a, s, st]


@sec
def netrc():
    t, p = pick(ghp, heroku_key)(), pw()
    text = f"$ cat ~/.netrc\nmachine api.heroku.com\n  login dev@acme.io\n  password {t}\nmachine ftp.partner-files.com login acme_upload password {p}"
    return "netrc", "en", text, [t, p]


@sec
def gcp_service_account():
    _, ls = pkcs8_pem()
    pk = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(ls) + "\n-----END PRIVATE KEY-----\n"
    proj = f"{pick(*ORGS)}-prod-{ri(100000, 999999)}"
    d = {"type": "service_account", "project_id": proj, "private_key_id": hexs(40), "private_key": pk,
         "client_email": f"ci-deployer@{proj}.iam.gserviceaccount.com", "client_id": str(ri(10**20, 10**21)),
         "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
         "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
         "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/ci-deployer%40{proj}.iam.gserviceaccount.com", "universe_domain": "googleapis.com"}
    text = pick("GCP_SA_KEY contents:\n", "$ cat key.json\n", "") + json.dumps(d, indent=2)
    return "gcp_service_account", "en", text, label_lines(ls)


@sec
def azure_sdk_auth():
    s = azure_ad_secret()
    text = "AZURE_CREDENTIALS=" + json.dumps({"clientId": uid(), "clientSecret": s, "subscriptionId": uid(), "tenantId": uid(),
                                              "activeDirectoryEndpointUrl": "https://login.microsoftonline.com",
                                              "resourceManagerEndpointUrl": "https://management.azure.com/"})
    return "azure_credentials", "en", text, [s]


@sec
def azure_storage_conn():
    k = azure_storage_key()
    acct = pick("acmeprodlogs", "stdatalake01", "tgassets")
    text = f"AzureWebJobsStorage=DefaultEndpointsProtocol=https;AccountName={acct};AccountKey={k};EndpointSuffix=core.windows.net"
    return "azure_credentials", "en", text, [k]


@sec
def azure_sas():
    sig = b64(rb(32)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    text = f"az storage blob upload failed; url used: https://acmeprodlogs.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2025-01-01T00:00:00Z&st=2024-01-01T00:00:00Z&spr=https&sig={sig}"
    return "azure_credentials", "en", text, [sig]


@sec
def aliyun_cli():
    a, s = aliyun_id(), aliyun_secret()
    text = f"$ aliyun configure set --profile prod --mode AK --region cn-hangzhou --access-key-id {a} --access-key-secret {s}\nConfigure Done!!!"
    return "aliyun_credentials", "en", text, [a, s]


# ------------------------------------------------------------------ OAuth / webhooks
@sec
def google_client_secret_json():
    s = gocspx()
    cid = f"{ri(10**11, 10**12)}-{r(LO + DG, 32)}.apps.googleusercontent.com"
    text = json.dumps({"web": {"client_id": cid, "project_id": "acme-login", "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
                               "client_secret": s, "redirect_uris": ["https://app.acme.io/auth/callback"]}})
    return "oauth_client_secret", "en", text, [s]


@sec
def oauth_env():
    v = ri(0, 2)
    if v == 0:
        s = gh_oauth_secret(); text = f"GITHUB_CLIENT_ID=Iv1.{hexs(16)}\nGITHUB_CLIENT_SECRET={s}\nNEXTAUTH_URL=http://localhost:3000\nNEXTAUTH_SECRET={(n := b64(rb(32)))}"
        return "oauth_client_secret", "en", text, [s, n]
    if v == 1:
        s = r(URLS, 64); text = f"AUTH0_DOMAIN=acme.eu.auth0.com\nAUTH0_CLIENT_ID={r(B62, 32)}\nAUTH0_CLIENT_SECRET={s}"
        return "oauth_client_secret", "en", text, [s]
    s = azure_ad_secret(); text = f"$ az ad app credential reset --id {uid()}\n" + json.dumps({"appId": uid(), "password": s, "tenant": uid()}, indent=2)
    return "oauth_client_secret", "en", text, [s]


@sec
def oauth_token_response():
    at, rt = "ya29.a0" + r(URLS, 180), "1//0" + r(URLS, 100)
    text = "POST https://oauth2.googleapis.com/token -> 200\n" + json.dumps({"access_token": at, "expires_in": 3599, "refresh_token": rt, "scope": "https://www.googleapis.com/auth/drive.readonly", "token_type": "Bearer"}, indent=2)
    return "oauth_token", "en", text, [at, rt]


@sec
def stripe_listen():
    w = whsec()
    text = f"$ stripe listen --forward-to localhost:4242/webhook\n> Ready! You are using Stripe API Version [2024-04-10]. Your webhook signing secret is {w} (^C to quit)\n2024-05-12 10:41:02   --> payment_intent.created [evt_{r(B62, 24)}]"
    return "webhook_secret", "en", text, [w]


@sec
def webhook_env():
    v = ri(0, 3)
    if v == 0:
        s = whsec(); t = f"STRIPE_WEBHOOK_SECRET={s}"
    elif v == 1:
        s = hexs(32); t = f"SLACK_SIGNING_SECRET={s}\nSLACK_APP_ID=A{r(UP + DG, 10)}"
    elif v == 2:
        s = "whsec_" + b64(rb(24)); t = f"CLERK_WEBHOOK_SECRET={s}"
    else:
        s = r(B62, 40); t = f"GITHUB_WEBHOOK_SECRET={s}\nGITHUB_APP_ID={ri(100000, 999999)}"
    return "webhook_secret", "en", t, [s]


@sec
def slack_webhook_code():
    w = slack_wh()
    text = f"import requests\nWEBHOOK = \"https://hooks.slack.com/services/{w}\"\nrequests.post(WEBHOOK, json={{\"text\": \"nightly build failed :x:\"}})"
    return "chat_webhook", "en", text, [w.split("/")[-1]]


@sec
def discord_webhook():
    t = discord_wh()
    text = f"curl -H \"Content-Type: application/json\" -d '{{\"content\":\"deploy ok\"}}' https://discord.com/api/webhooks/{ri(10**17, 10**18)}/{t}"
    return "chat_webhook", "en", text, [t]


@sec
def telegram_bot():
    t = telegram()
    text = f"requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.telegram.org/bot{t}/sendMessage?chat_id=-100{ri(10**9, 10**10)}&text=alert"
    return "chat_token", "en", text, [t]


@sec
def slack_bot_token():
    t = pick(xoxb, xoxp, xapp)()
    text = f"from slack_sdk import WebClient\nclient = WebClient(token=\"{t}\")\nclient.chat_postMessage(channel=\"#deploys\", text=\"v2.4.1 is live\")\n# slack_sdk.errors.SlackApiError: The request to the Slack API failed. (url: https://slack.com/api/chat.postMessage)\n# The server responded with: {{'ok': False, 'error': 'invalid_auth'}}"
    return "chat_token", "en", text, [t]


@sec
def discord_bot_token():
    t = discord_bot()
    text = f"DISCORD_TOKEN={t}\n# discord.errors.LoginFailure: Improper token has been passed."
    return "chat_token", "en", text, [t]


# ------------------------------------------------------------------ private keys
@sec
def ssh_private_chat():
    body, ls = openssh_key(pick("ed25519", "ed25519", "rsa"))
    text = pick("here's the deploy key for the staging box, add it to CI vars:\n\n", "$ cat ~/.ssh/id_ed25519\n", "SSH_PRIVATE_KEY (masked=false in GitLab, oops):\n") + body
    return "ssh_private_key", "en", text, label_lines(ls)


@sec
def rsa_pem_block():
    body, ls = rsa_pem()
    text = pick("$ cat deploy/server.key\n", "Can someone tell me why nginx says 'key values mismatch'? key:\n", "") + body
    return "pem_private_key", "en", text, label_lines(ls)


@sec
def ec_pem_block():
    body, ls = ec_pem()
    text = pick("APNS / apple sign-in key (AuthKey_9X2K4L.p8 converted):\n", "$ openssl ecparam -name prime256v1 -genkey -noout\n", "jwt signing key for staging:\n") + body
    return "pem_private_key", "en", text, label_lines(ls)


@sec
def pkcs8_in_env():
    _, ls = pkcs8_pem()
    esc = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(ls) + "\\n-----END PRIVATE KEY-----\\n"
    text = f"FIREBASE_PROJECT_ID=acme-app\nFIREBASE_CLIENT_EMAIL=firebase-adminsdk-x1y2z@acme-app.iam.gserviceaccount.com\nFIREBASE_PRIVATE_KEY=\"{esc}\""
    return "pem_private_key", "en", text, label_lines(ls)


@sec
def pgp_block():
    body, ls = pgp_private()
    text = f"$ gpg --export-secret-keys --armor {r(HEX.upper(), 16)}\n" + body
    return "pgp_private_key", "en", text, label_lines(ls)


@sec
def age_and_wg():
    v = ri(0, 1)
    if v == 0:
        k = age_key()
        text = f"# created: 2024-03-02T11:20:44+08:00\n# public key: age1{r(BECH.lower(), 58)}\n{k}"
        return "age_key", "en", text, [k]
    k = wg_key()
    text = f"[Interface]\nPrivateKey = {k}\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {wg_key()}\nEndpoint = vpn.acme.io:51820\nAllowedIPs = 0.0.0.0/0"
    return "wireguard_key", "en", text, [k]


# ------------------------------------------------------------------ app configs / code
@sec
def dotenv_multi():
    items = R.sample([("OPENAI_API_KEY", openai_key), ("STRIPE_SECRET_KEY", stripe_sk), ("SENDGRID_API_KEY", sendgrid), ("TWILIO_AUTH_TOKEN", lambda: hexs(32)),
                      ("MAILGUN_API_KEY", mailgun), ("SHOPIFY_ACCESS_TOKEN", shopify), ("NOTION_TOKEN", notion), ("LINEAR_API_KEY", linear),
                      ("MAPBOX_SECRET_TOKEN", lambda: mapbox_sk("acme")), ("FIREBASE_SERVER_KEY", fcm), ("AIRTABLE_TOKEN", airtable),
                      ("HUBSPOT_ACCESS_TOKEN", hubspot), ("MAILCHIMP_API_KEY", mailchimp), ("POSTMAN_API_KEY", postman), ("NGROK_AUTHTOKEN", ngrok),
                      ("DROPBOX_ACCESS_TOKEN", dropbox), ("TWITTER_BEARER_TOKEN", twitter_bearer), ("FB_PAGE_TOKEN", fb_token),
                      ("SEGMENT_WRITE_KEY", segment), ("COHERE_API_KEY", cohere), ("REPLICATE_API_TOKEN", replicate), ("SESSION_SECRET", lambda: hexs(64))], ri(2, 4))
    lines, labs = ["# .env", "NODE_ENV=production", "PORT=8080", "APP_URL=https://app.acme.io"], []
    for n, f in items:
        v = f(); lines.append(f"{n}={v}"); labs.append(v)
    if R.random() < 0.5:
        lines.append("TWILIO_ACCOUNT_SID=" + twilio_ac())
    return "dotenv", "en", "\n".join(lines), labs


@sec
def python_hardcoded():
    v = ri(0, 3)
    if v == 0:
        k = openai_key(); code = f"from openai import OpenAI\n\nclient = OpenAI(api_key=\"{k}\")\nresp = client.chat.completions.create(model=\"gpt-4o-mini\", messages=[{{\"role\": \"user\", \"content\": \"ping\"}}])"
    elif v == 1:
        k = anthropic_key(); code = f"import anthropic\nclient = anthropic.Anthropic(api_key='{k}')\nmsg = client.messages.create(model=\"claude-3-5-haiku-latest\", max_tokens=256, messages=[{{\"role\": \"user\", \"content\": \"hello\"}}])"
    elif v == 2:
        k = stripe_sk(); code = f"import stripe\nstripe.api_key = \"{k}\"\nstripe.PaymentIntent.create(amount=2000, currency=\"usd\")"
    else:
        k = hf(); code = f"from huggingface_hub import login\nlogin(token=\"{k}\")\nfrom transformers import AutoModel\nm = AutoModel.from_pretrained(\"meta-llama/Llama-3.1-8B\")"
    return "python_code", "en", code, [k]


@sec
def node_hardcoded():
    k = pick(sendgrid, twilio_sk, linear, notion)()
    code = f"// src/lib/client.ts\nconst API_KEY = process.env.API_KEY ?? '{k}'; // TODO remove fallback\nexport const client = new Client({{ auth: API_KEY, timeoutMs: 10_000 }});"
    return "js_code", "en", code, [k]


@sec
def go_hardcoded():
    k = pick(do_tok, databricks, cf_tok)()
    code = f"package main\n\nconst apiToken = \"{k}\"\n\nfunc newClient() *http.Client {{\n\treturn &http.Client{{Timeout: 10 * time.Second}}\n}}"
    return "go_code", "en", code, [k]


@sec
def django_settings():
    k = django_key()
    text = f"# settings.py\nDEBUG = False\nALLOWED_HOSTS = [\"api.acme.io\"]\nSECRET_KEY = '{k}'\nEMAIL_HOST = 'smtp.gmail.com'\nEMAIL_HOST_USER = 'noreply@acme.io'\nEMAIL_HOST_PASSWORD = '{(a := r(LO, 16))}'"
    return "framework_secret", "en", text, [k, a]


@sec
def rails_flask():
    v = ri(0, 2)
    if v == 0:
        k = rails_kb(); text = f"$ EDITOR=vim bin/rails credentials:edit\n# aws:\n#   access_key_id: 123\nsecret_key_base: {k}"
    elif v == 1:
        k = hexs(32); text = f"$ cat config/master.key\n{k}"
    else:
        k = pick(lambda: hexs(48), lambda: b64u(rb(32)))(); text = f"app = Flask(__name__)\napp.config[\"SECRET_KEY\"] = \"{k}\"\napp.config[\"SESSION_COOKIE_SECURE\"] = True"
    return "framework_secret", "en", text, [k]


@sec
def wp_config():
    p = pw()
    salts = [r(B62 + "!#%&()*+,-.:;=?@[]^_|~", 64) for _ in range(2)]
    text = (f"define( 'DB_NAME', 'wp_prod' );\ndefine( 'DB_USER', 'wp_prod' );\ndefine( 'DB_PASSWORD', '{p}' );\ndefine( 'DB_HOST', 'localhost' );\n"
            f"define( 'AUTH_KEY',         '{salts[0]}' );\ndefine( 'SECURE_AUTH_KEY',  '{salts[1]}' );")
    return "php_config", "en", text, [p] + salts


@sec
def smtp_ldap():
    v = ri(0, 1)
    p = pw()
    if v == 0:
        text = f"[smtp]\nenabled = true\nhost = smtp.mailgun.org:587\nuser = postmaster@mg.acme.io\npassword = \"{p}\"\nfrom_address = grafana@acme.io"
        return "smtp_config", "en", text, [p]
    text = f"ldap:\n  url: ldaps://ad.corp.acme.local:636\n  bindDN: CN=svc-ldap,OU=Service Accounts,DC=corp,DC=acme,DC=local\n  bindPassword: '{p}'\n  userSearchBase: OU=Users,DC=corp,DC=acme,DC=local"
    return "ldap_config", "en", text, [p]


@sec
def vault_token():
    t = vault_tok()
    text = f"$ export VAULT_ADDR=https://vault.acme.io:8200\n$ export VAULT_TOKEN={t}\n$ vault kv get -field=password secret/prod/db\n{(p := pw())}"
    return "vault_token", "en", text, [t, p]


@sec
def saas_tokens_misc():
    v = ri(0, 9)
    opts = [("newrelic", lambda k: f"export NEW_RELIC_API_KEY={k}\nnewrelic profile add --profile prod --region us --apiKey {k} --accountId {ri(10**6, 10**7)}", newrelic),
            ("atlassian", lambda k: f"curl -u mwang@acme.io:{k} -H 'Accept: application/json' https://acme.atlassian.net/rest/api/3/myself", atlassian),
            ("grafana", lambda k: f"grafana:\n  url: https://acme.grafana.net\n  serviceAccountToken: {k}", grafana),
            ("databricks", lambda k: f"[DEFAULT]\nhost  = https://adb-{ri(10**15, 10**16)}.{ri(1, 19)}.azuredatabricks.net\ntoken = {k}", databricks),
            ("sonarqube", lambda k: f"mvn sonar:sonar -Dsonar.projectKey=acme-api -Dsonar.host.url=https://sonar.acme.io -Dsonar.token={k}", sonar),
            ("okta", lambda k: f"OKTA_ORG_URL=https://acme.okta.com\nOKTA_API_TOKEN={k}", okta),
            ("pagerduty", lambda k: f"curl -H 'Authorization: Token token={k}' -H 'Accept: application/vnd.pagerduty+json;version=2' https://api.pagerduty.com/incidents", lambda: "u+" + r(URLS, 18)),
            ("buildkite", lambda k: f"$ bk configure --org acme --token {k}", buildkite),
            ("fly", lambda k: f"FLY_API_TOKEN=\"{k}\"", fly_tok),
            ("shopify", lambda k: f"curl -X GET https://acme-store.myshopify.com/admin/api/2024-04/orders.json -H 'X-Shopify-Access-Token: {k}'", shopify)]
    name, fmt, gen = opts[v]
    k = gen()
    lab = k.replace("FlyV1 ", "")
    return "saas_token", "en", fmt(k), [lab]


@sec
def payments_misc():
    v = ri(0, 3)
    if v == 0:
        k = square(); text = f"SQUARE_ACCESS_TOKEN={k}\nSQUARE_ENVIRONMENT=production"
    elif v == 1:
        k = paypal_secret(); text = f"PAYPAL_CLIENT_ID=A{r(URLS, 79)}\nPAYPAL_CLIENT_SECRET={k}"
    elif v == 2:
        k = stripe_sk(); text = f"$ stripe config --list\n[default]\ndevice_name = mwang-mbp\nlive_mode_api_key = '{k}'\nlive_mode_pub_key = 'pk_live_{r(B62, 99)}'"
    else:
        k = r(B62, 32); text = f"braintree:\n  environment: production\n  merchant_id: {r(LO + DG, 16)}\n  public_key: {r(LO + DG, 16)}\n  private_key: {k}"
    return "payment_key", "en", text, [k]


@sec
def ai_keys_misc():
    v = ri(0, 5)
    gens = [("OPENAI_API_KEY", openai_key), ("ANTHROPIC_API_KEY", anthropic_key), ("GOOGLE_API_KEY", aiza), ("XAI_API_KEY", xai), ("PERPLEXITY_API_KEY", pplx), ("ANTHROPIC_ADMIN_KEY", anthropic_admin)]
    n, g = gens[v]
    k = g()
    text = pick(f"$ export {n}=\"{k}\"\n$ python agent.py --model default",
                f"llm keys set {n.split('_')[0].lower()}\nEnter key: {k}",
                f"# ~/.zshrc\nexport PATH=\"$HOME/.local/bin:$PATH\"\nexport {n}={k}\nalias k=kubectl")
    return "ai_api_key", "en", text, [k]


@sec
def hf_cli_login():
    k = hf()
    text = f"$ huggingface-cli login --token {k} --add-to-git-credential\nToken is valid (permission: write).\nYour token has been saved in your configured git credential helpers (store).\nYour token has been saved to /home/dev/.cache/huggingface/token\nLogin successful"
    return "ai_api_key", "en", text, [k]


@sec
def agent_transcript():
    k = pick(openai_key, anthropic_key, groq, langsmith)()
    p = pw_u()
    text = (f"User: the tests fail with 401, here's my key {k} — can you fix the config?\n\nAssistant: I'll add it to your local .env (which is git-ignored) and rerun.\n"
            f"Tool call: bash {{\"command\": \"echo 'API_KEY={k}' >> .env && echo 'DB_URL=postgres://dev:{p}@localhost:5432/dev' >> .env && pytest -q\"}}\nTool result: 12 passed in 3.41s")
    return "agent_transcript", "en", text, [k, p]


@sec
def agent_tool_output():
    t = pick(ghp, github_pat, glpat)()
    text = (f"● Bash(gh auth status)\n  ⎿  github.com\n       ✓ Logged in to github.com account octo-dev (keyring)\n       - Active account: true\n       - Git operations protocol: https\n       - Token: {t}\n       - Token scopes: 'gist', 'read:org', 'repo', 'workflow'")
    return "agent_transcript", "en", text, [t]


@sec
def generic_x_api_key():
    n = pick("X_API_KEY", "INTERNAL_API_KEY", "API_SECRET", "ACME_SERVICE_TOKEN", "PARTNER_API_KEY", "HMAC_SECRET", "ENCRYPTION_KEY")
    k = pick(lambda: r(B62, 32), lambda: r(B62, 48), lambda: hexs(64), lambda: b64(rb(32)), lambda: r(URLS, 43))()
    text = pick(f"{n}={k}", f"{n}: \"{k}\"", f"export {n}='{k}'", f"\"{n.lower()}\": \"{k}\",", f"[api]\n{n.lower()} = {k}\ntimeout = 30")
    return "generic_api_key", "en", text, [k]


@sec
def mobile_firebase():
    k = fcm()
    text = f"curl -X POST https://fcm.googleapis.com/fcm/send -H \"Authorization: key={k}\" -H \"Content-Type: application/json\" -d '{{\"to\":\"/topics/news\",\"notification\":{{\"title\":\"Hi\"}}}}'"
    return "saas_token", "en", text, [k]


@sec
def twilio_sendgrid_mailgun():
    v = ri(0, 2)
    if v == 0:
        sid, tok = twilio_ac(), hexs(32); text = f"$ curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json --data-urlencode 'To=+15558675310' --data-urlencode 'Body=hi' -u {sid}:{tok}"
    elif v == 1:
        tok = sendgrid(); text = f"curl --request POST --url https://api.sendgrid.com/v3/mail/send --header 'Authorization: Bearer {tok}' --header 'Content-Type: application/json' --data @payload.json"
    else:
        tok = mailgun(); text = f"curl -s --user 'api:{tok}' https://api.mailgun.net/v3/mg.acme.io/messages -F from='Acme <noreply@mg.acme.io>' -F to=ops@acme.io -F subject='Hello'"
    return "email_api_key", "en", text, [tok]


@sec
def mapbox_dropbox():
    v = ri(0, 1)
    if v == 0:
        k = mapbox_sk(pick("acme", "lwei")); text = f"MAPBOX_DOWNLOADS_TOKEN={k}\n# required by the iOS SDK in ~/.netrc as well"
    else:
        k = dropbox(); text = f"dropbox.exceptions.AuthError: AuthError('{hexs(32)}', AuthError('expired_access_token', None))\n  token used: {k}"
    return "saas_token", "en", text, [k]


# ------------------------------------------------------------------ Chinese / Traditional / mixed
@sec
def zh_password_chat():
    p = pick(pw, pw_weak)()
    n = pick(*NAMES_ZH)
    text = pick(f"@{n} 测试库密码是 {p}，用完记得改掉",
                f"{n}：跳板机账号 root，密码是 {p}，别外传哈",
                f"数据库连不上了？密码改成 {p} 了，昨天刚改的",
                f"服务器 {ip()} 的登录密码：{p}\n端口 22022，用户 ops",
                f"生产 Redis 密码 {p}，只读账号在群公告里")
    return "chat_password", "zh", text, [p]


@sec
def zh_key_chat():
    k = pick(openai_key, deepseek, moonshot, anthropic_key, ghp, hf)()
    text = pick(f"这个密钥你先用着：{k}\n额度不多，省着点",
                f"token 贴在这了 {k} 有效期 30 天",
                f"OpenAI 的 key 我放这里了：{k}，别提交到 git 里",
                f"兄弟帮我看下这个报错，key 是 {k}，一直 401",
                f"api_key={k}  ← 这是我们组共用的，周五前换掉")
    return "chat_api_key", "zh", text, [k]


@sec
def zh_aliyun_chat():
    v = ri(0, 2)
    if v == 0:
        a, s = aliyun_id(), aliyun_secret()
        text = f"阿里云 OSS 的 AccessKey 发你：\nAccessKey ID: {a}\nAccessKey Secret: {s}\n只给了 oss 只读权限"
    elif v == 1:
        a, s = tencent_id(), tencent_key()
        text = f"腾讯云 COS 配置：\nSecretId = {a}\nSecretKey = {s}\nregion = ap-guangzhou"
    else:
        a, s = huawei_ak(), huawei_sk()
        text = f"华为云 OBS 的 AK/SK：\nAK：{a}\nSK：{s}\n用完删掉聊天记录"
    return "cn_cloud_credentials", "zh", text, [a, s]


@sec
def zh_webhook_bot():
    v = ri(0, 3)
    if v == 0:
        k = uid(); text = f"飞书机器人 webhook：https://open.feishu.cn/open-apis/bot/v2/hook/{k}\n告警都往这个群发"
    elif v == 1:
        k = dingtalk(); text = f"钉钉群机器人地址 https://oapi.dingtalk.com/robot/send?access_token={k}\n加签密钥 SEC{(s := hexs(64))}"
        return "cn_webhook", "zh", text, [k, "SEC" + s]
    elif v == 2:
        k = uid(); text = f"企业微信群机器人 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={k} 已经配到 alertmanager 里了"
    else:
        k = wechat_secret(); text = f"小程序 AppID：wx{hexs(16)}\nAppSecret：{k}\n这个 AppSecret 千万别放前端代码里"
    return "cn_webhook", "zh", text, [k]


@sec
def zh_ssh_key():
    body, ls = openssh_key("ed25519")
    text = f"私钥发你了，放到 ~/.ssh/id_ed25519，记得 chmod 600：\n{body}"
    return "ssh_private_key", "zh", text, label_lines(ls)


@sec
def zh_traceback():
    p = pw_u()
    h = pick(*HOSTS)
    text = (f"大佬们，本地跑迁移一直报错：\nsqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (1045, \"Access denied for user 'dev'@'{ip()}' (using password: YES)\")\n"
            f"我的配置是 SQLALCHEMY_DATABASE_URI = 'mysql+pymysql://dev:{p}@{h}:3306/shop'\n是不是密码有问题？")
    return "python_traceback_dsn", "zh", text, [p]


@sec
def zh_docker_login():
    p = pw_u()
    text = f"镜像仓库登录命令：\ndocker login --username=ops@{pick('acme', 'tiangong')} registry.cn-hangzhou.aliyuncs.com -p '{p}'\n登录成功后再 push"
    return "docker_login", "zh", text, [p]


@sec
def hant_password_chat():
    p = pick(pw, pw_weak)()
    n = pick(*NAMES_HANT)
    text = pick(f"{n}：測試環境的資料庫密碼：{p}，請勿外傳",
                f"帳號 admin / 密碼 {p}，登入後請立刻修改",
                f"生產環境 Redis 密碼：{p}（只給維運組）",
                f"VPN 的預共享金鑰是 {p}，設定完請回報")
    return "chat_password", "zh-Hant", text, [p]


@sec
def hant_key_chat():
    k = pick(ghp, github_pat, openai_key, stripe_sk, glpat)()
    text = pick(f"這是 GitHub 的 PAT：{k}，只有 repo 權限，月底到期",
                f"金鑰先貼在這裡 {k}，用完我會撤銷",
                f"API 金鑰：{k}\n請放到 Jenkins 的憑證裡，不要寫死在程式碼",
                f"我把權杖換新了：{k}")
    return "chat_api_key", "zh-Hant", text, [k]


@sec
def hant_config():
    p = pw()
    k = pick(lambda: r(B62 + "+/", 171) + "=", lambda: r(B62, 40))()
    text = f"# LINE Bot 設定（請勿上傳）\nLINE_CHANNEL_SECRET={hexs(32)}\nLINE_CHANNEL_ACCESS_TOKEN={k}\nDB_PASSWORD={p}"
    sec_line = text.split("\n")[1].split("=")[1]
    return "chat_token", "zh-Hant", text, [sec_line, k, p]


@sec
def mixed_chat():
    v = ri(0, 6)
    if v == 0:
        p = pw(); text = f"prod 的 DB password 改成 {p} 了, 记得 update 一下 .env"; labs = [p]
    elif v == 1:
        a, s = akia(), aws_secret(); text = f"这个 AWS key 有 S3 full access，小心点:\nAWS_ACCESS_KEY_ID={a}\nAWS_SECRET_ACCESS_KEY={s}"; labs = [a, s]
    elif v == 2:
        k = npm_tok(); text = f"npm publish 一直 403，我的 token 是 {k}，是不是 scope 不对？"; labs = [k]
    elif v == 3:
        k = slack_wh(); text = f"Slack webhook 帮我测一下 https://hooks.slack.com/services/{k} ，我这边 curl 返回 invalid_payload"; labs = [k.split('/')[-1]]
    elif v == 4:
        k = dckr(); text = f"CI 里 docker push 失败，PAT 是 {k}，权限是 Read & Write 應該夠吧？"; labs = [k]
    elif v == 5:
        k = pick(glpat, ghp)(); p = pw_u(); text = f"我 clone 用的是 https://dev:{k}@gitlab.com/acme/infra.git , 然後 mysql 用 root / {p}，兩個都 fail 了"; labs = [k, p]
    else:
        k = vault_tok(); text = f"vault login 用这个 root token 吧：{k}  (only for the sandbox cluster!)"; labs = [k]
    return "mixed_chat", "mixed", text, labs


@sec
def mixed_env_comment():
    k, p = pick(deepseek, moonshot, openai_key)(), pw_u()
    text = f"# 大模型配置\nLLM_BASE_URL=https://api.deepseek.com/v1\nLLM_API_KEY={k}   # 公司账号，勿外泄\n# 数据库\nDATABASE_URL=postgresql://app:{p}@127.0.0.1:5432/app"
    return "dotenv", "mixed", text, [k, p]


@sec
def mixed_kube():
    p = pw()
    text = f"kubectl 解出来的密码是这个：\n$ kubectl -n prod get secret mysql -o jsonpath=\"{{.data.mysql-root-password}}\" | base64 --decode\n{p}\n但是连不上，是不是 secret 没更新？"
    return "k8s_secret", "mixed", text, [p]


@sec
def zh_pgp_note():
    body, ls = pgp_private()
    text = "發版簽名用的 GPG 私鑰（請存到 1Password 後刪除此訊息）：\n" + body
    return "pgp_private_key", "zh-Hant", text, label_lines(ls)


@sec
def zh_curl_header():
    k = r(B62, 32)
    text = f"接口文档里要求带 header，示例：\ncurl -H 'X-Api-Key: {k}' 'https://open.api.example.cn/v1/orders?page=1'\n这个 key 是测试环境的"
    return "curl_api_key", "zh", text, [k]


@sec
def zh_git_push():
    t = pick(ghp, glpat, github_pat)()
    host = "gitlab.com" if t.startswith("glpat") else "github.com"
    url = f"https://{pick('oauth2', 'zhangsan', 'ci')}:{t}@{host}/{pick(*ORGS)}/{pick(*REPOS)}.git"
    text = pick(f"git push 报错了，帮忙看看：\nfatal: unable to access '{url}/': The requested URL returned error: 403\n是不是 token 权限不够？",
                f"推送失敗：\nremote: Permission denied.\nfatal: Authentication failed for '{url}/'\n我已經重新產生過權杖了",
                f"我把 remote 改成 {url} 之后就能 push 了，但感觉不太安全？")
    lang = "zh-Hant" if "推送失敗" in text else "zh"
    return "git_remote_url", lang, text, [t]


@sec
def zh_env_dump():
    items = R.sample(ENV_POOL, 3)
    lines, labs = ["LANG=zh_CN.UTF-8", "TZ=Asia/Shanghai", "HOME=/root", "PWD=/app"], []
    for n, f in items:
        v, lab = env_secret(n, f)
        lines.append(f"{n}={v}")
        labs.append(lab)
    lines.sort()
    text = "容器里 env 打出来是这样的，变量应该都注入了：\n$ env | sort\n" + "\n".join(lines) + "\n为啥应用还是读不到？"
    return "ci_env_dump", "zh", text, labs


@sec
def zh_npmrc():
    t = npm_tok()
    text = pick(f"发包之前先在 ~/.npmrc 里加一行：\n//registry.npmjs.org/:_authToken={t}\n这个是组织的 automation token",
                f"npm 私服配置：\nregistry=https://registry.npmmirror.com\n//registry.npmjs.org/:_authToken={t}")
    return "npmrc", "zh", text, [t]


@sec
def hant_aws():
    a, s = akia(), aws_secret()
    text = f"{pick(*NAMES_HANT)}，這組 IAM 金鑰給你部署用：\n存取金鑰 ID：{a}\n私密存取金鑰：{s}\n用完請到主控台停用"
    return "aws_credentials", "zh-Hant", text, [a, s]


@sec
def hant_mysql():
    p = pw_u()
    text = f"連線指令：\nmysql -h {pick(*HOSTS)} -u report -p'{p}' analytics\n如果出現 ERROR 2003 代表防火牆沒開"
    return "mysql_cli", "zh-Hant", text, [p]


@sec
def hant_kubectl():
    p = pw()
    text = f"我用 kubectl 解碼出來的 Grafana admin 密碼：\n$ kubectl get secret grafana -n monitoring -o jsonpath=\"{{.data.admin-password}}\" | base64 -d\n{p}\n登入後記得改掉"
    return "k8s_secret", "zh-Hant", text, [p]


@sec
def mixed_agent_zh():
    k = pick(openai_key, anthropic_key, deepseek, moonshot, groq)()
    p = pw_u()
    text = (f"用户：帮我把这个 key 配进项目里 {k} ，然后跑一下测试\n\n助手：好的，我会把它写进 .env（已在 .gitignore 中）。\n"
            f"$ cat >> .env <<'EOF'\nLLM_API_KEY={k}\nDATABASE_URL=mysql://root:{p}@127.0.0.1:3306/dev\nEOF\n$ pytest -q\n23 passed in 5.02s")
    return "agent_transcript", "mixed", text, [k, p]


@sec
def mixed_jwt_cookie():
    j = user_jwt()
    text = f"登录之后 cookie 里有个 token={j} ，后端说 signature invalid，是 secret 配错了吗？"
    return "jwt", "mixed", text, [j]


@sec
def zh_redis_mq():
    p1 = pw_u()
    v = ri(0, 2)
    if v == 0:
        text = f"Redis 连接串：redis://:{p1}@r-bp1{r(LO + DG, 14)}.redis.rds.aliyuncs.com:6379/0"
    elif v == 1:
        text = f"RabbitMQ 管理后台 http://mq.internal:15672  账号 admin  密码 {p1}"
    else:
        text = f"MongoDB: mongodb://root:{p1}@dds-bp1{r(LO + DG, 14)}.mongodb.rds.aliyuncs.com:3717/admin"
    return "chat_password", "zh", text, [p1]


@sec
def hant_webhook():
    k = pick(slack_wh, lambda: "D:" + discord_wh())()
    if k.startswith("D:"):
        k = k[2:]
        text = f"Discord 通知用這個 webhook：https://discord.com/api/webhooks/{ri(10**17, 10**18)}/{k}"
        lab = k
    else:
        text = f"Slack 告警頻道的 webhook：https://hooks.slack.com/services/{k} 不要公開"
        lab = k.split("/")[-1]
    return "chat_webhook", "zh-Hant", text, [lab]


@sec
def mixed_stripe():
    k, w = stripe_sk(), whsec()
    text = f"Stripe 那边我新建了 key: {k}\nwebhook endpoint 的 signing secret 是 {w}，本地 test 用 stripe listen 就行"
    return "payment_key", "mixed", text, [k, w]
