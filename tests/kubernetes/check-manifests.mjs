#!/usr/bin/env node
/* Offline check of a kustomize directory of manifests (contrib/kubernetes/):
 * every object against its API schema (kubernetes-models and
 * @kubernetes-models/prometheus-operator, with no cluster), kustomization.yaml
 * against the files beside it, and what the iopsd DaemonSet promises (rights
 * no wider than systemd/iopsd.service's). Prints FILE:LINE: what and where
 * for each problem and exits 1 when there is one; usage: check-manifests.mjs DIR */
import fs from "node:fs";
import path from "node:path";
import { LineCounter, parseAllDocuments } from "yaml";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Service } from "kubernetes-models/v1/Service";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";

const MODELS = new Map([
    ["apps/v1 DaemonSet", DaemonSet],
    ["v1 ConfigMap", ConfigMap],
    ["v1 Namespace", Namespace],
    ["v1 Service", Service],
    ["monitoring.coreos.com/v1 PodMonitor", PodMonitor],
]);
const KUSTOMIZATION = "kustomization.yaml";
/* The API server reads manifests as YAML 1.1 (0644 is octal there, yes a
 * boolean): parse them the same way. */
const YAML_OPTIONS = { version: "1.1" };

const problems = [];

/* "/spec/containers/0/name" -> "spec.containers[0].name" */
function fieldName(pointer) {
    return pointer
        .split("/")
        .slice(1)
        .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
        .reduce((s, p) => (/^\d+$/.test(p) ? `${s}[${p}]` : s ? `${s}.${p}` : p), "");
}

/* One manifest file parsed: its objects, each with a way to find the line
 * of a field (the nearest line that exists when the field does not). */
function parseManifest(file) {
    const text = fs.readFileSync(file, "utf8");
    const lines = new LineCounter();
    const name = path.basename(file);
    const docs = parseAllDocuments(text, { ...YAML_OPTIONS, lineCounter: lines });
    const objects = [];

    for (const doc of docs) {
        for (const e of [...doc.errors, ...doc.warnings]) {
            problems.push(`${name}:${e.linePos ? e.linePos[0].line : 0}: ${e.message.split("\n")[0]}`);
        }
        const obj = doc.toJS();
        if (obj === null || obj === undefined) {
            continue;
        }
        const lineOf = (keys) => {
            for (let n = keys.length; n >= 0; n--) {
                const node = doc.getIn(keys.slice(0, n), true);
                if (node && node.range) {
                    return lines.linePos(node.range[0]).line;
                }
            }
            return 0;
        };
        objects.push({ file: name, obj, lineOf });
    }
    return objects;
}

function report(m, pointer, message) {
    const keys = pointer
        .split("/")
        .slice(1)
        .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    const what = `${m.obj.kind || "?"} ${(m.obj.metadata && m.obj.metadata.name) || "?"}`;
    problems.push(`${m.file}:${m.lineOf(keys)}: ${what}: ${fieldName(pointer) || "(the object)"} ${message}`);
}

/* The object against its kind's schema. */
function checkSchema(m) {
    const key = `${m.obj.apiVersion} ${m.obj.kind}`;
    const Model = MODELS.get(key);

    if (!Model) {
        report(m, "", `is a ${key}, which this check has no schema for (add its model to MODELS)`);
        return;
    }
    try {
        new Model(m.obj).validate();
    } catch (e) {
        if (!e.errors) {
            throw e;
        }
        for (const err of e.errors) {
            if (err.keyword === "required") {
                report(m, `${err.instancePath}/${err.params.missingProperty}`, "is required and missing");
            } else {
                const allowed = err.params && err.params.allowedValues;
                report(m, err.instancePath, err.message + (allowed ? ` (${allowed.join(", ")})` : ""));
            }
        }
    }
}

/* kustomization.yaml lists exactly the manifests beside it. */
function checkKustomization(dir) {
    const file = path.join(dir, KUSTOMIZATION);
    if (!fs.existsSync(file)) {
        problems.push(`${KUSTOMIZATION}:0: missing in ${dir}`);
        return [];
    }
    const [k = { obj: {}, lineOf: () => 0 }] = parseManifest(file);
    const listed = Array.isArray(k.obj.resources) ? k.obj.resources : [];
    const isFile = (r) => typeof r === "string" && fs.existsSync(path.join(dir, r)) && fs.statSync(path.join(dir, r)).isFile();

    if (k.obj.apiVersion !== "kustomize.config.k8s.io/v1beta1" || k.obj.kind !== "Kustomization") {
        problems.push(`${KUSTOMIZATION}:${k.lineOf(["kind"])}: not a kustomize.config.k8s.io/v1beta1 Kustomization`);
    }
    if (!Array.isArray(k.obj.resources)) {
        problems.push(`${KUSTOMIZATION}:${k.lineOf(["resources"])}: resources: missing or not a list`);
    }
    listed.forEach((r, i) => {
        if (!isFile(r)) {
            problems.push(`${KUSTOMIZATION}:${k.lineOf(["resources", i])}: resources: ${r} is not a file in ${path.basename(dir)}/`);
        }
    });
    for (const f of fs.readdirSync(dir).sort()) {
        if (/\.ya?ml$/.test(f) && f !== KUSTOMIZATION && !listed.includes(f)) {
            problems.push(`${f}:1: not listed in ${KUSTOMIZATION}'s resources`);
        }
    }
    return listed.filter(isFile);
}

/* The DaemonSet's rights: no wider than the unit's, whatever field a typo
 * may have left out (the schemas accept unknown fields, so a misspelt
 * readOnlyRootFilesystem would pass them). */
