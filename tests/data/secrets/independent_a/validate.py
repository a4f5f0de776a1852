import json, re, sys, collections
ok = True
ids = set()
fam = {}
for fn, pre in [("secrets_independent.jsonl", "x"), ("lookalikes_independent.jsonl", "y")]:
    c = collections.Counter(); langs = collections.Counter()
    for n, line in enumerate(open(fn, encoding="utf-8"), 1):
        d = json.loads(line)
        assert d["id"] not in ids and d["id"].startswith(pre), d["id"]; ids.add(d["id"])
        assert d["lang"] in ("en", "zh", "mixed")
        assert isinstance(d["text"], str) and d["text"]
        if pre == "x":
            assert d["secrets"] and all(isinstance(s, str) and len(s) >= 8 for s in d["secrets"]), d
            for s in d["secrets"]:
                if s not in d["text"]:
                    print("MISSING", d["id"], s); ok = False
        else:
            assert "secrets" not in d
            if re.search(r"(ghp_|gho_|github_pat_|glpat-|xox[bpa]-|sk_live_[A-Za-z0-9]{8}|rk_live_[A-Za-z0-9]{8}|sk-ant-|AKIA[0-9A-Z]{16}|hf_[A-Za-z]{30}|npm_[A-Za-z0-9]{36}|pypi-AgE|SG\.[\w-]{22}\.|-----BEGIN [A-Z ]*PRIVATE KEY)", d["text"]):
                print("SUSPICIOUS lookalike", d["id"], d["text"][:80]); ok = False
        c[d["family"]] += 1; langs[d["lang"]] += 1
    print(fn, sum(c.values()), "lines", dict(langs))
    for k, v in sorted(c.items()): print("  %-32s %d" % (k, v))
print("OK" if ok else "FAIL"); sys.exit(0 if ok else 1)
