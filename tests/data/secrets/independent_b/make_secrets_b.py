#!/usr/bin/env python3
"""Build the held-out redaction corpus B (deterministic; seed in gen_common.SEED).

    python3 make_secrets_b.py          # writes secrets_b.jsonl and lookalikes_b.jsonl, then validates

Modules: gen_common.py (seeded value generators), tpl_secrets.py (secret templates),
tpl_lookalikes.py (no-secret templates).
"""
import collections, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_common import R  # noqa: E402
import tpl_secrets, tpl_lookalikes  # noqa: E402

SECRET_EXTRA = 60      # templates drawn a third time
LOOK_PER_TEMPLATE = 4
BOOST = {"env_sort_dump", "git_push_url", "docker_login", "psql_dsn", "mysql_cli", "curl_api_key", "requests_debug",
         "aws_credentials_ini", "npmrc", "ssh_private_chat", "saas_tokens_misc", "ai_keys_misc", "generic_x_api_key", "dotenv_multi"}


def draw(fn, seen, tries=12):
    for _ in range(tries):
        out = fn()
        if out[2] not in seen:
            seen.add(out[2])
            return out
    return None


def build():
    seen = set()
    sec_rows = []
    plan = [f for f in tpl_secrets.T for _ in range(2)] + R.sample(tpl_secrets.T, SECRET_EXTRA)
    plan += [f for f in tpl_secrets.T if f.__name__.startswith(("zh_", "hant_", "mixed_"))] * 2
    plan += [f for f in tpl_secrets.T if f.__name__ in BOOST] * 2
    for fn in plan:
        out = draw(fn, seen)
        if out is None:
            continue
        fam, lang, text, secrets = out
        secrets = list(dict.fromkeys(secrets))
        sec_rows.append({"family": fam, "lang": lang, "text": text, "secrets": secrets})
    R.shuffle(sec_rows)
    for i, row in enumerate(sec_rows, 1):
        row_id = f"b{i:04d}"
        sec_rows[i - 1] = {"id": row_id, **row}

    look_rows = []
    for fn in tpl_lookalikes.L:
        k = LOOK_PER_TEMPLATE + (3 if fn.__name__.startswith(("zh_", "hant_", "mixed_")) else 0)
        for _ in range(k):
            out = draw(fn, seen)
            if out is None:
                continue
            fam, lang, text = out
            look_rows.append({"family": fam, "lang": lang, "text": text})
    R.shuffle(look_rows)
    look_rows = [{"id": f"c{i:04d}", **row} for i, row in enumerate(look_rows, 1)]
    return sec_rows, look_rows


def write(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def validate(sec_path, look_path):
    ids = set()
    langs = {"en", "zh", "zh-Hant", "mixed"}
    counts = {}
    for path, kind in ((sec_path, "secret"), (look_path, "look")):
        fam = collections.Counter()
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                obj = json.loads(line)
                assert obj["id"] not in ids, f"duplicate id {obj['id']}"
                ids.add(obj["id"])
                assert obj["lang"] in langs, obj
                assert isinstance(obj["text"], str) and obj["text"]
                if kind == "secret":
                    assert obj["id"].startswith("b")
                    assert obj["secrets"], obj["id"]
                    for s in obj["secrets"]:
                        assert len(s) >= 6, (obj["id"], s)
                        assert s in obj["text"], (obj["id"], s)
                        assert s != "[redacted]"
                else:
                    assert obj["id"].startswith("c") and "secrets" not in obj
                fam[obj["family"]] += 1
        counts[path] = fam
    return counts


if __name__ == "__main__":
    s, l = build()
    sp, lp = os.path.join(HERE, "secrets_b.jsonl"), os.path.join(HERE, "lookalikes_b.jsonl")
    write(sp, s)
    write(lp, l)
    counts = validate(sp, lp)
    for p, c in counts.items():
        print(f"{os.path.basename(p)}: {sum(c.values())} lines, {len(c)} families")
        for k, v in sorted(c.items()):
            print(f"  {k:24s} {v}")