function checkDaemonSetRights(m) {
    const pod = (m.obj.spec && m.obj.spec.template && m.obj.spec.template.spec) || {};
    const at = "/spec/template/spec";
    const volumes = new Map((pod.volumes || []).map((v) => [v.name, v]));

    for (const k of ["hostPID", "hostIPC", "hostNetwork"]) {
        if (pod[k] !== false) {
            report(m, `${at}/${k}`, "must be false: iopsd needs none of the host's namespaces");
        }
    }
    if (!pod.securityContext || pod.securityContext.runAsNonRoot !== true || !(pod.securityContext.runAsUser > 0)) {
        report(m, `${at}/securityContext`, "must set runAsNonRoot: true and a runAsUser other than 0 (the unit's User=iopsd)");
    }
    (pod.containers || []).forEach((c, i) => {
        const ca = `${at}/containers/${i}`;
        const sc = c.securityContext || {};
        const caps = sc.capabilities || {};

        if (sc.allowPrivilegeEscalation !== false) {
            report(m, `${ca}/securityContext/allowPrivilegeEscalation`, "must be false (the unit's NoNewPrivileges=yes)");
        }
        if (sc.readOnlyRootFilesystem !== true) {
            report(m, `${ca}/securityContext/readOnlyRootFilesystem`, "must be true (the unit's ProtectSystem=strict)");
        }
        if (sc.privileged === true) {
            report(m, `${ca}/securityContext/privileged`, "must not be true");
        }
        if (!Array.isArray(caps.drop) || !caps.drop.includes("ALL")) {
            report(m, `${ca}/securityContext/capabilities/drop`, "must drop ALL (the unit's CapabilityBoundingSet= is empty)");
        }
        if (caps.add && caps.add.length) {
            report(m, `${ca}/securityContext/capabilities/add`, `adds ${caps.add.join(", ")}, which the unit does not grant`);
        }
        (c.volumeMounts || []).forEach((vm, j) => {
            const v = volumes.get(vm.name);
            if (v && v.hostPath && vm.readOnly !== true && !vm.mountPath.endsWith("/.iopsd")) {
                report(m, `${ca}/volumeMounts/${j}/readOnly`, `must be true for hostPath ${v.hostPath.path}: only a DIR/.iopsd is written`);
            }
            if (vm.mountPropagation === "Bidirectional") {
                report(m, `${ca}/volumeMounts/${j}/mountPropagation`, "must not be Bidirectional: iopsd mounts nothing");
            }
        });
        for (const [probe, want] of [
            ["readinessProbe", "/-/ready"],
            ["livenessProbe", "/-/healthy"],
        ]) {
            const get = c[probe] && c[probe].httpGet;
            if (!get || get.path !== want) {
                report(m, `${ca}/${probe}/httpGet/path`, `must be ${want}`);
            }
        }
        const res = c.resources || {};
        if (!res.requests || !res.requests.cpu || !res.requests.memory || !res.limits || !res.limits.memory) {
            report(m, `${ca}/resources`, "must request cpu and memory and limit memory (bench/README.md's figures)");
        }
    });
}

/* The Service and the PodMonitor find the DaemonSet's pods and its port. */
function checkSelectors(all) {
    const ds = all.find((m) => m.obj.kind === "DaemonSet");
    if (!ds) {
        return;
    }
    const tpl = ds.obj.spec.template;
    const labels = (tpl.metadata && tpl.metadata.labels) || {};
    const ports = (tpl.spec.containers || []).flatMap((c) => c.ports || []).map((p) => p.name);
    const matches = (sel) => sel && Object.entries(sel).length > 0 && Object.entries(sel).every(([k, v]) => labels[k] === v);

    for (const m of all) {
        if (m.obj.kind === "Service") {
            if (!matches(m.obj.spec.selector)) {
                report(m, "/spec/selector", "does not select the DaemonSet's pods");
            }
            (m.obj.spec.ports || []).forEach((p, i) => {
                if (typeof p.targetPort === "string" && !ports.includes(p.targetPort)) {
                    report(m, `/spec/ports/${i}/targetPort`, `names no port of the DaemonSet's pods (${ports.join(", ")})`);
                }
            });
        } else if (m.obj.kind === "PodMonitor") {
            if (!matches(m.obj.spec.selector && m.obj.spec.selector.matchLabels)) {
                report(m, "/spec/selector/matchLabels", "does not select the DaemonSet's pods");
            }
            (m.obj.spec.podMetricsEndpoints || []).forEach((e, i) => {
                if (!ports.includes(e.port)) {
                    report(m, `/spec/podMetricsEndpoints/${i}/port`, `names no port of the DaemonSet's pods (${ports.join(", ")})`);
                }
            });
        }
    }
}

function main(argv) {
    if (argv.length !== 1) {
        console.error("usage: check-manifests.mjs DIR");
        return 2;
    }
    const dir = argv[0];
    const all = checkKustomization(dir).flatMap((f) => parseManifest(path.join(dir, f)));

    for (const m of all) {
        checkSchema(m);
        if (m.obj.kind === "DaemonSet") {
            checkDaemonSetRights(m);
        }
    }
    checkSelectors(all);
    for (const p of problems) {
        console.log(p);
    }
    if (problems.length) {
        console.log(`${dir}: ${problems.length} problem(s)`);
        return 1;
    }
    const kinds = all.map((m) => `${m.obj.kind}/${m.obj.metadata.name}`).join(", ");
    console.log(`${dir}: ${all.length} objects valid (${kinds})`);
    return 0;
}

process.exitCode = main(process.argv.slice(2));
