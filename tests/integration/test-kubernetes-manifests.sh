#!/bin/bash
# contrib/kubernetes, offline (no cluster): tests/kubernetes/check-manifests.mjs
# finds every manifest valid against the Kubernetes and Prometheus Operator
# schemas, kustomization.yaml listing exactly the files beside it and the
# DaemonSet's rights no wider than the unit's and its user the image's
# (contrib/container/build-image); the ConfigMap's iopsd.conf
# passes --check-config. Then the same check on broken copies must fail,
# naming the file, the line and the field: a check that passes everything
# would otherwise look the same as one that works.
set -euo pipefail
SRCDIR=${SRCDIR:-$(dirname "$0")/../..}
command -v node >/dev/null || {
	echo "SKIP: node not installed (contrib/install-deps.sh --tests installs nodejs and npm)"
	exit 77
}
pkg=$SRCDIR/tests/kubernetes
manifests=$SRCDIR/contrib/kubernetes
checker=$pkg/check-manifests.mjs
[ -d "$pkg/node_modules/kubernetes-models" ] || {
	echo "FAIL: $pkg/node_modules is not installed: contrib/install-deps.sh --tests runs npm ci there"
	exit 1
}

# The lock pins versions and integrity hashes, not a registry: npm ci takes
# the packages from whichever registry npm is configured with.
if grep -n -e '"resolved"' -e 'registry' "$pkg/package-lock.json"; then
	echo "FAIL: package-lock.json names a registry (npm install --omit-lockfile-registry-resolved)"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

node "$checker" "$manifests"

# The pod's user is the image's (contrib/container/build-image)
uid=$(sed -n 's/^IOPSD_UID=\([0-9][0-9]*\)$/\1/p' "$SRCDIR/contrib/container/build-image")
for key in runAsUser runAsGroup; do
	grep -Eq "^ +$key: ${uid:?no IOPSD_UID in contrib/container/build-image}\$" "$manifests/daemonset.yaml" || {
		echo "FAIL: daemonset.yaml's $key is not the image's user, $uid (contrib/container/build-image)"
		exit 1
	}
done

# The ConfigMap's iopsd.conf as the pods will read it
(cd "$pkg" && node --input-type=module -e '
import fs from "node:fs";
import { parse } from "yaml";
process.stdout.write(parse(fs.readFileSync(process.argv[1], "utf8"), { version: "1.1" }).data["iopsd.conf"]);
' "$manifests/configmap.yaml") >"$tmp/iopsd.conf"
"$IOPSD" --check-config --config "$tmp/iopsd.conf"

# mutate JS: run JS on the copy's daemonset.yaml as `doc` (a yaml Document,
# comments kept), and write it back
mutate() {
	(cd "$pkg" && node --input-type=module -e '
import fs from "node:fs";
import { parseDocument } from "yaml";
const f = process.argv[1];
const doc = parseDocument(fs.readFileSync(f, "utf8"), { version: "1.1" });
new Function("doc", process.argv[2])(doc);
fs.writeFileSync(f, doc.toString());
' "$tmp/broken/daemonset.yaml" "$1")
}

fresh_copy() {
	rm -rf "$tmp/broken"
	cp -r "$manifests" "$tmp/broken"
}

# expect_rejected CASE WANT...: the check of the broken copy exits 1 and
# says every WANT
expect_rejected() {
	local name=$1 rc=0 out
	shift
	out=$(node "$checker" "$tmp/broken" 2>&1) || rc=$?
	if [ "$rc" -ne 1 ]; then
		echo "FAIL: $name: the check exited $rc, expected 1; it said:"
		echo "$out"
		exit 1
	fi
	for want in "$@"; do
		echo "$out" | grep -qF -- "$want" || {
			echo "FAIL: $name: no '$want' in:"
			echo "$out"
			exit 1
		}
	done
	echo "ok: $name rejected:"
	echo "$out" | sed 's/^/    /'
}

fresh_copy
mutate 'doc.setIn(["spec", "template", "spec", "containers", 0, "ports", 0, "containerPort"], "9477")'
expect_rejected "containerPort as a string" \
	"daemonset.yaml:" "spec.template.spec.containers[0].ports[0].containerPort must be integer"

fresh_copy
mutate 'doc.deleteIn(["spec", "template", "spec", "containers", 0, "name"])'
expect_rejected "a container without its name" \
	"daemonset.yaml:" "spec.template.spec.containers[0].name is required and missing"

fresh_copy
mutate 'doc.deleteIn(["spec", "selector"])'
expect_rejected "a DaemonSet without its selector" \
	"daemonset.yaml:" "spec.selector is required and missing"

fresh_copy
mutate 'const sc = ["spec", "template", "spec", "containers", 0, "securityContext"];
doc.setIn([...sc, "capabilities", "add"], ["SYS_ADMIN"]);
doc.deleteIn([...sc, "readOnlyRootFilesystem"]);
doc.setIn([...sc, "readOnlyRootFileSystem"], true)'
expect_rejected "a capability added and a misspelt readOnlyRootFilesystem" \
	"daemonset.yaml:" "securityContext.capabilities.add adds SYS_ADMIN" \
	"securityContext.readOnlyRootFilesystem must be true"

fresh_copy
mv "$tmp/broken/service.yaml" "$tmp/broken/service-renamed.yaml"
expect_rejected "a listed file missing, a file not listed" \
	"kustomization.yaml:" "resources: service.yaml is not a file" \
	"service-renamed.yaml:1: not listed in kustomization.yaml's resources"

echo "ok: contrib/kubernetes valid; every broken copy rejected with its file and field"
