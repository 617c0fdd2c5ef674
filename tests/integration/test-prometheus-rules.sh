#!/bin/bash
# contrib/prometheus: the rule files load (promtool check rules), their unit
# tests pass (promtool test rules), the scrape config examples are valid
# (promtool check config) and the Grafana dashboard is well-formed JSON
# whose every panel has a query.
set -euo pipefail
SRCDIR=${SRCDIR:-$(dirname "$0")/../..}
command -v promtool >/dev/null || { echo "SKIP: promtool not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }

cd "$SRCDIR/contrib/prometheus"
promtool check rules rules/iopsd-recording.rules.yml rules/iopsd-alerts.rules.yml
(cd tests && promtool test rules iopsd-rules.test.yml)
for f in prometheus-*.yml; do
	promtool check config "$f"
done

python3 - "$SRCDIR/contrib/grafana/iopsd-dashboard.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ids, n = set(), 0
for p in d["panels"]:
    assert p["id"] not in ids, f"duplicate panel id {p['id']}"
    ids.add(p["id"])
    if p["type"] == "row":
        continue
    assert p.get("targets"), f"panel {p['title']!r} has no query"
    for t in p["targets"]:
        assert t.get("expr"), f"panel {p['title']!r}: empty expr"
        n += 1
names = {v["name"] for v in d["templating"]["list"]}
assert {"datasource", "instance", "device", "probe"} <= names, names
print(f"dashboard: {len(ids)} panels, {n} queries")
PY
